//! `fold-constant-layouts`: computes layout ops of constants at compile time, so that the
//! constant arrives in the layout its consumer reads. A `permute` of a constant becomes a
//! constant holding the permuted bytes; a `view`, `unsqueeze`, `squeeze` or `copy` of one
//! becomes a constant of the new type sharing the same bytes; a `cat` of constants (the
//! weights of products `eqsat` merged) becomes one constant. Chains fold in one run.
//!
//! Why here and not in XLA: XLA folds a transpose of a constant with its generic evaluator,
//! element by element; for frozen weights (`freeze`), every `nn.Linear` reads its weight
//! through `permute([1, 0])`, and that folding took most of a frozen model's compile time
//! (a 50M-parameter MLP: 10.5 s in the PJRT compile). Here it is a copy of the bytes.
//!
//! Relies on: constants (the `freeze` pass makes them). Preserves: every value.
//!
//! ```text
//! before:  %w = constant {data = "9f3c..."} : f32[16,8]
//!          %t = aten.permute %w {dims = [1, 0]} : f32[8,16]
//! after:   %t = constant {data = "51be..."} : f32[8,16]
//! ```

use fxhlo_ir::{Graph, NodeId, Op, TensorData, ValueRef};

use crate::{Error, Pass, Result};

/// The pass; see the module doc.
pub struct FoldConstantLayouts;

impl Pass for FoldConstantLayouts {
    fn name(&self) -> &'static str {
        "fold-constant-layouts"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let fail = |e: fxhlo_ir::Error| Error::Failed { pass: "fold-constant-layouts", message: e.to_string() };
        let mut changed = false;
        // Topological order: a folded node is a constant by the time its users are seen.
        for id in graph.topo_order().map_err(fail)? {
            let Some(data) = folded(graph, id) else { continue };
            let mut sources: Vec<NodeId> = graph.operands(id).iter().map(|v| v.node).collect();
            sources.sort();
            sources.dedup();
            // The node becomes a constant: its operand edges go.
            graph.node_mut(id).op = Op::Constant { data };
            graph.disconnect_operands(id);
            for source in sources {
                if !graph.has_uses(source) {
                    graph.remove_node(source).map_err(fail)?;
                }
            }
            changed = true;
        }
        Ok(changed)
    }
}

/// The data of node `id` as a constant, when it is a layout op of a constant with bytes.
fn folded(graph: &Graph, id: NodeId) -> Option<TensorData> {
    let node = graph.node(id);
    if let Op::Cat { dim } = node.op {
        // The concatenated weights of merged products (`eqsat`'s merge rules).
        let out = &node.results[0];
        let dim = usize::try_from(if dim < 0 { dim + out.rank() as i64 } else { dim }).ok()?;
        let size = out.dtype.size_bytes();
        let outer: usize = out.shape.get(..dim)?.iter().map(|&d| d as usize).product();
        let mut parts = Vec::new();
        for v in graph.operands(id) {
            let Op::Constant { data } = &graph.node(v.node).op else { return None };
            let t = graph.value_type(v)?;
            // PyTorch's cat also takes empty 1-D tensors beside others: not folded here.
            if t.rank() != out.rank() {
                return None;
            }
            // Bytes per outer index: this operand's extent of `dim` times the inner dims.
            let chunk: usize = t.shape.get(dim..)?.iter().map(|&d| d as usize).product::<usize>() * size;
            parts.push((data.bytes()?, chunk));
        }
        let mut bytes = Vec::with_capacity(out.checked_size_bytes()?);
        for o in 0..outer {
            for (data, chunk) in &parts {
                bytes.extend_from_slice(data.get(o * chunk..(o + 1) * chunk)?);
            }
        }
        return Some(TensorData::new(bytes));
    }
    let [operand]: [ValueRef; 1] = graph.operands(id).try_into().ok()?;
    let Op::Constant { data } = &graph.node(operand.node).op else { return None };
    let input = &graph.node(operand.node).results[0];
    match &node.op {
        // Same bytes in the same order: share them.
        Op::View { .. } | Op::Unsqueeze { .. } | Op::Squeeze { .. } | Op::Copy => Some(data.clone()),
        Op::Permute { dims } => {
            let bytes = data.bytes()?;
            let perm: Vec<usize> = dims.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
            let shape: Vec<usize> = input.shape.iter().map(|&d| d as usize).collect();
            Some(TensorData::new(permute(bytes, &shape, &perm, input.dtype.size_bytes())))
        }
        _ => None,
    }
}

/// Row-major `bytes` of `shape` (elements of `size` bytes) permuted: output dim `i` is input
/// dim `perm[i]`.
pub fn permute(bytes: &[u8], shape: &[usize], perm: &[usize], size: usize) -> Vec<u8> {
    match size {
        1 => permute_n::<1>(bytes, shape, perm),
        2 => permute_n::<2>(bytes, shape, perm),
        4 => permute_n::<4>(bytes, shape, perm),
        8 => permute_n::<8>(bytes, shape, perm),
        _ => permute_n::<16>(bytes, shape, perm),
    }
}

/// [`permute`] for elements of `S` bytes. The output is walked in tiles of the last two
/// output dims (a weight's transpose reads one column per row otherwise: a cache miss per
/// element), with an odometer over the dims before them.
fn permute_n<const S: usize>(bytes: &[u8], shape: &[usize], perm: &[usize]) -> Vec<u8> {
    const TILE: usize = 32;
    let rank = shape.len();
    let mut out = vec![0u8; bytes.len()];
    if bytes.is_empty() {
        return out;
    }
    // Input strides in elements, then the input stride of each output dim.
    let mut in_strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        in_strides[d] = in_strides[d + 1] * shape[d + 1];
    }
    // Rank 0 and 1 are copies; pad to two dims of extent 1.
    let mut out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    while out_shape.len() < 2 {
        out_shape.insert(0, 1);
        strides.insert(0, 0);
    }
    let r = out_shape.len();
    let (rows, cols) = (out_shape[r - 2], out_shape[r - 1]);
    let (row_stride, col_stride) = (strides[r - 2], strides[r - 1]);
    let outer = &out_shape[..r - 2];
    let mut index = vec![0usize; outer.len()];
    let mut out_at = 0usize;
    loop {
        let base: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        for i0 in (0..rows).step_by(TILE) {
            for j0 in (0..cols).step_by(TILE) {
                for i in i0..(i0 + TILE).min(rows) {
                    for j in j0..(j0 + TILE).min(cols) {
                        let from = (base + i * row_stride + j * col_stride) * S;
                        let to = out_at + (i * cols + j) * S;
                        out[to..to + S].copy_from_slice(&bytes[from..from + S]);
                    }
                }
            }
        }
        out_at += rows * cols * S;
        // Advance the odometer over the outer dims; done when it wraps.
        let mut d = outer.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < outer[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::permute;
    use crate::Pass;
    use fxhlo_ir::{DType, Graph, Op, TensorData, TensorType, ValueRef};

    #[test]
    fn a_cat_of_constants_becomes_one_constant() {
        // [[0, 1], [2, 3]] and [[4], [5]] along dim 1: [[0, 1, 4], [2, 3, 5]] (u8 elements).
        let mut g = Graph::new("cat");
        let ty = |shape: &[i64]| TensorType::new(DType::U8, shape.to_vec());
        let constant = |g: &mut Graph, name: &str, bytes: Vec<u8>, shape: &[i64]| {
            ValueRef::first(g.add_node(name, Op::Constant { data: TensorData::new(bytes) }, &[], vec![ty(shape)], None).unwrap())
        };
        let a = constant(&mut g, "a", vec![0, 1, 2, 3], &[2, 2]);
        let b = constant(&mut g, "b", vec![4, 5], &[2, 1]);
        let c = ValueRef::first(g.add_node("c", Op::Cat { dim: -1 }, &[a, b], vec![ty(&[2, 3])], None).unwrap());
        g.set_outputs(vec![c]).unwrap();
        assert!(super::FoldConstantLayouts.run(&mut g).unwrap());
        let Op::Constant { data } = &g.node(c.node).op else { panic!("not folded: {}", fxhlo_ir::print(&g)) };
        assert_eq!(data.bytes().unwrap(), &[0, 1, 4, 2, 3, 5]);
        // The operands went with their last reader.
        assert_eq!(g.node_ids().count(), 1);

        // An empty 1-D operand beside a 2-D one (PyTorch allows it): left alone, no panic.
        let mut g = Graph::new("legacy_cat");
        let a = constant(&mut g, "a", vec![0, 1, 2, 3], &[2, 2]);
        let e = constant(&mut g, "e", vec![], &[0]);
        let c = ValueRef::first(g.add_node("c", Op::Cat { dim: 1 }, &[a, e], vec![ty(&[2, 2])], None).unwrap());
        g.set_outputs(vec![c]).unwrap();
        assert!(!super::FoldConstantLayouts.run(&mut g).unwrap());
    }

    #[test]
    fn permute_moves_elements_as_a_transpose_does() {
        // [[0, 1, 2], [3, 4, 5]] transposed is [[0, 3], [1, 4], [2, 5]] (one-byte elements).
        let t = permute(&[0, 1, 2, 3, 4, 5], &[2, 3], &[1, 0], 1);
        assert_eq!(t, [0, 3, 1, 4, 2, 5]);
        // Two-byte elements keep their bytes together.
        let t = permute(&[0, 10, 1, 11, 2, 12, 3, 13], &[2, 2], &[1, 0], 2);
        assert_eq!(t, [0, 10, 2, 12, 1, 11, 3, 13]);
        // Rank 3, [2, 2, 2] -> dims [2, 0, 1]: out[k][i][j] = in[i][j][k].
        let input: Vec<u8> = (0..8).collect();
        let t = permute(&input, &[2, 2, 2], &[2, 0, 1], 1);
        let want: Vec<u8> = (0..2).flat_map(|k| (0..2).flat_map(move |i| (0..2).map(move |j| (i * 4 + j * 2 + k) as u8))).collect();
        assert_eq!(t, want);
        // Rank 0 and the identity.
        assert_eq!(permute(&[7], &[], &[], 1), [7]);
        assert_eq!(permute(&input, &[2, 2, 2], &[0, 1, 2], 1), input);
    }
}

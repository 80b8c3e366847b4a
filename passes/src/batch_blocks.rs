//! `batch-blocks`: a batched matrix product whose result is too large for the cache, and the
//! ops after it that treat each batch entry (or each row) on its own, computed block by block
//! in a `while` loop, so that only one block's intermediates exist at a time.
//!
//! Why: attention's scores (`q·kᵀ`, `[heads, n, n]`) are the largest tensors of a transformer
//! or UNet block at long sequences, and XLA's CPU backend allocates a call's temporaries afresh
//! on every call. Above glibc's mmap threshold (at most 32 MiB) an allocation is a new mapping
//! whose pages are faulted in on every call: Stable Diffusion's attention at a 64x64 latent
//! (8 heads x 4,096 positions x 40) has 512 MB of scores and took 438 ms per call at `-O1`
//! against eager's 131. In a loop over blocks of [`BLOCK_BYTES`], XLA assigns the body's
//! temporaries once, for one block, and they come from the heap, reused: 124 ms. (Blocks as
//! separate ops concatenated, this pass's first form, did not bound them: XLA schedules such
//! blocks breadth-first, every block's product before any block's softmax.)
//!
//! The region is grown from each `bmm` whose result is over [`MIN_BYTES`]: every later node
//! that reads a region value and computes each entry of the blocked dim from that entry alone
//! joins it (elementwise ops with broadcasting, reductions and softmax over other dims, views
//! that keep the dim whole, `expand`, `permute`, `bmm` whose operands share the batch, `bmm`
//! over rows of its left factor), tracking where the blocked dim goes; a node that reads a
//! region value otherwise, or reads a node that does, stays out, and so does everything after
//! it. The region's other operands are sliced along the blocked dim, or read whole where they
//! broadcast along it. The rewrite is made only when every value leaving the region is at most
//! a quarter of the product's size (so that the accumulators the loop writes stay small), and
//! each block's type is checked by the IR's inference before the graph is touched.
//!
//! The blocked dim is the product's batch where one batch entry is at most [`BLOCK_BYTES`];
//! the block is the largest divisor of the batch whose share of the product is at most
//! [`BLOCK_BYTES`], in at most [`MAX_BLOCKS`] iterations. A larger entry (a head of 4,096 x
//! 4,096 scores is 64 MB) is blocked by its rows: with a batch of one, the rows are the loop's
//! blocked dim; with more, the loop runs over single entries and its body, blocked in turn
//! (where the entry is over [`MIN_BYTES`]), over that entry's rows, so that each block reads
//! one head's keys and values, not every head's (Stable Diffusion's attention: 141 ms per call with every head's rows in each
//! block, 124 ms with the nested loops). The CPU plugin only: other
//! targets allocate and fuse their own way; `-O2` only, with the e-graph.
//!
//! Relies on: verified input. Preserves: every output's value and type (each element is
//! computed by the same ops; XLA may pick another dot kernel for the smaller shapes); the
//! region's nodes move into the loop's body.
//!
//! ```text
//! before:  %s = aten.bmm %q, %kt : f32[16,1024,1024]
//!          %e = aten.exp %s : f32[16,1024,1024]
//!          %o = aten.bmm %e, %v : f32[16,1024,8]
//! after:   %o.blocks = higher_order.while_loop %first, %zeros, %q, %kt, %v {cond = 0, body = 1}
//!          region 1 (the body; region 0 is `index < 8`):
//!            %start = aten.mul %index, %block : i64[]            (block = 2 heads)
//!            %q.block = dynamic_slice %q, %start {dim = 0, size = 2} : f32[2,1024,8]
//!            ... (%kt and %v sliced the same way)
//!            %s = aten.bmm %q.block, %kt.block : f32[2,1024,1024]
//!            %e = aten.exp %s : f32[2,1024,1024]
//!            %o = aten.bmm %e, %v.block : f32[2,1024,8]
//!            %o.written = dynamic_update_slice %out, %o, %start {dim = 0} : f32[16,1024,8]
//! ```

use std::collections::{HashMap, HashSet};

use fxhlo_ir::infer::{infer, normalize_dim};
use fxhlo_ir::{BinaryOp, CompareOp, DType, Graph, InputKind, NodeId, Op, Scalar, TensorType, ValueRef};

use crate::{Error, Pass, Result};

/// The largest block of a product, in bytes: well under glibc's largest mmap threshold (32
/// MiB), so that a block's intermediates are reused heap memory (see the module doc).
pub const BLOCK_BYTES: usize = 8 << 20;

/// The most iterations of one loop (each costs XLA's CPU runtime a few microseconds per op of
/// the body).
pub const MAX_BLOCKS: i64 = 256;

/// Products at most this large are left whole: two blocks at least.
pub const MIN_BYTES: usize = 2 * BLOCK_BYTES;

/// The pass; see the module doc.
pub struct BatchBlocks;

impl Pass for BatchBlocks {
    fn name(&self) -> &'static str {
        "batch-blocks"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        block_regions(graph).map_err(|e| Error::Failed { pass: "batch-blocks", message: e.to_string() })
    }
}

/// Replaces each region of `graph` by a loop over its blocks; whether it changed anything.
fn block_regions(graph: &mut Graph) -> fxhlo_ir::Result<bool> {
    let seeds: Vec<NodeId> = graph.node_ids().filter(|&id| is_seed(graph, id)).collect();
    let mut changed = false;
    for seed in seeds {
        // An earlier rewrite may have removed it (it was inside that region), and a node
        // added since may have taken its id: ask again.
        if !graph.node_ids().any(|id| id == seed) || !is_seed(graph, seed) {
            continue;
        }
        let Some(region) = grow(graph, seed)? else {
            continue;
        };
        loop_blocks(graph, &region)?;
        changed = true;
    }
    Ok(changed)
}

/// A `bmm` whose result is large enough to split.
fn is_seed(graph: &Graph, id: NodeId) -> bool {
    let node = graph.node(id);
    matches!(node.op, Op::Bmm)
        && node.results.len() == 1
        && node.results[0]
            .checked_size_bytes()
            .is_some_and(|b| b > MIN_BYTES)
}

/// How a region node reads one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// A region value (its batch dim is its node's, in `Region::nodes`).
    Region,
    /// A value from outside, whole (it broadcasts along the batch dim).
    Whole,
    /// A value from outside, sliced along this dim.
    Slice(usize),
}

/// The region grown from one seed.
struct Region {
    /// The size of the blocked dim (the product's batch or its rows).
    size: i64,
    /// Entries of the blocked dim per block.
    block: i64,
    /// Region nodes in topological order, with their result's blocked dim and operand reads.
    nodes: Vec<(NodeId, usize, Vec<Read>)>,
    /// Region values read outside it (or returned), with their blocked dim.
    outputs: Vec<(NodeId, usize)>,
    /// Each region node's result type for one block, as inference gave it.
    block_types: HashMap<NodeId, TensorType>,
}

/// The region of `seed`, or `None` when splitting it would not pay or cannot be typed.
fn grow(graph: &Graph, seed: NodeId) -> fxhlo_ir::Result<Option<Region>> {
    let seed_ty = &graph.node(seed).results[0];
    let Some(seed_bytes) = seed_ty.checked_size_bytes() else {
        return Ok(None);
    };
    let Some((seed_dim, block)) = plan(&seed_ty.shape, seed_bytes) else {
        return Ok(None);
    };
    let size = seed_ty.shape[seed_dim];
    let order = graph.topo_order()?;
    let start = order.iter().position(|&id| id == seed).unwrap_or(0);
    let mut dim_of: HashMap<NodeId, usize> = HashMap::new();
    let mut tainted: HashSet<NodeId> = HashSet::new();
    let mut nodes = Vec::new();
    for &id in &order[start..] {
        let operands = graph.operands(id);
        let reads_region = operands.iter().any(|v| dim_of.contains_key(&v.node));
        let reads_tainted = operands.iter().any(|v| tainted.contains(&v.node));
        if id != seed && !reads_region && !reads_tainted {
            continue;
        }
        let plan = if id == seed {
            // Blocks of the batch slice both factors; blocks of rows slice the left one and
            // read the right one whole.
            Some((seed_dim, if seed_dim == 0 { vec![Read::Slice(0), Read::Slice(0)] } else { vec![Read::Slice(1), Read::Whole] }))
        } else if reads_tainted {
            None
        } else {
            reads(graph, id, size, &dim_of)
        };
        match plan {
            Some((d, reads)) => {
                dim_of.insert(id, d);
                nodes.push((id, d, reads));
            }
            None => {
                tainted.insert(id);
            }
        }
    }
    let region: HashSet<NodeId> = nodes.iter().map(|n| n.0).collect();
    let mut outputs: Vec<(NodeId, usize)> = Vec::new();
    for &(id, d, _) in &nodes {
        let v = ValueRef::first(id);
        let leaves =
            graph.outputs().contains(&v) || graph.users(v).iter().any(|(u, _)| !region.contains(u));
        if leaves {
            outputs.push((id, d));
        }
    }
    let out_bytes: usize = outputs
        .iter()
        .map(|&(id, _)| graph.node(id).results[0].size_bytes())
        .sum();
    if outputs.is_empty() || out_bytes * 4 > seed_bytes {
        return Ok(None);
    }
    let mut region = Region {
        size,
        block,
        nodes,
        outputs,
        block_types: HashMap::new(),
    };
    let Some(block_types) = block_types(graph, &region) else {
        return Ok(None);
    };
    region.block_types = block_types;
    Ok(Some(region))
}

/// How to block a `[batch, rows, cols]` product of `bytes`: along the batch (dim 0) where one
/// entry is at most [`BLOCK_BYTES`]; one entry a block where an entry is larger and there are
/// several (the loop's body is then blocked by rows in turn); else, with a batch of one, along
/// the rows (dim 1). The dim and the entries per block (the largest divisor of its size whose
/// block is at most [`BLOCK_BYTES`], in at most [`MAX_BLOCKS`] blocks); `None` when none fits.
fn plan(shape: &[i64], bytes: usize) -> Option<(usize, i64)> {
    let (&batch, &rows) = (shape.first()?, shape.get(1)?);
    if batch < 1 || rows < 1 {
        return None;
    }
    let per_entry = bytes / batch as usize;
    let largest = |size: i64, per: usize| {
        (1..=size)
            .rev()
            .find(|b| size % b == 0 && size / b <= MAX_BLOCKS && (*b as usize).saturating_mul(per) <= BLOCK_BYTES)
    };
    if per_entry <= BLOCK_BYTES {
        // One block would be the whole product: nothing to gain.
        largest(batch, per_entry).filter(|&b| b < batch).map(|b| (0, b))
    } else if batch > 1 && batch <= MAX_BLOCKS {
        // One entry a block, when its rows could be blocked: the loop's body is blocked again,
        // by rows where the entry is over MIN_BYTES (each block then reads one entry's right
        // factor, not every entry's); an entry of at most MIN_BYTES stays whole in the body.
        plan(&[1, rows], per_entry).map(|_| (0, 1))
    } else {
        largest(rows, bytes / rows as usize).filter(|&r| r < rows).map(|r| (1, r))
    }
}

/// The blocked dim of node `id`'s result and how it reads each operand, when it computes each
/// entry of that dim (of `size` entries) from that entry of its region operands alone; `None`
/// otherwise.
fn reads(
    graph: &Graph,
    id: NodeId,
    size: i64,
    dim_of: &HashMap<NodeId, usize>,
) -> Option<(usize, Vec<Read>)> {
    let node = graph.node(id);
    if node.results.len() != 1 {
        return None;
    }
    let out = &node.results[0];
    let operands = graph.operands(id);
    let types: Vec<&TensorType> = operands
        .iter()
        .map(|v| graph.value_type(*v))
        .collect::<Option<_>>()?;
    let region_dim = |i: usize| -> Option<usize> {
        let v = operands[i];
        (v.result == 0)
            .then(|| dim_of.get(&v.node).copied())
            .flatten()
    };
    // Elementwise with broadcasting: operands align at their last dims.
    let elementwise = || -> Option<(usize, Vec<Read>)> {
        let r_out = out.rank();
        let mut d_out = None;
        for (i, t) in types.iter().enumerate() {
            if let Some(d) = region_dim(i) {
                let d = d + r_out - t.rank();
                if d_out.is_some_and(|e| e != d) {
                    return None;
                }
                d_out = Some(d);
            }
        }
        let d_out = d_out?;
        if out.shape.get(d_out) != Some(&size) {
            return None;
        }
        let reads = types
            .iter()
            .enumerate()
            .map(|(i, t)| match region_dim(i) {
                Some(_) => Some(Read::Region),
                None => match (d_out + t.rank()).checked_sub(r_out) {
                    None => Some(Read::Whole),
                    Some(e) if t.shape[e] == 1 => Some(Read::Whole),
                    Some(e) if t.shape[e] == size => Some(Read::Slice(e)),
                    Some(_) => None,
                },
            })
            .collect::<Option<Vec<_>>>()?;
        Some((d_out, reads))
    };
    match &node.op {
        Op::Unary(_)
        | Op::Binary(_)
        | Op::Compare(_)
        | Op::Where
        | Op::Clamp { .. }
        | Op::Convert { .. }
        | Op::Copy => elementwise(),
        Op::Reduce { dims, keepdim, .. } => {
            let d = region_dim(0)?;
            let rank = types[0].rank();
            let dims: Vec<usize> = dims
                .iter()
                .map(|&x| normalize_dim(x, rank).ok())
                .collect::<Option<_>>()?;
            if dims.is_empty() || dims.contains(&d) {
                return None;
            }
            let d_out = if *keepdim {
                d
            } else {
                d - dims.iter().filter(|&&x| x < d).count()
            };
            Some((d_out, vec![Read::Region]))
        }
        Op::Softmax { dim, .. } => {
            let d = region_dim(0)?;
            (normalize_dim(*dim, types[0].rank()).ok()? != d).then(|| (d, vec![Read::Region]))
        }
        Op::View { .. } => {
            // The blocked dim survives a row-major reshape when the elements before it and the
            // dim itself map onto whole dims of the result.
            let d = region_dim(0)?;
            let before: i64 = types[0].shape[..d].iter().product();
            let mut prefix = 1;
            for (e, &s) in out.shape.iter().enumerate() {
                if prefix == before && s == size {
                    return Some((e, vec![Read::Region]));
                }
                prefix *= s;
            }
            None
        }
        Op::Expand { .. } => {
            let d = region_dim(0)?;
            let d_out = d + out.rank() - types[0].rank();
            (out.shape[d_out] == size).then(|| (d_out, vec![Read::Region]))
        }
        Op::Permute { dims } => {
            let d = region_dim(0)?;
            let d_out = dims
                .iter()
                .position(|&x| normalize_dim(x, types[0].rank()).ok() == Some(d))?;
            Some((d_out, vec![Read::Region]))
        }
        // Rows of the left factor: the right one is read whole.
        Op::Bmm if region_dim(0) == Some(1) && region_dim(1).is_none() => Some((1, vec![Read::Region, Read::Whole])),
        Op::Bmm => {
            let read = |i: usize| match region_dim(i) {
                Some(0) => Some(Read::Region),
                Some(_) => None,
                None if types[i].shape[0] == size => Some(Read::Slice(0)),
                None => None,
            };
            Some((0, vec![read(0)?, read(1)?]))
        }
        _ => None,
    }
}

/// `ty` with dim `d` of size `size`.
fn resized(ty: &TensorType, d: usize, size: i64) -> TensorType {
    let mut shape = ty.shape.to_vec();
    shape[d] = size;
    TensorType::new(ty.dtype, shape)
}

/// The op of a region node for a block (a view's or expand's target shape is the block's).
fn block_op(op: &Op, out: &TensorType) -> Op {
    match op {
        Op::View { .. } => Op::View {
            shape: out.shape.as_slice().into(),
        },
        Op::Expand { .. } => Op::Expand {
            sizes: out.shape.as_slice().into(),
        },
        op => op.clone(),
    }
}

/// Each region node's result type for one block, when every node fed one block infers the
/// block's type of its result; `None` when one does not.
fn block_types(graph: &Graph, region: &Region) -> Option<HashMap<NodeId, TensorType>> {
    let mut block_ty: HashMap<NodeId, TensorType> = HashMap::new();
    for (id, d, reads) in &region.nodes {
        let node = graph.node(*id);
        let want = resized(&node.results[0], *d, region.block);
        let operands = graph.operands(*id);
        let types: Option<Vec<TensorType>> = operands
            .iter()
            .zip(reads)
            .map(|(v, read)| match read {
                Read::Region => block_ty.get(&v.node).cloned(),
                Read::Whole => graph.value_type(*v).cloned(),
                Read::Slice(e) => graph.value_type(*v).map(|t| resized(t, *e, region.block)),
            })
            .collect();
        let types = types?;
        let refs: Vec<&TensorType> = types.iter().collect();
        match infer(&block_op(&node.op, &want), &refs) {
            Ok(Some(results)) if results.len() == 1 && results[0] == want => {
                block_ty.insert(*id, want);
            }
            _ => return None,
        }
    }
    Some(block_ty)
}

/// Replaces the region with a `while` loop over its blocks: the loop carries the block index
/// and one accumulator per value leaving the region (zeros at first); its body slices the
/// region's sliced operands at the block (`dynamic_slice`), computes the block, and writes each
/// leaving value's block into its accumulator (`dynamic_update_slice`). The values read from
/// outside are the loop's invariant operands.
fn loop_blocks(graph: &mut Graph, region: &Region) -> fxhlo_ir::Result<()> {
    let seed = graph.node(region.nodes[0].0);
    let (base, source) = (seed.name.to_string(), seed.source.clone());
    let index_t = TensorType::new(DType::I64, vec![]);
    // The values read from outside, in the order first read.
    let mut outside: Vec<ValueRef> = Vec::new();
    for (id, _, reads) in &region.nodes {
        for (v, read) in graph.operands(*id).iter().zip(reads) {
            if *read != Read::Region && !outside.contains(v) {
                outside.push(*v);
            }
        }
    }
    let out_types: Vec<TensorType> = region.outputs.iter().map(|(id, _)| graph.node(*id).results[0].clone()).collect();
    let mut operand_types = vec![index_t.clone()];
    operand_types.extend(out_types.iter().cloned());
    operand_types.extend(outside.iter().map(|v| graph.value_type(*v).expect("a verified operand").clone()));
    let loop_inputs = |g: &mut Graph| -> Vec<ValueRef> {
        let inputs = operand_types.iter().enumerate();
        inputs.map(|(i, t)| ValueRef::first(g.add_input(format!("arg{i}"), InputKind::UserInput, None, t.clone(), None))).collect()
    };
    let index = |g: &mut Graph, name: &str, value: i64| -> fxhlo_ir::Result<ValueRef> {
        g.add_node(name, Op::Full { value: Scalar::Int(value) }, &[], vec![index_t.clone()], None).map(ValueRef::first)
    };

    // The condition: index < blocks.
    let mut cond = Graph::new(format!("{base}.blocks.cond"));
    let args = loop_inputs(&mut cond);
    let blocks = index(&mut cond, "blocks", region.size / region.block)?;
    let more = cond.add_node("more", Op::Compare(CompareOp::Lt), &[args[0], blocks], vec![TensorType::new(DType::Bool, vec![])], None)?;
    cond.set_outputs(vec![ValueRef::first(more)])?;

    // The body: one block.
    let mut body = Graph::new(format!("{base}.blocks.body"));
    let args = loop_inputs(&mut body);
    let block = index(&mut body, "block", region.block)?;
    let start = ValueRef::first(body.add_node("start", Op::Binary(BinaryOp::Mul), &[args[0], block], vec![index_t.clone()], None)?);
    let arg_of: HashMap<ValueRef, ValueRef> = outside.iter().copied().zip(args[1 + out_types.len()..].iter().copied()).collect();
    let mut slices: HashMap<(ValueRef, usize), ValueRef> = HashMap::new();
    let mut copy: HashMap<NodeId, ValueRef> = HashMap::new();
    for (id, _, reads) in &region.nodes {
        let mut operands = Vec::new();
        for (v, read) in graph.operands(*id).iter().zip(reads) {
            operands.push(match read {
                Read::Region => copy[&v.node],
                Read::Whole => arg_of[v],
                Read::Slice(e) => match slices.get(&(*v, *e)) {
                    Some(&s) => s,
                    None => {
                        let ty = resized(graph.value_type(*v).expect("a verified operand"), *e, region.block);
                        let producer = graph.node(v.node);
                        let op = Op::DynamicSlice { dim: *e as i64, size: region.block };
                        let name = format!("{}.block", producer.name);
                        let s = ValueRef::first(body.add_node(name.as_str(), op, &[arg_of[v], start], vec![ty], producer.source.clone())?);
                        slices.insert((*v, *e), s);
                        s
                    }
                },
            });
        }
        let node = graph.node(*id);
        let ty = region.block_types[id].clone();
        let op = block_op(&node.op, &ty);
        copy.insert(*id, ValueRef::first(body.add_node(&node.name, op, &operands, vec![ty], node.source.clone())?));
    }
    let one = index(&mut body, "one", 1)?;
    let next = body.add_node("next", Op::Binary(BinaryOp::Add), &[args[0], one], vec![index_t.clone()], None)?;
    let mut carried = vec![ValueRef::first(next)];
    for (j, ((id, d), ty)) in region.outputs.iter().zip(&out_types).enumerate() {
        let name = format!("{}.written", graph.node(*id).name);
        let op = Op::DynamicUpdateSlice { dim: *d as i64 };
        carried.push(ValueRef::first(body.add_node(name.as_str(), op, &[args[1 + j], copy[id], start], vec![ty.clone()], None)?));
    }
    body.set_outputs(carried)?;
    // A batch entry too large for one block (a loop over single heads): its rows in a loop
    // of their own, inside this one.
    block_regions(&mut body)?;

    // The loop, where the region was.
    let (cond, body) = (graph.add_region(cond), graph.add_region(body));
    let mut operands = vec![index(graph, &format!("{base}.blocks.first"), 0)?];
    for ((id, _), ty) in region.outputs.iter().zip(&out_types) {
        let name = format!("{}.blocks.init", graph.node(*id).name);
        operands.push(ValueRef::first(graph.add_node(name.as_str(), Op::Full { value: Scalar::Int(0) }, &[], vec![ty.clone()], None)?));
    }
    operands.extend(outside.iter().copied());
    let mut results = vec![index_t];
    results.extend(out_types);
    let looped = graph.add_node(format!("{base}.blocks").as_str(), Op::While { cond, body }, &operands, results, source)?;
    for (j, (id, _)) in region.outputs.iter().enumerate() {
        graph.replace_all_uses(ValueRef::first(*id), ValueRef { node: looped, result: j as u32 + 1 })?;
    }
    for (id, _, _) in region.nodes.iter().rev() {
        graph.remove_node(*id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use fxhlo_ir::{DType, InputKind, ReduceOp, UnaryOp};

    use super::*;

    /// `bmm(q, kt)` over `heads` of `n x n`, `exp`, then `then` applied to the exp (the graph's
    /// outputs are what `then` returns).
    fn scores(
        heads: i64,
        n: i64,
        then: impl FnOnce(&mut Graph, ValueRef, ValueRef) -> Vec<ValueRef>,
    ) -> Graph {
        let mut g = Graph::new("t");
        let input = |g: &mut Graph, name: &str, shape: Vec<i64>| {
            ValueRef::first(g.add_input(
                name,
                InputKind::UserInput,
                None,
                TensorType::new(DType::F32, shape),
                None,
            ))
        };
        let q = input(&mut g, "q", vec![heads, n, 8]);
        let kt = input(&mut g, "kt", vec![heads, 8, n]);
        let v = input(&mut g, "v", vec![heads, n, 8]);
        let s = add(&mut g, "s", Op::Bmm, &[q, kt]);
        let e = add(&mut g, "e", Op::Unary(UnaryOp::Exp), &[s]);
        let outputs = then(&mut g, e, v);
        g.set_outputs(outputs).unwrap();
        fxhlo_ir::verify(&g).unwrap();
        g
    }

    fn add(g: &mut Graph, name: &str, op: Op, operands: &[ValueRef]) -> ValueRef {
        let types: Vec<&TensorType> = operands.iter().map(|v| g.value_type(*v).unwrap()).collect();
        let results = infer(&op, &types).unwrap().unwrap();
        ValueRef::first(g.add_node(name, op, operands, results, None).unwrap())
    }

    /// The loops of `g` and the shapes of the products in their bodies.
    fn loops(g: &Graph) -> Vec<Vec<Vec<i64>>> {
        g.node_ids()
            .filter_map(|id| match g.node(id).op {
                Op::While { body, .. } => Some(&g.regions()[body as usize]),
                _ => None,
            })
            .map(|body| {
                body.node_ids()
                    .filter(|&id| matches!(body.node(id).op, Op::Bmm))
                    .map(|id| body.node(id).results[0].shape.to_vec())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn attention_sized_products_loop_over_blocks_of_heads() {
        let mut g = scores(16, 1024, |g, e, v| {
            let o = add(g, "o", Op::Bmm, &[e, v]);
            // Merging the heads mixes batch entries: it stays out and reads the loop's result.
            vec![add(
                g,
                "merged",
                Op::View {
                    shape: [16 * 1024, 8].into(),
                },
                &[o],
            )]
        });
        assert!(BatchBlocks.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        // 64 MB of scores in blocks of 8 MB: a loop whose body multiplies 2 heads at a time.
        assert_eq!(loops(&g), vec![vec![vec![2, 1024, 1024], vec![2, 1024, 8]]], "{}", fxhlo_ir::print(&g));
        assert!(!g.node_ids().any(|id| matches!(g.node(id).op, Op::Bmm)), "{}", fxhlo_ir::print(&g));
        assert!(
            !BatchBlocks.run(&mut g).unwrap(),
            "a second run found more to split"
        );
    }

    #[test]
    fn a_head_too_large_for_a_block_loops_over_blocks_of_rows() {
        // One head of 4,096 x 4,096 (64 MB): blocks of 512 query rows, keys and values whole.
        let mut g = scores(1, 4096, |g, e, v| vec![add(g, "o", Op::Bmm, &[e, v])]);
        assert!(BatchBlocks.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        assert_eq!(loops(&g), vec![vec![vec![1, 512, 4096], vec![1, 512, 8]]], "{}", fxhlo_ir::print(&g));
    }

    #[test]
    fn heads_too_large_for_a_block_loop_over_heads_then_rows() {
        // 8 heads of 4,096 x 4,096 (Stable Diffusion's 64 MB a head): a loop over the heads
        // whose body loops over blocks of 512 rows of its head.
        let mut g = scores(8, 4096, |g, e, v| vec![add(g, "o", Op::Bmm, &[e, v])]);
        assert!(BatchBlocks.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        let outer: Vec<&Graph> = g
            .node_ids()
            .filter_map(|id| match g.node(id).op {
                Op::While { body, .. } => Some(&g.regions()[body as usize]),
                _ => None,
            })
            .collect();
        assert_eq!(outer.len(), 1, "{}", fxhlo_ir::print(&g));
        assert_eq!(loops(outer[0]), vec![vec![vec![1, 512, 4096], vec![1, 512, 8]]], "{}", fxhlo_ir::print(&g));
    }

    #[test]
    fn a_second_attention_over_the_same_heads_joins_the_loop() {
        // The second attention reads the first's output head by head: one region, one loop.
        let mut g = scores(16, 1024, |g, e, v| {
            let o = add(g, "o", Op::Bmm, &[e, v]);
            let kt2 = add(g, "kt2", Op::Permute { dims: [0, 2, 1].into() }, &[o]);
            let s2 = add(g, "s2", Op::Bmm, &[o, kt2]);
            let e2 = add(g, "e2", Op::Unary(UnaryOp::Exp), &[s2]);
            vec![add(g, "o2", Op::Bmm, &[e2, o])]
        });
        assert!(BatchBlocks.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        let products = vec![vec![2, 1024, 1024], vec![2, 1024, 8], vec![2, 1024, 1024], vec![2, 1024, 8]];
        assert_eq!(loops(&g), vec![products], "{}", fxhlo_ir::print(&g));
        let large = g.node_ids().filter(|&id| is_seed(&g, id)).count();
        assert_eq!(large, 0, "a product over MIN_BYTES is left: {}", fxhlo_ir::print(&g));
    }

    #[test]
    fn blocks_are_at_most_block_bytes_along_the_batch_else_the_rows() {
        let mb = 1 << 20;
        let f32s = |shape: &[i64]| shape.iter().product::<i64>() as usize * 4;
        // 16 heads of 4 MB: blocks of 2 heads.
        assert_eq!(plan(&[16, 1024, 1024], f32s(&[16, 1024, 1024])), Some((0, 2)));
        // 128 entries (8 images x 16 heads) of 4 MB: 64 blocks of 2.
        assert_eq!(plan(&[128, 1024, 1024], f32s(&[128, 1024, 1024])), Some((0, 2)));
        // 24 heads of 1.5 MB: the largest divisor under 8 MB is 4 (6 blocks).
        assert_eq!(plan(&[24, 768, 512], 24 * 3 * mb / 2), Some((0, 4)));
        // Stable Diffusion's 8 heads of 4,096 x 4,096 (64 MB each): one head a block, whose
        // rows the body blocks in turn (the next case).
        assert_eq!(plan(&[8, 4096, 4096], f32s(&[8, 4096, 4096])), Some((0, 1)));
        // One head of 64 MB: blocks of 512 rows.
        assert_eq!(plan(&[1, 4096, 4096], f32s(&[1, 4096, 4096])), Some((1, 512)));
        // Rows too wide for a block (one row of 2 x 8M floats is 64 MB): left whole.
        assert_eq!(plan(&[2, 2, 8 << 20], f32s(&[2, 2, 8 << 20])), None);
        // More than MAX_BLOCKS blocks: left whole.
        assert_eq!(plan(&[1, 1 << 20, 1024], f32s(&[1, 1 << 20, 1024])), None);
    }

    #[test]
    fn small_products_and_large_results_stay_whole() {
        // 16 x 256 x 256: 4 MB of scores, under MIN_BYTES.
        let mut g = scores(16, 256, |g, e, v| vec![add(g, "o", Op::Bmm, &[e, v])]);
        assert!(!BatchBlocks.run(&mut g).unwrap());
        // The exp is returned: a concatenation of 64 MB would cost what the blocks save.
        let mut g = scores(16, 1024, |g, e, v| vec![add(g, "o", Op::Bmm, &[e, v]), e]);
        assert!(!BatchBlocks.run(&mut g).unwrap());
        // A sum over the heads mixes batch entries, and the exp it reads leaves the region.
        let mut g = scores(16, 1024, |g, e, _| {
            vec![add(
                g,
                "total",
                Op::Reduce {
                    op: ReduceOp::Sum,
                    dims: [0].into(),
                    keepdim: false,
                    dtype: None,
                },
                &[e],
            )]
        });
        assert!(!BatchBlocks.run(&mut g).unwrap());
    }
}

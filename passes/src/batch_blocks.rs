//! `batch-blocks`: a batched matrix product whose result is too large for the cache, and the
//! ops after it that treat each batch entry on its own, computed in blocks of the batch and
//! concatenated, so that each block's intermediates stay in the CPU's cache.
//!
//! Why: attention's scores (`q·kᵀ`, `[heads, n, n]`) are the largest tensors of a transformer
//! or UNet block at long sequences, and XLA's CPU backend allocates every intermediate of a
//! call afresh. Above glibc's mmap threshold (at most 32 MiB) each allocation is a new
//! mapping whose pages are faulted in on every call: a diffusers UNet's 16 heads x 1,024
//! positions x 8 make 64 MB of scores, and its call faulted in 150 MB (about 40,000 page
//! faults). In blocks of [`BLOCK_BYTES`] the temporaries come from the heap, reused: the
//! UNet at `-O2` took 192 ms per call without this pass and 167 ms with it (`-O1` 210 ms,
//! eager 140 ms). With glibc's tunables set (README, "Graphs with large intermediates") the
//! faults are gone either way and the blocks neither gain nor lose (167 and 168 ms); XLA
//! schedules the blocks breadth-first, so they do not gain from the cache either.
//!
//! The region is grown from each `bmm` whose result is over [`MIN_BYTES`]: every later node
//! that reads a region value and computes each batch entry from that entry alone joins it
//! (elementwise ops with broadcasting, reductions and softmax over other dims, views that keep
//! the batch dim whole, `expand`, `permute`, `bmm` whose operands share the batch), tracking
//! where the batch dim goes; a node that reads a region value otherwise, or reads a node that
//! does, stays out, and so does everything after it. The region's other operands are sliced
//! along their batch dim, or read whole where they broadcast along it. The rewrite is made
//! only when every value leaving the region is at most a quarter of the product's size (so
//! the blocks end in reductions or products, not in a `cat` of large tensors), and each
//! block's type is checked by the IR's inference before the graph is touched.
//!
//! Blocks are the largest divisor of the batch whose share of the product is at most
//! [`BLOCK_BYTES`], in at most [`MAX_BLOCKS`] blocks (up to [`MAX_BLOCK_BYTES`] each where
//! that needs larger ones); a product whose blocks would be larger still is left whole (a
//! single head of Stable Diffusion's 4,096-position attention is 64 MB). The CPU plugin only: other
//! targets allocate and fuse their own way; and `-O2` only, with the e-graph, until the ablation
//! makes `-O2` the default.
//!
//! Relies on: verified input. Preserves: every output's value and type (each element is
//! computed by the same ops; XLA may pick another dot kernel for the smaller shapes); the
//! region's nodes are removed.
//!
//! ```text
//! before:  %s = aten.bmm %q, %kt : f32[16,1024,1024]
//!          %e = aten.exp %s : f32[16,1024,1024]
//!          %o = aten.bmm %e, %v : f32[16,1024,8]
//! after:   %q.block0 = aten.slice %q {dim = 0, start = 0, end = 2, step = 1} : f32[2,1024,8]
//!          ... (%kt and %v sliced the same way)
//!          %s.block0 = aten.bmm %q.block0, %kt.block0 : f32[2,1024,1024]
//!          %e.block0 = aten.exp %s.block0 : f32[2,1024,1024]
//!          %o.block0 = aten.bmm %e.block0, %v.block0 : f32[2,1024,8]
//!          ... (blocks 1 to 7)
//!          %o.blocks = aten.cat %o.block0, ..., %o.block7 {dim = 0} : f32[16,1024,8]
//! ```

use std::collections::{HashMap, HashSet};

use fxhlo_ir::infer::{infer, normalize_dim};
use fxhlo_ir::{Graph, NodeId, Op, TensorType, ValueRef};

use crate::{Error, Pass, Result};

/// The largest block of a product, in bytes: well under glibc's largest mmap threshold (32
/// MiB), so that a block's intermediates are reused heap memory (see the module doc).
pub const BLOCK_BYTES: usize = 8 << 20;

/// The largest block where [`BLOCK_BYTES`] would make more than [`MAX_BLOCKS`] blocks: half of
/// glibc's largest mmap threshold.
pub const MAX_BLOCK_BYTES: usize = 16 << 20;

/// The most blocks one product is split into: each block is a copy of the region's nodes
/// (about 25 for attention), which XLA compiles one by one.
pub const MAX_BLOCKS: i64 = 16;

/// Products at most this large are left whole: two blocks at least.
pub const MIN_BYTES: usize = 2 * BLOCK_BYTES;

/// The pass; see the module doc.
pub struct BatchBlocks;

impl Pass for BatchBlocks {
    fn name(&self) -> &'static str {
        "batch-blocks"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let fail = |message: String| Error::Failed {
            pass: "batch-blocks",
            message,
        };
        let seeds: Vec<NodeId> = graph.node_ids().filter(|&id| is_seed(graph, id)).collect();
        let mut changed = false;
        for seed in seeds {
            // An earlier rewrite may have removed it (it was inside that region), and a node
            // added since may have taken its id: ask again.
            if !graph.node_ids().any(|id| id == seed) || !is_seed(graph, seed) {
                continue;
            }
            let Some(region) = grow(graph, seed).map_err(|e| fail(e.to_string()))? else {
                continue;
            };
            split(graph, &region).map_err(|e| fail(e.to_string()))?;
            changed = true;
        }
        Ok(changed)
    }
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
    /// The batch size.
    batch: i64,
    /// Entries per block.
    block: i64,
    /// Region nodes in topological order, with their result's batch dim and operand reads.
    nodes: Vec<(NodeId, usize, Vec<Read>)>,
    /// Region values read outside it (or returned), with their batch dim.
    outputs: Vec<(NodeId, usize)>,
}

/// The region of `seed`, or `None` when splitting it would not pay or cannot be typed.
fn grow(graph: &Graph, seed: NodeId) -> fxhlo_ir::Result<Option<Region>> {
    let seed_ty = &graph.node(seed).results[0];
    let batch = seed_ty.shape[0];
    let Some(seed_bytes) = seed_ty.checked_size_bytes() else {
        return Ok(None);
    };
    if batch < 2 {
        return Ok(None);
    }
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
            Some((0, vec![Read::Slice(0), Read::Slice(0)]))
        } else if reads_tainted {
            None
        } else {
            reads(graph, id, batch, &dim_of)
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
    let Some(block) = block_size(batch, seed_bytes / batch as usize) else {
        return Ok(None);
    };
    let region = Region {
        batch,
        block,
        nodes,
        outputs,
    };
    Ok(typechecks(graph, &region).then_some(region))
}

/// Entries per block for a product of `batch` entries of `per_entry` bytes: the largest
/// divisor of `batch` whose block is at most [`BLOCK_BYTES`], or, where that makes more than
/// [`MAX_BLOCKS`] blocks, the smallest that makes at most that many, if its block is at most
/// [`MAX_BLOCK_BYTES`]; `None` when no block size does both (blocks that large would be
/// mapped afresh anyway, or there would be too many for the compile).
fn block_size(batch: i64, per_entry: usize) -> Option<i64> {
    let divisors = (1..=batch).filter(|b| batch % b == 0);
    let fits = |b: &i64, bytes: usize| {
        (*b as usize).saturating_mul(per_entry) <= bytes && batch / b <= MAX_BLOCKS
    };
    divisors
        .clone()
        .filter(|b| fits(b, BLOCK_BYTES))
        .last()
        .or_else(|| divisors.filter(|b| fits(b, MAX_BLOCK_BYTES)).next())
}

/// The batch dim of node `id`'s result and how it reads each operand, when it computes each
/// batch entry from that entry of its region operands alone; `None` otherwise.
fn reads(
    graph: &Graph,
    id: NodeId,
    batch: i64,
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
        if out.shape.get(d_out) != Some(&batch) {
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
                    Some(e) if t.shape[e] == batch => Some(Read::Slice(e)),
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
            // The batch dim survives a row-major reshape when the elements before it and the
            // dim itself map onto whole dims of the result.
            let d = region_dim(0)?;
            let before: i64 = types[0].shape[..d].iter().product();
            let mut prefix = 1;
            for (e, &size) in out.shape.iter().enumerate() {
                if prefix == before && size == batch {
                    return Some((e, vec![Read::Region]));
                }
                prefix *= size;
            }
            None
        }
        Op::Expand { .. } => {
            let d = region_dim(0)?;
            let d_out = d + out.rank() - types[0].rank();
            (out.shape[d_out] == batch).then(|| (d_out, vec![Read::Region]))
        }
        Op::Permute { dims } => {
            let d = region_dim(0)?;
            let d_out = dims
                .iter()
                .position(|&x| normalize_dim(x, types[0].rank()).ok() == Some(d))?;
            Some((d_out, vec![Read::Region]))
        }
        Op::Bmm => {
            let read = |i: usize| match region_dim(i) {
                Some(0) => Some(Read::Region),
                Some(_) => None,
                None if types[i].shape[0] == batch => Some(Read::Slice(0)),
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

/// Whether every region node, fed one block, infers the block's type of its result.
fn typechecks(graph: &Graph, region: &Region) -> bool {
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
        let Some(types) = types else { return false };
        let refs: Vec<&TensorType> = types.iter().collect();
        match infer(&block_op(&node.op, &want), &refs) {
            Ok(Some(results)) if results.len() == 1 && results[0] == want => {
                block_ty.insert(*id, want);
            }
            _ => return false,
        }
    }
    true
}

/// Replaces the region with its blocks and a `cat` per value leaving it.
fn split(graph: &mut Graph, region: &Region) -> fxhlo_ir::Result<()> {
    let blocks = region.batch / region.block;
    let mut slices: HashMap<(ValueRef, usize, i64), ValueRef> = HashMap::new();
    let mut per_output: Vec<Vec<ValueRef>> = vec![Vec::new(); region.outputs.len()];
    for k in 0..blocks {
        let (start, end) = (k * region.block, (k + 1) * region.block);
        let mut copy: HashMap<NodeId, ValueRef> = HashMap::new();
        for (id, d, reads) in &region.nodes {
            let operands = graph.operands(*id);
            let mut args = Vec::with_capacity(operands.len());
            for (v, read) in operands.iter().zip(reads) {
                args.push(match read {
                    Read::Region => copy[&v.node],
                    Read::Whole => *v,
                    Read::Slice(e) => {
                        if let Some(&s) = slices.get(&(*v, *e, k)) {
                            s
                        } else {
                            let ty = resized(
                                graph.value_type(*v).expect("a verified operand"),
                                *e,
                                region.block,
                            );
                            let name = format!("{}.block{k}", graph.node(v.node).name);
                            let op = Op::Slice {
                                dim: *e as i64,
                                start,
                                end,
                                step: 1,
                            };
                            let source = graph.node(v.node).source.clone();
                            let s = ValueRef::first(graph.add_node(
                                name.as_str(),
                                op,
                                &[*v],
                                vec![ty],
                                source,
                            )?);
                            slices.insert((*v, *e, k), s);
                            s
                        }
                    }
                });
            }
            let node = graph.node(*id);
            let ty = resized(&node.results[0], *d, region.block);
            let (name, op, source) = (
                format!("{}.block{k}", node.name),
                block_op(&node.op, &ty),
                node.source.clone(),
            );
            copy.insert(
                *id,
                ValueRef::first(graph.add_node(name.as_str(), op, &args, vec![ty], source)?),
            );
        }
        for (i, (id, _)) in region.outputs.iter().enumerate() {
            per_output[i].push(copy[id]);
        }
    }
    for ((id, d), parts) in region.outputs.iter().zip(per_output) {
        let node = graph.node(*id);
        let (name, ty, source) = (
            format!("{}.blocks", node.name),
            node.results[0].clone(),
            node.source.clone(),
        );
        let cat = graph.add_node(
            name.as_str(),
            Op::Cat { dim: *d as i64 },
            &parts,
            vec![ty],
            source,
        )?;
        graph.replace_all_uses(ValueRef::first(*id), ValueRef::first(cat))?;
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

    fn cats(g: &Graph) -> usize {
        g.node_ids()
            .filter(|&id| matches!(g.node(id).op, Op::Cat { .. }))
            .count()
    }

    #[test]
    fn attention_sized_products_split_and_merged_heads_read_the_cat() {
        let mut g = scores(16, 1024, |g, e, v| {
            let o = add(g, "o", Op::Bmm, &[e, v]);
            // Merging the heads mixes batch entries: it stays out and reads the concatenation.
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
        assert_eq!(cats(&g), 1);
        // 64 MB of scores in blocks of 8 MB: 8 blocks of 2 heads.
        let blocks: Vec<_> = g
            .node_ids()
            .filter(|&id| matches!(g.node(id).op, Op::Bmm))
            .map(|id| g.node(id).results[0].shape[0])
            .collect();
        assert_eq!(blocks, vec![2; 16], "{}", fxhlo_ir::print(&g));
        assert!(
            !BatchBlocks.run(&mut g).unwrap(),
            "a second run found more to split"
        );
    }

    #[test]
    fn two_attentions_split_one_after_the_other() {
        // The second attention reads the first's output: two regions, two concatenations.
        let mut g = scores(16, 1024, |g, e, v| {
            let o = add(g, "o", Op::Bmm, &[e, v]);
            let kt2 = add(g, "kt2", Op::Permute { dims: [0, 2, 1].into() }, &[o]);
            let s2 = add(g, "s2", Op::Bmm, &[o, kt2]);
            let e2 = add(g, "e2", Op::Unary(UnaryOp::Exp), &[s2]);
            vec![add(g, "o2", Op::Bmm, &[e2, o])]
        });
        assert!(BatchBlocks.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        assert!(cats(&g) >= 1, "{}", fxhlo_ir::print(&g));
        let large = g.node_ids().filter(|&id| is_seed(&g, id)).count();
        assert_eq!(large, 0, "a product over MIN_BYTES is left: {}", fxhlo_ir::print(&g));
    }

    #[test]
    fn block_sizes_keep_blocks_small_and_few() {
        let mb = 1 << 20;
        // 16 heads of 4 MB: 8 blocks of 2 heads.
        assert_eq!(block_size(16, 4 * mb), Some(2));
        // 128 entries (8 images x 16 heads) of 4 MB: 16 blocks of 8 entries would be 32 MB.
        assert_eq!(block_size(128, 4 * mb), None);
        // 64 entries of 1 MB: 8 MB blocks are 8 entries, 8 blocks.
        assert_eq!(block_size(64, mb), Some(8));
        // 256 entries of 0.5 MB: 8 MB blocks would be 16 blocks of 16.
        assert_eq!(block_size(256, mb / 2), Some(16));
        // 32 heads of 12 MB: one head a block is 32 blocks; 2 heads are 24 MB.
        assert_eq!(block_size(32, 12 * mb), None);
        // 8 heads of 64 MB: no block under the threshold.
        assert_eq!(block_size(8, 64 * mb), None);
        // 24 heads of 1.5 MB: the largest divisor under 8 MB is 4 (6 blocks).
        assert_eq!(block_size(24, 3 * mb / 2), Some(4));
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

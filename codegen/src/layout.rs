//! Device layouts of resident inputs.
//!
//! PyTorch keeps a convolution kernel as `[out, in, k...]` and a linear weight as `[out, in]`
//! read through `permute([1, 0])`; XLA's CPU (Eigen) kernels want `[k..., in, out]` and
//! `[in, out]`. For a graph input the device keeps between calls (a parameter, buffer or
//! constant), XLA would transpose it on every call. Instead `@main` declares such an input
//! already permuted, the caller uploads it permuted once, and the lowering transposes it back
//! at entry: XLA folds that transpose into the convolution's dimension numbers, or cancels it
//! against the graph's own `permute`, so no data moves per call.
//!
//! An input is permuted when every use of it agrees on one permutation: the kernel operand of
//! a (non-transposed) convolution wants `[2, .., rank-1, 1, 0]`; a `permute` wants its own
//! dims. Any other use, or a graph output, leaves the input as it is.

use std::collections::HashMap;

use fxhlo_ir::{Graph, NodeId, Op, TensorType};

/// Input node -> the permutation its data is uploaded in (`declared[i] = logical[perm[i]]`).
pub type InputLayouts = HashMap<NodeId, Vec<usize>>;

/// The layouts of the inputs for which `eligible` holds (the caller says which inputs stay on
/// the device: permuting a per-call input would cost what it saves).
pub fn input_layouts(graph: &Graph, eligible: impl Fn(NodeId) -> bool) -> InputLayouts {
    let candidates: Vec<NodeId> = graph.inputs().iter().copied().filter(|&id| eligible(id)).collect();
    // None: no use seen yet; Some(None): uses disagree (or one cannot take a permuted input).
    let mut wanted: HashMap<NodeId, Option<Option<Vec<usize>>>> = candidates.iter().map(|&id| (id, None)).collect();
    for id in graph.node_ids() {
        for (k, v) in graph.operands(id).iter().enumerate() {
            let Some(slot) = wanted.get_mut(&v.node) else { continue };
            let rank = graph.node(v.node).results[0].rank();
            let want = match &graph.node(id).op {
                Op::Convolution { transposed: false, .. } if k == 1 && rank >= 3 => {
                    Some((2..rank).chain([1, 0]).collect::<Vec<_>>())
                }
                Op::Permute { dims } => dims.iter().map(|&d| usize::try_from(d).ok()).collect(),
                _ => None,
            };
            *slot = match (slot.take(), want) {
                (None, w) => Some(w),
                (Some(Some(a)), Some(b)) if a == b => Some(Some(a)),
                _ => Some(None),
            };
        }
    }
    for v in graph.outputs() {
        wanted.insert(v.node, Some(None));
    }
    candidates
        .into_iter()
        .filter_map(|id| {
            let perm = wanted.get(&id).cloned().flatten().flatten()?;
            let rank = graph.node(id).results[0].rank();
            let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
            (perm.len() == rank && !identity && is_permutation(&perm)).then_some((id, perm))
        })
        .collect()
}

fn is_permutation(perm: &[usize]) -> bool {
    let mut seen = vec![false; perm.len()];
    perm.iter().all(|&p| p < perm.len() && !std::mem::replace(&mut seen[p], true))
}

/// `ty` with its dims permuted by `perm`.
pub fn permuted(ty: &TensorType, perm: &[usize]) -> TensorType {
    TensorType::new(ty.dtype, perm.iter().map(|&p| ty.shape[p]).collect::<Vec<_>>())
}

/// The inverse permutation: `inverse(p)[p[i]] = i`.
pub fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

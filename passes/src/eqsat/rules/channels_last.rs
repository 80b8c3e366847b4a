//! Channels-last layout rules: the `channels-last` pass's rewrite as e-graph rules, for the
//! CPU plugin (whose XLA backend computes convolutions channels-last and every other op in
//! the row-major order of its logical shape; see `channels_last.rs`).
//!
//! A 2-D convolution equals the channels-last convolution of its input permuted to
//! `[N, H, W, C]`, permuted back (`conv-channels-last`); then the permute back sinks through
//! what reads it: elementwise ops (`sink-permute`: every 4-D operand permuted the same way,
//! smaller ones broadcast along the new order), inference batch norm and group norm (their
//! formulas along the last dim, `norm-channels-last`), nearest upsampling (`upsample-channels-
//! last`), slices and concatenations (`slice-cat-channels-last`), max and average pools (their
//! `channels_last` form, `pool-channels-last`) and reductions (the dims mapped,
//! `reduce-channels-last`). Where two
//! such values meet again at a convolution, `permute-permute` and `permute-identity` cancel
//! the permutes between them. The cost model ([`crate::eqsat::cost::Roofline::layout_copies`])
//! prices a rank-4 permute as a copy and a channels-first convolution as the two copies XLA
//! puts around it, so the extraction keeps `[N, H, W, C]` where it saves copies.

use egg::{rewrite, Applier, Id, PatternAst, Subst, Symbol};
use fxhlo_ir::{BinaryOp, DType, Op, Shape, TensorType, UnaryOp};

use super::{class_ty, slice_attr, ty, union_into, var, Rule, EG};
use crate::eqsat::analysis::TensorAnalysis;
use crate::eqsat::lang::{ConvAttr, ENode, Ints};

/// The rules that look at every class (pattern `?e`) and check its nodes themselves: their
/// match counts are the e-graph's class count, not a sign of a rule blowing up, so the backoff
/// scheduler must not ban them (banned, a chain of ops between two convolutions took a round
/// per ban and the UNet hit the iteration limit).
pub const SCAN_ALL: &[&str] =
    &["sink-permute", "norm-channels-last", "upsample-channels-last", "slice-cat-channels-last", "pool-channels-last", "reduce-channels-last"];

/// `[N, C, H, W]` to `[N, H, W, C]`.
const TO_LAST: [i64; 4] = [0, 2, 3, 1];
/// `[N, H, W, C]` back to `[N, C, H, W]`: a value's dim `d` is its channels-last twin's dim
/// `TO_FIRST[d]`.
const TO_FIRST: [i64; 4] = [0, 3, 1, 2];

/// `y` when class `id` holds `permute(TO_FIRST, y)`.
fn channels_last_of(egraph: &EG, id: Id) -> Option<Id> {
    egraph[id].nodes.iter().find_map(|n| match n {
        ENode::Permute([dims, y]) if egraph[*dims].data.ints().is_some_and(|d| d.0 == TO_FIRST) => Some(*y),
        _ => None,
    })
}

/// `permute(dims, x)`.
fn permute(egraph: &mut EG, dims: &[i64], x: Id) -> Id {
    let dims = egraph.add(ENode::Ints(Ints(dims.to_vec())));
    egraph.add(ENode::Permute([dims, x]))
}

/// A node applying `op` (with `declared`, its type where inference gives none) to `children`.
fn lifted(egraph: &mut EG, op: Op, declared: Option<TensorType>, children: Vec<Id>) -> Id {
    let r = egraph.analysis.intern(op, declared);
    egraph.add(ENode::Lifted(r, children))
}

/// Unions `class` with `permute(TO_FIRST, twin)`.
fn union_with_twin(egraph: &mut EG, class: Id, twin: Id) -> Vec<Id> {
    let back = permute(egraph, &TO_FIRST, twin);
    union_into(egraph, class, back)
}

/// The ops `want`ed (with their operand classes) that class `id` computes through `orig` and
/// `lifted` nodes: what the rules below look into besides the structured nodes. These rules
/// scan every class on every iteration, so an op is cloned only once `want` took it.
fn ops_of(egraph: &EG, id: Id, want: fn(&Op) -> bool) -> Vec<(Op, Vec<Id>)> {
    egraph[id]
        .nodes
        .iter()
        .filter_map(|n| {
            let (op, children) = match n {
                ENode::Orig(key, children) if key.result == 0 => (&egraph.analysis.values.get(key)?.op, children),
                ENode::Lifted(r, children) => (&egraph.analysis.op(*r)?.0, children),
                _ => return None,
            };
            want(op).then(|| (op.clone(), children.clone()))
        })
        .collect()
}

/// Whether `op` is computed element by element (any layout of its operands gives the same
/// layout of its result).
fn elementwise(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Where | Op::Clamp { .. } | Op::Convert { .. } | Op::Copy
            | Op::Elu { .. } | Op::LeakyRelu { .. } | Op::ClampTensor { .. }
    )
}

/// `conv(x, w) = permute(TO_FIRST, conv_channels_last(permute(TO_LAST, x), w))` for a 2-D
/// channels-first convolution (with or without a bias).
struct ConvChannelsLast;

impl Applier<ENode, TensorAnalysis> for ConvChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let attr = subst[var("?a")];
        let Some(mut ints) = egraph[attr].data.ints().cloned() else { return vec![] };
        let Some(Op::Convolution { stride, channels_last: false, .. }) = ConvAttr::decode(&ints, false) else { return vec![] };
        if stride.len() != 2 || ty(egraph, subst, var("?x")).is_none_or(|x| x.rank() != 4) {
            return vec![];
        }
        if let Some(last) = ints.0.last_mut() {
            *last = 1; // channels_last
        }
        let attr = egraph.add(ENode::Ints(ints));
        let x = permute(egraph, &TO_LAST, subst[var("?x")]);
        let conv = match subst.get(var("?b")) {
            Some(&b) => egraph.add(ENode::ConvBias([attr, x, subst[var("?w")], b])),
            None => egraph.add(ENode::Conv([attr, x, subst[var("?w")]])),
        };
        union_with_twin(egraph, class, conv)
    }
}

/// An elementwise op of a value held channels-last, computed channels-last: every 4-D operand
/// that is `permute(TO_FIRST, y)` is read as `y`, a rank-0 operand as it is, any other operand
/// (a 4-D value in the graph's layout, a `[C, 1, 1]` parameter) viewed as 4-D and permuted
/// `TO_LAST`, so that broadcasting still lines up.
struct SinkPermute;

impl Applier<ENode, TensorAnalysis> for SinkPermute {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        if class_ty(egraph, class).is_none_or(|t| t.rank() != 4) {
            return vec![];
        }
        let mut candidates: Vec<(Op, Vec<Id>)> = egraph[class]
            .nodes
            .iter()
            .filter_map(|n| match n {
                ENode::Add([a, b]) => Some((Op::Binary(BinaryOp::Add), vec![*a, *b])),
                ENode::Mul([a, b]) => Some((Op::Binary(BinaryOp::Mul), vec![*a, *b])),
                _ => None,
            })
            .collect();
        candidates.extend(ops_of(egraph, class, elementwise));
        let mut changed = Vec::new();
        for (op, children) in candidates {
            if !children.iter().any(|&c| channels_last_of(egraph, c).is_some()) {
                continue;
            }
            let mut operands = Vec::with_capacity(children.len());
            for &c in &children {
                let operand = match (channels_last_of(egraph, c), class_ty(egraph, c).map(|t| t.shape.clone())) {
                    (Some(y), _) => y,
                    (None, Some(shape)) if shape.is_empty() => c,
                    (None, Some(shape)) if shape.len() == 4 => permute(egraph, &TO_LAST, c),
                    (None, Some(shape)) if shape.len() < 4 => {
                        let mut four: Vec<i64> = vec![1; 4 - shape.len()];
                        four.extend(shape.iter());
                        let s = egraph.add(ENode::Ints(Ints(four)));
                        let viewed = egraph.add(ENode::View([s, c]));
                        permute(egraph, &TO_LAST, viewed)
                    }
                    _ => break,
                };
                operands.push(operand);
            }
            if operands.len() != children.len() {
                continue;
            }
            let twin = match (&op, &operands[..]) {
                (Op::Binary(BinaryOp::Add), &[a, b]) => egraph.add(ENode::Add([a, b])),
                (Op::Binary(BinaryOp::Mul), &[a, b]) => egraph.add(ENode::Mul([a, b])),
                _ => lifted(egraph, op, None, operands),
            };
            changed.extend(union_with_twin(egraph, class, twin));
        }
        changed
    }
}

/// `x` converted to `dtype` (itself when it has it).
fn convert(egraph: &mut EG, x: Id, dtype: DType) -> Id {
    match class_ty(egraph, x) {
        Some(t) if t.dtype == dtype => x,
        _ => lifted(egraph, Op::Convert { dtype }, None, vec![x]),
    }
}

/// A rank-0 `dtype` constant of `value`.
fn scalar(egraph: &mut EG, value: fxhlo_ir::Scalar, dtype: DType) -> Id {
    lifted(egraph, Op::Full { value }, Some(TensorType::new(dtype, Shape::from(&[][..]))), vec![])
}

/// The end of a normalization computed channels-last: the normalized twin `y` (in the work
/// dtype) times the `[C]` weight and plus the `[C]` bias where there are (`params` starts with
/// them), converted back to `out`.
fn affine(egraph: &mut EG, mut y: Id, params: &[Id], has_weight: bool, has_bias: bool, work: DType, out: DType) -> Id {
    if has_weight {
        let w = convert(egraph, params[0], work);
        y = egraph.add(ENode::Mul([y, w]));
    }
    if has_bias {
        let b = convert(egraph, params[has_weight as usize], work);
        y = egraph.add(ENode::Add([y, b]));
    }
    convert(egraph, y, out)
}

/// Batch norm (inference) and group norm of a value held channels-last, computed on the twin
/// as the `channels-last` pass computes them, in float32 for 16-bit inputs:
/// - batch norm: `(y - mean)·rsqrt(var + eps)` along the last dim, then the affine part (the
///   `[C]` vectors are the parameters': free when they are frozen);
/// - group norm: the twin viewed as `[N, H·W, G, C/G]`, the mean and variance over dims 1 and 3
///   (two passes), normalized, viewed back, then the affine part.
struct NormChannelsLast;

impl Applier<ENode, TensorAnalysis> for NormChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let mut changed = Vec::new();
        for (op, children) in ops_of(egraph, class, |op| matches!(op, Op::BatchNorm { .. } | Op::GroupNorm { .. })) {
            let Some((&x, params)) = children.split_first() else { continue };
            let Some(y) = channels_last_of(egraph, x) else { continue };
            let (Some(x_t), Some(y_t)) = (class_ty(egraph, x).cloned(), class_ty(egraph, y).cloned()) else { continue };
            if !x_t.dtype.is_float() {
                continue;
            }
            let work = crate::builder::work_dtype(x_t.dtype);
            let twin = match op {
                Op::BatchNorm { eps, has_weight, has_bias } if params.len() == 2 + has_weight as usize + has_bias as usize => {
                    let (mean, var_) = (params[params.len() - 2], params[params.len() - 1]);
                    let (yw, mean, var_) = (convert(egraph, y, work), convert(egraph, mean, work), convert(egraph, var_, work));
                    let eps = scalar(egraph, eps, work);
                    let shifted = egraph.add(ENode::Add([var_, eps]));
                    let rstd = lifted(egraph, Op::Unary(UnaryOp::Rsqrt), None, vec![shifted]);
                    let centred = lifted(egraph, Op::Binary(BinaryOp::Sub), None, vec![yw, mean]);
                    let normalized = egraph.add(ENode::Mul([centred, rstd]));
                    affine(egraph, normalized, params, has_weight, has_bias, work, x_t.dtype)
                }
                Op::GroupNorm { groups, eps, has_weight, has_bias } if params.len() == has_weight as usize + has_bias as usize => {
                    let [n, h, w, c] = y_t.shape[..] else { continue };
                    if groups <= 0 || c % groups != 0 {
                        continue;
                    }
                    let mean = || Op::Reduce { op: fxhlo_ir::ReduceOp::Mean, dims: Shape::from(&[1i64, 3][..]), keepdim: true, dtype: None };
                    let yw = convert(egraph, y, work);
                    let shape = egraph.add(ENode::Ints(Ints(vec![n, h * w, groups, c / groups])));
                    let grouped = egraph.add(ENode::View([shape, yw]));
                    let mu = lifted(egraph, mean(), None, vec![grouped]);
                    let centred = lifted(egraph, Op::Binary(BinaryOp::Sub), None, vec![grouped, mu]);
                    let squares = egraph.add(ENode::Mul([centred, centred]));
                    let var_ = lifted(egraph, mean(), None, vec![squares]);
                    let eps = scalar(egraph, eps, work);
                    let shifted = egraph.add(ENode::Add([var_, eps]));
                    let rstd = lifted(egraph, Op::Unary(UnaryOp::Rsqrt), None, vec![shifted]);
                    let normalized = egraph.add(ENode::Mul([centred, rstd]));
                    let back = egraph.add(ENode::Ints(Ints(vec![n, h, w, c])));
                    let ungrouped = egraph.add(ENode::View([back, normalized]));
                    affine(egraph, ungrouped, params, has_weight, has_bias, work, x_t.dtype)
                }
                _ => continue,
            };
            changed.extend(union_with_twin(egraph, class, twin));
        }
        changed
    }
}

/// Nearest upsampling by whole factors of a value held channels-last: each pixel of the twin
/// repeated, as `[N, H, 1, W, 1, C]` expanded to `[N, H, fh, W, fw, C]` and viewed back.
struct UpsampleChannelsLast;

impl Applier<ENode, TensorAnalysis> for UpsampleChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let mut changed = Vec::new();
        for (op, children) in ops_of(egraph, class, |op| matches!(op, Op::UpsampleNearest { .. })) {
            let Op::UpsampleNearest { output_size } = op else { continue };
            let (&[x], &[oh, ow]) = (&children[..], &output_size[..]) else { continue };
            let Some(y) = channels_last_of(egraph, x) else { continue };
            let Some([n, h, w, c]) = class_ty(egraph, y).and_then(|t| <[i64; 4]>::try_from(&t.shape[..]).ok()) else { continue };
            if h <= 0 || w <= 0 || oh % h != 0 || ow % w != 0 {
                continue;
            }
            let spread = egraph.add(ENode::Ints(Ints(vec![n, h, 1, w, 1, c])));
            let spread = egraph.add(ENode::View([spread, y]));
            let sizes = Shape::from(&[n, h, oh / h, w, ow / w, c][..]);
            let repeated = lifted(egraph, Op::Expand { sizes }, None, vec![spread]);
            let shape = egraph.add(ENode::Ints(Ints(vec![n, oh, ow, c])));
            let twin = egraph.add(ENode::View([shape, repeated]));
            changed.extend(union_with_twin(egraph, class, twin));
        }
        changed
    }
}

/// A dim of a 4-D value, a negative one counted from the end; `None` out of range.
fn resolve(dim: i64) -> Option<usize> {
    let d = if dim < 0 { dim + 4 } else { dim };
    (0..4).contains(&d).then_some(d as usize)
}

/// A dim of a value held channels-last, as a dim of its twin.
fn twin_dim(dim: i64) -> Option<i64> {
    resolve(dim).map(|d| TO_FIRST[d])
}

/// A slice or a concatenation of values held channels-last, along the twin's dim.
struct SliceCatChannelsLast;

impl Applier<ENode, TensorAnalysis> for SliceCatChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        if class_ty(egraph, class).is_none_or(|t| t.rank() != 4) {
            return vec![];
        }
        // Opaque slices and cats (a cat of more than two); the structured ones.
        let mut found: Vec<(Op, Vec<Id>)> = ops_of(egraph, class, |op| matches!(op, Op::Slice { .. } | Op::Cat { .. }));
        for n in &egraph[class].nodes {
            match n {
                ENode::Slice([a, x]) => {
                    if let Some([dim, start, end, step]) = slice_attr(egraph, *a, 4) {
                        found.push((Op::Slice { dim, start, end, step }, vec![*x]));
                    }
                }
                ENode::Cat([a, x, y]) => {
                    if let Some(&[dim]) = egraph[*a].data.ints().map(|i| &i.0[..]) {
                        found.push((Op::Cat { dim }, vec![*x, *y]));
                    }
                }
                _ => {}
            }
        }
        let mut changed = Vec::new();
        for (op, children) in found {
            let twins: Option<Vec<Id>> = children.iter().map(|&c| channels_last_of(egraph, c)).collect();
            let Some(twins) = twins.filter(|t| !t.is_empty()) else { continue };
            let twin = match op {
                Op::Slice { dim, start, end, step } => {
                    let Some(d) = twin_dim(dim) else { continue };
                    let ints = egraph.add(ENode::Ints(Ints(vec![d, start, end, step])));
                    egraph.add(ENode::Slice([ints, twins[0]]))
                }
                Op::Cat { dim } => {
                    let Some(d) = twin_dim(dim) else { continue };
                    match twins[..] {
                        [a, b] => {
                            let ints = egraph.add(ENode::Ints(Ints(vec![d])));
                            egraph.add(ENode::Cat([ints, a, b]))
                        }
                        _ => lifted(egraph, Op::Cat { dim: d }, None, twins),
                    }
                }
                _ => continue,
            };
            changed.extend(union_with_twin(egraph, class, twin));
        }
        changed
    }
}

/// A 2-D max pool (without indices) or average pool of a value held channels-last, in its
/// `channels_last` form.
struct PoolChannelsLast;

impl Applier<ENode, TensorAnalysis> for PoolChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let mut changed = Vec::new();
        for (op, children) in ops_of(egraph, class, |op| matches!(op, Op::MaxPool { .. } | Op::AvgPool { .. })) {
            let op = match op {
                Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices: false, channels_last: false } if kernel.len() == 2 => {
                    Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices: false, channels_last: true }
                }
                Op::AvgPool { kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, channels_last: false } if kernel.len() == 2 => {
                    Op::AvgPool { kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, channels_last: true }
                }
                _ => continue,
            };
            let [x] = children[..] else { continue };
            let Some(y) = channels_last_of(egraph, x) else { continue };
            let twin = lifted(egraph, op, None, vec![y]);
            changed.extend(union_with_twin(egraph, class, twin));
        }
        changed
    }
}

/// A reduction of a value held channels-last, over the same dims of the twin; with `keepdim`
/// the result is the twin's reduction permuted back, without it the twin's reduction itself
/// when the dims left keep their order (a mean over H and W leaves `[N, C]` either way).
struct ReduceChannelsLast;

impl Applier<ENode, TensorAnalysis> for ReduceChannelsLast {
    fn apply_one(&self, egraph: &mut EG, class: Id, _: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let mut changed = Vec::new();
        for (op, children) in ops_of(egraph, class, |op| matches!(op, Op::Reduce { .. })) {
            let Op::Reduce { op: reduce, dims, keepdim, dtype } = op else { continue };
            let [x] = children[..] else { continue };
            let Some(y) = channels_last_of(egraph, x) else { continue };
            let resolved: Option<Vec<usize>> = dims.iter().map(|&d| resolve(d)).collect();
            let Some(resolved) = resolved.filter(|r| !r.is_empty()) else { continue };
            let mut mapped: Vec<i64> = resolved.iter().map(|&d| TO_FIRST[d]).collect();
            mapped.sort();
            let twin = Op::Reduce { op: reduce, dims: Shape::from(mapped.as_slice()), keepdim, dtype };
            if keepdim {
                let twin = lifted(egraph, twin, None, vec![y]);
                changed.extend(union_with_twin(egraph, class, twin));
            } else {
                let left: Vec<i64> = (0..4).filter(|d| !resolved.contains(d)).map(|d| TO_FIRST[d]).collect();
                if left.windows(2).all(|w| w[0] < w[1]) {
                    let same = lifted(egraph, twin, None, vec![y]);
                    changed.extend(union_into(egraph, class, same));
                }
            }
        }
        changed
    }
}

/// The channels-last rules (the `eqsat-layout` pass's, for the CPU plugin).
#[rustfmt::skip]
pub fn rules() -> Vec<Rule> {
    vec![
        // conv(x) = permute(TO_FIRST, conv_cl(permute(TO_LAST, x)))
        rewrite!("conv-channels-last"; "(conv ?a ?x ?w)" => { ConvChannelsLast }),
        rewrite!("convb-channels-last"; "(convb ?a ?x ?w ?b)" => { ConvChannelsLast }),
        // f(permute(TO_FIRST, y), ...) = permute(TO_FIRST, f(y, ...)) for elementwise f
        rewrite!("sink-permute"; "?e" => { SinkPermute }),
        // norm(permute(TO_FIRST, y)) = permute(TO_FIRST, norm along the last dim(y)), for batch
        // norm and group norm
        rewrite!("norm-channels-last"; "?e" => { NormChannelsLast }),
        // upsample(permute(TO_FIRST, y)) = permute(TO_FIRST, y's pixels repeated)
        rewrite!("upsample-channels-last"; "?e" => { UpsampleChannelsLast }),
        // slice / cat(permute(TO_FIRST, y), dim) = permute(TO_FIRST, slice / cat(y, twin dim))
        rewrite!("slice-cat-channels-last"; "?e" => { SliceCatChannelsLast }),
        // pool(permute(TO_FIRST, y)) = permute(TO_FIRST, pool_cl(y))
        rewrite!("pool-channels-last"; "?e" => { PoolChannelsLast }),
        // reduce(permute(TO_FIRST, y), dims) = reduce(y, mapped dims), permuted back with keepdim
        rewrite!("reduce-channels-last"; "?e" => { ReduceChannelsLast }),
    ]
}

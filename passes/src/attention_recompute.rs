//! `attention-recompute`: a softmax along the last dim of the scores of a batched product,
//! whose probabilities feed another batched product (attention's `softmax(Q K^T) V`), gets
//! its statistics in one reduction of the scores (`fxhlo.softmax_stats`: the row max and
//! `sum(exp(x - max))` together), and the product with V reads a second computation of the
//! scores, transposed (`K Q^T`, and the elementwise ops between the product and the softmax).
//!
//! Why: at the sequence lengths of image models the scores are the largest tensors of the
//! graph (a diffusion UNet's 16 heads x 1,024 x 1,024 f32 scores are 64 MB per attention),
//! and XLA writes to memory a tensor that two fusions read: the scores were written once and
//! read three times (the max, the sum of exponentials, the product with V). Computed twice,
//! each copy has one reader: the TPU compiler fuses the first product into the statistics'
//! reduction and, for bf16 (or f32 products at its default precision), the second into the
//! product with V, so the scores never reach memory. The extra product contracts over the
//! head dim (8 to 128): cheap next to the bytes on a TPU (918 TFLOP/s against 1.6 TB/s).
//! XLA's TPU cost analysis of one UNet attention (16 x 1,024 x 8, f32): 280 MB accessed
//! before, 142 MB after (f32 products at `HIGHEST` precision, which fxhlo asks for, are not
//! fused into another product), 10 MB with products at default precision. The second copy
//! is the transposed one, and its operands are built without two transposes, because XLA
//! rewrites a product of two transposes into the transpose of the product the other way round
//! and then merges the two copies back into one. On the CPU plugin products are not fused
//! with anything, so the pipeline runs this pass for TPUs only, at `-O2`.
//!
//! Two forms are rewritten, the scores `X` being the product after views of its leading dims
//! and elementwise ops (a scale, a mask, a `where`), each read once:
//! - `aten.softmax(X)` read only by views (and conversions) leading to a product's left
//!   operand: the product reads `exp(X^T - max^T) / sum^T` through a transpose, computed in
//!   f32 for 16-bit scores;
//! - the safe softmax PyTorch's attention decomposes to (`amax`, `where(amax == -inf, 0,
//!   amax)`, `exp(X - that)`, `sum`, the product of `exp` with V): `amax` and `sum` become the
//!   statistics, the product reads `exp` of the transposed scores.
//!
//! Left alone: scores or probabilities read by anything else (attention weights returned),
//! softmax over another dim, `log_softmax`, integer dtypes, and chains of more than
//! [`MAX_CHAIN`] ops.
//!
//! Relies on: verified input. Preserves: every output's type; the softmax (or `amax`, `sum`
//! and the `exp` chain) is removed.
//!
//! ```text
//! before:  %s = aten.bmm %q3, %kt3 : f32[4,64,64]          (%kt3 a view of permute(%k))
//!          %x = aten.add (aten.div (aten.view %s), %scale), %mask : f32[1,4,64,64]
//!          %p = aten.softmax %x {dim = -1} : f32[1,4,64,64]
//!          %o = aten.bmm (aten.view %p), %v3 : f32[4,64,16]
//! after:   %p.recompute.stats.1 = fxhlo.softmax_stats %x {dim = 3} : (f32[1,4,64], f32[1,4,64])
//!          %p.recompute.bmm.7 = aten.bmm (aten.view %k), (aten.view (aten.permute %q)) : f32[4,64,64]
//!          %p.recompute.op.11 = aten.add (aten.div (aten.view ...), %scale), (aten.permute %mask)
//!          %p.recompute.div.16 = aten.div (aten.exp (aten.sub %p.recompute.op.11, max^T)), sum^T
//!          %o = aten.bmm (aten.permute (aten.view %p.recompute.div.16)), %v3 : f32[4,64,16]
//! ```
//! (`testsuite/filetests/passes/attention-recompute/` has the whole graphs.)

use fxhlo_ir::{BinaryOp, CompareOp, Graph, NodeId, Op, ReduceOp, Shape, TensorType, UnaryOp, ValueRef};

use crate::builder::{work_dtype, Builder};
use crate::{Pass, Result};

/// The pass; see the module doc.
pub struct AttentionRecompute;

/// The most ops between the product and the softmax that are computed twice.
pub const MAX_CHAIN: usize = 8;

impl Pass for AttentionRecompute {
    fn name(&self) -> &'static str {
        "attention-recompute"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        Ok(self.rewrite_all(graph)? > 0)
    }

    fn run_summarized(&self, graph: &mut Graph) -> Result<(bool, Option<String>)> {
        let n = self.rewrite_all(graph)?;
        Ok((n > 0, (n > 0).then(|| format!("{n} softmax(es) before a product: statistics in one pass, scores recomputed for the product"))))
    }
}

impl AttentionRecompute {
    /// Rewrites every softmax this pass matches, regions included; returns how many.
    fn rewrite_all(&self, graph: &mut Graph) -> Result<usize> {
        let found: Vec<Softmax> = graph.node_ids().filter_map(|id| softmax_at(graph, id)).collect();
        for s in &found {
            rewrite(graph, s).map_err(|e| crate::Error::Failed { pass: self.name(), message: e.to_string() })?;
        }
        let mut n = found.len();
        for region in graph.regions_mut() {
            n += self.rewrite_all(region)?;
        }
        Ok(n)
    }
}

/// A softmax this pass rewrites.
struct Softmax {
    /// The scores `X` the softmax normalizes.
    x: ValueRef,
    /// The ops from the product (first) to `X` (last).
    chain: Vec<NodeId>,
    /// The views, expands and conversions from the probabilities to the product with V.
    path: Vec<NodeId>,
    form: Form,
}

enum Form {
    /// `aten.softmax` node.
    Op(NodeId),
    /// The `amax`, `sum`, `sub` (of the shift) and `exp` nodes of the safe softmax.
    Safe { amax: NodeId, sum: NodeId, sub: NodeId, exp: NodeId },
}

/// The softmax rooted at `id` (an `aten.softmax`, or the `amax` of a safe softmax), if this
/// pass rewrites it.
fn softmax_at(graph: &Graph, id: NodeId) -> Option<Softmax> {
    let node = graph.node(id);
    let x = *graph.operands(id).first()?;
    let xt = graph.value_type(x)?;
    let rank = xt.rank();
    if rank < 3 || !xt.dtype.is_float() || xt.num_elements() == 0 {
        return None;
    }
    let last = |d: i64| d == -1 || d == rank as i64 - 1;
    let (form, path) = match &node.op {
        // (A softmax whose result has another dtype than its input keeps its node.)
        Op::Softmax { dim, log: false } if last(*dim) && node.results.first().map(|t| t.dtype) == Some(xt.dtype) => {
            (Form::Op(id), path_to_product(graph, ValueRef::first(id), None)?)
        }
        Op::Reduce { op: ReduceOp::Amax, dims, keepdim: true, .. } if dims.len() == 1 && last(dims[0]) => {
            let (sum, sub, exp, path) = safe_softmax(graph, x, id)?;
            (Form::Safe { amax: id, sum, sub, exp }, path)
        }
        _ => return None,
    };
    // The scores must have no reader but the softmax (one copy of them is then enough).
    let expected = if matches!(form, Form::Op(_)) { 1 } else { 2 };
    if readers(graph, x) != expected {
        return None;
    }
    let chain = chain_to_product(graph, x, (xt.shape[rank - 2], xt.shape[rank - 1]), MAX_CHAIN)?;
    Some(Softmax { x, chain, path, form })
}

/// Whether `v` is one of the graph's outputs.
fn is_output(graph: &Graph, v: ValueRef) -> bool {
    graph.outputs().contains(&v)
}

/// How many ops read `v`, an output counting as one more.
fn readers(graph: &Graph, v: ValueRef) -> usize {
    graph.users(v).len() + usize::from(is_output(graph, v))
}

/// The views, expands and conversions (16-bit attention rounds its probabilities) from `v` to
/// the left operand of a `bmm`, in order, each the only reader of the one before and keeping
/// `v`'s last two dims; `skip` is a reader of `v` that is not on the way (the safe softmax's
/// `sum`).
fn path_to_product(graph: &Graph, mut v: ValueRef, skip: Option<NodeId>) -> Option<Vec<NodeId>> {
    let last_two = |v: ValueRef| graph.value_type(v).filter(|t| t.rank() >= 2).map(|t| t.shape[t.rank() - 2..].to_vec());
    let want = last_two(v)?;
    let mut path = vec![];
    for _ in 0..6 {
        if is_output(graph, v) {
            return None;
        }
        let users: Vec<(NodeId, u32)> = graph.users(v).into_iter().filter(|(u, _)| Some(*u) != skip).collect();
        let [(user, slot)] = users[..] else { return None };
        match graph.node(user).op {
            Op::Bmm => return (slot == 0).then_some(path),
            Op::View { .. } | Op::Expand { .. } | Op::Convert { .. } if last_two(ValueRef::first(user)).as_ref() == Some(&want) => {
                path.push(user);
                v = ValueRef::first(user);
            }
            _ => return None,
        }
    }
    None
}

/// The `sum`, `sub` and `exp` of a safe softmax over `x` whose `amax` is `amax`, and the path
/// from `exp` to the product: `x` is read by `amax` and by `sub(x, m)` where `m` is the `amax`
/// or `where(amax == -inf, 0, amax)`; `exp` of that is read by the `sum` (last dim, keepdim)
/// and by views leading to a product.
fn safe_softmax(graph: &Graph, x: ValueRef, amax: NodeId) -> Option<(NodeId, NodeId, NodeId, Vec<NodeId>)> {
    let amax_v = ValueRef::first(amax);
    let sub = graph.users(x).into_iter().map(|(u, _)| u).find(|&u| u != amax)?;
    let sub_ops = graph.operands(sub);
    if graph.node(sub).op != Op::Binary(BinaryOp::Sub) || sub_ops.first() != Some(&x) || !is_shift(graph, sub_ops[1], amax_v) {
        return None;
    }
    let sub_users = graph.users(ValueRef::first(sub));
    let [(exp, _)] = sub_users.as_slice() else { return None };
    if graph.node(*exp).op != Op::Unary(UnaryOp::Exp) || readers(graph, ValueRef::first(sub)) != 1 {
        return None;
    }
    let e = ValueRef::first(*exp);
    let rank = graph.value_type(x)?.rank() as i64;
    let is_sum = |id: NodeId| match &graph.node(id).op {
        Op::Reduce { op: ReduceOp::Sum, dims, keepdim: true, dtype: None } => dims.len() == 1 && (dims[0] == -1 || dims[0] == rank - 1),
        _ => false,
    };
    let users = graph.users(e);
    if users.len() != 2 {
        return None;
    }
    let sum = users.iter().map(|(u, _)| *u).find(|&u| is_sum(u))?;
    // The other reader of the exponentials leads to the product with V.
    let path = path_to_product(graph, e, Some(sum))?;
    Some((sum, sub, *exp, path))
}

/// Whether `m` is `amax` itself or `where(amax == -inf, 0, amax)`: the shift that equals the
/// max wherever the max is finite.
fn is_shift(graph: &Graph, m: ValueRef, amax: ValueRef) -> bool {
    if m == amax {
        return true;
    }
    let full = |v: ValueRef, want: f64| matches!(graph.node(v.node).op, Op::Full { value } if value.as_f64() == want);
    let ops = graph.operands(m.node);
    if graph.node(m.node).op != Op::Where || ops.len() != 3 || ops[2] != amax || !full(ops[1], 0.0) {
        return false;
    }
    let cond = graph.operands(ops[0].node);
    graph.node(ops[0].node).op == Op::Compare(CompareOp::Eq) && cond.len() == 2 && cond[0] == amax && full(cond[1], f64::NEG_INFINITY)
}

/// The ops from a `bmm` (first) to `x` (last), at most `depth` after the product: views that
/// keep the last two dims `mn` and elementwise ops whose other operands (masks, scales) are
/// computed apart from the product, each read only by the next; `None` when `x` is not such a
/// chain. Of a binary op or `where`, the first operand of the result's shape that is such a
/// chain is taken.
fn chain_to_product(graph: &Graph, x: ValueRef, mn: (i64, i64), depth: usize) -> Option<Vec<NodeId>> {
    let ty = graph.value_type(x)?;
    if x.result != 0 || ty.rank() < 2 || (ty.shape[ty.rank() - 2], ty.shape[ty.rank() - 1]) != mn {
        return None;
    }
    // Below the softmax's scores, every value of the chain has one reader: the next op.
    let inner = |v: ValueRef| (readers(graph, v) == 1).then(|| chain_to_product(graph, v, mn, depth.checked_sub(1)?)).flatten();
    let ops = graph.operands(x.node);
    let mut chain = match &graph.node(x.node).op {
        Op::Bmm => vec![],
        Op::View { .. } | Op::Unary(_) | Op::Convert { .. } | Op::Clamp { .. } => inner(*ops.first()?)?,
        Op::Binary(_) | Op::Where => ops.iter().filter(|o| graph.value_type(**o).map(|t| &t.shape) == Some(&ty.shape)).find_map(|o| inner(*o))?,
        _ => return None,
    };
    chain.push(x.node);
    Some(chain)
}

/// `shape` with its last two dims swapped.
fn swapped(shape: &[i64]) -> Vec<i64> {
    let mut s = shape.to_vec();
    let r = s.len();
    s.swap(r - 2, r - 1);
    s
}

/// `op` (a view, an expand, or an op whose attributes do not name a shape) for a result of
/// shape `shape` with its last two dims swapped.
fn swapped_op(op: &Op, shape: &[i64]) -> Op {
    match op {
        Op::View { .. } => Op::View { shape: Shape::from(swapped(shape)) },
        Op::Expand { .. } => Op::Expand { sizes: Shape::from(swapped(shape)) },
        op => op.clone(),
    }
}

/// The permutation that swaps the last two of `rank` dims.
fn swap_last(rank: usize) -> Op {
    let mut dims: Vec<i64> = (0..rank as i64).collect();
    dims.swap(rank - 2, rank - 1);
    Op::Permute { dims: Shape::from(dims) }
}

fn ty_of(graph: &Graph, v: ValueRef) -> fxhlo_ir::Result<TensorType> {
    graph.value_type(v).cloned().ok_or(fxhlo_ir::Error::DanglingOutput)
}

fn rewrite(graph: &mut Graph, s: &Softmax) -> fxhlo_ir::Result<()> {
    let root = match s.form {
        Form::Op(id) => id,
        Form::Safe { amax, .. } => amax,
    };
    let (base, source) = (format!("{}.recompute", graph.node(root).name), graph.node(root).source.clone());
    let xt = ty_of(graph, s.x)?;
    let rank = xt.rank();
    let mut b = Builder::new(graph, base, source);
    // The statistics of the scores as they are, in f32 for 16-bit scores (as the softmax's
    // lowering computes them), viewed with the reduced dim kept (`[.., M, 1]`).
    let work = work_dtype(xt.dtype);
    let x = if work != xt.dtype { b.add("f32", Op::Convert { dtype: work }, &[s.x], TensorType::new(work, xt.shape.to_vec()))? } else { s.x };
    let stats_ty = TensorType::new(work, xt.shape[..rank - 1].to_vec());
    let stats = b.add_node("stats", Op::SoftmaxStats { dim: rank as i64 - 1 }, &[x], vec![stats_ty.clone(), stats_ty])?;
    let mut kept = xt.shape.to_vec();
    kept[rank - 1] = 1;
    let kept_ty = TensorType::new(work, kept.clone());
    let view = Op::View { shape: Shape::from(kept.clone()) };
    let max = b.add("max", view.clone(), &[ValueRef { node: stats, result: 0 }], kept_ty.clone())?;
    let sum = b.add("sum", view, &[ValueRef { node: stats, result: 1 }], kept_ty)?;
    // The scores again, transposed, for the product with V.
    let scores_t = transposed_scores(&mut b, &s.chain)?;
    let (start, probs_t, dead) = match s.form {
        Form::Op(sm) => {
            // exp(X^T - max^T) / sum^T, in the work dtype.
            let x_t = if work != xt.dtype { b.add("f32", Op::Convert { dtype: work }, &[scores_t], TensorType::new(work, swapped(&xt.shape)))? } else { scores_t };
            let wt = TensorType::new(work, swapped(&xt.shape));
            let (max_t, sum_t) = (swapped_operand(&mut b, max, rank)?, swapped_operand(&mut b, sum, rank)?);
            let d = b.add("sub", Op::Binary(BinaryOp::Sub), &[x_t, max_t], wt.clone())?;
            let e = b.add("exp", Op::Unary(UnaryOp::Exp), &[d], wt.clone())?;
            let mut p = b.add("div", Op::Binary(BinaryOp::Div), &[e, sum_t], wt)?;
            if work != xt.dtype {
                p = b.add("out", Op::Convert { dtype: xt.dtype }, &[p], TensorType::new(xt.dtype, swapped(&xt.shape)))?;
            }
            (ValueRef::first(sm), p, vec![sm])
        }
        Form::Safe { amax, sum: old_sum, sub, exp } => {
            for (old, new) in [(amax, max), (old_sum, sum)] {
                let want = ty_of(b.graph, ValueRef::first(old))?;
                let new = if want.dtype != work { b.add("cast", Op::Convert { dtype: want.dtype }, &[new], want)? } else { new };
                b.graph.replace_all_uses(ValueRef::first(old), new)?;
            }
            b.graph.remove_node(old_sum)?;
            b.graph.remove_node(amax)?;
            // exp(X^T - shift^T), as the graph computes exp(X - shift).
            let shift = *b.graph.operands(sub).get(1).ok_or(fxhlo_ir::Error::DanglingOutput)?;
            let shift_t = swapped_operand(&mut b, shift, rank)?;
            let ty = |id: NodeId, g: &Graph| ty_of(g, ValueRef::first(id)).map(|t| TensorType::new(t.dtype, swapped(&t.shape)));
            let (sub_ty, exp_ty) = (ty(sub, b.graph)?, ty(exp, b.graph)?);
            let d = b.add("sub", Op::Binary(BinaryOp::Sub), &[scores_t, shift_t], sub_ty)?;
            let e = b.add("exp", Op::Unary(UnaryOp::Exp), &[d], exp_ty)?;
            (ValueRef::first(exp), e, vec![sub, exp])
        }
    };
    // The views and conversions between the probabilities and the product, on the transposed
    // probabilities, then the product reading them through a transpose (XLA folds it into the
    // product's dims).
    let mut twin = probs_t;
    for &id in &s.path {
        let t = b.graph.node(id).results[0].clone();
        twin = b.add("v", swapped_op(&b.graph.node(id).op, &t.shape), &[twin], TensorType::new(t.dtype, swapped(&t.shape)))?;
    }
    let v = s.path.last().map_or(start, |&id| ValueRef::first(id));
    let t = ty_of(b.graph, v)?;
    let lhs = b.add("t", swap_last(t.rank()), &[twin], t)?;
    b.graph.replace_all_uses(v, lhs)?;
    for id in dead.into_iter().chain(s.path.iter().copied()).rev() {
        b.graph.remove_node(id)?;
    }
    Ok(())
}

/// The scores of `chain` (a `bmm` and the ops after it) computed again with their last two
/// dims swapped: `bmm(B^T, A^T)` for `bmm(A, B)`, then each op on the swapped value, its
/// other operands swapped alike (viewed to the result's rank first; scalars as they are).
fn transposed_scores(b: &mut Builder<'_>, chain: &[NodeId]) -> fxhlo_ir::Result<ValueRef> {
    let product = *chain.first().ok_or(fxhlo_ir::Error::DanglingOutput)?;
    let [lhs, rhs] = b.graph.operands(product)[..] else { return Err(fxhlo_ir::Error::DanglingOutput) };
    let rt = swap_of(b, rhs, MAX_CHAIN)?;
    let lt = swap_of(b, lhs, MAX_CHAIN)?;
    let out = ty_of(b.graph, ValueRef::first(product))?;
    let mut prev = ValueRef::first(product);
    let mut twin = b.add("bmm", Op::Bmm, &[rt, lt], TensorType::new(out.dtype, swapped(&out.shape)))?;
    for &id in &chain[1..] {
        let node = b.graph.node(id).clone();
        let ty = node.results[0].clone();
        let ty_t = TensorType::new(ty.dtype, swapped(&ty.shape));
        // A view's own result shape, swapped (a `-1` of the view resolved).
        let op = swapped_op(&node.op, &ty.shape);
        let mut operands = vec![];
        for o in b.graph.operands(id) {
            operands.push(if o == prev { twin } else { swapped_operand(b, o, ty.rank())? });
        }
        prev = ValueRef::first(id);
        twin = b.add("op", op, &operands, ty_t)?;
    }
    Ok(twin)
}

/// `v` with its last two dims swapped, the swap pushed through the views and expands of
/// leading dims and the ops with scalar operands that make `v`, and cancelled against a
/// permute: XLA rewrites a product of two transposes into the transpose of the product the
/// other way round, which its CSE then merges with the original product, so the swapped
/// product must not read two transposes (`K^T` is usually a permute, so `K` comes free).
fn swap_of(b: &mut Builder<'_>, v: ValueRef, depth: usize) -> fxhlo_ir::Result<ValueRef> {
    let t = ty_of(b.graph, v)?;
    let rank = t.rank();
    let t_swapped = TensorType::new(t.dtype, swapped(&t.shape));
    let node = b.graph.node(v.node).clone();
    let ops = b.graph.operands(v.node);
    let keeps_last_two = |inner: &TensorType| inner.rank() >= 2 && inner.shape[inner.rank() - 2..] == t.shape[rank - 2..];
    if depth > 0 && v.result == 0 {
        match &node.op {
            Op::Permute { dims } => {
                let mut dims = dims.to_vec();
                dims.swap(rank - 2, rank - 1);
                if dims.iter().enumerate().all(|(i, &d)| d == i as i64) {
                    return Ok(ops[0]);
                }
                return b.add("t", Op::Permute { dims: Shape::from(dims) }, &[ops[0]], t_swapped);
            }
            Op::View { .. } | Op::Expand { .. } if keeps_last_two(&ty_of(b.graph, ops[0])?) => {
                let inner = swap_of(b, ops[0], depth - 1)?;
                return b.add("t", swapped_op(&node.op, &t.shape), &[inner], t_swapped);
            }
            Op::Unary(_) | Op::Convert { .. } | Op::Clamp { .. } => {
                let inner = swap_of(b, ops[0], depth - 1)?;
                return b.add("t", node.op.clone(), &[inner], t_swapped);
            }
            Op::Binary(_) => {
                let scalar = |o: &ValueRef| b.graph.value_type(*o).is_some_and(|t| t.rank() == 0);
                if let [x, y] = ops.as_slice() {
                    let (x, y) = (*x, *y);
                    if scalar(&y) && ty_of(b.graph, x)?.shape == t.shape {
                        let inner = swap_of(b, x, depth - 1)?;
                        return b.add("t", node.op.clone(), &[inner, y], t_swapped);
                    }
                    if scalar(&x) && ty_of(b.graph, y)?.shape == t.shape {
                        let inner = swap_of(b, y, depth - 1)?;
                        return b.add("t", node.op.clone(), &[x, inner], t_swapped);
                    }
                }
            }
            _ => {}
        }
    }
    b.add("t", swap_last(rank), &[v], t_swapped)
}

/// A side operand `v` of an op of rank `rank` in the swapped computation: scalars as they
/// are, others viewed to `rank` dims (leading 1s, as broadcasting aligns them) and their last
/// two dims swapped.
fn swapped_operand(b: &mut Builder<'_>, v: ValueRef, rank: usize) -> fxhlo_ir::Result<ValueRef> {
    let t = ty_of(b.graph, v)?;
    if t.rank() == 0 {
        return Ok(v);
    }
    let v = if t.rank() < rank {
        let mut shape = vec![1; rank - t.rank()];
        shape.extend_from_slice(&t.shape);
        b.add("r", Op::View { shape: Shape::from(shape.clone()) }, &[v], TensorType::new(t.dtype, shape))?
    } else {
        v
    };
    let t = ty_of(b.graph, v)?;
    b.add("t", swap_last(t.rank()), &[v], TensorType::new(t.dtype, swapped(&t.shape)))
}

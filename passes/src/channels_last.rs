//! `channels-last`: runs the 2-D convolutions of a channels-first (`[N, C, H, W]`) graph, and
//! the ops between them, on channels-last (`[N, H, W, C]`) tensors.
//!
//! Why: XLA's CPU backend computes convolutions channels-last and every other op in the
//! row-major order of its logical shape. In a channels-first graph each convolution therefore
//! has a transpose in front of and behind it, and each elementwise loop between two of them
//! runs along a row of the image: 7 or 14 floats in the late stages of EfficientNet-B0, where
//! XLA's loops stay scalar. Channels-last the loops run along the channels (40 to 1280 floats),
//! the convolutions need no transpose, and the `permute`s of models written channels-last
//! inside (ConvNeXt's blocks: `permute -> layer norm -> linear -> GELU -> linear -> permute`)
//! cancel against the layout instead of moving the activations twice per block. Other targets
//! choose their own layouts, so the pipeline runs this pass only for the CPU plugin, and
//! `-O0` never.
//!
//! How: in topological order, each 4-D float value `v` may get a twin, a value holding
//! `permute(v, [0, 2, 3, 1])` computed by new nodes:
//! - a 2-D convolution gets a `channels_last` twin (reading its input's twin, or the input
//!   permuted);
//! - an elementwise op with an operand that has a twin is computed on the twins (other 4-D
//!   operands are permuted, smaller ones broadcast as `[1, 1, 1, C]`-style views);
//! - inference batch norm is computed as its elementwise formula along the last dim, group
//!   norm over the twin viewed as `[N, H*W, G, C/G]` (both in float32 for 16-bit inputs, as
//!   codegen computes them); nearest upsampling by whole factors repeats pixels through a
//!   view and an expand; a reduction or variance maps its dims;
//!   a 1x1 adaptive average pool is a mean over dims 1 and 2; an average pool and a max pool
//!   without indices run `channels_last`; a slice and a concatenation map their dim;
//! - a `permute` of a value with a twin is the twin permuted by the composed permutation
//!   (nothing, when it is the identity: ConvNeXt's `permute(x, [0, 2, 3, 1])`), and a
//!   `permute` by `[0, 3, 1, 2]` has its own operand as twin.
//!
//! Every other reader (a `view`, a layer norm over channels-first dims, a graph output) reads
//! the original value, now computed as `permute(twin, [0, 3, 1, 2])`, which keeps the node's
//! name; the replaced nodes and anything left unread are removed. Regions are left alone.
//!
//! Relies on: verified input. Preserves: every output's type and value; inputs.
//!
//! ```text
//! before:  %c = aten.convolution %x, %w {stride = [1, 1], padding = [1, 1], ...} : f32[1,8,6,6]
//!          %r = aten.relu %c : f32[1,8,6,6]
//!          return %r
//! after:   %c.nhwc_in = aten.permute %x {dims = [0, 2, 3, 1]} : f32[1,6,6,3]
//!          %c.nhwc = aten.convolution %c.nhwc_in, %w {..., channels_last = true} : f32[1,6,6,8]
//!          %r.nhwc = aten.relu %c.nhwc : f32[1,6,6,8]
//!          %r = aten.permute %r.nhwc {dims = [0, 3, 1, 2]} : f32[1,8,6,6]
//!          return %r
//! ```

use std::collections::{HashMap, HashSet};

use fxhlo_ir::layout::{is_identity, permuted};
use fxhlo_ir::{BinaryOp, DType, Graph, NodeId, Op, ReduceOp, Scalar, Shape, TensorType, UnaryOp, ValueRef};

use crate::builder::work_dtype;
use crate::{Error, Pass, Result};

/// The pass; see the module doc.
pub struct ChannelsLast;

impl Pass for ChannelsLast {
    fn name(&self) -> &'static str {
        "channels-last"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let changed = rewrite(graph).map_err(|e| Error::Failed { pass: self.name(), message: e.to_string() })?;
        // The input permutes nothing ended up reading, and the nodes only they read.
        Ok(crate::dce::eliminate(graph)? || changed)
    }
}

/// `[N, C, H, W]` to `[N, H, W, C]`: `permute` dims, and a twin's dim `j` is its value's dim
/// `TO_LAST[j]`.
const TO_LAST: [usize; 4] = [0, 2, 3, 1];
/// `[N, H, W, C]` back to `[N, C, H, W]`; a value's dim `d` is its twin's dim `TO_FIRST[d]`.
const TO_FIRST: [usize; 4] = [0, 3, 1, 2];

/// The rewrite's state: twins, and the nodes they replace.
struct Twins<'g> {
    graph: &'g mut Graph,
    twin: HashMap<ValueRef, ValueRef>,
    /// Nodes whose first result has a twin computed by new nodes, in topological order.
    replaced: Vec<NodeId>,
    /// Every node name, so that new ones are unique.
    names: HashSet<String>,
}

fn rewrite(graph: &mut Graph) -> fxhlo_ir::Result<bool> {
    let order = graph.topo_order()?;
    let names = graph.node_ids().map(|id| graph.node(id).name.to_string()).collect();
    let mut t = Twins { graph, twin: HashMap::new(), replaced: Vec::new(), names };
    let mut changed = false;
    for id in order {
        changed |= t.visit(id)?;
    }
    // Readers first, so that a replaced node read only by replaced nodes goes without a
    // permute back.
    for id in std::mem::take(&mut t.replaced).into_iter().rev() {
        let value = ValueRef::first(id);
        let Some(&twin) = t.twin.get(&value) else { continue };
        if t.graph.has_uses(id) {
            let ty = t.graph.node(id).results[0].clone();
            let back = t.add(id, "nchw", dims(&TO_FIRST), &[twin], ty)?;
            t.graph.replace_all_uses(value, back)?;
            if !t.graph.has_uses(id) {
                // The permute back takes the node's name: its readers still say `%name`.
                let name = t.graph.remove_node(id)?.name;
                t.graph.node_mut(back.node).name = name;
            }
        } else {
            t.graph.remove_node(id)?;
        }
    }
    Ok(changed)
}

/// An `aten.permute` by `perm`.
fn dims(perm: &[usize]) -> Op {
    Op::Permute { dims: Shape::from(perm.iter().map(|&d| d as i64).collect::<Vec<_>>()) }
}

/// Whether `ty` is a 4-D float tensor.
fn image(ty: Option<&TensorType>) -> bool {
    ty.is_some_and(|t| t.rank() == 4 && t.dtype.is_float())
}

/// `dims` (of a 4-D value; negative ones count from the end) as dims of its twin.
fn twin_dims(dims: &[i64]) -> Option<Vec<i64>> {
    dims.iter().map(|&d| Some(TO_FIRST[usize::try_from(if d < 0 { d + 4 } else { d }).ok().filter(|&d| d < 4)?] as i64)).collect()
}

impl Twins<'_> {
    fn has_twin(&self, v: ValueRef) -> bool {
        self.twin.contains_key(&v)
    }

    /// Adds a one-result node named after node `of`.
    fn add(&mut self, of: NodeId, what: &str, op: Op, operands: &[ValueRef], ty: TensorType) -> fxhlo_ir::Result<ValueRef> {
        let node = self.graph.node(of);
        let name = format!("{}.{what}", node.name);
        let source = node.source.clone();
        let mut unique = name.clone();
        let mut n = 1;
        while self.names.contains(&unique) {
            n += 1;
            unique = format!("{name}{n}");
        }
        let id = self.graph.add_node(unique.as_str(), op, operands, vec![ty], source)?;
        self.names.insert(unique);
        Ok(ValueRef::first(id))
    }

    /// `v` (rank 4) channels-last: its twin, or `v` permuted by a new node.
    fn channels_last(&mut self, of: NodeId, v: ValueRef) -> fxhlo_ir::Result<ValueRef> {
        if let Some(&t) = self.twin.get(&v) {
            return Ok(t);
        }
        let ty = self.graph.value_type(v).cloned().ok_or(fxhlo_ir::Error::DanglingOutput)?;
        let twin = self.add(of, "nhwc_in", dims(&TO_LAST), &[v], permuted(&ty, &TO_LAST))?;
        self.twin.insert(v, twin);
        Ok(twin)
    }

    /// Operand `v` of an elementwise op whose result is channels-last: its twin, a scalar as
    /// it is, a 4-D value permuted, a smaller one (broadcast against the trailing dims)
    /// first viewed as 4-D. Where only the order of dims of size 1 changes (a `[C, 1, 1]` or
    /// `[1, C, 1, 1]` scale), the permute is a view.
    fn broadcast_operand(&mut self, of: NodeId, v: ValueRef) -> fxhlo_ir::Result<ValueRef> {
        let ty = self.graph.value_type(v).cloned().ok_or(fxhlo_ir::Error::DanglingOutput)?;
        if let Some(&t) = self.twin.get(&v) {
            return Ok(t);
        }
        if ty.rank() == 0 {
            return Ok(v);
        }
        let mut four: Vec<i64> = vec![1; 4 - ty.rank()];
        four.extend_from_slice(&ty.shape);
        let target = TensorType::new(ty.dtype, TO_LAST.iter().map(|&d| four[d]).collect::<Vec<_>>());
        // The dims that are not 1 keep their order: the permute is a view.
        let big: Vec<usize> = (0..4).filter(|&d| four[d] != 1).collect();
        let order: Vec<usize> = TO_LAST.iter().copied().filter(|&d| four[d] != 1).collect();
        if big == order {
            let r = self.add(of, "nhwc_b", Op::View { shape: target.shape.clone() }, &[v], target)?;
            if ty.rank() == 4 {
                self.twin.insert(v, r);
            }
            return Ok(r);
        }
        if ty.rank() == 4 {
            return self.channels_last(of, v);
        }
        let as4 = self.add(of, "as4d", Op::View { shape: Shape::from(four.clone()) }, &[v], TensorType::new(ty.dtype, four))?;
        self.add(of, "nhwc_b", dims(&TO_LAST), &[as4], target)
    }

    /// Rewrites node `id` on twins where it has a rule and reads a value with a twin.
    fn visit(&mut self, id: NodeId) -> fxhlo_ir::Result<bool> {
        let node = self.graph.node(id);
        let (op, result, single) = (node.op.clone(), node.results.first().cloned(), node.results.len() == 1);
        let operands = self.graph.operands(id);
        let hot = operands.iter().any(|&v| self.has_twin(v));
        match op.clone() {
            Op::Convolution { stride, padding, dilation, transposed: false, output_padding, groups, has_bias, channels_last: false }
                if image(self.graph.value_type(operands[0])) && operands.get(1).and_then(|&w| self.graph.value_type(w)).is_some_and(|w| w.rank() == 4) =>
            {
                let x = self.channels_last(id, operands[0])?;
                let op = Op::Convolution { stride, padding, dilation, transposed: false, output_padding, groups, has_bias, channels_last: true };
                let mut args = vec![x];
                args.extend_from_slice(&operands[1..]);
                let ty = permuted(&node_result(result)?, &TO_LAST);
                self.set_twin(id, "nhwc", op, &args, ty)
            }
            Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::Where
            | Op::Clamp { .. }
            | Op::ClampTensor { .. }
            | Op::Convert { .. }
            | Op::Copy
            | Op::Elu { .. }
            | Op::LeakyRelu { .. }
                if hot && single && result.as_ref().is_some_and(|t| t.rank() == 4) && self.ranks_at_most_4(&operands) =>
            {
                let ty = permuted(&node_result(result)?, &TO_LAST);
                let mut args = Vec::with_capacity(operands.len());
                for &v in &operands {
                    args.push(self.broadcast_operand(id, v)?);
                }
                self.set_twin(id, "nhwc", op, &args, ty)
            }
            Op::BatchNorm { eps, has_weight, has_bias } if hot && self.only_first_result_read(id) => {
                self.batch_norm(id, &operands, eps, has_weight, has_bias)?;
                Ok(true)
            }
            Op::GroupNorm { groups, eps, has_weight, has_bias } if hot && self.only_first_result_read(id) => {
                let channels = result.as_ref().map_or(0, |t| t.shape.get(1).copied().unwrap_or(0));
                if groups <= 0 || channels % groups != 0 {
                    return Ok(false);
                }
                self.group_norm(id, &operands, groups, eps, has_weight, has_bias)?;
                Ok(true)
            }
            Op::UpsampleNearest { output_size } if hot && output_size.len() == 2 => self.upsample_nearest(id, operands[0], &output_size),
            Op::Reduce { op, dims: reduced, keepdim, dtype } if hot && single => {
                let Some(mapped) = twin_dims(&reduced) else { return Ok(false) };
                let op = Op::Reduce { op, dims: Shape::from(mapped.clone()), keepdim, dtype };
                self.reduction(id, op, &reduced, keepdim)
            }
            Op::Var { dims: reduced, correction, keepdim } if hot && single && !reduced.is_empty() => {
                let Some(mapped) = twin_dims(&reduced) else { return Ok(false) };
                let op = Op::Var { dims: mapped, correction, keepdim };
                let reduced = Shape::from(reduced);
                self.reduction(id, op, &reduced, keepdim)
            }
            Op::AdaptiveAvgPool { output_size } if hot && output_size.len() == 2 && output_size.iter().all(|&s| s == 1) => {
                // Exact as a mean only where the mean accumulates in the input's dtype.
                let ty = node_result(result)?;
                if !matches!(ty.dtype, DType::F32 | DType::F64) {
                    return Ok(false);
                }
                let op = Op::Reduce { op: ReduceOp::Mean, dims: Shape::from(vec![1, 2]), keepdim: true, dtype: None };
                self.on_twin(id, op, operands[0], &ty)
            }
            Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices: false, channels_last: false } if hot && kernel.len() == 2 => {
                let op = Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices: false, channels_last: true };
                self.on_twin(id, op, operands[0], &node_result(result)?)
            }
            Op::AvgPool { kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, channels_last: false } if hot && kernel.len() == 2 => {
                let op = Op::AvgPool { kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, channels_last: true };
                self.on_twin(id, op, operands[0], &node_result(result)?)
            }
            Op::Slice { dim, start, end, step } if hot => {
                let Some(mapped) = twin_dims(&[dim]) else { return Ok(false) };
                let op = Op::Slice { dim: mapped[0], start, end, step };
                self.on_twin(id, op, operands[0], &node_result(result)?)
            }
            Op::Cat { dim } if hot && self.all_images(&operands) => {
                let Some(mapped) = twin_dims(&[dim]) else { return Ok(false) };
                let ty = permuted(&node_result(result)?, &TO_LAST);
                let mut args = Vec::with_capacity(operands.len());
                for &v in &operands {
                    args.push(self.channels_last(id, v)?);
                }
                self.set_twin(id, "nhwc", Op::Cat { dim: mapped[0] }, &args, ty)
            }
            Op::Permute { dims: perm } if perm.len() == 4 => self.permute(id, operands[0], &perm),
            _ => Ok(false),
        }
    }

    fn ranks_at_most_4(&self, operands: &[ValueRef]) -> bool {
        operands.iter().all(|&v| self.graph.value_type(v).is_some_and(|t| t.rank() <= 4))
    }

    fn all_images(&self, operands: &[ValueRef]) -> bool {
        operands.iter().all(|&v| image(self.graph.value_type(v)))
    }

    /// Whether nothing reads node `id`'s results but the first.
    fn only_first_result_read(&self, id: NodeId) -> bool {
        let results = self.graph.node(id).results.len() as u32;
        (1..results).all(|r| {
            let v = ValueRef { node: id, result: r };
            self.graph.users(v).is_empty() && !self.graph.outputs().contains(&v)
        })
    }

    /// The twin of node `id` (result type `out`) as `op` over `x`'s twin.
    fn on_twin(&mut self, id: NodeId, op: Op, x: ValueRef, out: &TensorType) -> fxhlo_ir::Result<bool> {
        let x = self.channels_last(id, x)?;
        self.set_twin(id, "nhwc", op, &[x], permuted(out, &TO_LAST))
    }

    /// Adds the twin of node `id` and records `id` as replaced.
    fn set_twin(&mut self, id: NodeId, what: &str, op: Op, operands: &[ValueRef], ty: TensorType) -> fxhlo_ir::Result<bool> {
        let twin = self.add(id, what, op, operands, ty)?;
        self.twin.insert(ValueRef::first(id), twin);
        self.replaced.push(id);
        Ok(true)
    }

    /// A reduction (`op`, already over the twin's dims) of node `id`, whose own dims are
    /// `reduced`: with `keepdim` the result is a twin; without, the remaining dims are the
    /// result's, permuted back into the original order where the twin's order differs.
    fn reduction(&mut self, id: NodeId, op: Op, reduced: &[i64], keepdim: bool) -> fxhlo_ir::Result<bool> {
        let operand = self.graph.operands(id)[0];
        let ty = node_result(self.graph.node(id).results.first().cloned())?;
        let x = self.channels_last(id, operand)?;
        if keepdim || reduced.is_empty() {
            let twin_ty = if ty.rank() == 4 { permuted(&ty, &TO_LAST) } else { ty.clone() };
            if ty.rank() != 4 {
                // All dims reduced: the same scalar either way.
                let r = self.add(id, "nhwc", op, &[x], twin_ty)?;
                self.graph.replace_all_uses(ValueRef::first(id), r)?;
                return Ok(true);
            }
            return self.set_twin(id, "nhwc", op, &[x], twin_ty);
        }
        let gone: Vec<usize> = reduced.iter().map(|&d| if d < 0 { (d + 4) as usize } else { d as usize }).collect();
        // The dims left, in the original's order and in the twin's.
        let kept: Vec<usize> = (0..4).filter(|d| !gone.contains(d)).collect();
        let mut in_twin = kept.clone();
        in_twin.sort_by_key(|&d| TO_FIRST[d]);
        let twin_ty = TensorType::new(ty.dtype, in_twin.iter().map(|&d| self.graph.value_type(operand).map_or(1, |t| t.shape[d])).collect::<Vec<_>>());
        let mut r = self.add(id, "nhwc", op, &[x], twin_ty)?;
        if in_twin != kept {
            // result[i] = r[perm[i]]: where the original's i-th kept dim sits in the twin's order.
            let perm: Vec<usize> = kept.iter().map(|d| in_twin.iter().position(|e| e == d).unwrap_or(0)).collect();
            r = self.add(id, "order", dims(&perm), &[r], ty)?;
        }
        self.graph.replace_all_uses(ValueRef::first(id), r)?;
        Ok(true)
    }

    /// A `permute` of `x` by `perm`: composed with `x`'s twin where it has one; its own twin
    /// is `x` when it moves the channels first (`[0, 3, 1, 2]`).
    fn permute(&mut self, id: NodeId, x: ValueRef, perm: &[i64]) -> fxhlo_ir::Result<bool> {
        let Some(perm) = perm.iter().map(|&p| usize::try_from(p).ok().filter(|&p| p < 4)).collect::<Option<Vec<usize>>>() else {
            return Ok(false);
        };
        if let Some(&t) = self.twin.get(&x) {
            // result[i] = x[perm[i]] = t[TO_FIRST[perm[i]]].
            let composed: Vec<usize> = perm.iter().map(|&p| TO_FIRST[p]).collect();
            let r = if is_identity(&composed) {
                t
            } else {
                let ty = node_result(self.graph.node(id).results.first().cloned())?;
                self.add(id, "composed", dims(&composed), &[t], ty)?
            };
            self.graph.replace_all_uses(ValueRef::first(id), r)?;
            return Ok(true);
        }
        // twin[j] = result[TO_LAST[j]] = x[perm[TO_LAST[j]]]: free when that is x itself.
        if image(self.graph.value_type(x)) && is_identity(&TO_LAST.iter().map(|&j| perm[j]).collect::<Vec<_>>()) {
            self.twin.insert(ValueRef::first(id), x);
        }
        Ok(false)
    }

    /// Inference batch norm of node `id` on `x`'s twin, as `(x - mean) * rsqrt(var + eps)`
    /// times the weight plus the bias, each a `[C]` vector broadcast along the last dim.
    fn batch_norm(&mut self, id: NodeId, operands: &[ValueRef], eps: Scalar, has_weight: bool, has_bias: bool) -> fxhlo_ir::Result<()> {
        let out = node_result(self.graph.node(id).results.first().cloned())?;
        let x = self.channels_last(id, operands[0])?;
        let work = work_dtype(out.dtype);
        let twin_t = permuted(&out, &TO_LAST);
        let c = twin_t.shape[3];
        let big = TensorType::new(work, twin_t.shape.clone());
        let vec_t = TensorType::new(work, vec![c]);
        let base = 1 + has_weight as usize + has_bias as usize;
        let xw = self.convert_to(id, "x32", x, &big)?;
        let mean = self.convert_to(id, "mean32", operands[base], &vec_t)?;
        let var = self.convert_to(id, "var32", operands[base + 1], &vec_t)?;
        let eps = self.add(id, "eps", Op::Full { value: eps }, &[], vec_t.clone())?;
        let var_eps = self.add(id, "var_eps", Op::Binary(BinaryOp::Add), &[var, eps], vec_t.clone())?;
        let rstd = self.add(id, "rstd", Op::Unary(UnaryOp::Rsqrt), &[var_eps], vec_t.clone())?;
        let centered = self.add(id, "centered", Op::Binary(BinaryOp::Sub), &[xw, mean], big.clone())?;
        let y = self.add(id, "normalized", Op::Binary(BinaryOp::Mul), &[centered, rstd], big)?;
        self.affine_twin(id, y, &operands[1..], has_weight, has_bias, &out)
    }

    /// Ends a normalization of node `id` whose normalized twin (in the work dtype) is `y`:
    /// times the `[C]` weight and plus the `[C]` bias (the first of `params` each, where the
    /// node has them) along the last dim, rounded to `out`'s dtype; `y` becomes the twin.
    fn affine_twin(&mut self, id: NodeId, mut y: ValueRef, params: &[ValueRef], has_weight: bool, has_bias: bool, out: &TensorType) -> fxhlo_ir::Result<()> {
        let twin_t = permuted(out, &TO_LAST);
        let work = work_dtype(out.dtype);
        let big = TensorType::new(work, twin_t.shape.clone());
        let vec_t = TensorType::new(work, vec![twin_t.shape[3]]);
        if has_weight {
            let w = self.convert_to(id, "weight32", params[0], &vec_t)?;
            y = self.add(id, "scaled", Op::Binary(BinaryOp::Mul), &[y, w], big.clone())?;
        }
        if has_bias {
            let b = self.convert_to(id, "bias32", params[has_weight as usize], &vec_t)?;
            y = self.add(id, "shifted", Op::Binary(BinaryOp::Add), &[y, b], big)?;
        }
        if work != out.dtype {
            y = self.add(id, "out", Op::Convert { dtype: out.dtype }, &[y], twin_t)?;
        }
        self.twin.insert(ValueRef::first(id), y);
        self.replaced.push(id);
        Ok(())
    }

    /// Group norm of node `id` on `x`'s twin viewed as `[N, H*W, G, C/G]`: the mean and the
    /// variance over dims 1 and 3 (two passes, as codegen computes them), in float32 for 16-bit
    /// inputs, then the `[C]` weight and bias along the last dim.
    fn group_norm(&mut self, id: NodeId, operands: &[ValueRef], groups: i64, eps: Scalar, has_weight: bool, has_bias: bool) -> fxhlo_ir::Result<()> {
        let out = node_result(self.graph.node(id).results.first().cloned())?;
        let x = self.channels_last(id, operands[0])?;
        let work = work_dtype(out.dtype);
        let twin_t = permuted(&out, &TO_LAST);
        let (n, h, w, c) = (twin_t.shape[0], twin_t.shape[1], twin_t.shape[2], twin_t.shape[3]);
        let big = TensorType::new(work, twin_t.shape.clone());
        let grouped = TensorType::new(work, vec![n, h * w, groups, c / groups]);
        let stat = TensorType::new(work, vec![n, 1, groups, 1]);
        let mean_op = || Op::Reduce { op: ReduceOp::Mean, dims: Shape::from(vec![1, 3]), keepdim: true, dtype: None };
        let xw = self.convert_to(id, "x32", x, &big)?;
        let xg = self.add(id, "grouped", Op::View { shape: grouped.shape.clone() }, &[xw], grouped.clone())?;
        let mean = self.add(id, "mean", mean_op(), &[xg], stat.clone())?;
        let centered = self.add(id, "centered", Op::Binary(BinaryOp::Sub), &[xg, mean], grouped.clone())?;
        let squares = self.add(id, "squares", Op::Binary(BinaryOp::Mul), &[centered, centered], grouped.clone())?;
        let var = self.add(id, "var", mean_op(), &[squares], stat.clone())?;
        let eps = self.add(id, "eps", Op::Full { value: eps }, &[], stat.clone())?;
        let var_eps = self.add(id, "var_eps", Op::Binary(BinaryOp::Add), &[var, eps], stat.clone())?;
        let rstd = self.add(id, "rstd", Op::Unary(UnaryOp::Rsqrt), &[var_eps], stat)?;
        let normalized = self.add(id, "normalized", Op::Binary(BinaryOp::Mul), &[centered, rstd], grouped)?;
        let y = self.add(id, "ungrouped", Op::View { shape: big.shape.clone() }, &[normalized], big)?;
        self.affine_twin(id, y, &operands[1..], has_weight, has_bias, &out)
    }

    /// Nearest upsampling of node `id` by whole factors: each pixel of `x`'s twin repeated as
    /// `[N, H, 1, W, 1, C]` expanded to `[N, H, fh, W, fw, C]`. Other sizes keep the node.
    fn upsample_nearest(&mut self, id: NodeId, x: ValueRef, output_size: &[i64]) -> fxhlo_ir::Result<bool> {
        let out = node_result(self.graph.node(id).results.first().cloned())?;
        let Some(x_t) = self.graph.value_type(x).cloned() else { return Ok(false) };
        let (n, c, h, w) = (x_t.shape[0], x_t.shape[1], x_t.shape[2], x_t.shape[3]);
        let [oh, ow] = [output_size[0], output_size[1]];
        if h <= 0 || w <= 0 || oh % h != 0 || ow % w != 0 || out.shape.as_slice() != [n, c, oh, ow] {
            return Ok(false);
        }
        let (fh, fw) = (oh / h, ow / w);
        let t = self.channels_last(id, x)?;
        let dtype = x_t.dtype;
        let six = vec![n, h, 1, w, 1, c];
        let spread = self.add(id, "spread", Op::View { shape: Shape::from(six.clone()) }, &[t], TensorType::new(dtype, six))?;
        let repeated = vec![n, h, fh, w, fw, c];
        let op = Op::Expand { sizes: Shape::from(repeated.clone()) };
        let repeated = self.add(id, "repeated", op, &[spread], TensorType::new(dtype, repeated))?;
        let twin_t = permuted(&out, &TO_LAST);
        self.set_twin(id, "nhwc", Op::View { shape: twin_t.shape.clone() }, &[repeated], twin_t)
    }

    /// `v` converted to `ty`'s dtype by a new node, or `v` when it has that dtype.
    fn convert_to(&mut self, of: NodeId, what: &str, v: ValueRef, ty: &TensorType) -> fxhlo_ir::Result<ValueRef> {
        match self.graph.value_type(v) {
            Some(have) if have.dtype == ty.dtype => Ok(v),
            _ => self.add(of, what, Op::Convert { dtype: ty.dtype }, &[v], ty.clone()),
        }
    }
}

/// A node's first result type, or the graph error for a node without results.
fn node_result(result: Option<TensorType>) -> fxhlo_ir::Result<TensorType> {
    result.ok_or(fxhlo_ir::Error::DanglingOutput)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_permutations_are_inverses_and_dims_map_through_them() {
        assert_eq!(fxhlo_ir::layout::inverse(&TO_LAST), TO_FIRST.to_vec());
        // Channels (1) go last, rows (2) and columns (3) move up one; negative dims count from the end.
        assert_eq!(twin_dims(&[1, 2, 3, 0]), Some(vec![3, 1, 2, 0]));
        assert_eq!(twin_dims(&[-1, -2]), Some(vec![2, 1]));
        assert_eq!(twin_dims(&[4]), None);
    }
}

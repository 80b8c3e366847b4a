//! ATen targets → IR ops: reads each call's positional and keyword arguments by the names of
//! the ATen schema and picks the `ir::Op`. A target not listed here, or a listed one called
//! with arguments the IR cannot express, maps to `Op::Unknown` (reported at lowering).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use rustc_hash::FxBuildHasher;

use fxhlo_ir::smallvec::{smallvec, SmallVec};
use fxhlo_ir::{BinaryOp, CompareOp, DType, FftKind, Op, PadMode, ReduceOp, Scalar, ScatterReduce, Shape, TensorType, UnaryOp};

use crate::schema::{ArgView as Arg, NodeView, TraceView};

/// An operand of a mapped op: a value by name, or a scalar that becomes a 0-d `full` node.
#[derive(Debug, Clone)]
pub enum Operand<'a> {
    Tensor(&'a str),
    Scalar(Scalar),
    /// `operand * factor` (the `alpha` of `add`/`sub`).
    Scaled(Box<Operand<'a>>, Scalar),
}

/// The operands of one call, inline up to 4 (almost every op).
pub type Operands<'a> = SmallVec<[Operand<'a>; 4]>;

/// The mapping of one call.
#[derive(Debug)]
pub enum Mapped<'a> {
    /// A known op and its operands in the op's operand order.
    Op(Op, Operands<'a>),
    /// `getitem(producer, index)`: an alias for one result of a multi-result node.
    GetItem(&'a str, u32),
    /// Not modelled: keep as `Op::Unknown`.
    Unknown,
}

/// Positional-or-keyword argument access by schema position and name.
struct Args<'a> {
    view: &'a TraceView<'a>,
    args: &'a [Arg<'a>],
    /// Sorted by name, unique.
    kwargs: &'a [(&'a str, Arg<'a>)],
}

impl<'a> Args<'a> {
    fn kwarg(&self, name: &str) -> Option<&'a Arg<'a>> {
        let i = self.kwargs.binary_search_by(|(k, _)| (*k).cmp(name)).ok()?;
        Some(&self.kwargs[i].1)
    }
    fn get(&self, i: usize, name: &str) -> Option<&'a Arg<'a>> {
        self.args.get(i).or_else(|| self.kwarg(name)).filter(|a| !matches!(a, Arg::None))
    }
    /// The tensor names of a `Tensors` or `OptionalTensors` argument.
    fn tensor_list(&self, i: usize, name: &str) -> Option<&'a [Option<&'a str>]> {
        match self.get(i, name)? {
            Arg::Tensors(s) | Arg::OptionalTensors(s) => Some(self.view.names(*s)),
            _ => None,
        }
    }
    fn tensor(&self, i: usize, name: &str) -> Option<Operand<'a>> {
        match self.get(i, name)? {
            Arg::Tensor(n) => Some(Operand::Tensor(n)),
            a => scalar(a).map(Operand::Scalar),
        }
    }
    fn int(&self, i: usize, name: &str, default: i64) -> Option<i64> {
        match self.get(i, name) {
            None => Some(default),
            Some(Arg::Int(v)) => Some(*v),
            _ => None,
        }
    }
    fn opt_int(&self, i: usize, name: &str) -> Option<Option<i64>> {
        match self.get(i, name) {
            None => Some(None),
            Some(Arg::Int(v)) => Some(Some(*v)),
            _ => None,
        }
    }
    /// An int list as a `Vec<i64>` or, for the ops that keep one inline, a `Shape`.
    fn ints<T: for<'s> From<&'s [i64]>>(&self, i: usize, name: &str, default: &[i64]) -> Option<T> {
        match self.get(i, name) {
            None => Some(T::from(default)),
            Some(Arg::Ints(v)) => Some(T::from(self.view.ints(*v))),
            Some(Arg::Int(v)) => Some(T::from(std::slice::from_ref(v))),
            _ => None,
        }
    }
    fn bool(&self, i: usize, name: &str, default: bool) -> Option<bool> {
        match self.get(i, name) {
            None => Some(default),
            Some(Arg::Bool(v)) => Some(*v),
            _ => None,
        }
    }
    fn scalar(&self, i: usize, name: &str) -> Option<Scalar> {
        self.get(i, name).and_then(scalar)
    }
    fn opt_scalar(&self, i: usize, name: &str) -> Option<Option<Scalar>> {
        match self.get(i, name) {
            None => Some(None),
            Some(a) => scalar(a).map(Some),
        }
    }
    fn has(&self, i: usize, name: &str) -> bool {
        self.get(i, name).is_some()
    }
    fn string(&self, i: usize, name: &str) -> Option<&'a str> {
        match self.get(i, name) {
            Some(Arg::String(s)) => Some(s),
            _ => None,
        }
    }
    fn kwarg_dtype(&self, name: &str) -> Option<Option<DType>> {
        self.dtype_arg(self.kwarg(name).filter(|a| !matches!(a, Arg::None)))
    }
    fn dtype(&self, i: usize, name: &str) -> Option<Option<DType>> {
        self.dtype_arg(self.get(i, name))
    }
    fn dtype_arg(&self, arg: Option<&Arg>) -> Option<Option<DType>> {
        match arg {
            None => Some(None),
            Some(Arg::Dtype(d)) => d.parse().ok().map(Some),
            _ => None,
        }
    }
}

/// Converts a scalar argument.
pub fn scalar(a: &Arg) -> Option<Scalar> {
    match a {
        Arg::Int(v) => Some(Scalar::Int(*v)),
        Arg::Float(v) => Some(Scalar::float(*v)),
        Arg::Bool(v) => Some(Scalar::Bool(*v)),
        _ => None,
    }
}

/// Maps one call. `results` are the node's result types from its meta.
pub fn map<'a>(
    view: &'a TraceView<'a>,
    node: &NodeView<'a>,
    results: &[TensorType],
    operand_type: &dyn Fn(&str) -> Option<TensorType>,
) -> Mapped<'a> {
    let a = Args { view, args: view.args(node.args), kwargs: view.kwargs(node) };
    map_known(node.target, &a, results, operand_type).unwrap_or(Mapped::Unknown)
}

fn map_known<'a>(
    target: &'a str,
    a: &Args<'a>,
    results: &[TensorType],
    operand_type: &dyn Fn(&str) -> Option<TensorType>,
) -> Option<Mapped<'a>> {
    // A byte loop, not `rsplit_once`: memrchr's setup costs more than these short names.
    let (op, overload) = match target.bytes().rposition(|b| b == b'.') {
        Some(i) => (&target[..i], &target[i + 1..]),
        None => (target, ""),
    };
    let x = || a.tensor(0, "self");
    let op1 = |op: Op| Some(Mapped::Op(op, smallvec![x()?]));
    let bin = |b: BinaryOp| Some(Mapped::Op(Op::Binary(b), smallvec![x()?, a.tensor(1, "other")?]));
    if target == "getitem" {
        let Some(Arg::Tensor(p)) = a.args.first() else { return None };
        let i = u32::try_from(a.int(1, "index", -1)?).ok()?;
        return Some(Mapped::GetItem(p, i));
    }
    if op == "fxhlo.rng_bit_generator" {
        // fxhlo's own op (python/fxhlo/rng.py): the bits' shape and dtype are its second result's.
        let bits = results.get(1)?;
        let state = a.tensor(0, "state")?;
        return Some(Mapped::Op(Op::RngBitGenerator { shape: bits.shape.to_vec(), dtype: bits.dtype }, smallvec![state]));
    }
    let name = op.strip_prefix("aten.").or_else(|| op.strip_prefix("prims."))?;
    // The IR's family names are `aten.<name>`; only a `prims.` target needs a new string.
    let aten_name = if op.starts_with("aten.") { Cow::Borrowed(op) } else { Cow::Owned(format!("aten.{name}")) };
    if let Some(u) = unary(&aten_name) {
        if !matches!(u, UnaryOp::Gelu | UnaryOp::GeluTanh) {
            return op1(Op::Unary(u));
        }
    }
    if let Some(c) = CompareOp::from_name(&aten_name) {
        return bin_cmp(c, a);
    }
    match name {
        "gelu" => match a.string(1, "approximate").unwrap_or("none") {
            "none" => op1(Op::Unary(UnaryOp::Gelu)),
            "tanh" => op1(Op::Unary(UnaryOp::GeluTanh)),
            _ => None,
        },
        "add" | "sub" => {
            let b = if name == "add" { BinaryOp::Add } else { BinaryOp::Sub };
            let other = a.tensor(1, "other")?;
            let other = match a.scalar(2, "alpha") {
                None => other,
                Some(alpha) if alpha.as_f64() == 1.0 => other,
                Some(alpha) => Operand::Scaled(Box::new(other), alpha),
            };
            Some(Mapped::Op(Op::Binary(b), smallvec![x()?, other]))
        }
        "rsub" => {
            // rsub(self, other, alpha) = other - alpha * self
            let s = match a.scalar(2, "alpha") {
                Some(alpha) if alpha.as_f64() != 1.0 => Operand::Scaled(Box::new(x()?), alpha),
                _ => x()?,
            };
            Some(Mapped::Op(Op::Binary(BinaryOp::Sub), smallvec![a.tensor(1, "other")?, s]))
        }
        "mul" => bin(BinaryOp::Mul),
        "div" => match (overload, a.string(2, "rounding_mode")) {
            (_, None) => bin(BinaryOp::Div),
            (_, Some("trunc")) => bin(BinaryOp::DivTrunc),
            (_, Some("floor")) => bin(BinaryOp::DivFloor),
            _ => None,
        },
        "remainder" => bin(BinaryOp::Remainder),
        "fmod" => bin(BinaryOp::Fmod),
        "maximum" => bin(BinaryOp::Maximum),
        "minimum" => bin(BinaryOp::Minimum),
        "atan2" => bin(BinaryOp::Atan2),
        "nextafter" => bin(BinaryOp::Nextafter),
        "hypot" => bin(BinaryOp::Hypot),
        "zeta" | "special_zeta" => bin(BinaryOp::Zeta),
        "polygamma" => Some(Mapped::Op(Op::Binary(BinaryOp::Polygamma), smallvec![a.tensor(0, "n")?, a.tensor(1, "self")?])),
        // prims' names of unary ops that ATen spells otherwise.
        "erf_inv" => op1(Op::Unary(UnaryOp::Erfinv)),
        "bessel_i1e" => op1(Op::Unary(UnaryOp::I1e)),
        "bessel_i1" => op1(Op::Unary(UnaryOp::I1)),
        "fmax" => bin(BinaryOp::Fmax),
        "fmin" => bin(BinaryOp::Fmin),
        "copysign" if overload == "Tensor" => bin(BinaryOp::Copysign),
        // `max(x, other)` / `min(x, other)` are `maximum` / `minimum`.
        "max" | "min" if overload == "other" => bin(if name == "max" { BinaryOp::Maximum } else { BinaryOp::Minimum }),
        "logical_and" => bin(BinaryOp::LogicalAnd),
        "logical_or" => bin(BinaryOp::LogicalOr),
        "logical_xor" => bin(BinaryOp::LogicalXor),
        "bitwise_and" => bin(BinaryOp::BitwiseAnd),
        "bitwise_or" => bin(BinaryOp::BitwiseOr),
        "bitwise_xor" => bin(BinaryOp::BitwiseXor),
        "pow" => {
            let base = a.tensor(0, "self")?;
            Some(Mapped::Op(Op::Binary(BinaryOp::Pow), smallvec![base, a.tensor(1, "exponent")?]))
        }
        "where" => Some(Mapped::Op(Op::Where, smallvec![a.tensor(0, "condition")?, a.tensor(1, "self")?, a.tensor(2, "other")?])),
        "clamp" if overload == "Tensor" => {
            let (has_min, has_max) = (a.has(1, "min"), a.has(2, "max"));
            let mut ops = smallvec![x()?];
            ops.extend(has_min.then(|| a.tensor(1, "min")).flatten());
            ops.extend(has_max.then(|| a.tensor(2, "max")).flatten());
            Some(Mapped::Op(Op::ClampTensor { has_min, has_max }, ops))
        }
        "clamp" => op1(Op::Clamp { min: a.opt_scalar(1, "min")?, max: a.opt_scalar(2, "max")? }),
        "clamp_min" => op1(Op::Clamp { min: Some(a.scalar(1, "min")?), max: None }),
        "clamp_max" => op1(Op::Clamp { min: None, max: Some(a.scalar(1, "max")?) }),
        "hardtanh" => {
            // hardtanh keeps the input dtype: on integers its (float) bounds truncate.
            let int = results.first().is_some_and(|t| !t.dtype.is_float());
            let bound = |v: Scalar| if int { Scalar::Int(v.as_f64() as i64) } else { v };
            op1(Op::Clamp {
                min: Some(bound(a.scalar(1, "min_val").unwrap_or(Scalar::float(-1.0)))),
                max: Some(bound(a.scalar(2, "max_val").unwrap_or(Scalar::float(1.0)))),
            })
        }
        "_to_copy" | "convert_element_type" => {
            let dtype = if name == "_to_copy" { a.kwarg_dtype("dtype")? } else { a.dtype(1, "dtype")? };
            let input = results.first()?;
            match dtype {
                Some(d) => op1(Op::Convert { dtype: d }),
                None => op1(Op::Convert { dtype: input.dtype }),
            }
        }
        "clone" | "alias" | "lift_fresh_copy" | "contiguous" | "detach" => op1(Op::Copy),
        "sum" | "mean" | "prod" | "amax" | "amin" | "any" | "all" => {
            let r = ReduceOp::from_name(&aten_name)?;
            let cast = a.kwarg_dtype("dtype")?;
            if overload == "dims" && matches!(r, ReduceOp::Any | ReduceOp::All) && a.has(1, "dim") && a.ints::<Shape>(1, "dim", &[])?.is_empty() {
                // any/all over an empty dim list reduce nothing: x != 0 elementwise.
                return op1(Op::Convert { dtype: DType::Bool });
            }
            // `prims.sum(x, dims)` and `prims.prod(x, dims)` take their dims in the default
            // overload (never keepdim); `aten.sum.default(x)` reduces everything.
            let prims = op.starts_with("prims.");
            let dims = match overload {
                "default" if prims => a.ints(1, "dims", &[])?,
                "default" if matches!(r, ReduceOp::Amax | ReduceOp::Amin) => a.ints(1, "dim", &[])?,
                "default" => Shape::new(),
                _ => a.ints(1, "dim", &[])?,
            };
            let keepdim = if prims || (overload == "default" && !matches!(r, ReduceOp::Amax | ReduceOp::Amin)) {
                false
            } else {
                a.bool(2, "keepdim", false)?
            };
            op1(Op::Reduce { op: r, dims, keepdim, dtype: cast })
        }
        "_softmax" | "_log_softmax" => op1(Op::Softmax { dim: a.int(1, "dim", -1)?, log: name == "_log_softmax" }),
        "native_layer_norm" => {
            let (w, b) = (a.has(2, "weight"), a.has(3, "bias"));
            let mut ops = smallvec![x1(a, "input")?];
            ops.extend(w.then(|| a.tensor(2, "weight")).flatten());
            ops.extend(b.then(|| a.tensor(3, "bias")).flatten());
            let op = Op::LayerNorm { normalized_shape: a.ints(1, "normalized_shape", &[])?, eps: a.scalar(4, "eps")?, has_weight: w, has_bias: b };
            Some(Mapped::Op(op, ops))
        }
        "native_group_norm" => {
            let (w, b) = (a.has(1, "weight"), a.has(2, "bias"));
            let mut ops = smallvec![x1(a, "input")?];
            ops.extend(w.then(|| a.tensor(1, "weight")).flatten());
            ops.extend(b.then(|| a.tensor(2, "bias")).flatten());
            let op = Op::GroupNorm { groups: a.int(6, "group", 0)?, eps: a.scalar(7, "eps")?, has_weight: w, has_bias: b };
            Some(Mapped::Op(op, ops))
        }
        "_native_batch_norm_legit_no_training" => {
            let (w, b) = (a.has(1, "weight"), a.has(2, "bias"));
            let mut ops = smallvec![x1(a, "input")?];
            ops.extend(w.then(|| a.tensor(1, "weight")).flatten());
            ops.extend(b.then(|| a.tensor(2, "bias")).flatten());
            ops.push(a.tensor(3, "running_mean")?);
            ops.push(a.tensor(4, "running_var")?);
            Some(Mapped::Op(Op::BatchNorm { eps: a.scalar(6, "eps")?, has_weight: w, has_bias: b }, ops))
        }
        "_native_batch_norm_legit" if overload == "no_stats" => {
            let (w, b) = (a.has(1, "weight"), a.has(2, "bias"));
            let mut ops = smallvec![x1(a, "input")?];
            ops.extend(w.then(|| a.tensor(1, "weight")).flatten());
            ops.extend(b.then(|| a.tensor(2, "bias")).flatten());
            if !a.bool(3, "training", true)? {
                return None;
            }
            Some(Mapped::Op(Op::BatchNormBatchStats { eps: a.scalar(5, "eps")?, has_weight: w, has_bias: b }, ops))
        }
        "_embedding_bag" => {
            let has_weights = a.has(6, "per_sample_weights");
            let mut ops = smallvec![a.tensor(0, "weight")?, a.tensor(1, "indices")?, a.tensor(2, "offsets")?];
            ops.extend(has_weights.then(|| a.tensor(6, "per_sample_weights")).flatten());
            let padding_idx = a.opt_int(8, "padding_idx")?.filter(|&p| p >= 0);
            let op = Op::EmbeddingBag {
                mode: a.int(4, "mode", 0)?,
                include_last_offset: a.bool(7, "include_last_offset", false)?,
                padding_idx,
                has_weights,
            };
            Some(Mapped::Op(op, ops))
        }
        "masked_scatter" => Some(Mapped::Op(Op::MaskedScatter, smallvec![x()?, a.tensor(1, "mask")?, a.tensor(2, "source")?])),
        "_cdist_forward" => Some(Mapped::Op(
            Op::Cdist { p: a.scalar(2, "p").unwrap_or(Scalar::float(2.0)) },
            smallvec![a.tensor(0, "x1")?, a.tensor(1, "x2")?],
        )),
        "_pdist_forward" => op1(Op::Pdist { p: a.scalar(1, "p").unwrap_or(Scalar::float(2.0)) }),
        "mm" => Some(Mapped::Op(Op::Mm, smallvec![x()?, a.tensor(1, "mat2")?])),
        "bmm" => Some(Mapped::Op(Op::Bmm, smallvec![x()?, a.tensor(1, "mat2")?])),
        "addmm" => {
            // beta * self + alpha * (mat1 @ mat2), with the factors folded into the operands.
            // beta = 0 ignores self entirely (even inf/NaN), as PyTorch does.
            let bias = match a.scalar(3, "beta") {
                Some(b) if b.as_f64() == 0.0 => Operand::Scalar(Scalar::Int(0)),
                beta => scale_by(x()?, beta),
            };
            let mat1 = scale_by(a.tensor(1, "mat1")?, a.scalar(4, "alpha"));
            Some(Mapped::Op(Op::Addmm, smallvec![bias, mat1, a.tensor(2, "mat2")?]))
        }
        "convolution" => {
            let has_bias = a.has(2, "bias");
            let mut ops = smallvec![x1(a, "input")?, a.tensor(1, "weight")?];
            ops.extend(has_bias.then(|| a.tensor(2, "bias")).flatten());
            let op = Op::Convolution {
                stride: a.ints(3, "stride", &[1])?,
                padding: a.ints(4, "padding", &[0])?,
                dilation: a.ints(5, "dilation", &[1])?,
                transposed: a.bool(6, "transposed", false)?,
                output_padding: a.ints(7, "output_padding", &[0])?,
                groups: a.int(8, "groups", 1)?,
                has_bias,
                channels_last: false,
            };
            Some(Mapped::Op(op, ops))
        }
        "max_pool2d_with_indices" | "max_pool3d_with_indices" => op1(Op::MaxPool {
            kernel: per_dim(a.ints(1, "kernel_size", &[])?, name),
            stride: per_dim(a.ints(2, "stride", &[])?, name),
            padding: per_dim(a.ints(3, "padding", &[0])?, name),
            dilation: per_dim(a.ints(4, "dilation", &[1])?, name),
            ceil_mode: a.bool(5, "ceil_mode", false)?,
            indices: true,
            channels_last: false,
        }),
        "avg_pool1d" | "avg_pool2d" | "avg_pool3d" => op1(Op::AvgPool {
            kernel: per_dim(a.ints(1, "kernel_size", &[])?, name),
            stride: per_dim(a.ints(2, "stride", &[])?, name),
            padding: per_dim(a.ints(3, "padding", &[0])?, name),
            ceil_mode: a.bool(4, "ceil_mode", false)?,
            count_include_pad: a.bool(5, "count_include_pad", true)?,
            divisor_override: if name == "avg_pool1d" { None } else { a.opt_int(6, "divisor_override")? },
            channels_last: false,
        }),
        "_adaptive_avg_pool1d" | "_adaptive_avg_pool2d" | "_adaptive_avg_pool3d" | "adaptive_avg_pool1d" => {
            op1(Op::AdaptiveAvgPool { output_size: a.ints(1, "output_size", &[])? })
        }
        "upsample_nearest1d" | "upsample_nearest2d" | "upsample_nearest3d" => {
            // The output size is in the meta whichever overload (sizes or scale factors) was used.
            let spatial = name.as_bytes()[name.len() - 2] - b'0';
            let out = results.first()?;
            let k = out.rank().checked_sub(spatial as usize)?;
            op1(Op::UpsampleNearest { output_size: out.shape[k..].to_vec() })
        }
        "view" | "_unsafe_view" | "reshape" => op1(Op::View { shape: a.ints(1, "size", &[])? }),
        "permute" => op1(Op::Permute { dims: a.ints(1, "dims", &[])? }),
        "t" => op1(Op::Permute { dims: if results.first()?.rank() == 2 { Shape::from([1, 0]) } else { Shape::from([0]) } }),
        "transpose" => {
            let rank = results.first()?.rank();
            let (d0, d1) = (a.int(1, "dim0", 0)?, a.int(2, "dim1", 0)?);
            let norm = |d: i64| fxhlo_ir::infer::normalize_dim(d, rank).ok();
            let (d0, d1) = (norm(d0)?, norm(d1)?);
            let mut dims: Shape = (0..rank as i64).collect();
            // A 0-d tensor accepts dims 0 and -1 and has nothing to swap.
            if rank > 0 {
                dims.swap(d0, d1);
            }
            op1(Op::Permute { dims })
        }
        "expand" => op1(Op::Expand { sizes: a.ints(1, "size", &[])? }),
        "broadcast_in_dim" => op1(Op::BroadcastInDim { shape: a.ints(1, "shape", &[])?, dims: a.ints(2, "broadcast_dimensions", &[])? }),
        "slice" => op1(Op::Slice {
            dim: a.int(1, "dim", 0)?,
            start: a.opt_int(2, "start")?.unwrap_or(0),
            end: a.opt_int(3, "end")?.unwrap_or(i64::MAX),
            step: a.int(4, "step", 1)?,
        }),
        "select" => op1(Op::Select { dim: a.int(1, "dim", 0)?, index: a.int(2, "index", 0)? }),
        "unsqueeze" => op1(Op::Unsqueeze { dim: a.int(1, "dim", 0)? }),
        // `squeeze.dims(x, [])` squeezes nothing (an empty list in the IR means every dim).
        "squeeze" if overload == "dims" && a.ints::<Shape>(1, "dim", &[])?.is_empty() => op1(Op::Copy),
        "squeeze" => op1(Op::Squeeze { dims: a.ints(1, "dim", &[])? }),
        "cat" => {
            let Some(Arg::Tensors(ts)) = a.get(0, "tensors") else { return None };
            let ops = a.view.names(*ts).iter().flatten().map(|t| Operand::Tensor(t)).collect();
            Some(Mapped::Op(Op::Cat { dim: a.int(1, "dim", 0)? }, ops))
        }
        "split_with_sizes" => op1(Op::Split { sizes: a.ints(1, "split_sizes", &[])?, dim: a.int(2, "dim", 0)? }),
        "split" => {
            // split.Tensor(self, split_size, dim): chunks of split_size, the last one smaller.
            let dim = a.int(2, "dim", 0)?;
            let chunk = a.int(1, "split_size", 0)?;
            let size = |t: &TensorType| fxhlo_ir::infer::normalize_dim(dim, t.rank()).ok().and_then(|d| t.shape.get(d).copied());
            let total = results.iter().try_fold(0i64, |acc, t| acc.checked_add(size(t)?))?;
            if chunk <= 0 {
                return None;
            }
            // One meta per chunk: a trace with more chunks than metas is malformed, and its
            // chunk list must not be allocated (a huge size would exhaust memory).
            let chunks = if total == 0 { 0 } else { (total - 1) / chunk + 1 };
            if chunks > results.len() as i64 {
                return None;
            }
            let sizes = (0..total).step_by(chunk as usize).map(|s| chunk.min(total - s)).collect();
            op1(Op::Split { sizes, dim })
        }
        "embedding" => Some(Mapped::Op(Op::Embedding, smallvec![a.tensor(0, "weight")?, a.tensor(1, "indices")?])),
        "index" | "_unsafe_index" => {
            let idx = a.tensor_list(1, "indices")?;
            let mut ops = smallvec![x()?];
            ops.extend(idx.iter().flatten().map(|n| Operand::Tensor(n)));
            Some(Mapped::Op(Op::Index { present: idx.iter().map(|i| i.is_some()).collect() }, ops))
        }
        "full" => Some(Mapped::Op(Op::Full { value: a.scalar(1, "fill_value")? }, smallvec![])),
        "fill" => Some(Mapped::Op(Op::Full { value: a.scalar(1, "value")? }, smallvec![])),
        // Uninitialized memory in PyTorch; zeros here (every value is a valid `empty`), so the
        // ops built on it (padding, windows, scatter targets) see defined values.
        "empty" | "empty_permuted" | "empty_strided" | "new_empty" | "new_empty_strided" | "empty_like" => {
            Some(Mapped::Op(Op::Full { value: Scalar::Int(0) }, smallvec![]))
        }
        "elu" => op1(Op::Elu {
            alpha: a.scalar(1, "alpha").unwrap_or(Scalar::Int(1)),
            scale: a.scalar(2, "scale").unwrap_or(Scalar::Int(1)),
            input_scale: a.scalar(3, "input_scale").unwrap_or(Scalar::Int(1)),
        }),
        "leaky_relu" => op1(Op::LeakyRelu { slope: a.scalar(1, "negative_slope").unwrap_or(Scalar::float(0.01)) }),
        "copy" => Some(Mapped::Op(Op::CopyInto, smallvec![x()?, a.tensor(1, "src")?])),
        "argmax" | "argmin" => op1(Op::ArgReduce { max: name == "argmax", dim: a.opt_int(1, "dim")?, keepdim: a.bool(2, "keepdim", false)? }),
        // `x.max()` / `x.min()`: the full reduction (an empty dim list reduces every dim).
        "max" | "min" if overload == "default" => op1(Op::Reduce {
            op: if name == "max" { ReduceOp::Amax } else { ReduceOp::Amin },
            dims: Shape::new(),
            keepdim: false,
            dtype: None,
        }),
        "max" | "min" if overload == "dim" => {
            op1(Op::MaxMin { max: name == "max", dim: a.int(1, "dim", 0)?, keepdim: a.bool(2, "keepdim", false)? })
        }
        "var" => {
            // `prims.var(x, dims, correction)` takes the correction positionally, never keepdim.
            let correction = match overload {
                "dim" => Scalar::Int(if a.bool(2, "unbiased", true)? { 1 } else { 0 }),
                _ if op.starts_with("prims.") => a.scalar(2, "correction")?,
                _ => a.scalar(usize::MAX, "correction").unwrap_or(Scalar::Int(1)),
            };
            let keepdim = if overload == "dim" { a.bool(3, "keepdim", false)? } else { a.bool(usize::MAX, "keepdim", false)? };
            op1(Op::Var { dims: a.ints(1, "dim", &[])?, correction, keepdim })
        }
        "cumsum" => {
            op1(Op::Cumsum { dim: a.int(1, "dim", 0)?, dtype: a.kwarg_dtype("dtype")? })
        }
        "constant_pad_nd" => op1(Op::Pad { pad: a.ints(1, "pad", &[])?, mode: PadMode::Constant(a.scalar(2, "value").unwrap_or(Scalar::Int(0))) }),
        "reflection_pad1d" | "reflection_pad2d" | "reflection_pad3d" => {
            op1(Op::Pad { pad: a.ints(1, "padding", &[])?, mode: PadMode::Reflect })
        }
        "replication_pad1d" | "replication_pad2d" | "replication_pad3d" => {
            op1(Op::Pad { pad: a.ints(1, "padding", &[])?, mode: PadMode::Replicate })
        }
        "repeat" => op1(Op::Repeat { repeats: a.ints(1, "repeats", &[])? }),
        "flip" => op1(Op::Flip { dims: a.ints(1, "dims", &[])? }),
        "diagonal" => op1(Op::Diagonal { offset: a.int(1, "offset", 0)?, dim1: a.int(2, "dim1", 0)?, dim2: a.int(3, "dim2", 1)? }),
        "as_strided" => op1(Op::AsStrided {
            size: a.ints(1, "size", &[])?,
            stride: a.ints(2, "stride", &[])?,
            offset: a.opt_int(3, "storage_offset")?.unwrap_or(0),
        }),
        "gather" => Some(Mapped::Op(Op::Gather { dim: a.int(1, "dim", 0)? }, smallvec![x()?, a.tensor(2, "index")?])),
        "index_select" => Some(Mapped::Op(Op::IndexSelect { dim: a.int(1, "dim", 0)? }, smallvec![x()?, a.tensor(2, "index")?])),
        "scatter" | "scatter_add" | "scatter_reduce" => {
            let (reduce, include_self) = match name {
                "scatter_add" => (ScatterReduce::Sum, true),
                "scatter_reduce" => {
                    let r = a.string(4, "reduce")?;
                    let m = ScatterReduce::ALL.into_iter().find(|m| m.name() == r && *m != ScatterReduce::Replace)?;
                    (m, a.bool(5, "include_self", true)?)
                }
                _ if a.has(4, "reduce") => return None, // scatter with reduce= is deprecated; not modelled
                _ => (ScatterReduce::Replace, true),
            };
            let src = a.tensor(3, if overload == "value" { "value" } else { "src" })?;
            Some(Mapped::Op(Op::Scatter { dim: a.int(1, "dim", 0)?, reduce, include_self }, smallvec![x()?, a.tensor(2, "index")?, src]))
        }
        "index_put" => {
            let idx = a.tensor_list(1, "indices")?;
            let mut ops = smallvec![x()?];
            ops.extend(idx.iter().flatten().map(|n| Operand::Tensor(n)));
            ops.push(a.tensor(2, "values")?);
            let present = idx.iter().map(|i| i.is_some()).collect();
            Some(Mapped::Op(Op::IndexPut { present, accumulate: a.bool(3, "accumulate", false)? }, ops))
        }
        "select_scatter" => Some(Mapped::Op(
            Op::SelectScatter { dim: a.int(2, "dim", 0)?, index: a.int(3, "index", 0)? },
            smallvec![x()?, a.tensor(1, "src")?],
        )),
        "slice_scatter" => Some(Mapped::Op(
            Op::SliceScatter {
                dim: a.int(2, "dim", 0)?,
                start: a.opt_int(3, "start")?.unwrap_or(0),
                end: a.opt_int(4, "end")?.unwrap_or(i64::MAX),
                step: a.int(5, "step", 1)?,
            },
            smallvec![x()?, a.tensor(1, "src")?],
        )),
        "linalg_cholesky_ex" => op1(Op::Cholesky { upper: a.bool(1, "upper", false)? }),
        "complex" => Some(Mapped::Op(Op::Binary(BinaryOp::Complex), smallvec![a.tensor(0, "real")?, a.tensor(1, "imag")?])),
        // `_conj` is PyTorch's lazy conjugate view; a functional graph may hold it as a value.
        "_conj" | "conj" | "_conj_physical" | "conj_physical" => op1(Op::Unary(UnaryOp::Conj)),
        "_fft_c2c" | "_fft_r2c" | "_fft_c2r" => fft(name, a, results, operand_type),
        "linalg_solve_triangular" => Some(Mapped::Op(
            Op::TriangularSolve {
                upper: a.bool(2, "upper", false)?,
                left: a.bool(3, "left", true)?,
                unit_diagonal: a.bool(4, "unitriangular", false)?,
            },
            smallvec![x()?, a.tensor(1, "B")?],
        )),
        "sort" => op1(Op::Sort { dim: a.int(1, "dim", -1)?, descending: a.bool(2, "descending", false)? }),
        "topk" => op1(Op::Topk { k: a.int(1, "k", 1)?, dim: a.int(2, "dim", -1)?, largest: a.bool(3, "largest", true)? }),
        "grid_sampler_2d" => Some(Mapped::Op(
            Op::GridSample {
                mode: a.int(2, "interpolation_mode", 0)?,
                padding: a.int(3, "padding_mode", 0)?,
                align_corners: a.bool(4, "align_corners", false)?,
            },
            smallvec![x1(a, "input")?, a.tensor(1, "grid")?],
        )),
        "upsample_bilinear2d" => {
            let out = results.first()?;
            let k = out.rank().checked_sub(2)?;
            op1(Op::UpsampleBilinear { output_size: out.shape[k..].to_vec(), align_corners: a.bool(2, "align_corners", false)? })
        }
        // full_like depends only on the shape of `self`, which the result type carries.
        "full_like" => Some(Mapped::Op(Op::Full { value: a.scalar(1, "fill_value")? }, smallvec![])),
        "scalar_tensor" => Some(Mapped::Op(Op::Full { value: a.scalar(0, "s")? }, smallvec![])),
        "arange" => {
            let (start, end, step) = match overload {
                "default" => (Scalar::Int(0), a.scalar(0, "end")?, Scalar::Int(1)),
                "start" => (a.scalar(0, "start")?, a.scalar(1, "end")?, Scalar::Int(1)),
                _ => (a.scalar(0, "start")?, a.scalar(1, "end")?, a.scalar(2, "step").unwrap_or(Scalar::Int(1))),
            };
            Some(Mapped::Op(Op::Arange { start, end, step }, smallvec![]))
        }
        _ => None,
    }
}

/// `o * factor`, or `o` itself when the factor is absent or 1.
fn scale_by(o: Operand<'_>, factor: Option<Scalar>) -> Operand<'_> {
    match factor {
        Some(f) if f.as_f64() != 1.0 => Operand::Scaled(Box::new(o), f),
        _ => o,
    }
}

/// The first tensor argument under its schema name (`input`, `self`, ...).
fn x1<'a>(a: &Args<'a>, name: &str) -> Option<Operand<'a>> {
    a.tensor(0, name).or_else(|| a.tensor(0, "self"))
}

/// A pooling parameter with one value per spatial dim: PyTorch takes a single value (`3` or
/// `(3,)`) for all of them; `name` (`max_pool2d_with_indices`, `avg_pool3d`) says how many.
/// An empty list (a stride left to default to the kernel) stays empty.
fn per_dim<T: From<Vec<i64>> + AsRef<[i64]>>(v: T, name: &str) -> T {
    let dims = ["1d", "2d", "3d"].iter().position(|s| name.contains(s)).map_or(0, |i| i + 1);
    match v.as_ref() {
        [one] if dims > 1 => T::from(vec![*one; dims]),
        _ => v,
    }
}

/// `UnaryOp::from_name` through a map built once: the linear search over every unary op's name
/// was a tenth of import time (most nodes of a trace are tried as unary ops first).
/// ATen's `_fft_*` in the form of `stablehlo.fft`: over the innermost dims in order (1 to 3),
/// no normalization forward and `1/n` inverse (XLA's); other forms stay unknown (the capture's
/// decompositions, python/fxhlo/decompositions/spectral.py, bring them to this one).
fn fft<'a>(name: &str, a: &Args<'a>, results: &[TensorType], operand_type: &dyn Fn(&str) -> Option<TensorType>) -> Option<Mapped<'a>> {
    let x = a.tensor(0, "self")?;
    let dims: Vec<i64> = a.ints(1, "dim", &[])?;
    let normalization = a.int(2, "normalization", 0)?;
    let out = results.first()?;
    let r = out.rank() as i64;
    let k = dims.len() as i64;
    let trailing = (1..=3).contains(&k) && dims.iter().enumerate().all(|(i, &d)| d.rem_euclid(r.max(1)) == r - k + i as i64);
    if !trailing {
        return None;
    }
    let signal = |shape: &[i64]| shape[shape.len() - k as usize..].to_vec();
    let (kind, length) = match name {
        "_fft_c2c" => match (a.bool(3, "forward", true)?, normalization) {
            (true, 0) => (FftKind::Fft, signal(&out.shape)),
            (false, 2) => (FftKind::Ifft, signal(&out.shape)),
            _ => return None,
        },
        // The input's signal sizes: the one-sided result's last dim is `n / 2 + 1`.
        "_fft_r2c" if a.bool(3, "onesided", true)? && normalization == 0 => {
            let Operand::Tensor(input) = x else { return None };
            (FftKind::Rfft, signal(&operand_type(input)?.shape))
        }
        "_fft_c2r" if normalization == 2 => (FftKind::Irfft, signal(&out.shape)),
        _ => return None,
    };
    Some(Mapped::Op(Op::Fft { kind, length }, smallvec![x]))
}

fn unary(name: &str) -> Option<UnaryOp> {
    static BY_NAME: OnceLock<HashMap<&'static str, UnaryOp, FxBuildHasher>> = OnceLock::new();
    BY_NAME.get_or_init(|| UnaryOp::ALL.iter().map(|u| (u.name(), *u)).collect()).get(name).copied()
}

fn bin_cmp<'a>(c: CompareOp, a: &Args<'a>) -> Option<Mapped<'a>> {
    Some(Mapped::Op(Op::Compare(c), smallvec![a.tensor(0, "self")?, a.tensor(1, "other")?]))
}

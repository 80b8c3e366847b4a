//! Reductions (`sum`, `mean`, `prod`, `amax`, `amin`, `any`, `all`) and `softmax` /
//! `log_softmax`.
//!
//! PyTorch semantics: integer and bool sums and products accumulate in i64; f16/bf16 inputs
//! accumulate in f32 and convert back (PyTorch's CPU kernels do the same); `amax`/`amin`
//! propagate NaN; softmax subtracts the row maximum first, as PyTorch does, so large logits do
//! not overflow.

use fxhlo_ir::{infer::normalize_dim, DType, ReduceOp, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// The dtype arithmetic runs in for `d`: f32 for 16-bit floats.
pub fn compute_dtype(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// Normalized, sorted, deduplicated reduction dims (all dims when `dims` is empty).
pub fn reduce_dims(dims: &[i64], rank: usize) -> Result<Vec<usize>, String> {
    if dims.is_empty() {
        return Ok((0..rank).collect());
    }
    let mut out = dims.iter().map(|&d| normalize_dim(d, rank)).collect::<Result<Vec<_>, _>>()?;
    out.retain(|&d| d < rank.max(1) && rank > 0);
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `x` reduced over `dims` with `c`, computed in `work` dtype; keeps reduced dims as size 1
/// when `keepdim`.
pub fn reduce_to<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: Operand<'c, 'a, '_>,
    dims: &[usize],
    keepdim: bool,
    c: Combiner,
    work: DType,
    loc: Location<'c>,
) -> Result<(V<'c, 'a>, TensorType)> {
    let xt = TensorType::new(work, x.1.shape.clone());
    let v = e.convert(x.0, x.1, work, loc)?;
    let r = e.reduce(v, &xt, dims, c, loc)?;
    let dropped: Vec<i64> = (0..xt.rank()).filter(|i| !dims.contains(i)).map(|i| xt.shape[i]).collect();
    let rt = TensorType::new(work, dropped);
    if !keepdim {
        return Ok((r, rt));
    }
    let kept: Vec<i64> = (0..xt.rank()).map(|i| if dims.contains(&i) { 1 } else { xt.shape[i] }).collect();
    let kt = TensorType::new(work, kept);
    Ok((e.reshape(r, &rt, &kt, loc)?, kt))
}

/// A reduction op.
pub fn reduce<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: ReduceOp,
    dims: &[i64],
    keepdim: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let dims = reduce_dims(dims, x.1.rank()).map_err(|m| e.internal(m))?;
    let (combiner, work) = match op {
        ReduceOp::Sum | ReduceOp::Mean => (Combiner::Add, compute_dtype(out.dtype)),
        ReduceOp::Prod => (Combiner::Mul, compute_dtype(out.dtype)),
        ReduceOp::Amax => (Combiner::Max, x.1.dtype),
        ReduceOp::Amin => (Combiner::Min, x.1.dtype),
        ReduceOp::Any => (Combiner::Or, DType::Bool),
        ReduceOp::All => (Combiner::And, DType::Bool),
    };
    let x = if work == DType::Bool && x.1.dtype != DType::Bool {
        let zero = e.splat(Scalar::Int(0), x.1, loc)?;
        (e.compare("NE", x.0, zero, &x.1.shape, loc)?, x.1)
    } else {
        x
    };
    let xb = TensorType::new(if work == DType::Bool { DType::Bool } else { x.1.dtype }, x.1.shape.clone());
    let (mut r, rt) = reduce_to(e, (x.0, &xb), &dims, keepdim, combiner, work, loc)?;
    if op == ReduceOp::Mean {
        let count: i64 = dims.iter().map(|&d| x.1.shape[d]).product();
        let n = e.splat(Scalar::Int(count), &rt, loc)?;
        r = e.op("stablehlo.divide", loc, &[r, n], &rt, &[])?;
    }
    e.convert(r, &rt, out.dtype, loc)
}

/// `softmax(x, dim)` or `log_softmax(x, dim)`.
pub fn softmax<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, log: bool, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let d = normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let work = compute_dtype(out.dtype);
    let t = TensorType::new(work, x.1.shape.clone());
    let xv = e.convert(x.0, x.1, work, loc)?;
    let dims = if x.1.rank() == 0 { vec![] } else { vec![d] };
    let (m, mt) = reduce_to(e, (xv, &t), &dims, true, Combiner::Max, work, loc)?;
    let m = e.broadcast(m, &mt, &t, loc)?;
    let shifted = e.op("stablehlo.subtract", loc, &[xv, m], &t, &[])?;
    let ex = e.op("stablehlo.exponential", loc, &[shifted], &t, &[])?;
    let (s, st) = reduce_to(e, (ex, &t), &dims, true, Combiner::Add, work, loc)?;
    let s = e.broadcast(s, &st, &t, loc)?;
    let r = if log {
        let ls = e.op("stablehlo.log", loc, &[s], &t, &[])?;
        e.op("stablehlo.subtract", loc, &[shifted, ls], &t, &[])?
    } else {
        e.op("stablehlo.divide", loc, &[ex, s], &t, &[])?
    };
    e.convert(r, &t, out.dtype, loc)
}

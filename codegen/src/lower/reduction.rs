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
use crate::attr::ComparisonDirection;
use crate::emit::Emitter;
use crate::region::{Combiner, Nan};
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
    reduce_to_nan(e, x, dims, keepdim, c, Nan::Propagate, work, loc)
}

/// [`reduce_to`] with the NaN rule of a float max/min chosen by the caller.
#[allow(clippy::too_many_arguments)]
fn reduce_to_nan<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: Operand<'c, 'a, '_>,
    dims: &[usize],
    keepdim: bool,
    c: Combiner,
    nan: Nan,
    work: DType,
    loc: Location<'c>,
) -> Result<(V<'c, 'a>, TensorType)> {
    let xt = TensorType::new(work, x.1.shape.clone());
    let v = e.convert(x.0, x.1, work, loc)?;
    let r = e.reduce_nan(v, &xt, dims, c, nan, loc)?;
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
        (e.compare(ComparisonDirection::Ne, x.0, zero, &x.1.shape, loc)?, x.1)
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
    // A NaN in a row makes the whole row NaN through `exp` and the sum, so the max that only
    // shifts the row needs no NaN check of its own.
    let (m, mt) = reduce_to_nan(e, (xv, &t), &dims, true, Combiner::Max, Nan::Ignore, work, loc)?;
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

/// `fxhlo.softmax_stats(x, dim)`: the max over `dim` and the sum of `exp(x - max)` (0 where
/// the max is -inf), in one reduction computed in f32 for 16-bit inputs.
pub fn softmax_stats<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    let d = normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let out = results.first().ok_or_else(|| e.internal("fxhlo.softmax_stats has no result type"))?;
    let work = compute_dtype(x.1.dtype);
    let t = TensorType::new(work, x.1.shape.clone());
    let xv = e.convert(x.0, x.1, work, loc)?;
    let (m, s) = e.softmax_stats(xv, &t, &[d], loc)?;
    let rt = TensorType::new(work, out.shape.clone());
    // A row of -inf: the reduction counted its elements; its sum of exp(-inf) is 0.
    let ninf = e.splat(Scalar::float(f64::NEG_INFINITY), &rt, loc)?;
    let empty = e.compare(ComparisonDirection::Eq, m, ninf, &rt.shape, loc)?;
    let zero = e.splat(Scalar::Int(0), &rt, loc)?;
    let s = e.op("stablehlo.select", loc, &[empty, zero, s], &rt, &[])?;
    Ok(vec![e.convert(m, &rt, out.dtype, loc)?, e.convert(s, &rt, out.dtype, loc)?])
}

/// An i64 iota of `shape` along `d` (an arg-reduction's candidate indices, row/column numbers).
pub fn iota_i64<'c, 'a>(e: &Emitter<'c, 'a>, shape: &[i64], d: usize, loc: Location<'c>) -> Result<V<'c, 'a>> {
    e.iota(&TensorType::new(DType::I64, shape.to_vec()), d, loc)
}

/// `argmax`/`argmin` over `dim` (the flattened tensor when `None`): the i64 index. NaN counts
/// as the extreme and ties pick the first index, as PyTorch does.
pub fn arg_reduce<'c, 'a>(e: &Emitter<'c, 'a>, max: bool, dim: Option<i64>, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let (_, _, i, it) = extreme(e, max, dim, operands, loc)?;
    Ok(vec![e.reshape(i, &it, &results[0], loc)?])
}

/// `max.dim`/`min.dim`: the values and their i64 indices, as [`arg_reduce`] picks them.
pub fn max_min<'c, 'a>(e: &Emitter<'c, 'a>, max: bool, dim: i64, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let (v, vt, i, it) = extreme(e, max, Some(dim), operands, loc)?;
    Ok(vec![e.reshape(v, &vt, &results[0], loc)?, e.reshape(i, &it, &results[1], loc)?])
}

/// The max (or min) of operand 0 over `dim` and its index, with their types (the dim dropped).
fn extreme<'c, 'a>(
    e: &Emitter<'c, 'a>,
    max: bool,
    dim: Option<i64>,
    operands: &[Operand<'c, 'a, '_>],
    loc: Location<'c>,
) -> Result<(V<'c, 'a>, TensorType, V<'c, 'a>, TensorType)> {
    let x = arg(e, operands, 0)?;
    // Reduce a flattened copy when no dim is given (or the input is a scalar).
    let (xv, xt, d) = match dim {
        Some(d) if x.1.rank() > 0 => (x.0, x.1.clone(), normalize_dim(d, x.1.rank()).map_err(|m| e.internal(m))?),
        _ => {
            let flat = TensorType::new(x.1.dtype, vec![x.1.num_elements() as i64]);
            (e.reshape(x.0, x.1, &flat, loc)?, flat, 0)
        }
    };
    let idx = iota_i64(e, &xt.shape, d, loc)?;
    let (v, i) = e.arg_reduce(xv, idx, &xt, &[d], max, loc)?;
    let mut reduced = xt.shape.clone();
    reduced.remove(d);
    Ok((v, TensorType::new(xt.dtype, reduced.clone()), i, TensorType::new(DType::I64, reduced)))
}

/// `var(x, dims, correction)`: `sum((x - mean)^2) / max(0, N - correction)`.
pub fn var<'c, 'a>(e: &Emitter<'c, 'a>, dims: &[i64], correction: Scalar, keepdim: bool, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let dims = reduce_dims(dims, x.1.rank()).map_err(|m| e.internal(m))?;
    let work = compute_dtype(x.1.dtype);
    let xt = TensorType::new(work, x.1.shape.clone());
    let xv = e.convert(x.0, x.1, work, loc)?;
    let count: i64 = dims.iter().map(|&d| x.1.shape[d]).product();
    let (sum, st) = reduce_to(e, (xv, &xt), &dims, true, Combiner::Add, work, loc)?;
    let mean = e.op("stablehlo.divide", loc, &[sum, e.splat(Scalar::Int(count), &st, loc)?], &st, &[])?;
    let mb = e.broadcast(mean, &st, &xt, loc)?;
    let c = e.op("stablehlo.subtract", loc, &[xv, mb], &xt, &[])?;
    let sq = e.op("stablehlo.multiply", loc, &[c, c], &xt, &[])?;
    let (ss, sst) = reduce_to(e, (sq, &xt), &dims, keepdim, Combiner::Add, work, loc)?;
    let denom = (count as f64 - correction.as_f64()).max(0.0);
    let v = e.op("stablehlo.divide", loc, &[ss, e.splat(Scalar::float(denom), &sst, loc)?], &sst, &[])?;
    e.convert(v, &sst, out.dtype, loc)
}

/// `cumsum(x, dim)`: a window sum over all previous elements (integers accumulate in i64).
pub fn cumsum<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    if x.1.rank() == 0 {
        return e.convert(x.0, x.1, out.dtype, loc);
    }
    let d = normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let work = compute_dtype(out.dtype);
    let t = TensorType::new(work, x.1.shape.clone());
    let v = e.convert(x.0, x.1, work, loc)?;
    let n = x.1.shape[d];
    let mut window = vec![1; t.rank()];
    window[d] = n.max(1);
    let mut pads = vec![(0, 0); t.rank()];
    pads[d] = ((n - 1).max(0), 0);
    let ones = vec![1; t.rank()];
    let r = e.reduce_window(v, &t, &t, &window, &ones, &ones, &pads, Combiner::Add, Scalar::Int(0), loc)?;
    e.convert(r, &t, out.dtype, loc)
}

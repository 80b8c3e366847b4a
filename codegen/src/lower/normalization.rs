//! Normalization: `native_layer_norm`, `native_group_norm` and inference batch norm
//! (`_native_batch_norm_legit_no_training`).
//!
//! Statistics are computed in f32 for 16-bit inputs and the variance is the biased one (divide
//! by N), as PyTorch does; `rstd = rsqrt(var + eps)`. The statistics results take the dtype
//! (and, for batch norm, the shape) of the node's types: each device's kernel returns its own
//! form of them (`fxhlo_ir::infer::agrees`). Inference batch norm's are empty on the CPU and
//! the running mean and `rsqrt(running_var + eps)` on CUDA.

use fxhlo_ir::{Scalar, TensorType};
use melior::ir::{Location, Value};

use super::reduction::{compute_dtype, reduce_to};
use super::{arg, Operand};
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// What every norm op has: its epsilon, and whether a weight and a bias follow the input.
#[derive(Clone, Copy, Debug)]
pub struct Norm {
    pub eps: Scalar,
    pub has_weight: bool,
    pub has_bias: bool,
}

/// `native_layer_norm` over the last `k` dims: the normalized value, mean and rstd.
pub fn layer_norm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    k: usize,
    norm: Norm,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let (x, xv, xt) = input(e, operands, loc)?;
    let dims: Vec<usize> = (x.1.rank() - k..x.1.rank()).collect();
    let (mean, rstd, st) = stats(e, xv, &xt, &dims, norm.eps, loc)?;
    let y = normalize(e, xv, &xt, mean, rstd, &st, loc)?;
    // weight/bias have the normalized shape: broadcast over the leading dims.
    let y = affine(e, y, &xt, operands, norm.has_weight, norm.has_bias, 1, None, loc)?;
    let out = e.convert(y, &xt, x.1.dtype, loc)?;
    with_stats(e, out, (mean, rstd, &st), st.shape.to_vec(), results, loc)
}

/// `native_group_norm` with `groups` groups: the normalized value, mean and rstd `[N, G]`.
pub fn group_norm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    groups: i64,
    norm: Norm,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let (x, xv, xt) = input(e, operands, loc)?;
    // [N, C, *] -> [N, G, C/G * prod(*)], statistics over the last dim.
    let (n, c) = (x.1.shape[0], x.1.shape[1]);
    let per_group = x.1.num_elements() as i64 / (n * groups).max(1);
    let gt = TensorType::new(xt.dtype, vec![n, groups, per_group]);
    let xg = e.reshape(xv, &xt, &gt, loc)?;
    let (mean, rstd, st) = stats(e, xg, &gt, &[2], norm.eps, loc)?;
    let yg = normalize(e, xg, &gt, mean, rstd, &st, loc)?;
    let y = e.reshape(yg, &gt, &xt, loc)?;
    let y = affine(e, y, &xt, operands, norm.has_weight, norm.has_bias, 1, Some(c), loc)?;
    let out = e.convert(y, &xt, x.1.dtype, loc)?;
    with_stats(e, out, (mean, rstd, &st), vec![n, groups], results, loc)
}

/// Training batch norm from the batch's own statistics: the normalized value, and the mean and
/// rstd per channel.
pub fn batch_norm_batch_stats<'c, 'a>(
    e: &Emitter<'c, 'a>,
    norm: Norm,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let (x, xv, xt) = input(e, operands, loc)?;
    // Statistics over every dim but the channels (dim 1).
    let c = x.1.shape[1];
    let dims: Vec<usize> = (0..x.1.rank()).filter(|&d| d != 1).collect();
    let (mean, rstd, st) = stats(e, xv, &xt, &dims, norm.eps, loc)?;
    let y = normalize(e, xv, &xt, mean, rstd, &st, loc)?;
    let y = affine(e, y, &xt, operands, norm.has_weight, norm.has_bias, 1, Some(c), loc)?;
    let out = e.convert(y, &xt, x.1.dtype, loc)?;
    with_stats(e, out, (mean, rstd, &st), vec![c], results, loc)
}

/// `[out, mean, rstd]`, the statistics (of type `st`) reshaped to `shape` and converted to the
/// dtype of `results[1]`.
fn with_stats<'c, 'a>(
    e: &Emitter<'c, 'a>,
    out: V<'c, 'a>,
    (mean, rstd, st): (V<'c, 'a>, V<'c, 'a>, &TensorType),
    shape: Vec<i64>,
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let t = TensorType::new(st.dtype, shape);
    let mean = e.reshape(mean, st, &t, loc)?;
    let rstd = e.reshape(rstd, st, &t, loc)?;
    let sd = results[1].dtype;
    Ok(vec![out, e.convert(mean, &t, sd, loc)?, e.convert(rstd, &t, sd, loc)?])
}

/// Inference batch norm from the running statistics (the operands after weight and bias).
pub fn batch_norm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    norm: Norm,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let (x, xv, xt) = input(e, operands, loc)?;
    let (c, work) = (x.1.shape[1], xt.dtype);
    let base = 1 + norm.has_weight as usize + norm.has_bias as usize;
    let chan = |i: usize| -> Result<V<'c, 'a>> {
        let p = arg(e, operands, i)?;
        let pv = e.convert(p.0, p.1, work, loc)?;
        channel_broadcast(e, pv, &TensorType::new(work, p.1.shape.clone()), &xt, loc)
    };
    let (mean, var) = (chan(base)?, chan(base + 1)?);
    let eps = e.splat(norm.eps, &xt, loc)?;
    let rstd = e.op("stablehlo.add", loc, &[var, eps], &xt, &[])?;
    let rstd = e.op("stablehlo.rsqrt", loc, &[rstd], &xt, &[])?;
    let centered = e.op("stablehlo.subtract", loc, &[xv, mean], &xt, &[])?;
    let y = e.op("stablehlo.multiply", loc, &[centered, rstd], &xt, &[])?;
    let y = affine(e, y, &xt, operands, norm.has_weight, norm.has_bias, 1, Some(c), loc)?;
    let out = e.convert(y, &xt, x.1.dtype, loc)?;
    let mut values = vec![out];
    // The saved statistics in the form the node's types say (see `fxhlo_ir::infer::agrees`):
    // empty (CPU, cuDNN), or CUDA's running mean and `rsqrt(running_var + eps)` per channel,
    // then zeros for what follows (cuDNN's empty reserve space).
    for (i, t) in results.iter().enumerate().skip(1) {
        let v = match i {
            1 | 2 if t.num_elements() > 0 => {
                let p = arg(e, operands, base + i - 1)?;
                let ct = TensorType::new(work, p.1.shape.clone());
                let pv = e.convert(p.0, p.1, work, loc)?;
                let stat = if i == 1 {
                    pv
                } else {
                    let var = e.op("stablehlo.add", loc, &[pv, e.splat(norm.eps, &ct, loc)?], &ct, &[])?;
                    e.op("stablehlo.rsqrt", loc, &[var], &ct, &[])?
                };
                e.convert(stat, &ct, t.dtype, loc)?
            }
            _ => e.splat(Scalar::Int(0), t, loc)?,
        };
        values.push(v);
    }
    Ok(values)
}

/// Operand 0, and its value and type in the dtype the statistics are computed in.
fn input<'c, 'a, 't>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, 't>], loc: Location<'c>) -> Result<(Operand<'c, 'a, 't>, V<'c, 'a>, TensorType)> {
    let x = arg(e, operands, 0)?;
    let work = compute_dtype(x.1.dtype);
    Ok((x, e.convert(x.0, x.1, work, loc)?, TensorType::new(work, x.1.shape.clone())))
}

/// Mean and rstd over `dims` (kept as size-1 dims).
fn stats<'c, 'a>(e: &Emitter<'c, 'a>, x: V<'c, 'a>, t: &TensorType, dims: &[usize], eps: Scalar, loc: Location<'c>) -> Result<(V<'c, 'a>, V<'c, 'a>, TensorType)> {
    let count: i64 = dims.iter().map(|&d| t.shape[d]).product();
    let (sum, st) = reduce_to(e, (x, t), dims, true, Combiner::Add, t.dtype, loc)?;
    let n = e.splat(Scalar::Int(count), &st, loc)?;
    let mean = e.op("stablehlo.divide", loc, &[sum, n], &st, &[])?;
    let mb = e.broadcast(mean, &st, t, loc)?;
    let centered = e.op("stablehlo.subtract", loc, &[x, mb], t, &[])?;
    let sq = e.op("stablehlo.multiply", loc, &[centered, centered], t, &[])?;
    let (ssum, _) = reduce_to(e, (sq, t), dims, true, Combiner::Add, t.dtype, loc)?;
    let var = e.op("stablehlo.divide", loc, &[ssum, n], &st, &[])?;
    let var = e.op("stablehlo.add", loc, &[var, e.splat(eps, &st, loc)?], &st, &[])?;
    let rstd = e.op("stablehlo.rsqrt", loc, &[var], &st, &[])?;
    Ok((mean, rstd, st))
}

fn normalize<'c, 'a>(e: &Emitter<'c, 'a>, x: V<'c, 'a>, t: &TensorType, mean: V<'c, 'a>, rstd: V<'c, 'a>, st: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let mb = e.broadcast(mean, st, t, loc)?;
    let rb = e.broadcast(rstd, st, t, loc)?;
    let centered = e.op("stablehlo.subtract", loc, &[x, mb], t, &[])?;
    e.op("stablehlo.multiply", loc, &[centered, rb], t, &[])
}

/// A per-channel vector `[C]` broadcast along dim 1 of `to`.
fn channel_broadcast<'c, 'a>(e: &Emitter<'c, 'a>, v: V<'c, 'a>, from: &TensorType, to: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    e.broadcast_in_dim(v, &[1], &TensorType::new(from.dtype, to.shape.clone()), loc)
}

/// `y * weight + bias` for the optional operands starting at `first`; `channels` = Some(C)
/// broadcasts them along dim 1, None along the trailing dims.
#[allow(clippy::too_many_arguments)]
fn affine<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mut y: V<'c, 'a>,
    t: &TensorType,
    operands: &[Operand<'c, 'a, '_>],
    has_weight: bool,
    has_bias: bool,
    first: usize,
    channels: Option<i64>,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let param = |i: usize| -> Result<V<'c, 'a>> {
        let p = arg(e, operands, i)?;
        let pt = TensorType::new(t.dtype, p.1.shape.clone());
        let pv = e.convert(p.0, p.1, t.dtype, loc)?;
        match channels {
            Some(_) => channel_broadcast(e, pv, &pt, t, loc),
            None => e.broadcast(pv, &pt, t, loc),
        }
    };
    let mut i = first;
    if has_weight {
        y = e.op("stablehlo.multiply", loc, &[y, param(i)?], t, &[])?;
        i += 1;
    }
    if has_bias {
        y = e.op("stablehlo.add", loc, &[y, param(i)?], t, &[])?;
    }
    Ok(y)
}

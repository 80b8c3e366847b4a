//! Pooling and resampling over the trailing spatial dims: max pool, average pool, adaptive
//! average pool, nearest upsampling.
//!
//! PyTorch semantics: `ceil_mode` adds windows at the high end only where they start inside
//! the input or its left padding; average pooling divides by the window size clipped to the
//! padded input (`count_include_pad=True`), by the number of real elements
//! (`count_include_pad=False`), or by `divisor_override`; adaptive pooling uses PyTorch's
//! windows `[floor(i*in/out), ceil((i+1)*in/out))`; nearest upsampling reads source index
//! `floor(dst * in / out)`. Max pool is lowered as the node says: with indices, a (value, index)
//! window reduction; without, a plain max window over the trailing dims, or over the middle
//! ones of a channels-last pool (the passes `unused-results` and `channels-last-pooling`
//! choose those forms).

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::indexing::index_select;
use super::reduction::compute_dtype;
use super::{arg, Operand};
use crate::attr::{self, DotDimensions, Precision};
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// A pooling window as the op gives it: per-dim kernel, stride (empty: the kernel size),
/// padding and dilation (empty: 1).
#[derive(Clone, Copy, Debug)]
pub struct Window<'o> {
    pub kernel: &'o [i64],
    pub stride: &'o [i64],
    pub padding: &'o [i64],
    pub dilation: &'o [i64],
}

/// Stride, padding and dilation of an `n`-dim window (an empty stride means the kernel size).
fn window_params(e: &Emitter<'_, '_>, w: &Window) -> Result<(Vec<i64>, Vec<i64>, Vec<i64>)> {
    let n = w.kernel.len();
    let per_dim = |v: &[i64], default, what| fxhlo_ir::infer::per_dim(v, n, default, what).map_err(|m| e.internal(m));
    let s = if w.stride.is_empty() { w.kernel.to_vec() } else { per_dim(w.stride, 0, "stride")? };
    Ok((s, per_dim(w.padding, 0, "padding")?, per_dim(w.dilation, 1, "dilation")?))
}

/// `max_pool` over the trailing dims (or, `channels_last`, the middle ones of
/// `[N, spatial..., C]`): the values and, with `indices`, their flat indices in their plane.
#[allow(clippy::too_many_arguments)]
pub fn max_pool<'c, 'a>(
    e: &Emitter<'c, 'a>,
    w: &Window,
    indices: bool,
    channels_last: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    let rank = x.1.rank();
    let n = w.kernel.len();
    let (s, p, d) = window_params(e, w)?;
    // Channels-last (`[N, spatial..., C]`): the spatial dims start at 1, one dim after them.
    let first = if channels_last { 1 } else { rank - n };
    let (window, strides, dil, pads) = windows(x.1, out, first, w.kernel, &s, &p, &d);
    if !indices {
        // A plain max window, much cheaper than the (value, index) reduction. The body
        // propagates NaN, as PyTorch's max pooling does.
        let init = Combiner::Max.identity(x.1.dtype);
        return Ok(vec![e.reduce_window(x.0, x.1, out, &window, &strides, &dil, &pads, Combiner::Max, init, loc)?]);
    }
    // Candidate index of every input element: its flat offset within its spatial plane.
    let it = TensorType::new(DType::I64, x.1.shape.clone());
    let mut flat: Option<V<'c, 'a>> = None;
    let mut scale = 1;
    for k in (rank - n..rank).rev() {
        let io = e.iota(&it, k, loc)?;
        let term = e.op("stablehlo.multiply", loc, &[io, e.splat(Scalar::Int(scale), &it, loc)?], &it, &[])?;
        flat = Some(match flat {
            None => term,
            Some(acc) => e.op("stablehlo.add", loc, &[acc, term], &it, &[])?,
        });
        scale *= x.1.shape[k];
    }
    let idx = flat.ok_or_else(|| e.internal("max pool without spatial dims"))?;
    let (v, i) = e.arg_reduce_window(x.0, idx, out, &window, &strides, &dil, &pads, loc)?;
    Ok(vec![v, i])
}

/// What an average pool divides by: `divisor_override`, or the window's size clipped to the
/// padded input (`include_pad`), or its real elements.
#[derive(Clone, Copy, Debug)]
pub struct Count {
    pub include_pad: bool,
    pub divisor_override: Option<i64>,
}

/// `avg_pool` over the trailing dims (or, `channels_last`, the middle ones of
/// `[N, spatial..., C]`), dividing as `count` says.
pub fn avg_pool<'c, 'a>(
    e: &Emitter<'c, 'a>,
    w: &Window,
    count: Count,
    channels_last: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let Count { include_pad: count_include_pad, divisor_override } = count;
    let x = arg(e, operands, 0)?;
    let rank = x.1.rank();
    let n = w.kernel.len();
    let (s, p, _) = window_params(e, w)?;
    // Channels-last (`[N, spatial..., C]`): the spatial dims start at 1, one dim after them.
    let first = if channels_last { 1 } else { rank - n };
    let (window, strides, dil, pads) = windows(x.1, out, first, w.kernel, &s, &p, &vec![1; n]);
    let work = compute_dtype(x.1.dtype);
    let xt = TensorType::new(work, x.1.shape.clone());
    let ot = TensorType::new(work, out.shape.clone());
    let xv = e.convert(x.0, x.1, work, loc)?;
    let zero = Scalar::Int(0);
    let sum = e.reduce_window(xv, &xt, &ot, &window, &strides, &dil, &pads, Combiner::Add, zero, loc)?;
    let divisor = match divisor_override {
        Some(dv) => e.splat(Scalar::Int(dv), &ot, loc)?,
        None => {
            // Count the window's elements: ones over the input, padded with ones where
            // the explicit padding counts, then the same window sum (ceil-mode overhang
            // pads with zeros, so it never counts).
            let ones = e.splat(Scalar::Int(1), &xt, loc)?;
            let (src, st, pads2) = if count_include_pad {
                let lo: Vec<i64> = (0..rank).map(|i| if (first..first + n).contains(&i) { p[i - first] } else { 0 }).collect();
                let padded: Vec<i64> = (0..rank).map(|i| xt.shape[i] + 2 * lo[i]).collect();
                let pt = TensorType::new(work, padded);
                let one = e.splat(Scalar::Int(1), &TensorType::new(work, vec![]), loc)?;
                let padded_ones = e.pad(ones, one, &lo, &lo, &vec![0; rank], &pt, loc)?;
                let rest: Vec<(i64, i64)> = pads.iter().zip(&lo).map(|(&(l, h), &q)| (l - q, h - q)).collect();
                (padded_ones, pt, rest)
            } else {
                (ones, xt.clone(), pads.clone())
            };
            e.reduce_window(src, &st, &ot, &window, &strides, &dil, &pads2, Combiner::Add, zero, loc)?
        }
    };
    let avg = e.op("stablehlo.divide", loc, &[sum, divisor], &ot, &[])?;
    e.convert(avg, &ot, out.dtype, loc)
}

/// `upsample_nearest` to `output_size` over the trailing dims: source index
/// `floor(dst * in / out)`, one index selection per dim that changes.
pub fn upsample_nearest<'c, 'a>(e: &Emitter<'c, 'a>, output_size: &[i64], operands: &[Operand<'c, 'a, '_>], loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let rank = x.1.rank();
    let n = output_size.len();
    let mut cur = x.0;
    let mut cur_t = x.1.clone();
    for (i, &o) in output_size.iter().enumerate() {
        let d = rank - n + i;
        let inp = cur_t.shape[d];
        if inp == o {
            continue;
        }
        // src = floor(dst * in / out), exactly in integers.
        let idx: Vec<i64> = (0..o).map(|j| ((j as i128 * inp as i128) / o as i128) as i64).collect();
        let iv = e.constant_i64(&idx, &TensorType::new(DType::I64, vec![o]), loc)?;
        cur = index_select(e, (cur, &cur_t), d, iv, o, loc)?;
        cur_t.shape[d] = o;
    }
    Ok(cur)
}

/// `upsample_bilinear2d` to `output_size`: one product with PyTorch's interpolation matrix
/// per dim.
pub fn upsample_bilinear<'c, 'a>(
    e: &Emitter<'c, 'a>,
    output_size: &[i64],
    align_corners: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    resample(e, output_size, operands, out, loc, |v, t, d, o| {
        let a = bilinear_weights(t.shape[d], o, align_corners);
        contract_dim(e, v, t, d, &a, o, loc)
    })
}

/// Operand 0 in the work dtype, taken along each trailing dim `d` that `output_size` names to
/// its size `o` by `step(v, t, d, o)` (which returns the new value and type), then converted
/// to `out`'s dtype.
fn resample<'c, 'a>(
    e: &Emitter<'c, 'a>,
    output_size: &[i64],
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
    mut step: impl FnMut(V<'c, 'a>, &TensorType, usize, i64) -> Result<(V<'c, 'a>, TensorType)>,
) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let first = x.1.rank() - output_size.len();
    let work = compute_dtype(x.1.dtype);
    let mut t = TensorType::new(work, x.1.shape.clone());
    let mut v = e.convert(x.0, x.1, work, loc)?;
    for (i, &o) in output_size.iter().enumerate() {
        (v, t) = step(v, &t, first + i, o)?;
    }
    e.convert(v, &t, out.dtype, loc)
}

/// The `[in, out]` linear-interpolation matrix of PyTorch's bilinear upsampling along one dim:
/// `align_corners` maps corners to corners, else pixel centers
/// (`src = (dst + 0.5) * in / out - 0.5`, clamped at 0).
fn bilinear_weights(inp: i64, out: i64, align_corners: bool) -> Vec<f64> {
    let mut a = vec![0.0; (inp * out) as usize];
    for o in 0..out {
        let src = if align_corners {
            if out > 1 { o as f64 * (inp - 1) as f64 / (out - 1) as f64 } else { 0.0 }
        } else {
            ((o as f64 + 0.5) * inp as f64 / out as f64 - 0.5).max(0.0)
        };
        let i0 = (src.floor() as i64).min(inp - 1);
        let i1 = (i0 + 1).min(inp - 1);
        let l = src - i0 as f64;
        a[(i0 * out + o) as usize] += 1.0 - l;
        a[(i1 * out + o) as usize] += l;
    }
    a
}

/// `v` with dim `d` (size `in`) contracted against the constant `[in, out]` matrix `a`, the
/// new dim put back in place of `d`.
fn contract_dim<'c, 'a>(e: &Emitter<'c, 'a>, v: V<'c, 'a>, t: &TensorType, d: usize, a: &[f64], o: i64, loc: Location<'c>) -> Result<(V<'c, 'a>, TensorType)> {
    let (rank, inp) = (t.rank(), t.shape[d]);
    let mut next = t.clone();
    next.shape[d] = o;
    let at = TensorType::new(t.dtype, vec![inp, o]);
    let am = e.constant(attr::float_elements(e.ctx, &at, a).map_err(|m| e.internal(m))?, &at, loc)?;
    // dot_general puts the free lhs dims first and the new dim last: transpose back.
    let mut dot_shape: Vec<i64> = (0..rank).filter(|&k| k != d).map(|k| t.shape[k]).collect();
    dot_shape.push(o);
    let dt = TensorType::new(t.dtype, dot_shape);
    let dims = DotDimensions { lhs_contracting: vec![d as i64], rhs_contracting: vec![0], ..DotDimensions::default() };
    let mut attrs = vec![("dot_dimension_numbers", dims.attr(e.ctx))];
    if matches!(t.dtype, DType::F32 | DType::F64) {
        attrs.push(("precision_config", attr::precision_config(e.ctx, &[Precision::Highest; 2])));
    }
    let dot = e.op("stablehlo.dot_general", loc, &[v, am], &dt, &attrs)?;
    let mut perm: Vec<i64> = (0..rank as i64 - 1).collect();
    perm.insert(d, rank as i64 - 1);
    let r = e.op("stablehlo.transpose", loc, &[dot], &next, &[("permutation", attr::i64s(e.ctx, &perm))])?;
    Ok((r, next))
}

/// Window, strides, dilations and (low, high) padding over every dim of the input.
type Windows = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<(i64, i64)>);

/// Full-rank window, stride, dilation and padding for a window over the `kernel.len()` dims
/// from `first` on (with ceil-mode overhang added at the high end so the window count matches
/// the result shape); every other dim has a window of 1.
fn windows(x: &TensorType, out: &TensorType, first: usize, kernel: &[i64], s: &[i64], p: &[i64], d: &[i64]) -> Windows {
    let rank = x.rank();
    let mut window = vec![1; rank];
    let mut strides = vec![1; rank];
    let mut dil = vec![1; rank];
    let mut pads = vec![(0, 0); rank];
    for i in 0..kernel.len() {
        let k = first + i;
        window[k] = kernel[i];
        strides[k] = s[i];
        dil[k] = d[i];
        let needed = (out.shape[k] - 1) * s[i] + d[i] * (kernel[i] - 1) + 1;
        let have = x.shape[k] + 2 * p[i];
        pads[k] = (p[i], p[i] + (needed - have).max(0));
    }
    (window, strides, dil, pads)
}

/// Adaptive average pooling: a plain average pool where every input size is a multiple of its
/// output size, else PyTorch's variable windows, one dim at a time, as a product with a
/// constant averaging matrix.
pub fn adaptive_avg_pool<'c, 'a>(e: &Emitter<'c, 'a>, output_size: &[i64], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    resample(e, output_size, operands, out, loc, |v, t, d, o| {
        let (rank, inp) = (t.rank(), t.shape[d]);
        if inp == o {
            return Ok((v, t.clone()));
        }
        let mut next = t.clone();
        next.shape[d] = o;
        if inp % o == 0 {
            let k = inp / o;
            let mut window = vec![1; rank];
            window[d] = k;
            let pads = vec![(0, 0); rank];
            let sum = e.reduce_window(v, t, &next, &window, &window, &vec![1; rank], &pads, Combiner::Add, Scalar::Int(0), loc)?;
            let avg = e.op("stablehlo.divide", loc, &[sum, e.splat(Scalar::Int(k), &next, loc)?], &next, &[])?;
            return Ok((avg, next));
        }
        // Averaging matrix A[j, o] = 1/len over window j of output o; contract dim d with it.
        let mut a = vec![0.0f64; (inp * o) as usize];
        for oi in 0..o {
            let start = (oi * inp) / o;
            let end = ((oi + 1) * inp + o - 1) / o;
            for j in start..end {
                a[(j * o + oi) as usize] = 1.0 / (end - start) as f64;
            }
        }
        contract_dim(e, v, t, d, &a, o, loc)
    })
}

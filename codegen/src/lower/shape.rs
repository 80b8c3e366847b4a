//! Shape ops: view/reshape, permute, expand, broadcast_in_dim, slice, select, squeeze,
//! unsqueeze, cat, split, pad, repeat, flip, diagonal, as_strided. All are layout-free in
//! StableHLO (values have no strides), so every view is a reshape, transpose, broadcast, slice
//! or gather of the value.

use fxhlo_ir::infer::normalize_dim;
use fxhlo_ir::{DType, PadMode, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::indexing::gather;
use super::{arg, Operand};
use crate::attr::{self, GatherDimensions};
use crate::emit::Emitter;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// `d` normalized against `rank`, or an internal error (the verifier checked it).
fn norm(e: &Emitter<'_, '_>, d: i64, rank: usize) -> Result<usize> {
    normalize_dim(d, rank).map_err(|m| e.internal(m))
}

/// `view`, `unsqueeze`, `squeeze`: a reshape to the result type.
pub fn reshape<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    e.reshape(x.0, x.1, out, loc)
}

/// `permute(x, dims)`.
pub fn permute<'c, 'a>(e: &Emitter<'c, 'a>, dims: &[i64], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let perm: Vec<i64> = dims.iter().map(|&d| norm(e, d, x.1.rank()).map(|d| d as i64)).collect::<Result<_>>()?;
    e.op("stablehlo.transpose", loc, &[x.0], out, &[("permutation", attr::i64s(e.ctx, &perm))])
}

/// `expand(x, sizes)`: a numpy broadcast to the result type.
pub fn expand<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    e.broadcast(x.0, x.1, out, loc)
}

/// `broadcast_in_dim(x, shape, dims)`, as StableHLO's.
pub fn broadcast_in_dim<'c, 'a>(e: &Emitter<'c, 'a>, dims: &[i64], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    e.broadcast_in_dim(arg(e, operands, 0)?.0, dims, out, loc)
}

/// `x[.., start:end:step, ..]` along `dim`.
#[allow(clippy::too_many_arguments)]
pub fn slice<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, start: i64, end: i64, step: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let d = norm(e, dim, x.1.rank())?;
    let (lo, _) = fxhlo_ir::infer::slice_bounds(start, end, x.1.shape[d]);
    slice_dim(e, x, d, lo, lo + (out.shape[d] - 1).max(0) * step + 1, step, out, loc)
}

/// The start indices of a dynamic slice along dim `d` of a rank-`rank` tensor: `start` there,
/// zeros of its type elsewhere.
fn dynamic_starts<'c, 'a>(e: &Emitter<'c, 'a>, start: Operand<'c, 'a, '_>, d: usize, rank: usize, loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let zero = e.splat(Scalar::Int(0), start.1, loc)?;
    Ok((0..rank).map(|i| if i == d { start.0 } else { zero }).collect())
}

/// `dynamic_slice(x, start)` along `dim`: `stablehlo.dynamic_slice` with the whole of every
/// other dim.
pub fn dynamic_slice<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, start) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let d = norm(e, dim, x.1.rank())?;
    let mut values = vec![x.0];
    values.extend(dynamic_starts(e, start, d, x.1.rank(), loc)?);
    e.op("stablehlo.dynamic_slice", loc, &values, out, &[("slice_sizes", crate::attr::i64s(e.ctx, &out.shape))])
}

/// `dynamic_update_slice(x, update, start)` along `dim`: `stablehlo.dynamic_update_slice`.
pub fn dynamic_update_slice<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, update, start) = (arg(e, operands, 0)?, arg(e, operands, 1)?, arg(e, operands, 2)?);
    let d = norm(e, dim, x.1.rank())?;
    let mut values = vec![x.0, update.0];
    values.extend(dynamic_starts(e, start, d, x.1.rank(), loc)?);
    e.op("stablehlo.dynamic_update_slice", loc, &values, out, &[])
}

/// `select(x, dim, index)`: a one-wide slice, reshaped without the dim.
pub fn select<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, index: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let d = norm(e, dim, x.1.rank())?;
    let i = if index < 0 { index + x.1.shape[d] } else { index };
    let mut kept = x.1.shape.clone();
    kept[d] = 1;
    let kt = TensorType::new(x.1.dtype, kept);
    let s = slice_dim(e, x, d, i, i + 1, 1, &kt, loc)?;
    e.reshape(s, &kt, out, loc)
}

/// `cat(tensors, dim)`, in the result dtype; PyTorch's legacy empty `[0]` operands are skipped.
pub fn cat<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let real: Vec<_> = operands.iter().filter(|o| !fxhlo_ir::infer::is_legacy_empty(o.1) || out.shape == [0]).collect();
    let Some(first) = real.first() else { return e.splat(Scalar::Int(0), out, loc) };
    let d = norm(e, dim, first.1.rank())?;
    let vals: Vec<V<'c, 'a>> = real.iter().map(|o| e.convert(o.0, o.1, out.dtype, loc)).collect::<Result<_>>()?;
    e.concatenate(&vals, d, out, loc)
}

/// `split(x, sizes, dim)`: one slice per result.
pub fn split<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    let d = norm(e, dim, x.1.rank())?;
    let mut start = 0;
    let mut vals = Vec::with_capacity(results.len());
    for r in results {
        let len = r.shape[d];
        vals.push(slice_dim(e, x, d, start, start + len, 1, r, loc)?);
        start += len;
    }
    Ok(vals)
}

/// `repeat(x, repeats)`: `x` broadcast into interleaved `[r0, s0, r1, s1, ..]` dims, reshaped.
pub fn repeat<'c, 'a>(e: &Emitter<'c, 'a>, repeats: &[i64], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let lead = repeats.len() - x.1.rank();
    let padded: Vec<i64> = std::iter::repeat_n(1, lead).chain(x.1.shape.iter().copied()).collect();
    let pt = TensorType::new(x.1.dtype, padded.clone());
    let v = e.reshape(x.0, x.1, &pt, loc)?;
    let mut wide = Vec::with_capacity(2 * padded.len());
    for (r, s) in repeats.iter().zip(&padded) {
        wide.push(*r);
        wide.push(*s);
    }
    let wt = TensorType::new(x.1.dtype, wide);
    let dims: Vec<i64> = (0..padded.len() as i64).map(|i| 2 * i + 1).collect();
    let b = e.broadcast_in_dim(v, &dims, &wt, loc)?;
    e.reshape(b, &wt, out, loc)
}

/// `flip(x, dims)`.
pub fn flip<'c, 'a>(e: &Emitter<'c, 'a>, dims: &[i64], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let mut ds: Vec<i64> = dims.iter().map(|&d| norm(e, d, x.1.rank()).map(|d| d as i64)).collect::<Result<_>>()?;
    ds.sort_unstable();
    ds.dedup();
    e.reverse(x.0, &ds, out, loc)
}

/// `diagonal(x, offset, dim1, dim2)`: a gather of the diagonal's (dim1, dim2) coordinates.
#[allow(clippy::too_many_arguments)]
pub fn diagonal<'c, 'a>(e: &Emitter<'c, 'a>, offset: i64, dim1: i64, dim2: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let rank = x.1.rank();
    let (a, b) = (norm(e, dim1, rank)?, norm(e, dim2, rank)?);
    let len = *out.shape.last().unwrap_or(&0);
    let mut coords = Vec::new();
    for i in 0..len {
        let (ia, ib) = if offset >= 0 { (i, i + offset) } else { (i - offset, i) };
        coords.extend([ia, ib]);
    }
    let idx = e.constant_i64(&coords, &TensorType::new(DType::I64, vec![len, 2]), loc)?;
    let mut collapsed = vec![a as i64, b as i64];
    collapsed.sort_unstable();
    let offset_dims: Vec<i64> = (0..rank as i64 - 2).collect();
    let mut sizes = x.1.shape.clone();
    sizes[a] = 1;
    sizes[b] = 1;
    let dims = GatherDimensions { offset_dims, collapsed_slice_dims: collapsed, start_index_map: vec![a as i64, b as i64], index_vector_dim: 1 };
    gather(e, x.0, idx, out, &dims, &sizes, loc)
}

/// `as_strided(x, size, stride, offset)` of a contiguous `x`: a gather from the flattened
/// value at the constant flat index of every result element.
#[allow(clippy::too_many_arguments)]
pub fn as_strided<'c, 'a>(e: &Emitter<'c, 'a>, size: &[i64], stride: &[i64], offset: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let n = x.1.num_elements() as i64;
    let flat = TensorType::new(x.1.dtype, vec![n]);
    let v = e.reshape(x.0, x.1, &flat, loc)?;
    let total: usize = size.iter().map(|&d| d.max(0) as usize).product();
    let mut idx = Vec::with_capacity(total);
    for lin in 0..total {
        let (mut rem, mut pos) = (lin as i64, offset);
        for k in (0..size.len()).rev() {
            pos += (rem % size[k]) * stride[k];
            rem /= size[k];
        }
        idx.push(pos);
    }
    let mut ishape = size.to_vec();
    ishape.push(1);
    let it = TensorType::new(DType::I64, ishape);
    let flat_idx = TensorType::new(DType::I64, vec![total as i64]);
    let c = e.constant_i64(&idx, &flat_idx, loc)?;
    let c = e.reshape(c, &flat_idx, &it, loc)?;
    let dims = GatherDimensions { offset_dims: vec![], collapsed_slice_dims: vec![0], start_index_map: vec![0], index_vector_dim: size.len() as i64 };
    gather(e, v, c, out, &dims, &[1], loc)
}

/// Constant, reflection and replication padding (`pad` pairs start at the last dim).
pub fn pad<'c, 'a>(e: &Emitter<'c, 'a>, pad: &[i64], mode: PadMode, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let rank = x.1.rank();
    let mut lo = vec![0; rank];
    let mut hi = vec![0; rank];
    for (i, pair) in pad.chunks(2).enumerate() {
        lo[rank - 1 - i] = pair[0];
        hi[rank - 1 - i] = pair.get(1).copied().unwrap_or(0);
    }
    let reflect = match mode {
        PadMode::Constant(value) => {
            let fill = e.splat(value, &TensorType::new(x.1.dtype, vec![]), loc)?;
            return e.pad(x.0, fill, &lo, &hi, &vec![0; rank], out, loc);
        }
        PadMode::Reflect => true,
        PadMode::Replicate => false,
    };
    let (mut v, mut t) = (x.0, x.1.clone());
    for d in 0..rank {
        if lo[d] == 0 && hi[d] == 0 {
            continue;
        }
        let n = t.shape[d];
        let piece = |from: i64, to: i64, reverse: bool| -> Result<(V<'c, 'a>, TensorType)> {
            let mut pt = t.clone();
            pt.shape[d] = to - from;
            let s = slice_dim(e, (v, &t), d, from, to, 1, &pt, loc)?;
            let s = if reverse { e.reverse(s, &[d as i64], &pt, loc)? } else { s };
            Ok((s, pt))
        };
        let edge = |count: i64, at: i64| -> Result<(V<'c, 'a>, TensorType)> {
            let (s, st) = piece(at, at + 1, false)?;
            let mut bt = st.clone();
            bt.shape[d] = count;
            Ok((e.broadcast(s, &st, &bt, loc)?, bt))
        };
        let mut parts = Vec::new();
        if lo[d] > 0 {
            parts.push(if reflect { piece(1, 1 + lo[d], true)? } else { edge(lo[d], 0)? });
        }
        parts.push((v, t.clone()));
        if hi[d] > 0 {
            parts.push(if reflect { piece(n - 1 - hi[d], n - 1, true)? } else { edge(hi[d], n - 1)? });
        }
        let mut nt = t.clone();
        nt.shape[d] = parts.iter().map(|(_, pt)| pt.shape[d]).sum();
        let vals: Vec<V<'c, 'a>> = parts.iter().map(|(pv, _)| *pv).collect();
        v = e.concatenate(&vals, d, &nt, loc)?;
        t = nt;
    }
    Ok(v)
}

/// `x[.., lo:hi:step, ..]` along dim `d` (an empty result when the range is empty).
#[allow(clippy::too_many_arguments)]
fn slice_dim<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, d: usize, lo: i64, hi: i64, step: i64, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let rank = x.1.rank();
    let mut start = vec![0; rank];
    let mut limit = x.1.shape.clone();
    let mut strides = vec![1; rank];
    start[d] = lo.min(x.1.shape[d]);
    limit[d] = hi.min(x.1.shape[d]).max(start[d]);
    if out.shape[d] == 0 {
        limit[d] = start[d];
    }
    strides[d] = step;
    e.slice(x.0, &start, &limit, &strides, out, loc)
}

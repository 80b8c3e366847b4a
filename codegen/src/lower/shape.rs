//! Shape ops: view/reshape, permute, expand, slice, select, squeeze, unsqueeze, cat, split.
//! All are layout-free in StableHLO (values have no strides), so every view is a reshape,
//! transpose, broadcast or slice of the value.

use fxhlo_ir::infer::normalize_dim;
use fxhlo_ir::{Op, TensorType};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::emit::{i64s, Emitter};
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// Lowers one shape op to its results.
pub fn lower<'c, 'a>(e: &Emitter<'c, 'a>, op: &Op, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    let out = results.first().ok_or_else(|| e.internal("shape op has no result"))?;
    let rank = x.1.rank();
    let norm = |d: i64, r: usize| normalize_dim(d, r).map_err(|m| e.internal(m));
    let one = |v: Result<V<'c, 'a>>| v.map(|v| vec![v]);
    match op {
        Op::View { .. } | Op::Unsqueeze { .. } | Op::Squeeze { .. } => one(e.reshape(x.0, x.1, out, loc)),
        Op::Permute { dims } => {
            let perm: Vec<i64> = dims.iter().map(|&d| norm(d, rank).map(|d| d as i64)).collect::<Result<_>>()?;
            one(e.op("stablehlo.transpose", loc, &[x.0], out, &[("permutation", i64s(&perm))]))
        }
        Op::Expand { .. } => one(e.broadcast(x.0, x.1, out, loc)),
        Op::BroadcastInDim { dims, .. } => {
            one(e.op("stablehlo.broadcast_in_dim", loc, &[x.0], out, &[("broadcast_dimensions", i64s(dims))]))
        }
        Op::Slice { dim, start, end, step } => {
            let d = norm(*dim, rank)?;
            let (lo, _) = fxhlo_ir::infer::slice_bounds(*start, *end, x.1.shape[d]);
            one(slice(e, x, d, lo, lo + (out.shape[d] - 1).max(0) * step + 1, *step, out, loc))
        }
        Op::Select { dim, index } => {
            let d = norm(*dim, rank)?;
            let i = if *index < 0 { index + x.1.shape[d] } else { *index };
            let mut kept = x.1.shape.clone();
            kept[d] = 1;
            let kt = TensorType::new(x.1.dtype, kept);
            let s = slice(e, x, d, i, i + 1, 1, &kt, loc)?;
            one(e.reshape(s, &kt, out, loc))
        }
        Op::Cat { dim } => {
            let real: Vec<_> = operands.iter().filter(|o| !fxhlo_ir::infer::is_legacy_empty(o.1) || out.shape == [0]).collect();
            let Some(first) = real.first() else { return one(e.splat(fxhlo_ir::Scalar::Int(0), out, loc)) };
            let d = norm(*dim, first.1.rank())?;
            let vals: Vec<V<'c, 'a>> = real.iter().map(|o| e.convert(o.0, o.1, out.dtype, loc)).collect::<Result<_>>()?;
            one(e.op("stablehlo.concatenate", loc, &vals, out, &[("dimension", format!("{d} : i64"))]))
        }
        Op::Split { dim, .. } => {
            let d = norm(*dim, rank)?;
            let mut start = 0;
            let mut vals = Vec::with_capacity(results.len());
            for r in results {
                let len = r.shape[d];
                vals.push(slice(e, x, d, start, start + len, 1, r, loc)?);
                start += len;
            }
            Ok(vals)
        }
        Op::Pad { pad, mode } => one(pad_op(e, x, pad, *mode, out, loc)),
        Op::Repeat { repeats } => {
            let lead = repeats.len() - rank;
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
            let b = e.op("stablehlo.broadcast_in_dim", loc, &[v], &wt, &[("broadcast_dimensions", i64s(&dims))])?;
            one(e.reshape(b, &wt, out, loc))
        }
        Op::Flip { dims } => {
            let mut ds: Vec<i64> = dims.iter().map(|&d| norm(d, rank).map(|d| d as i64)).collect::<Result<_>>()?;
            ds.sort_unstable();
            ds.dedup();
            one(e.op("stablehlo.reverse", loc, &[x.0], out, &[("dimensions", i64s(&ds))]))
        }
        Op::Diagonal { offset, dim1, dim2 } => {
            let (a, b) = (norm(*dim1, rank)?, norm(*dim2, rank)?);
            let len = *out.shape.last().unwrap_or(&0);
            let mut rows = Vec::new();
            for i in 0..len {
                let (ia, ib) = if *offset >= 0 { (i, i + offset) } else { (i - offset, i) };
                rows.push(format!("[{ia}, {ib}]"));
            }
            let it = TensorType::new(fxhlo_ir::DType::I64, vec![len, 2]);
            let text = if len == 0 { "dense<> : tensor<0x2xi64>".to_string() } else { format!("dense<[{}]> : tensor<{len}x2xi64>", rows.join(", ")) };
            let idx = e.op("stablehlo.constant", loc, &[], &it, &[("value", text)])?;
            let mut collapsed = vec![a as i64, b as i64];
            collapsed.sort_unstable();
            let offset_dims: Vec<i64> = (0..rank as i64 - 2).collect();
            let mut sizes = x.1.shape.clone();
            sizes[a] = 1;
            sizes[b] = 1;
            one(super::indexing::gather(e, x.0, idx, out, &offset_dims, &collapsed, &[a as i64, b as i64], 1, &sizes, loc))
        }
        Op::AsStrided { size, stride, offset } => {
            let n = x.1.num_elements() as i64;
            let flat = TensorType::new(x.1.dtype, vec![n]);
            let v = e.reshape(x.0, x.1, &flat, loc)?;
            let total: usize = size.iter().map(|&d| d.max(0) as usize).product();
            let mut idx = Vec::with_capacity(total);
            for lin in 0..total {
                let (mut rem, mut pos) = (lin as i64, *offset);
                for k in (0..size.len()).rev() {
                    pos += (rem % size[k]) * stride[k];
                    rem /= size[k];
                }
                idx.push(pos.to_string());
            }
            let mut ishape = size.clone();
            ishape.push(1);
            let it = TensorType::new(fxhlo_ir::DType::I64, ishape);
            let flat_idx = TensorType::new(fxhlo_ir::DType::I64, vec![total as i64]);
            let text = if total == 0 { "dense<> : tensor<0xi64>".to_string() } else { format!("dense<[{}]> : tensor<{total}xi64>", idx.join(", ")) };
            let c = e.op("stablehlo.constant", loc, &[], &flat_idx, &[("value", text)])?;
            let c = e.reshape(c, &flat_idx, &it, loc)?;
            one(super::indexing::gather(e, v, c, out, &[], &[0], &[0], size.len() as i64, &[1], loc))
        }
        _ => Err(e.internal(format!("{} is not a shape op", op.name()))),
    }
}

/// Constant, reflection and replication padding (`pad` pairs start at the last dim).
fn pad_op<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, pad: &[i64], mode: fxhlo_ir::PadMode, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let rank = x.1.rank();
    let mut lo = vec![0; rank];
    let mut hi = vec![0; rank];
    for (i, pair) in pad.chunks(2).enumerate() {
        lo[rank - 1 - i] = pair[0];
        hi[rank - 1 - i] = pair.get(1).copied().unwrap_or(0);
    }
    if let fxhlo_ir::PadMode::Constant(value) = mode {
        let fill = e.splat(value, &TensorType::new(x.1.dtype, vec![]), loc)?;
        let attrs = [("edge_padding_low", i64s(&lo)), ("edge_padding_high", i64s(&hi)), ("interior_padding", i64s(&vec![0; rank]))];
        return e.op("stablehlo.pad", loc, &[x.0, fill], out, &attrs);
    }
    let (mut v, mut t) = (x.0, x.1.clone());
    for d in 0..rank {
        if lo[d] == 0 && hi[d] == 0 {
            continue;
        }
        let n = t.shape[d];
        let piece = |from: i64, to: i64, reverse: bool| -> Result<(V<'c, 'a>, TensorType)> {
            let mut pt = t.clone();
            pt.shape[d] = to - from;
            let s = slice(e, (v, &t), d, from, to, 1, &pt, loc)?;
            let s = if reverse { e.op("stablehlo.reverse", loc, &[s], &pt, &[("dimensions", i64s(&[d as i64]))])? } else { s };
            Ok((s, pt))
        };
        let edge = |count: i64, at: i64| -> Result<(V<'c, 'a>, TensorType)> {
            let (s, st) = piece(at, at + 1, false)?;
            let mut bt = st.clone();
            bt.shape[d] = count;
            Ok((e.broadcast(s, &st, &bt, loc)?, bt))
        };
        let mut parts = Vec::new();
        let reflect = matches!(mode, fxhlo_ir::PadMode::Reflect);
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
        v = e.op("stablehlo.concatenate", loc, &vals, &nt, &[("dimension", format!("{d} : i64"))])?;
        t = nt;
    }
    Ok(v)
}

/// `x[.., lo:hi:step, ..]` along dim `d` (an empty result when the range is empty).
#[allow(clippy::too_many_arguments)]
fn slice<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, d: usize, lo: i64, hi: i64, step: i64, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
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
    e.op("stablehlo.slice", loc, &[x.0], out, &[("start_indices", i64s(&start)), ("limit_indices", i64s(&limit)), ("strides", i64s(&strides))])
}

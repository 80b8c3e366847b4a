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
        Op::Slice { dim, start, end, step } => {
            let d = norm(*dim, rank)?;
            let (lo, _) = fxhlo_ir_slice(*start, *end, x.1.shape[d]);
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
            let d = norm(*dim, rank)?;
            let vals: Vec<V<'c, 'a>> = operands.iter().map(|o| e.convert(o.0, o.1, out.dtype, loc)).collect::<Result<_>>()?;
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
        _ => Err(e.internal(format!("{} is not a shape op", op.name()))),
    }
}

/// Python slicing bounds (see `ir::infer`).
fn fxhlo_ir_slice(start: i64, end: i64, size: i64) -> (i64, i64) {
    let norm = |v: i64| if v < 0 { v.saturating_add(size).max(0) } else { v.min(size) };
    (norm(start), norm(end))
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

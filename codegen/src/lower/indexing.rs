//! Indexing: `embedding`, advanced indexing (`index`, `_unsafe_index`) and index selection
//! along one dim, all as `stablehlo.gather`.
//!
//! PyTorch semantics: negative indices count from the end of their dim. Out-of-range indices
//! are an error in PyTorch; XLA's gather clamps them into range instead (there is no error
//! path inside a compiled executable), so such inputs give clamped reads, not a failure.

use fxhlo_ir::{DType, Op, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::emit::{i64s, Emitter};
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// `stablehlo.gather` with the given dimension numbers.
#[allow(clippy::too_many_arguments)]
fn gather<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: V<'c, 'a>,
    idx: V<'c, 'a>,
    out: &TensorType,
    offset_dims: &[i64],
    collapsed: &[i64],
    start_index_map: &[i64],
    index_vector_dim: i64,
    slice_sizes: &[i64],
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let dn = format!(
        "#stablehlo.gather<offset_dims = {}, collapsed_slice_dims = {}, start_index_map = {}, index_vector_dim = {index_vector_dim}>",
        list(offset_dims),
        list(collapsed),
        list(start_index_map)
    );
    e.op("stablehlo.gather", loc, &[x, idx], out, &[("dimension_numbers", dn), ("slice_sizes", i64s(slice_sizes)), ("indices_are_sorted", "false".into())])
}

/// Indices as i64 with negatives wrapped by `size`.
fn wrap<'c, 'a>(e: &Emitter<'c, 'a>, idx: Operand<'c, 'a, '_>, size: i64, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let t = TensorType::new(DType::I64, idx.1.shape.clone());
    let v = e.convert(idx.0, idx.1, DType::I64, loc)?;
    let zero = e.splat(Scalar::Int(0), &t, loc)?;
    let neg = e.compare("LT", v, zero, &t.shape, loc)?;
    let shifted = e.op("stablehlo.add", loc, &[v, e.splat(Scalar::Int(size), &t, loc)?], &t, &[])?;
    e.op("stablehlo.select", loc, &[neg, shifted, v], &t, &[])
}

/// `x` with dim `d` replaced by the entries `idx` (an i64 vector) selects: `index_select`.
pub fn index_select<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, d: usize, idx: V<'c, 'a>, n: i64, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let rank = x.1.rank();
    let it = TensorType::new(DType::I64, vec![n]);
    let it2 = TensorType::new(DType::I64, vec![n, 1]);
    let idx = e.reshape(idx, &it, &it2, loc)?;
    let mut shape = x.1.shape.clone();
    shape[d] = n;
    let out = TensorType::new(x.1.dtype, shape);
    let offset: Vec<i64> = (0..rank as i64).filter(|&i| i != d as i64).collect();
    let mut sizes = x.1.shape.clone();
    sizes[d] = 1;
    gather(e, x.0, idx, &out, &offset, &[d as i64], &[d as i64], 1, &sizes, loc)
}

/// `embedding` and `index`.
pub fn lower<'c, 'a>(e: &Emitter<'c, 'a>, op: &Op, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    match op {
        Op::Embedding => {
            let (w, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
            let k = idx.1.rank() as i64;
            let idx = wrap(e, idx, w.1.shape[0], loc)?;
            gather(e, w.0, idx, out, &[k], &[0], &[0], k, &[1, w.1.shape[1]], loc)
        }
        Op::Index { present } => {
            let x = arg(e, operands, 0)?;
            let positions: Vec<usize> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| i).collect();
            let indices = &operands[1..];
            let bshape = indices.iter().try_fold(Vec::new(), |acc, t| fxhlo_ir::infer::broadcast_shapes(&acc, &t.1.shape)).map_err(|m| e.internal(m))?;
            let b = bshape.len();
            let mut col_shape = bshape.clone();
            col_shape.push(1);
            let col_t = TensorType::new(DType::I64, col_shape);
            let mut cols = Vec::with_capacity(indices.len());
            for (&pos, idx) in positions.iter().zip(indices) {
                let w = wrap(e, *idx, x.1.shape[pos], loc)?;
                let wt = TensorType::new(DType::I64, idx.1.shape.clone());
                let bt = TensorType::new(DType::I64, bshape.clone());
                let w = e.broadcast(w, &wt, &bt, loc)?;
                cols.push(e.reshape(w, &bt, &col_t, loc)?);
            }
            let mut stacked_shape = bshape.clone();
            stacked_shape.push(positions.len() as i64);
            let stacked_t = TensorType::new(DType::I64, stacked_shape);
            let stacked = if cols.len() == 1 {
                cols[0]
            } else {
                e.op("stablehlo.concatenate", loc, &cols, &stacked_t, &[("dimension", format!("{b} : i64"))])?
            };
            let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
            let rest = x.1.rank() - positions.len();
            let offset: Vec<i64> = if adjacent {
                let p0 = positions[0];
                (0..p0).chain(p0 + b..p0 + b + (rest - p0)).map(|i| i as i64).collect()
            } else {
                (b..b + rest).map(|i| i as i64).collect()
            };
            let pos: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
            let mut sizes = x.1.shape.clone();
            for &p in &positions {
                sizes[p] = 1;
            }
            gather(e, x.0, stacked, out, &offset, &pos, &pos, b as i64, &sizes, loc)
        }
        _ => Err(e.internal(format!("{} is not an indexing op", op.name()))),
    }
}

//! Indexing: `embedding`, advanced indexing (`index`, `_unsafe_index`) and index selection
//! along one dim, all as `stablehlo.gather`.
//!
//! PyTorch semantics: negative indices count from the end of their dim. Out-of-range indices
//! are an error in PyTorch; XLA's gather clamps them into range instead (there is no error
//! path inside a compiled executable), so such inputs give clamped reads, not a failure.

use fxhlo_ir::{DType, Op, Scalar, ScatterReduce, TensorType};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::emit::{i64s, Emitter};
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// `stablehlo.gather` with the given dimension numbers.
#[allow(clippy::too_many_arguments)]
pub fn gather<'c, 'a>(
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
            let (stacked, b) = stack_indices(e, x.1, &positions, &operands[1..], loc)?;
            let offset = window_dims(&positions, b, x.1.rank());
            let pos: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
            let mut sizes = x.1.shape.clone();
            for &p in &positions {
                sizes[p] = 1;
            }
            gather(e, x.0, stacked, out, &offset, &pos, &pos, b as i64, &sizes, loc)
        }
        Op::Gather { .. } | Op::IndexSelect { .. } if arg(e, operands, 0)?.1.rank() == 0 => {
            // A 0-d input can only be indexed at 0: every result element is the input.
            let x = arg(e, operands, 0)?;
            let v = e.reshape(x.0, x.1, &TensorType::new(x.1.dtype, vec![]), loc)?;
            e.broadcast(v, &TensorType::new(x.1.dtype, vec![]), out, loc)
        }
        Op::Gather { dim } => {
            let (x, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
            let rank = x.1.rank();
            let d = fxhlo_ir::infer::normalize_dim(*dim, rank).map_err(|m| e.internal(m))?;
            let coords = coordinates(e, idx, d, rank, x.1.shape[d], loc)?;
            let all: Vec<i64> = (0..rank as i64).collect();
            gather(e, x.0, coords, out, &[], &all, &all, rank as i64, &vec![1; rank], loc)
        }
        Op::IndexSelect { dim } => {
            let (x, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
            let d = fxhlo_ir::infer::normalize_dim(*dim, x.1.rank()).map_err(|m| e.internal(m))?;
            let n = idx.1.shape.first().copied().unwrap_or(1);
            let w = wrap(e, idx, x.1.shape[d], loc)?;
            let flat = TensorType::new(DType::I64, vec![n]);
            let w = e.reshape(w, &TensorType::new(DType::I64, idx.1.shape.clone()), &flat, loc)?;
            index_select(e, x, d, w, n, loc)
        }
        Op::Scatter { .. } if arg(e, operands, 0)?.1.rank() == 0 => {
            // A 0-d scatter is the 1-element one: lowered on [1]-shaped operands, reshaped back.
            let lifted: Vec<(V<'c, 'a>, TensorType)> = operands
                .iter()
                .map(|&(v, t)| {
                    let t1 = TensorType::new(t.dtype, if t.rank() == 0 { vec![1] } else { t.shape.to_vec() });
                    Ok((e.reshape(v, t, &t1, loc)?, t1))
                })
                .collect::<Result<_>>()?;
            let operands: Vec<Operand<'c, 'a, '_>> = lifted.iter().map(|(v, t)| (*v, t)).collect();
            let out1 = TensorType::new(out.dtype, vec![1]);
            let r = lower(e, op, &operands, &out1, loc)?;
            e.reshape(r, &out1, out, loc)
        }
        Op::Scatter { dim, reduce, include_self } => {
            let (x, idx, src) = (arg(e, operands, 0)?, arg(e, operands, 1)?, arg(e, operands, 2)?);
            let rank = x.1.rank();
            let d = fxhlo_ir::infer::normalize_dim(*dim, rank).map_err(|m| e.internal(m))?;
            // Updates: the source restricted (or a scalar broadcast) to the index's shape.
            let ut = TensorType::new(out.dtype, idx.1.shape.clone());
            let sv = e.convert(src.0, src.1, out.dtype, loc)?;
            let st = TensorType::new(out.dtype, src.1.shape.clone());
            let upd = if src.1.rank() == 0 {
                e.broadcast(sv, &st, &ut, loc)?
            } else {
                let attrs = [
                    ("start_indices", i64s(&vec![0; rank])),
                    ("limit_indices", i64s(&idx.1.shape)),
                    ("strides", i64s(&vec![1; rank])),
                ];
                if st.shape == ut.shape { sv } else { e.op("stablehlo.slice", loc, &[sv], &ut, &attrs)? }
            };
            let combiner = match reduce {
                ScatterReduce::Replace => None,
                ScatterReduce::Sum | ScatterReduce::Mean => Some(Combiner::Add),
                ScatterReduce::Prod => Some(Combiner::Mul),
                ScatterReduce::Amax => Some(Combiner::Max),
                ScatterReduce::Amin => Some(Combiner::Min),
            };
            let mut base = x.0;
            let bt = TensorType::new(DType::Bool, out.shape.clone());
            let touched = || -> Result<V<'c, 'a>> {
                let f = e.splat(Scalar::Bool(false), &bt, loc)?;
                let t = e.splat(Scalar::Bool(true), &TensorType::new(DType::Bool, idx.1.shape.clone()), loc)?;
                scatter_elements(e, f, &bt, idx, d, t, None, loc)
            };
            if !include_self && combiner.is_some() {
                let identity = e.splat(combiner.map(|c| c.identity(out.dtype)).unwrap_or(Scalar::Int(0)), out, loc)?;
                let zero = e.splat(Scalar::Int(0), out, loc)?;
                let init = if *reduce == ScatterReduce::Mean { zero } else { identity };
                base = e.op("stablehlo.select", loc, &[touched()?, init, x.0], out, &[])?;
            }
            let r = scatter_elements(e, base, out, idx, d, upd, combiner, loc)?;
            if *reduce != ScatterReduce::Mean {
                return Ok(r);
            }
            // mean = sum / count, count = scattered elements (+1 where self is included).
            let ones = e.splat(Scalar::Int(1), &ut, loc)?;
            let start = e.splat(Scalar::Int(if *include_self { 1 } else { 0 }), out, loc)?;
            let count = scatter_elements(e, start, out, idx, d, ones, Some(Combiner::Add), loc)?;
            let one = e.splat(Scalar::Int(1), out, loc)?;
            let safe = e.op("stablehlo.maximum", loc, &[count, one], out, &[])?;
            let mean = e.op("stablehlo.divide", loc, &[r, safe], out, &[])?;
            if out.dtype.is_float() {
                return Ok(mean);
            }
            // Integer means round toward negative infinity, as PyTorch's floor_divide.
            let rem = e.op("stablehlo.remainder", loc, &[r, safe], out, &[])?;
            let zero = e.splat(Scalar::Int(0), out, loc)?;
            let nz = e.compare("NE", rem, zero, &out.shape, loc)?;
            let neg = e.compare("LT", r, zero, &out.shape, loc)?;
            let fix = e.op("stablehlo.and", loc, &[nz, neg], &bt, &[])?;
            let m1 = e.op("stablehlo.subtract", loc, &[mean, one], out, &[])?;
            e.op("stablehlo.select", loc, &[fix, m1, mean], out, &[])
        }
        Op::IndexPut { present, accumulate } => {
            let x = arg(e, operands, 0)?;
            let values = arg(e, operands, operands.len() - 1)?;
            let indices = &operands[1..operands.len() - 1];
            let positions: Vec<usize> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| i).collect();
            let idx_types: Vec<&TensorType> = std::iter::once(x.1).chain(indices.iter().map(|o| o.1)).collect();
            let gathered = fxhlo_ir::infer::infer(&Op::Index { present: present.clone() }, &idx_types)
                .map_err(|m| e.internal(m))?
                .and_then(|v| v.into_iter().next())
                .ok_or_else(|| e.internal("index shape"))?;
            let (stacked, b) = stack_indices(e, x.1, &positions, indices, loc)?;
            let vt = TensorType::new(out.dtype, values.1.shape.clone());
            let vv = e.convert(values.0, values.1, out.dtype, loc)?;
            let ut = TensorType::new(out.dtype, gathered.shape.clone());
            let upd = e.broadcast(vv, &vt, &ut, loc)?;
            let window = window_dims(&positions, b, x.1.rank());
            let pos: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
            let c = if *accumulate { Some(Combiner::Add) } else { None };
            scatter(e, x.0, stacked, upd, out, &window, &pos, &pos, b as i64, c, loc)
        }
        _ => Err(e.internal(format!("{} is not an indexing op", op.name()))),
    }
}

/// The positions of the non-indexed dims in the result of advanced indexing (NumPy's rule:
/// in place when the indexed dims are adjacent, after the index dims otherwise).
fn window_dims(positions: &[usize], b: usize, rank: usize) -> Vec<i64> {
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    let rest = rank - positions.len();
    if adjacent {
        let p0 = positions[0];
        (0..p0).chain(p0 + b..p0 + b + (rest - p0)).map(|i| i as i64).collect()
    } else {
        (b..b + rest).map(|i| i as i64).collect()
    }
}

/// Index tensors broadcast together, wrapped, and stacked along a new last dim; returns the
/// stack and the broadcast rank.
fn stack_indices<'c, 'a>(e: &Emitter<'c, 'a>, x: &TensorType, positions: &[usize], indices: &[Operand<'c, 'a, '_>], loc: Location<'c>) -> Result<(V<'c, 'a>, usize)> {
    let bshape = indices.iter().try_fold(fxhlo_ir::Shape::new(), |acc, t| fxhlo_ir::infer::broadcast_shapes(&acc, &t.1.shape)).map_err(|m| e.internal(m))?;
    let b = bshape.len();
    let mut col_shape = bshape.clone();
    col_shape.push(1);
    let col_t = TensorType::new(DType::I64, col_shape);
    let bt = TensorType::new(DType::I64, bshape.clone());
    let mut cols = Vec::with_capacity(indices.len());
    for (&pos, idx) in positions.iter().zip(indices) {
        let w = wrap(e, *idx, x.shape[pos], loc)?;
        let w = e.broadcast(w, &TensorType::new(DType::I64, idx.1.shape.clone()), &bt, loc)?;
        cols.push(e.reshape(w, &bt, &col_t, loc)?);
    }
    let mut stacked_shape = bshape;
    stacked_shape.push(positions.len() as i64);
    let st = TensorType::new(DType::I64, stacked_shape);
    let stacked = if cols.len() == 1 {
        cols[0]
    } else {
        e.op("stablehlo.concatenate", loc, &cols, &st, &[("dimension", format!("{b} : i64"))])?
    };
    Ok((stacked, b))
}

/// `masked_scatter(x, mask, source)`: position `k` of the masked positions (row-major) takes
/// `source.flatten()[k]`: a running count of the mask gives each position its source index.
pub fn masked_scatter<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, mask, src) = (arg(e, operands, 0)?, arg(e, operands, 1)?, arg(e, operands, 2)?);
    let n = out.num_elements() as i64;
    let s = src.1.num_elements() as i64;
    if n == 0 || s == 0 {
        return Ok(x.0);
    }
    let bt = TensorType::new(DType::Bool, out.shape.clone());
    let m = e.broadcast(mask.0, mask.1, &bt, loc)?;
    let flat_b = TensorType::new(DType::Bool, vec![n]);
    let mf = e.reshape(m, &bt, &flat_b, loc)?;
    let it = TensorType::new(DType::I64, vec![n]);
    let counts = e.convert(mf, &flat_b, DType::I64, loc)?;
    let ones = vec![1; 1];
    let cum = e.reduce_window(counts, &it, &it, &[n], &ones, &ones, &[(n - 1, 0)], Combiner::Add, Scalar::Int(0), loc)?;
    // source index = running count - 1, clamped into range for the unmasked positions.
    let idx = e.op("stablehlo.subtract", loc, &[cum, e.splat(Scalar::Int(1), &it, loc)?], &it, &[])?;
    let idx = e.op("stablehlo.clamp", loc, &[e.splat(Scalar::Int(0), &it, loc)?, idx, e.splat(Scalar::Int(s - 1), &it, loc)?], &it, &[])?;
    let st = TensorType::new(src.1.dtype, vec![s]);
    let sf = e.reshape(src.0, src.1, &st, loc)?;
    let picked = index_select(e, (sf, &st), 0, idx, n, loc)?;
    let picked = e.reshape(picked, &TensorType::new(src.1.dtype, vec![n]), out, loc)?;
    e.op("stablehlo.select", loc, &[m, picked, x.0], out, &[])
}

/// `select_scatter` and `slice_scatter`: the source padded into place (interior padding for
/// the step) and selected with a mask padded the same way.
pub fn embed<'c, 'a>(e: &Emitter<'c, 'a>, op: &Op, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, src) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let rank = out.rank();
    let (d, lo, step, src_t) = match op {
        Op::SelectScatter { dim, index } => {
            let d = fxhlo_ir::infer::normalize_dim(*dim, rank).map_err(|m| e.internal(m))?;
            let i = if *index < 0 { index + out.shape[d] } else { *index };
            let mut shape = src.1.shape.clone();
            shape.insert(d, 1);
            (d, i, 1, TensorType::new(src.1.dtype, shape))
        }
        Op::SliceScatter { dim, start, end, step } => {
            let d = fxhlo_ir::infer::normalize_dim(*dim, rank).map_err(|m| e.internal(m))?;
            // The source's length along `d` fixes where the slice ends; only its start matters.
            let (lo, _) = fxhlo_ir::infer::slice_bounds(*start, *end, out.shape[d]);
            (d, lo, *step, src.1.clone())
        }
        _ => return Err(e.internal("not a scatter embedding")),
    };
    let sv = e.reshape(src.0, src.1, &src_t, loc)?;
    let sv = e.convert(sv, &src_t, out.dtype, loc)?;
    let len = src_t.shape[d];
    if len == 0 {
        return Ok(x.0);
    }
    let mut low = vec![0; rank];
    let mut high = vec![0; rank];
    let mut interior = vec![0; rank];
    low[d] = lo;
    interior[d] = step - 1;
    high[d] = out.shape[d] - (lo + (len - 1) * step + 1);
    let attrs = [("edge_padding_low", i64s(&low)), ("edge_padding_high", i64s(&high)), ("interior_padding", i64s(&interior))];
    let zero = e.splat(Scalar::Int(0), &TensorType::new(out.dtype, vec![]), loc)?;
    let placed = e.op("stablehlo.pad", loc, &[sv, zero], out, &attrs)?;
    let bt = TensorType::new(DType::Bool, out.shape.clone());
    let ones = e.splat(Scalar::Bool(true), &TensorType::new(DType::Bool, src_t.shape.clone()), loc)?;
    let f = e.splat(Scalar::Bool(false), &TensorType::new(DType::Bool, vec![]), loc)?;
    let mask = e.op("stablehlo.pad", loc, &[ones, f], &bt, &attrs)?;
    e.op("stablehlo.select", loc, &[mask, placed, x.0], out, &[])
}

/// `sort` (values and stable indices) and `topk` (the first `k` of a sort).
pub fn sort<'c, 'a>(e: &Emitter<'c, 'a>, op: &Op, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    let (dim, descending, k) = match op {
        Op::Sort { dim, descending } => (*dim, *descending, None),
        Op::Topk { k, dim, largest } => (*dim, *largest, Some(*k)),
        _ => return Err(e.internal("not a sort")),
    };
    if x.1.rank() == 0 {
        let zero = e.splat(Scalar::Int(0), &results[1], loc)?;
        return Ok(vec![x.0, zero]);
    }
    let d = fxhlo_ir::infer::normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let it = TensorType::new(DType::I64, x.1.shape.clone());
    let iota = e.op("stablehlo.iota", loc, &[], &it, &[("iota_dimension", format!("{d} : i64"))])?;
    let region = e.sort_comparator(x.1.dtype, &[DType::I64], descending, loc)?;
    let attrs = [("dimension", format!("{d} : i64")), ("is_stable", "true".into())];
    let sorted = e.op_n("stablehlo.sort", loc, &[x.0, iota], &[x.1.clone(), it.clone()], &attrs, vec![region])?;
    let Some(k) = k else { return Ok(sorted) };
    let rank = x.1.rank();
    let mut limit = x.1.shape.clone();
    limit[d] = k;
    let attrs = [("start_indices", i64s(&vec![0; rank])), ("limit_indices", i64s(&limit)), ("strides", i64s(&vec![1; rank]))];
    let v = e.op("stablehlo.slice", loc, &[sorted[0]], &results[0], &attrs)?;
    let i = e.op("stablehlo.slice", loc, &[sorted[1]], &results[1], &attrs)?;
    Ok(vec![v, i])
}

/// Full per-element coordinates `[*idx.shape, rank]` for `torch.gather`/`scatter` along `d`:
/// `idx` (wrapped) at position `d`, iotas elsewhere.
fn coordinates<'c, 'a>(e: &Emitter<'c, 'a>, idx: Operand<'c, 'a, '_>, d: usize, rank: usize, size_d: i64, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let shape = idx.1.shape.clone();
    let mut col_shape = shape.clone();
    col_shape.push(1);
    let (it, ct) = (TensorType::new(DType::I64, shape.clone()), TensorType::new(DType::I64, col_shape));
    let mut cols = Vec::with_capacity(rank);
    for k in 0..rank {
        let v = if k == d {
            wrap(e, idx, size_d, loc)?
        } else {
            e.op("stablehlo.iota", loc, &[], &it, &[("iota_dimension", format!("{k} : i64"))])?
        };
        cols.push(e.reshape(v, &it, &ct, loc)?);
    }
    let mut all = shape;
    all.push(rank as i64);
    let at = TensorType::new(DType::I64, all);
    if cols.len() == 1 {
        return Ok(cols[0]);
    }
    e.op("stablehlo.concatenate", loc, &cols, &at, &[("dimension", format!("{} : i64", at.rank() - 1))])
}

/// `stablehlo.scatter` of `updates` into `x` at `coords`.
#[allow(clippy::too_many_arguments)]
fn scatter<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: V<'c, 'a>,
    coords: V<'c, 'a>,
    updates: V<'c, 'a>,
    out: &TensorType,
    update_window_dims: &[i64],
    inserted: &[i64],
    to_operand: &[i64],
    index_vector_dim: i64,
    combiner: Option<Combiner>,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let dn = format!(
        "#stablehlo.scatter<update_window_dims = {}, inserted_window_dims = {}, scatter_dims_to_operand_dims = {}, index_vector_dim = {index_vector_dim}>",
        list(update_window_dims),
        list(inserted),
        list(to_operand)
    );
    let region = e.scatter_body(combiner, out.dtype, loc)?;
    let attrs = [("scatter_dimension_numbers", dn), ("indices_are_sorted", "false".into()), ("unique_indices", "false".into())];
    let v = e.op_n("stablehlo.scatter", loc, &[x, coords, updates], std::slice::from_ref(out), &attrs, vec![region])?;
    v.into_iter().next().ok_or_else(|| e.internal("scatter has no result"))
}

/// Element-wise scatter along `d` (torch.scatter semantics) of `updates` (shaped like the
/// index) into `base`.
#[allow(clippy::too_many_arguments)]
fn scatter_elements<'c, 'a>(e: &Emitter<'c, 'a>, base: V<'c, 'a>, out: &TensorType, idx: Operand<'c, 'a, '_>, d: usize, updates: V<'c, 'a>, c: Option<Combiner>, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let rank = out.rank();
    let coords = coordinates(e, idx, d, rank, out.shape[d], loc)?;
    let all: Vec<i64> = (0..rank as i64).collect();
    scatter(e, base, coords, updates, out, &[], &all, &all, rank as i64, c, loc)
}

/// `_embedding_bag`: row `k` of `weight[indices]` joins bag `b` where
/// `offsets[b] <= k < offsets[b + 1]` (the last bag runs to the end unless
/// `include_last_offset`); rows equal to `padding_idx` are skipped. Bags are combined by a
/// scatter (sum, mean = sum / count, max); empty bags give 0, as in PyTorch. Only the first
/// result is computed: the bookkeeping results are zeros, and graphs that use them are
/// reported as unsupported before codegen.
pub fn embedding_bag<'c, 'a>(e: &Emitter<'c, 'a>, op: &Op, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let Op::EmbeddingBag { mode, include_last_offset, padding_idx, has_weights } = op else {
        return Err(e.internal("not an embedding bag"));
    };
    let (w, idx, offs) = (arg(e, operands, 0)?, arg(e, operands, 1)?, arg(e, operands, 2)?);
    let out = &results[0];
    let (b, d) = (out.shape[0], out.shape[1]);
    let k = idx.1.num_elements() as i64;
    let zeros: Vec<V<'c, 'a>> = results[1..].iter().map(|t| e.splat(Scalar::Int(0), t, loc)).collect::<Result<_>>()?;
    let work = super::reduction::compute_dtype(out.dtype);
    let ot = TensorType::new(work, out.shape.clone());
    if k == 0 || b == 0 {
        let z = e.splat(Scalar::Int(0), out, loc)?;
        return Ok(std::iter::once(z).chain(zeros).collect());
    }
    let i64t = |s: Vec<i64>| TensorType::new(DType::I64, s);
    let bool_t = |s: Vec<i64>| TensorType::new(DType::Bool, s);
    // bag of row k: (number of offsets <= k among the first B) - 1.
    let ov = e.convert(offs.0, offs.1, DType::I64, loc)?;
    let n_off = offs.1.num_elements() as i64;
    let starts = e.op("stablehlo.slice", loc, &[ov], &i64t(vec![b]), &[("start_indices", i64s(&[0])), ("limit_indices", i64s(&[b])), ("strides", i64s(&[1]))])?;
    let kb = vec![k, b];
    let starts_b = e.op("stablehlo.broadcast_in_dim", loc, &[starts], &i64t(kb.clone()), &[("broadcast_dimensions", "array<i64: 1>".into())])?;
    let iota_k = e.op("stablehlo.iota", loc, &[], &i64t(kb.clone()), &[("iota_dimension", "0 : i64".into())])?;
    let le = e.compare("LE", starts_b, iota_k, &kb, loc)?;
    let le = e.convert(le, &bool_t(kb.clone()), DType::I64, loc)?;
    let (count, _) = super::reduction::reduce_to(e, (le, &i64t(kb.clone())), &[1], false, Combiner::Add, DType::I64, loc)?;
    let kt = i64t(vec![k]);
    let one = e.splat(Scalar::Int(1), &kt, loc)?;
    let bag = e.op("stablehlo.subtract", loc, &[count, one], &kt, &[])?;
    // Invalid rows (before the first offset, past the last offset, padding) go to bag B, which
    // the scatter skips as out of bounds.
    let mut valid = e.compare("GE", count, one, &[k], loc)?;
    let iv = e.convert(idx.0, idx.1, DType::I64, loc)?;
    let iv = e.reshape(iv, &i64t(idx.1.shape.to_vec()), &kt, loc)?;
    if *include_last_offset {
        let last = e.op("stablehlo.slice", loc, &[ov], &i64t(vec![1]), &[("start_indices", i64s(&[n_off - 1])), ("limit_indices", i64s(&[n_off])), ("strides", i64s(&[1]))])?;
        let last = e.broadcast(last, &i64t(vec![1]), &kt, loc)?;
        let pos = e.op("stablehlo.iota", loc, &[], &kt, &[("iota_dimension", "0 : i64".into())])?;
        let before = e.compare("LT", pos, last, &[k], loc)?;
        valid = e.op("stablehlo.and", loc, &[valid, before], &bool_t(vec![k]), &[])?;
    }
    if let Some(p) = padding_idx {
        let pad = e.splat(Scalar::Int(*p), &kt, loc)?;
        let not_pad = e.compare("NE", iv, pad, &[k], loc)?;
        valid = e.op("stablehlo.and", loc, &[valid, not_pad], &bool_t(vec![k]), &[])?;
    }
    let sink = e.splat(Scalar::Int(b), &kt, loc)?;
    let bag = e.op("stablehlo.select", loc, &[valid, bag, sink], &kt, &[])?;
    let coords = e.reshape(bag, &kt, &i64t(vec![k, 1]), loc)?;
    // The rows, in the work dtype, weighted per sample when asked.
    let wt = TensorType::new(work, w.1.shape.clone());
    let wv = e.convert(w.0, w.1, work, loc)?;
    let clamped = e.op("stablehlo.clamp", loc, &[e.splat(Scalar::Int(0), &kt, loc)?, iv, e.splat(Scalar::Int(w.1.shape[0] - 1), &kt, loc)?], &kt, &[])?;
    let rt = TensorType::new(work, vec![k, d]);
    let mut rows = index_select(e, (wv, &wt), 0, clamped, k, loc)?;
    if *has_weights {
        let ps = arg(e, operands, 3)?;
        let pv = e.convert(ps.0, ps.1, work, loc)?;
        let pv = e.reshape(pv, &TensorType::new(work, ps.1.shape.clone()), &TensorType::new(work, vec![k]), loc)?;
        let pb = e.op("stablehlo.broadcast_in_dim", loc, &[pv], &rt, &[("broadcast_dimensions", "array<i64: 0>".into())])?;
        rows = e.op("stablehlo.multiply", loc, &[rows, pb], &rt, &[])?;
    }
    let into = |base: V<'c, 'a>, t: &TensorType, upd: V<'c, 'a>, c: Combiner| scatter(e, base, coords, upd, t, &[1], &[0], &[0], 1, Some(c), loc);
    let counts = {
        let ones = e.splat(Scalar::Int(1), &rt, loc)?;
        into(e.splat(Scalar::Int(0), &ot, loc)?, &ot, ones, Combiner::Add)?
    };
    let zero = e.splat(Scalar::Int(0), &ot, loc)?;
    let r = match mode {
        0 => into(zero, &ot, rows, Combiner::Add)?,
        1 => {
            let sum = into(zero, &ot, rows, Combiner::Add)?;
            let n = e.op("stablehlo.maximum", loc, &[counts, e.splat(Scalar::Int(1), &ot, loc)?], &ot, &[])?;
            e.op("stablehlo.divide", loc, &[sum, n], &ot, &[])?
        }
        _ => {
            let init = e.splat(Combiner::Max.identity(work), &ot, loc)?;
            let m = into(init, &ot, rows, Combiner::Max)?;
            let any = e.compare("GT", counts, zero, &ot.shape, loc)?;
            e.op("stablehlo.select", loc, &[any, m, zero], &ot, &[])?
        }
    };
    let r = e.convert(r, &ot, out.dtype, loc)?;
    Ok(std::iter::once(r).chain(zeros).collect())
}

//! Indexing: `embedding`, advanced indexing (`index`, `_unsafe_index`) and index selection
//! along one dim, all as `stablehlo.gather`; their writing counterparts (`scatter`,
//! `index_put`, `select_scatter`, `slice_scatter`, `masked_scatter`, `_embedding_bag`) as
//! `stablehlo.scatter`, padding or selection; and `sort`/`topk`.
//!
//! PyTorch semantics: negative indices count from the end of their dim. Out-of-range indices
//! are an error in PyTorch; XLA's gather clamps them into range instead (there is no error
//! path inside a compiled executable), so such inputs give clamped reads, not a failure.

use fxhlo_ir::infer::normalize_dim;
use fxhlo_ir::{DType, Op, Scalar, ScatterReduce, TensorType};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::attr::{self, ComparisonDirection as Dir, GatherDimensions, ScatterDimensions};
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// `stablehlo.gather` of `x` at `idx` with dimension numbers `dims`.
pub fn gather<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: V<'c, 'a>,
    idx: V<'c, 'a>,
    out: &TensorType,
    dims: &GatherDimensions,
    slice_sizes: &[i64],
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let attrs = [
        ("dimension_numbers", dims.attr(e.ctx)),
        ("slice_sizes", attr::i64s(e.ctx, slice_sizes)),
        ("indices_are_sorted", attr::bool_attr(e.ctx, false)),
    ];
    e.op("stablehlo.gather", loc, &[x, idx], out, &attrs)
}

/// Indices as i64 with negatives wrapped by `size`.
fn wrap<'c, 'a>(e: &Emitter<'c, 'a>, idx: Operand<'c, 'a, '_>, size: i64, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let t = TensorType::new(DType::I64, idx.1.shape.clone());
    let v = e.convert(idx.0, idx.1, DType::I64, loc)?;
    let zero = e.splat(Scalar::Int(0), &t, loc)?;
    let neg = e.compare(Dir::Lt, v, zero, &t.shape, loc)?;
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
    let offset_dims: Vec<i64> = (0..rank as i64).filter(|&i| i != d as i64).collect();
    let mut sizes = x.1.shape.clone();
    sizes[d] = 1;
    let dims = GatherDimensions { offset_dims, collapsed_slice_dims: vec![d as i64], start_index_map: vec![d as i64], index_vector_dim: 1 };
    gather(e, x.0, idx, &out, &dims, &sizes, loc)
}

/// `embedding(weight, indices)`: rows of `weight`.
pub fn embedding<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (w, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let k = idx.1.rank() as i64;
    let idx = wrap(e, idx, w.1.shape[0], loc)?;
    let dims = GatherDimensions { offset_dims: vec![k], collapsed_slice_dims: vec![0], start_index_map: vec![0], index_vector_dim: k };
    gather(e, w.0, idx, out, &dims, &[1, w.1.shape[1]], loc)
}

/// Advanced indexing `x[indices]`; `present[i]` says whether dim `i` has an index tensor.
pub fn index<'c, 'a>(e: &Emitter<'c, 'a>, present: &[bool], operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let positions: Vec<usize> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| i).collect();
    let (stacked, b) = stack_indices(e, x.1, &positions, &operands[1..], loc)?;
    let offset_dims = window_dims(&positions, b, x.1.rank());
    let pos: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
    let mut sizes = x.1.shape.clone();
    for &p in &positions {
        sizes[p] = 1;
    }
    let dims = GatherDimensions { offset_dims, collapsed_slice_dims: pos.clone(), start_index_map: pos, index_vector_dim: b as i64 };
    gather(e, x.0, stacked, out, &dims, &sizes, loc)
}

/// A 0-d input can only be indexed at 0: every result element is the input (`gather`,
/// `index_select` of a scalar).
fn broadcast_scalar<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let v = e.reshape(x.0, x.1, &TensorType::new(x.1.dtype, vec![]), loc)?;
    e.broadcast(v, &TensorType::new(x.1.dtype, vec![]), out, loc)
}

/// `torch.gather(x, dim, index)`: `x` read at `index` along `dim`, at its own position elsewhere.
pub fn gather_along<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let rank = x.1.rank();
    if rank == 0 {
        return broadcast_scalar(e, x, out, loc);
    }
    let d = normalize_dim(dim, rank).map_err(|m| e.internal(m))?;
    let coords = coordinates(e, idx, d, rank, x.1.shape[d], loc)?;
    let all: Vec<i64> = (0..rank as i64).collect();
    let dims = GatherDimensions { offset_dims: vec![], collapsed_slice_dims: all.clone(), start_index_map: all, index_vector_dim: rank as i64 };
    gather(e, x.0, coords, out, &dims, &vec![1; rank], loc)
}

/// `index_select(x, dim, index)`.
pub fn index_select_along<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, idx) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    if x.1.rank() == 0 {
        return broadcast_scalar(e, x, out, loc);
    }
    let d = normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let n = idx.1.shape.first().copied().unwrap_or(1);
    let w = wrap(e, idx, x.1.shape[d], loc)?;
    let flat = TensorType::new(DType::I64, vec![n]);
    let w = e.reshape(w, &TensorType::new(DType::I64, idx.1.shape.clone()), &flat, loc)?;
    index_select(e, x, d, w, n, loc)
}

/// `torch.scatter*(x, dim, index, src)`: replace, or combine with `reduce` (`mean` divides by
/// the count of values that met at each position).
#[allow(clippy::too_many_arguments)]
pub fn scatter_along<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dim: i64,
    reduce: ScatterReduce,
    include_self: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    if arg(e, operands, 0)?.1.rank() == 0 {
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
        let r = scatter_along(e, dim, reduce, include_self, &operands, &out1, loc)?;
        return e.reshape(r, &out1, out, loc);
    }
    let (x, idx, src) = (arg(e, operands, 0)?, arg(e, operands, 1)?, arg(e, operands, 2)?);
    let rank = x.1.rank();
    let d = normalize_dim(dim, rank).map_err(|m| e.internal(m))?;
    // Updates: the source restricted (or a scalar broadcast) to the index's shape.
    let ut = TensorType::new(out.dtype, idx.1.shape.clone());
    let sv = e.convert(src.0, src.1, out.dtype, loc)?;
    let st = TensorType::new(out.dtype, src.1.shape.clone());
    let upd = if src.1.rank() == 0 {
        e.broadcast(sv, &st, &ut, loc)?
    } else if st.shape == ut.shape {
        sv
    } else {
        e.slice(sv, &vec![0; rank], &idx.1.shape, &vec![1; rank], &ut, loc)?
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
        let init = if reduce == ScatterReduce::Mean { zero } else { identity };
        base = e.op("stablehlo.select", loc, &[touched()?, init, x.0], out, &[])?;
    }
    let r = scatter_elements(e, base, out, idx, d, upd, combiner, loc)?;
    if reduce != ScatterReduce::Mean {
        return Ok(r);
    }
    // mean = sum / count, count = scattered elements (+1 where self is included).
    let ones = e.splat(Scalar::Int(1), &ut, loc)?;
    let start = e.splat(Scalar::Int(if include_self { 1 } else { 0 }), out, loc)?;
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
    let nz = e.compare(Dir::Ne, rem, zero, &out.shape, loc)?;
    let neg = e.compare(Dir::Lt, r, zero, &out.shape, loc)?;
    let fix = e.op("stablehlo.and", loc, &[nz, neg], &bt, &[])?;
    let m1 = e.op("stablehlo.subtract", loc, &[mean, one], out, &[])?;
    e.op("stablehlo.select", loc, &[fix, m1, mean], out, &[])
}

/// `index_put(x, indices, values, accumulate)`; `present` as for [`index`].
pub fn index_put<'c, 'a>(e: &Emitter<'c, 'a>, present: &[bool], accumulate: bool, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let values = arg(e, operands, operands.len() - 1)?;
    let indices = &operands[1..operands.len() - 1];
    let positions: Vec<usize> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| i).collect();
    let idx_types: Vec<&TensorType> = std::iter::once(x.1).chain(indices.iter().map(|o| o.1)).collect();
    // The shape of `x[indices]`, which the values are broadcast to.
    let gathered = fxhlo_ir::infer::infer(&Op::Index { present: present.to_vec() }, &idx_types)
        .map_err(|m| e.internal(m))?
        .and_then(|v| v.into_iter().next())
        .ok_or_else(|| e.internal("index shape"))?;
    let (stacked, b) = stack_indices(e, x.1, &positions, indices, loc)?;
    let vt = TensorType::new(out.dtype, values.1.shape.clone());
    let vv = e.convert(values.0, values.1, out.dtype, loc)?;
    let ut = TensorType::new(out.dtype, gathered.shape.clone());
    let upd = e.broadcast(vv, &vt, &ut, loc)?;
    let pos: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
    let dims = ScatterDimensions {
        update_window_dims: window_dims(&positions, b, x.1.rank()),
        inserted_window_dims: pos.clone(),
        scatter_dims_to_operand_dims: pos,
        index_vector_dim: b as i64,
    };
    let c = if accumulate { Some(Combiner::Add) } else { None };
    scatter(e, x.0, stacked, upd, out, &dims, c, loc)
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
        e.concatenate(&cols, b, &st, loc)?
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

/// `select_scatter(x, src, dim, index)`: `src` with `dim` put back embedded at `index`.
pub fn select_scatter<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, index: i64, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let src = arg(e, operands, 1)?;
    let d = normalize_dim(dim, out.rank()).map_err(|m| e.internal(m))?;
    let i = if index < 0 { index + out.shape[d] } else { index };
    let mut shape = src.1.shape.clone();
    shape.insert(d, 1);
    embed(e, d, i, 1, &TensorType::new(src.1.dtype, shape), operands, out, loc)
}

/// `slice_scatter(x, src, dim, start, end, step)`.
#[allow(clippy::too_many_arguments)]
pub fn slice_scatter<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dim: i64,
    start: i64,
    end: i64,
    step: i64,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let src = arg(e, operands, 1)?;
    let d = normalize_dim(dim, out.rank()).map_err(|m| e.internal(m))?;
    // The source's length along `d` fixes where the slice ends; only its start matters.
    let (lo, _) = fxhlo_ir::infer::slice_bounds(start, end, out.shape[d]);
    embed(e, d, lo, step, src.1, operands, out, loc)
}

/// `src` (operand 1, reshaped to `src_t`) embedded into `x` (operand 0) along `d` from `lo`
/// every `step`: the source padded into place (interior padding for the step) and selected
/// with a mask padded the same way.
#[allow(clippy::too_many_arguments)]
fn embed<'c, 'a>(
    e: &Emitter<'c, 'a>,
    d: usize,
    lo: i64,
    step: i64,
    src_t: &TensorType,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let (x, src) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let rank = out.rank();
    let sv = e.reshape(src.0, src.1, src_t, loc)?;
    let sv = e.convert(sv, src_t, out.dtype, loc)?;
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
    let zero = e.splat(Scalar::Int(0), &TensorType::new(out.dtype, vec![]), loc)?;
    let placed = e.pad(sv, zero, &low, &high, &interior, out, loc)?;
    let bt = TensorType::new(DType::Bool, out.shape.clone());
    let ones = e.splat(Scalar::Bool(true), &TensorType::new(DType::Bool, src_t.shape.clone()), loc)?;
    let f = e.splat(Scalar::Bool(false), &TensorType::new(DType::Bool, vec![]), loc)?;
    let mask = e.pad(ones, f, &low, &high, &interior, &bt, loc)?;
    e.op("stablehlo.select", loc, &[mask, placed, x.0], out, &[])
}

/// `sort(x, dim, descending)`: values and stable indices.
pub fn sort<'c, 'a>(e: &Emitter<'c, 'a>, dim: i64, descending: bool, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    sort_first(e, dim, descending, None, operands, results, loc)
}

/// `topk(x, k, dim, largest)`: the first `k` of a sort.
#[allow(clippy::too_many_arguments)]
pub fn topk<'c, 'a>(e: &Emitter<'c, 'a>, k: i64, dim: i64, largest: bool, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    sort_first(e, dim, largest, Some(k), operands, results, loc)
}

/// Values and i64 indices of `x` sorted along `dim`, all of them or the first `k`.
fn sort_first<'c, 'a>(
    e: &Emitter<'c, 'a>,
    dim: i64,
    descending: bool,
    k: Option<i64>,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<V<'c, 'a>>> {
    let x = arg(e, operands, 0)?;
    if x.1.rank() == 0 {
        let zero = e.splat(Scalar::Int(0), &results[1], loc)?;
        return Ok(vec![x.0, zero]);
    }
    let d = normalize_dim(dim, x.1.rank()).map_err(|m| e.internal(m))?;
    let it = TensorType::new(DType::I64, x.1.shape.clone());
    let iota = e.iota(&it, d, loc)?;
    let region = e.sort_comparator(x.1.dtype, &[DType::I64], descending, loc)?;
    let attrs = [("dimension", attr::i64_attr(e.ctx, d as i64)), ("is_stable", attr::bool_attr(e.ctx, true))];
    let sorted = e.op_n("stablehlo.sort", loc, &[x.0, iota], &[x.1.clone(), it.clone()], &attrs, vec![region])?;
    let Some(k) = k else { return Ok(sorted) };
    let rank = x.1.rank();
    let mut limit = x.1.shape.clone();
    limit[d] = k;
    let (start, strides) = (vec![0; rank], vec![1; rank]);
    let v = e.slice(sorted[0], &start, &limit, &strides, &results[0], loc)?;
    let i = e.slice(sorted[1], &start, &limit, &strides, &results[1], loc)?;
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
            e.iota(&it, k, loc)?
        };
        cols.push(e.reshape(v, &it, &ct, loc)?);
    }
    let mut all = shape;
    all.push(rank as i64);
    let at = TensorType::new(DType::I64, all);
    if cols.len() == 1 {
        return Ok(cols[0]);
    }
    e.concatenate(&cols, at.rank() - 1, &at, loc)
}

/// `stablehlo.scatter` of `updates` into `x` at `coords`, combined with `combiner` (or
/// replacing the old values).
#[allow(clippy::too_many_arguments)]
fn scatter<'c, 'a>(
    e: &Emitter<'c, 'a>,
    x: V<'c, 'a>,
    coords: V<'c, 'a>,
    updates: V<'c, 'a>,
    out: &TensorType,
    dims: &ScatterDimensions,
    combiner: Option<Combiner>,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let region = e.scatter_body(combiner, out.dtype, loc)?;
    let attrs = [
        ("scatter_dimension_numbers", dims.attr(e.ctx)),
        ("indices_are_sorted", attr::bool_attr(e.ctx, false)),
        ("unique_indices", attr::bool_attr(e.ctx, false)),
    ];
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
    let dims = ScatterDimensions { update_window_dims: vec![], inserted_window_dims: all.clone(), scatter_dims_to_operand_dims: all, index_vector_dim: rank as i64 };
    scatter(e, base, coords, updates, out, &dims, c, loc)
}

/// The parameters of `_embedding_bag` (see [`fxhlo_ir::Op::EmbeddingBag`]).
#[derive(Clone, Copy, Debug)]
pub struct Bag {
    /// 0 sum, 1 mean, 2 max.
    pub mode: i64,
    pub include_last_offset: bool,
    pub padding_idx: Option<i64>,
    pub has_weights: bool,
}

/// `_embedding_bag`: row `k` of `weight[indices]` joins bag `b` where
/// `offsets[b] <= k < offsets[b + 1]` (the last bag runs to the end unless
/// `include_last_offset`); rows equal to `padding_idx` are skipped. Bags are combined by a
/// scatter (sum, mean = sum / count, max); empty bags give 0, as in PyTorch. Only the first
/// result is computed: the bookkeeping results are zeros, and graphs that use them are
/// reported as unsupported before codegen.
pub fn embedding_bag<'c, 'a>(e: &Emitter<'c, 'a>, bag: &Bag, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let Bag { mode, include_last_offset, padding_idx, has_weights } = *bag;
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
    let starts = e.slice(ov, &[0], &[b], &[1], &i64t(vec![b]), loc)?;
    let kb = vec![k, b];
    let starts_b = e.broadcast_in_dim(starts, &[1], &i64t(kb.clone()), loc)?;
    let iota_k = e.iota(&i64t(kb.clone()), 0, loc)?;
    let le = e.compare(Dir::Le, starts_b, iota_k, &kb, loc)?;
    let le = e.convert(le, &bool_t(kb.clone()), DType::I64, loc)?;
    let (count, _) = super::reduction::reduce_to(e, (le, &i64t(kb.clone())), &[1], false, Combiner::Add, DType::I64, loc)?;
    let kt = i64t(vec![k]);
    let one = e.splat(Scalar::Int(1), &kt, loc)?;
    let bag = e.op("stablehlo.subtract", loc, &[count, one], &kt, &[])?;
    // Invalid rows (before the first offset, past the last offset, padding) go to bag B, which
    // the scatter skips as out of bounds.
    let mut valid = e.compare(Dir::Ge, count, one, &[k], loc)?;
    let iv = e.convert(idx.0, idx.1, DType::I64, loc)?;
    let iv = e.reshape(iv, &i64t(idx.1.shape.to_vec()), &kt, loc)?;
    if include_last_offset {
        let last = e.slice(ov, &[n_off - 1], &[n_off], &[1], &i64t(vec![1]), loc)?;
        let last = e.broadcast(last, &i64t(vec![1]), &kt, loc)?;
        let pos = e.iota(&kt, 0, loc)?;
        let before = e.compare(Dir::Lt, pos, last, &[k], loc)?;
        valid = e.op("stablehlo.and", loc, &[valid, before], &bool_t(vec![k]), &[])?;
    }
    if let Some(p) = padding_idx {
        let pad = e.splat(Scalar::Int(p), &kt, loc)?;
        let not_pad = e.compare(Dir::Ne, iv, pad, &[k], loc)?;
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
    if has_weights {
        let ps = arg(e, operands, 3)?;
        let pv = e.convert(ps.0, ps.1, work, loc)?;
        let pv = e.reshape(pv, &TensorType::new(work, ps.1.shape.clone()), &TensorType::new(work, vec![k]), loc)?;
        let pb = e.broadcast_in_dim(pv, &[0], &rt, loc)?;
        rows = e.op("stablehlo.multiply", loc, &[rows, pb], &rt, &[])?;
    }
    let rows_into_bags = ScatterDimensions { update_window_dims: vec![1], inserted_window_dims: vec![0], scatter_dims_to_operand_dims: vec![0], index_vector_dim: 1 };
    let into = |base: V<'c, 'a>, t: &TensorType, upd: V<'c, 'a>, c: Combiner| scatter(e, base, coords, upd, t, &rows_into_bags, Some(c), loc);
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
            let any = e.compare(Dir::Gt, counts, zero, &ot.shape, loc)?;
            e.op("stablehlo.select", loc, &[any, m, zero], &ot, &[])?
        }
    };
    let r = e.convert(r, &ot, out.dtype, loc)?;
    Ok(std::iter::once(r).chain(zeros).collect())
}

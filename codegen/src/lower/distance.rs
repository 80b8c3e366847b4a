//! Distances: `cdist` (between the rows of two matrices, batched) and `pdist` (between all
//! pairs of rows of one matrix), for any p: p = 0 counts differing coordinates, p = inf takes
//! the largest, otherwise `(sum |d|^p)^(1/p)` (p = 1 and 2 without the power ops), as PyTorch.

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::indexing::index_select;
use super::reduction::{compute_dtype, reduce_to};
use super::{arg, Operand};
use crate::attr::ComparisonDirection;
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// The p-norm of `d` over its last dim.
fn pnorm<'c, 'a>(e: &Emitter<'c, 'a>, d: V<'c, 'a>, t: &TensorType, p: f64, loc: Location<'c>) -> Result<(V<'c, 'a>, TensorType)> {
    let last = vec![t.rank() - 1];
    let abs = e.op("stablehlo.abs", loc, &[d], t, &[])?;
    if p == 0.0 {
        let zero = e.splat(Scalar::Int(0), t, loc)?;
        let nz = e.compare(ComparisonDirection::Ne, d, zero, &t.shape, loc)?;
        let nz = e.convert(nz, &TensorType::new(DType::Bool, t.shape.clone()), t.dtype, loc)?;
        return reduce_to(e, (nz, t), &last, false, Combiner::Add, t.dtype, loc);
    }
    if p.is_infinite() {
        return reduce_to(e, (abs, t), &last, false, Combiner::Max, t.dtype, loc);
    }
    let powered = match p {
        1.0 => abs,
        2.0 => e.op("stablehlo.multiply", loc, &[d, d], t, &[])?,
        _ => e.op("stablehlo.power", loc, &[abs, e.splat(Scalar::float(p), t, loc)?], t, &[])?,
    };
    let (s, st) = reduce_to(e, (powered, t), &last, false, Combiner::Add, t.dtype, loc)?;
    let r = match p {
        1.0 => s,
        2.0 => e.op("stablehlo.sqrt", loc, &[s], &st, &[])?,
        _ => e.op("stablehlo.power", loc, &[s, e.splat(Scalar::float(1.0 / p), &st, loc)?], &st, &[])?,
    };
    Ok((r, st))
}

/// `cdist(x, y, p)`: the p-norm distance of every row of `x` to every row of `y`, batched.
pub fn cdist<'c, 'a>(e: &Emitter<'c, 'a>, p: Scalar, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, y) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let work = compute_dtype(out.dtype);
    // [.., P, 1, M] - [.., 1, R, M] -> [.., P, R, M]
    let m = *x.1.shape.last().unwrap_or(&0);
    let mut full = out.shape.clone();
    full.push(m);
    let ft = TensorType::new(work, full);
    let expand = |o: Operand<'c, 'a, '_>, at: usize| -> Result<V<'c, 'a>> {
        let mut s = o.1.shape.clone();
        let at = s.len() - 1 - at;
        s.insert(at, 1);
        let st = TensorType::new(work, s);
        let v = e.convert(o.0, o.1, work, loc)?;
        let v = e.reshape(v, &TensorType::new(work, o.1.shape.clone()), &st, loc)?;
        e.broadcast(v, &st, &ft, loc)
    };
    let (a, b) = (expand(x, 0)?, expand(y, 1)?);
    let d = e.op("stablehlo.subtract", loc, &[a, b], &ft, &[])?;
    let (r, rt) = pnorm(e, d, &ft, p.as_f64(), loc)?;
    e.convert(r, &rt, out.dtype, loc)
}

/// `pdist(x, p)`: the p-norm distance of every pair `i < j` of rows of `x`, in row-major pair
/// order.
pub fn pdist<'c, 'a>(e: &Emitter<'c, 'a>, p: Scalar, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    let work = compute_dtype(out.dtype);
    let n = x.1.shape[0];
    let (mut is, mut js) = (Vec::new(), Vec::new());
    for i in 0..n {
        for j in i + 1..n {
            is.push(i);
            js.push(j);
        }
    }
    let k = is.len() as i64;
    if k == 0 {
        return e.splat(Scalar::Int(0), out, loc);
    }
    let it = TensorType::new(DType::I64, vec![k]);
    let xt = TensorType::new(work, x.1.shape.clone());
    let xv = e.convert(x.0, x.1, work, loc)?;
    let a = index_select(e, (xv, &xt), 0, e.constant_i64(&is, &it, loc)?, k, loc)?;
    let b = index_select(e, (xv, &xt), 0, e.constant_i64(&js, &it, loc)?, k, loc)?;
    let pt = TensorType::new(work, vec![k, x.1.shape[1]]);
    let d = e.op("stablehlo.subtract", loc, &[a, b], &pt, &[])?;
    let (r, rt) = pnorm(e, d, &pt, p.as_f64(), loc)?;
    e.convert(r, &rt, out.dtype, loc)
}

//! Creation ops: `full` (from `aten.full`, `aten.scalar_tensor`, `full_like` and scalar
//! arguments) as a splat `stablehlo.constant`, and `arange` as `iota * step + start`. A scalar
//! is converted to the result dtype as PyTorch converts it (floats truncate toward zero into
//! integers; non-zero is true).

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::Result;

/// A tensor of `result`'s type filled with `value`.
pub fn full<'c, 'a>(e: &Emitter<'c, 'a>, value: Scalar, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    e.splat(value, result, loc)
}

/// `start + i * step` for `i` in `0..n` (the length comes from the result type). Float
/// results are computed in f64 and converted, so large ranges keep integer steps exact.
pub fn arange<'c, 'a>(e: &Emitter<'c, 'a>, start: Scalar, step: Scalar, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    let work = if result.dtype.is_float() { DType::F64 } else { DType::I64 };
    let t = TensorType::new(work, result.shape.clone());
    let iota = e.iota(&t, 0, loc)?;
    let scaled = e.op("stablehlo.multiply", loc, &[iota, e.splat(step, &t, loc)?], &t, &[])?;
    let shifted = e.op("stablehlo.add", loc, &[scaled, e.splat(start, &t, loc)?], &t, &[])?;
    e.convert(shifted, &t, result.dtype, loc)
}

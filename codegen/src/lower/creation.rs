//! Creation ops: `full` (from `aten.full` and from scalar arguments) as a splat
//! `stablehlo.constant`. The scalar is converted to the result dtype as PyTorch does
//! (floats truncate toward zero into integers; non-zero is true).

use fxhlo_ir::{Scalar, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::Result;

/// A tensor of `result`'s type filled with `value`.
pub fn full<'c, 'a>(e: &Emitter<'c, 'a>, value: Scalar, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    e.splat(value, result, loc)
}

//! Elementwise ops: `aten.add`, `aten.mul`, `aten.relu`.
//!
//! Operands are broadcast to the result shape with `broadcast_in_dim` (PyTorch broadcasting is
//! numpy's). `relu` is `maximum(x, 0)`; note that StableHLO's maximum propagates NaN, as
//! `torch.relu` does.

use fxhlo_ir::{Scalar, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::Result;

/// A broadcasting binary op (`stablehlo.add`, `stablehlo.multiply`, ...).
pub fn binary<'c, 'a>(
    e: &Emitter<'c, 'a>,
    name: &str,
    operands: &[(Value<'c, 'a>, &TensorType)],
    result: &TensorType,
    loc: Location<'c>,
) -> Result<Value<'c, 'a>> {
    let [(a, ta), (b, tb)] = operands else {
        return Err(e.internal(format!("{name} needs 2 operands")));
    };
    let a = e.broadcast(*a, ta, result, loc)?;
    let b = e.broadcast(*b, tb, result, loc)?;
    e.op(name, loc, &[a, b], result, &[])
}

/// `relu(x) = maximum(x, 0)`.
pub fn relu<'c, 'a>(e: &Emitter<'c, 'a>, x: Value<'c, 'a>, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    let zero = e.splat(Scalar::Int(0), result, loc)?;
    e.op("stablehlo.maximum", loc, &[x, zero], result, &[])
}

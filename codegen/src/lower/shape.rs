//! Shape ops: `aten.permute` (`stablehlo.transpose`) and `aten.expand`
//! (`stablehlo.broadcast_in_dim`).

use fxhlo_ir::TensorType;
use melior::ir::{Location, Value};

use crate::emit::{i64_array, Emitter};
use crate::Result;

/// Result dim `i` is operand dim `dims[i]`; negative dims count from the end.
pub fn permute<'c, 'a>(e: &Emitter<'c, 'a>, x: Value<'c, 'a>, dims: &[i64], result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    let rank = dims.len() as i64;
    let perm: Vec<String> = dims.iter().map(|&d| (if d < 0 { d + rank } else { d }).to_string()).collect();
    e.op("stablehlo.transpose", loc, &[x], result, &[("permutation", i64_array(&perm))])
}

/// Broadcast to the result shape (sizes were resolved by shape inference).
pub fn expand<'c, 'a>(e: &Emitter<'c, 'a>, x: Value<'c, 'a>, from: &TensorType, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    e.broadcast(x, from, result, loc)
}

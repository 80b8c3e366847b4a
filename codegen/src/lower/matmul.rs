//! Matrix products: `aten.mm` and `aten.addmm` as `stablehlo.dot_general`.
//!
//! f32 products ask for HIGHEST precision: PyTorch computes f32 matmuls in full f32, while
//! XLA's default on TPU (and TF32 on GPU) would round operands to bf16/tf32.

use fxhlo_ir::{DType, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::Result;

/// `[m,k] x [k,n] -> [m,n]`.
pub fn mm<'c, 'a>(e: &Emitter<'c, 'a>, a: Value<'c, 'a>, b: Value<'c, 'a>, result: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
    let mut attrs = vec![(
        "dot_dimension_numbers",
        "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>".to_string(),
    )];
    if matches!(result.dtype, DType::F32 | DType::F64) {
        attrs.push(("precision_config", "[#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]".to_string()));
    }
    e.op("stablehlo.dot_general", loc, &[a, b], result, &attrs)
}

/// `bias + a @ b`, bias broadcast to the product's shape (beta = alpha = 1).
pub fn addmm<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bias: (Value<'c, 'a>, &TensorType),
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
    result: &TensorType,
    loc: Location<'c>,
) -> Result<Value<'c, 'a>> {
    let product = mm(e, a, b, result, loc)?;
    let bias = e.broadcast(bias.0, bias.1, result, loc)?;
    e.op("stablehlo.add", loc, &[bias, product], result, &[])
}

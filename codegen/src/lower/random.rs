//! Random bits: `Op::RngBitGenerator` is `stablehlo.rng_bit_generator` with the three-fry
//! algorithm (the same stream on every PJRT target, unlike XLA's `DEFAULT`). The IR carries the
//! state and the bits as signed integers (it has no unsigned 32/64-bit types); the unsigned
//! types StableHLO requires exist only here, between two bitcasts.

use fxhlo_ir::{DType, TensorType};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{Location, Type, Value};

use super::Operand;
use crate::attr::RngAlgorithm;
use crate::emit::Emitter;
use crate::Result;

/// `tensor<shape x ui<bits>>`.
fn unsigned<'c>(e: &Emitter<'c, '_>, shape: &[i64], bits: u32) -> Type<'c> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    RankedTensorType::new(&dims, IntegerType::unsigned(e.ctx, bits).into(), None).into()
}

/// The next state (`i64[2]`) and `bits` (`i32` or `i64` of its shape) from `state`.
pub fn rng_bit_generator<'c, 'a>(
    e: &Emitter<'c, 'a>,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<Value<'c, 'a>>> {
    let (state, state_t) = *operands.first().ok_or_else(|| e.internal("rng_bit_generator without a state"))?;
    let [_, bits_t] = results else { return Err(e.internal("rng_bit_generator has two results")) };
    let width = match bits_t.dtype {
        DType::I32 => 32,
        DType::I64 => 64,
        d => return Err(e.internal(format!("rng_bit_generator bits of {d}"))),
    };
    let state_u = unsigned(e, &state_t.shape, 64);
    let bits_u = unsigned(e, &bits_t.shape, width);
    let seed = e.op_typed("stablehlo.bitcast_convert", loc, &[state], &[state_u], &[], Vec::new())?;
    let algorithm = [("rng_algorithm", RngAlgorithm::ThreeFry.attr(e.ctx))];
    let out = e.op_typed("stablehlo.rng_bit_generator", loc, &seed, &[state_u, bits_u], &algorithm, Vec::new())?;
    let next = e.op("stablehlo.bitcast_convert", loc, &[out[0]], state_t, &[])?;
    let bits = e.op("stablehlo.bitcast_convert", loc, &[out[1]], bits_t, &[])?;
    Ok(vec![next, bits])
}

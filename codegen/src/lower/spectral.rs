//! Fourier transforms: `Op::Fft` is `stablehlo.fft` itself (its kinds, innermost dims and
//! normalization are XLA's; the importer and the capture's decompositions bring ATen's
//! `_fft_*` to that form), so this only translates.

use fxhlo_ir::{FftKind, TensorType};
use melior::ir::{Location, Value};

use super::Operand;
use crate::emit::{i64s, Emitter};
use crate::Result;

/// `stablehlo.fft` of `kind` with `fft_length = length`.
pub fn fft<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kind: FftKind,
    length: &[i64],
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<Value<'c, 'a>> {
    let x = operands.first().ok_or_else(|| e.internal("aten.fft without an operand"))?;
    let name = match kind {
        FftKind::Fft => "FFT",
        FftKind::Ifft => "IFFT",
        FftKind::Rfft => "RFFT",
        FftKind::Irfft => "IRFFT",
    };
    e.op(
        "stablehlo.fft",
        loc,
        &[x.0],
        out,
        &[("fft_type", format!("#stablehlo<fft_type {name}>")), ("fft_length", i64s(length))],
    )
}

//! Fourier transforms: `Op::Fft` is `stablehlo.fft` itself (its kinds, innermost dims and
//! normalization are XLA's; the importer and the capture's decompositions bring ATen's
//! `_fft_*` to that form), so this only translates.

use fxhlo_ir::{FftKind, TensorType};
use melior::ir::{Location, Value};

use super::Operand;
use crate::attr::{self, FftType};
use crate::emit::Emitter;
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
    let fft_type = match kind {
        FftKind::Fft => FftType::Fft,
        FftKind::Ifft => FftType::Ifft,
        FftKind::Rfft => FftType::Rfft,
        FftKind::Irfft => FftType::Irfft,
    };
    e.op("stablehlo.fft", loc, &[x.0], out, &[("fft_type", fft_type.attr(e.ctx)), ("fft_length", attr::i64s(e.ctx, length))])
}

//! Linear algebra and spectral ops: matrix products, distances, Cholesky factors, triangular
//! solves and FFTs.

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::{FftKind, Op, Scalar};

use super::{Call, Mapping, Operand, Unsupported};

/// Maps a linear-algebra or FFT target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    match c.name {
        "mm" => c.op(Op::Mm, smallvec![c.x()?, a.tensor(1, "mat2")?]),
        "bmm" => c.op(Op::Bmm, smallvec![c.x()?, a.tensor(1, "mat2")?]),
        "addmm" => {
            // beta * self + alpha * (mat1 @ mat2), with the factors folded into the operands.
            // beta = 0 ignores self entirely (even inf/NaN), as PyTorch does.
            let bias = match a.scalar(3, "beta").ok() {
                Some(b) if b.as_f64() == 0.0 => Operand::Scalar(Scalar::Int(0)),
                beta => scale_by(c.x()?, beta),
            };
            let mat1 = scale_by(a.tensor(1, "mat1")?, a.scalar(4, "alpha").ok());
            c.op(Op::Addmm, smallvec![bias, mat1, a.tensor(2, "mat2")?])
        }
        "_cdist_forward" => c.op(
            Op::Cdist { p: a.scalar(2, "p").unwrap_or(Scalar::float(2.0)) },
            smallvec![a.tensor(0, "x1")?, a.tensor(1, "x2")?],
        ),
        "_pdist_forward" => c.op1(Op::Pdist { p: a.scalar(1, "p").unwrap_or(Scalar::float(2.0)) }),
        "linalg_cholesky_ex" => c.op1(Op::Cholesky { upper: a.bool(1, "upper", false)? }),
        "linalg_solve_triangular" => c.op(
            Op::TriangularSolve {
                upper: a.bool(2, "upper", false)?,
                left: a.bool(3, "left", true)?,
                unit_diagonal: a.bool(4, "unitriangular", false)?,
            },
            smallvec![c.x()?, a.tensor(1, "B")?],
        ),
        "_fft_c2c" | "_fft_r2c" | "_fft_c2r" => fft(c),
        _ => Err(Unsupported::NoLowering),
    }
}

/// `o * factor`, or `o` itself when the factor is absent or 1.
fn scale_by(o: Operand<'_>, factor: Option<Scalar>) -> Operand<'_> {
    match factor {
        Some(f) if f.as_f64() != 1.0 => Operand::Scaled(Box::new(o), f),
        _ => o,
    }
}

/// What the `_fft_*` ops lower to, for the reasons that refuse another form.
const FFT_FORMS: &str = "the form of `stablehlo.fft` (the capture's decompositions, python/fxhlo/decompositions/spectral.py, bring other FFTs to it)";

/// ATen's `_fft_*` in the form of `stablehlo.fft`: over the innermost dims in order (1 to 3),
/// no normalization forward and `1/n` inverse (XLA's); other forms stay unknown (the capture's
/// decompositions, python/fxhlo/decompositions/spectral.py, bring them to this one).
fn fft<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    let x = c.x()?;
    let dims: Vec<i64> = a.ints(1, "dim", &[])?;
    let normalization = a.int(2, "normalization", 0)?;
    let out = c.result()?;
    let r = out.rank() as i64;
    let k = dims.len() as i64;
    let trailing = (1..=3).contains(&k) && dims.iter().enumerate().all(|(i, &d)| d.rem_euclid(r.max(1)) == r - k + i as i64);
    if !trailing {
        return Err(Unsupported::value("dim", format!("{dims:?}"), format!("the innermost 1 to 3 dims in order, {FFT_FORMS}")));
    }
    // The last k sizes of a shape; a shape with fewer dims has no such signal.
    let signal = |shape: &[i64]| match shape.len().checked_sub(k as usize) {
        Some(from) => Ok(shape[from..].to_vec()),
        None => Err(Unsupported::value("dim", format!("{dims:?}"), format!("dims within the input's rank {}", shape.len()))),
    };
    let (kind, length) = match c.name {
        "_fft_c2c" => match (a.bool(3, "forward", true)?, normalization) {
            (true, 0) => (FftKind::Fft, signal(&out.shape)?),
            (false, 2) => (FftKind::Ifft, signal(&out.shape)?),
            (forward, n) => {
                let found = format!("{n} with forward = {forward}");
                return Err(Unsupported::value("normalization", found, format!("0 forward or 2 (1/n) inverse, {FFT_FORMS}")));
            }
        },
        "_fft_r2c" => {
            if !a.bool(3, "onesided", true)? {
                return Err(Unsupported::value("onesided", "false", format!("true, {FFT_FORMS}")));
            }
            if normalization != 0 {
                return Err(Unsupported::value("normalization", normalization, format!("0, {FFT_FORMS}")));
            }
            // The input's signal sizes: the one-sided result's last dim is `n / 2 + 1`.
            let Operand::Tensor(input) = x else {
                return Err(Unsupported::Kind { arg: "self", expected: "a tensor", found: "number" });
            };
            // An operand not defined earlier fails the import when it is resolved.
            let input_type = (c.operand_type)(input)
                .ok_or_else(|| Unsupported::value("self", format!("`{input}`"), "a tensor defined earlier in the graph"))?;
            (FftKind::Rfft, signal(&input_type.shape)?)
        }
        "_fft_c2r" if normalization == 2 => (FftKind::Irfft, signal(&out.shape)?),
        "_fft_c2r" => return Err(Unsupported::value("normalization", normalization, format!("2 (1/n), {FFT_FORMS}"))),
        _ => return Err(Unsupported::NoLowering),
    };
    Ok(super::Mapped::Op(Op::Fft { kind, length }, smallvec![x]))
}

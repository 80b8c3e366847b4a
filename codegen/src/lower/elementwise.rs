//! Elementwise ops: unary math and activations, binary arithmetic, comparisons, `where`,
//! `clamp`, conversions.
//!
//! PyTorch semantics kept on purpose:
//! - operands are converted to the promoted dtype (the node's result type, or for comparisons
//!   the promotion of the operands) and broadcast before the StableHLO op;
//! - integer `div` is true division in the default float; `div(rounding_mode='floor')` and
//!   `remainder` round toward negative infinity (Python), `fmod` and `'trunc'` toward zero;
//! - `maximum`/`minimum`/`clamp`/`relu` propagate NaN (selected explicitly: XLA's CPU
//!   `maximum` does not); `fmax`/`fmin` ignore a NaN operand (NaN only where both are);
//! - `copysign` copies the sign bit (so `-0.0` and a NaN's sign count), in the float result type;
//! - `round` rounds half to even; `gelu` is exact (erf) unless `approximate='tanh'`.

use fxhlo_ir::{infer, BinaryOp, CompareOp, DType, Scalar, TensorType, UnaryOp};
use melior::ir::{Location, Value};

use super::{arg, Operand};
use crate::attr::ComparisonDirection as Dir;
use crate::emit::Emitter;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// `x` converted to `dtype` and broadcast to `shape`.
fn prepare<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, dtype: DType, shape: &[i64], loc: Location<'c>) -> Result<V<'c, 'a>> {
    let v = e.convert(x.0, x.1, dtype, loc)?;
    let t = TensorType::new(dtype, x.1.shape.clone());
    e.broadcast(v, &t, &TensorType::new(dtype, shape.to_vec()), loc)
}

fn k<'c, 'a>(e: &Emitter<'c, 'a>, v: f64, t: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    e.splat(Scalar::float(v), t, loc)
}

/// Unary math in the result dtype.
pub fn unary<'c, 'a>(e: &Emitter<'c, 'a>, u: UnaryOp, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    use UnaryOp::*;
    let x = arg(e, operands, 0)?;
    let simple = |name: &str| -> Result<V<'c, 'a>> {
        let v = e.convert(x.0, x.1, out.dtype, loc)?;
        e.op(name, loc, &[v], out, &[])
    };
    let xv = || e.convert(x.0, x.1, out.dtype, loc);
    let is_int = !out.dtype.is_float();
    let complex = x.1.dtype.is_complex();
    match u {
        // |z| of a complex value is real: no conversion of the operand.
        Abs if complex => e.op("stablehlo.abs", loc, &[x.0], out, &[]),
        Abs => simple("stablehlo.abs"),
        Real if complex => e.op("stablehlo.real", loc, &[x.0], out, &[]),
        Imag if complex => e.op("stablehlo.imag", loc, &[x.0], out, &[]),
        Conj if complex => {
            let part = TensorType::new(x.1.dtype.real_part(), x.1.shape.clone());
            let re = e.op("stablehlo.real", loc, &[x.0], &part, &[])?;
            let im = e.op("stablehlo.imag", loc, &[x.0], &part, &[])?;
            let neg = e.op("stablehlo.negate", loc, &[im], &part, &[])?;
            e.op("stablehlo.complex", loc, &[re, neg], out, &[])
        }
        Real | Conj => xv(),
        Imag => e.splat(Scalar::Int(0), out, loc),
        Neg => simple("stablehlo.negate"),
        Exp => simple("stablehlo.exponential"),
        Expm1 => simple("stablehlo.exponential_minus_one"),
        Log => simple("stablehlo.log"),
        Log1p => simple("stablehlo.log_plus_one"),
        Log2 | Log10 => {
            let l = simple("stablehlo.log")?;
            let base = if u == Log2 { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 };
            e.op("stablehlo.divide", loc, &[l, k(e, base, out, loc)?], out, &[])
        }
        Sqrt => simple("stablehlo.sqrt"),
        Rsqrt => simple("stablehlo.rsqrt"),
        Reciprocal => e.op("stablehlo.divide", loc, &[k(e, 1.0, out, loc)?, xv()?], out, &[]),
        Sin => simple("stablehlo.sine"),
        Cos => simple("stablehlo.cosine"),
        Tan => simple("chlo.tan"),
        Tanh => simple("stablehlo.tanh"),
        Asin => simple("chlo.asin"),
        Acos => simple("chlo.acos"),
        Atan => simple("chlo.atan"),
        Sinh => simple("chlo.sinh"),
        Cosh => simple("chlo.cosh"),
        Asinh => simple("chlo.asinh"),
        Acosh => simple("chlo.acosh"),
        Atanh => simple("chlo.atanh"),
        Erf => simple("chlo.erf"),
        Sigmoid => simple("stablehlo.logistic"),
        Relu => e.max_min(true, xv()?, e.splat(Scalar::Int(0), out, loc)?, out, loc),
        Silu => {
            let x = xv()?;
            let s = e.op("stablehlo.logistic", loc, &[x], out, &[])?;
            e.op("stablehlo.multiply", loc, &[x, s], out, &[])
        }
        Gelu => gelu(e, xv()?, out, false, loc),
        GeluTanh => gelu(e, xv()?, out, true, loc),
        Floor | Ceil | Round | Trunc if is_int => xv(),
        Floor => simple("stablehlo.floor"),
        Ceil => simple("stablehlo.ceil"),
        Round => simple("stablehlo.round_nearest_even"),
        Trunc => {
            // trunc(x) = sign(x) * floor(|x|), which keeps -0.0 and NaN like torch.trunc.
            let x = xv()?;
            let a = e.op("stablehlo.abs", loc, &[x], out, &[])?;
            let f = e.op("stablehlo.floor", loc, &[a], out, &[])?;
            let s = e.op("stablehlo.sign", loc, &[x], out, &[])?;
            e.op("stablehlo.multiply", loc, &[s, f], out, &[])
        }
        Sign if out.dtype == DType::Bool => xv(),
        Sign if is_int => simple("stablehlo.sign"),
        Sign => {
            // (x > 0) - (x < 0): NaN gives 0 as in torch.sign (stablehlo.sign keeps NaN).
            let x = xv()?;
            let zero = e.splat(Scalar::Int(0), out, loc)?;
            let bt = TensorType::new(DType::Bool, out.shape.clone());
            let pos = e.compare(Dir::Gt, x, zero, &out.shape, loc)?;
            let neg = e.compare(Dir::Lt, x, zero, &out.shape, loc)?;
            let pos = e.convert(pos, &bt, out.dtype, loc)?;
            let neg = e.convert(neg, &bt, out.dtype, loc)?;
            e.op("stablehlo.subtract", loc, &[pos, neg], out, &[])
        }
        LogicalNot => {
            let b = to_bool(e, x, loc)?;
            e.op("stablehlo.not", loc, &[b], out, &[])
        }
        BitwiseNot => simple("stablehlo.not"),
        IsNan if !x.1.dtype.is_float() => e.splat(Scalar::Bool(false), out, loc),
        IsNan => e.compare(Dir::Ne, x.0, x.0, &out.shape, loc),
        IsInf if !x.1.dtype.is_float() => e.splat(Scalar::Bool(false), out, loc),
        IsInf => {
            let a = e.op("stablehlo.abs", loc, &[x.0], x.1, &[])?;
            let inf = e.splat(Scalar::float(f64::INFINITY), x.1, loc)?;
            e.compare(Dir::Eq, a, inf, &out.shape, loc)
        }
        Erfc => simple("chlo.erfc"),
        Erfinv => simple("chlo.erf_inv"),
        // 2^x through `power`, which XLA computes exactly for integer x (exp(x ln 2) does not).
        Exp2 => e.op("stablehlo.power", loc, &[k(e, 2.0, out, loc)?, xv()?], out, &[]),
        Lgamma => simple("chlo.lgamma"),
        Digamma => simple("chlo.digamma"),
        I1e => simple("chlo.bessel_i1e"),
        I1 => {
            // i1(x) = i1e(x) e^|x|
            let x = xv()?;
            let s = e.op("chlo.bessel_i1e", loc, &[x], out, &[])?;
            let a = e.op("stablehlo.abs", loc, &[x], out, &[])?;
            let ex = e.op("stablehlo.exponential", loc, &[a], out, &[])?;
            e.op("stablehlo.multiply", loc, &[s, ex], out, &[])
        }
        Signbit if !x.1.dtype.is_float() => {
            let zero = e.splat(Scalar::Int(0), x.1, loc)?;
            e.compare(Dir::Lt, x.0, zero, &out.shape, loc)
        }
        Signbit => {
            let bits = bits_of(x.1.dtype).ok_or_else(|| e.internal(format!("signbit on {}", x.1.dtype)))?;
            let it = TensorType::new(bits, x.1.shape.clone());
            let i = e.op("stablehlo.bitcast_convert", loc, &[x.0], &it, &[])?;
            let zero = e.splat(Scalar::Int(0), &it, loc)?;
            e.compare(Dir::Lt, i, zero, &out.shape, loc)
        }
    }
}

/// `x != 0` as bool (identity on bool).
fn to_bool<'c, 'a>(e: &Emitter<'c, 'a>, x: Operand<'c, 'a, '_>, loc: Location<'c>) -> Result<V<'c, 'a>> {
    if x.1.dtype == DType::Bool {
        return Ok(x.0);
    }
    let zero = e.splat(Scalar::Int(0), x.1, loc)?;
    e.compare(Dir::Ne, x.0, zero, &x.1.shape, loc)
}

fn gelu<'c, 'a>(e: &Emitter<'c, 'a>, x: V<'c, 'a>, t: &TensorType, tanh: bool, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let mul = |a, b| e.op("stablehlo.multiply", loc, &[a, b], t, &[]);
    let add = |a, b| e.op("stablehlo.add", loc, &[a, b], t, &[]);
    let inner = if tanh {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        let x3 = mul(mul(x, x)?, x)?;
        let poly = add(x, mul(x3, k(e, 0.044715, t, loc)?)?)?;
        let arg = mul(poly, k(e, (2.0 / std::f64::consts::PI).sqrt(), t, loc)?)?;
        e.op("stablehlo.tanh", loc, &[arg], t, &[])?
    } else {
        // 0.5 x (1 + erf(x / sqrt(2)))
        let arg = mul(x, k(e, std::f64::consts::FRAC_1_SQRT_2, t, loc)?)?;
        e.op("chlo.erf", loc, &[arg], t, &[])?
    };
    let one_plus = add(inner, k(e, 1.0, t, loc)?)?;
    mul(mul(x, one_plus)?, k(e, 0.5, t, loc)?)
}

/// Binary arithmetic with PyTorch promotion and rounding rules.
pub fn binary<'c, 'a>(e: &Emitter<'c, 'a>, b: BinaryOp, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    use BinaryOp::*;
    let (x, y) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let shape = &out.shape;
    let op = |name: &str, a, b| e.op(name, loc, &[a, b], out, &[]);
    // Both operands in the result dtype and shape (what every arithmetic op starts from).
    let operands = || -> Result<(V<'c, 'a>, V<'c, 'a>)> { Ok((prepare(e, x, out.dtype, shape, loc)?, prepare(e, y, out.dtype, shape, loc)?)) };
    let simple = |name: &str| -> Result<V<'c, 'a>> {
        let (a, c) = operands()?;
        op(name, a, c)
    };
    let is_float = out.dtype.is_float();
    let is_bool = out.dtype == DType::Bool;
    match b {
        LogicalAnd => logical(e, "stablehlo.and", x, y, out, loc),
        LogicalOr => logical(e, "stablehlo.or", x, y, out, loc),
        LogicalXor => logical(e, "stablehlo.xor", x, y, out, loc),
        Complex => {
            // The parts in the result's part type, then paired.
            let part = out.dtype.real_part();
            let (re, im) = (prepare(e, x, part, shape, loc)?, prepare(e, y, part, shape, loc)?);
            op("stablehlo.complex", re, im)
        }
        Add if is_bool => simple("stablehlo.or"),
        Add => simple("stablehlo.add"),
        Sub => simple("stablehlo.subtract"),
        Mul if is_bool => simple("stablehlo.and"),
        Mul => simple("stablehlo.multiply"),
        Div => simple("stablehlo.divide"),
        DivTrunc if is_float => {
            let q = simple("stablehlo.divide")?;
            unary(e, UnaryOp::Trunc, &[(q, out)], out, loc)
        }
        DivTrunc => simple("stablehlo.divide"),
        DivFloor if is_float => {
            let q = simple("stablehlo.divide")?;
            e.op("stablehlo.floor", loc, &[q], out, &[])
        }
        DivFloor => {
            // q = trunc(a / b) - 1 where the remainder is non-zero and the signs differ.
            let (a, c) = operands()?;
            let q = op("stablehlo.divide", a, c)?;
            let r = op("stablehlo.remainder", a, c)?;
            let fix = sign_fix(e, r, c, out, loc)?;
            let one = e.splat(Scalar::Int(1), out, loc)?;
            let q1 = op("stablehlo.subtract", q, one)?;
            e.op("stablehlo.select", loc, &[fix, q1, q], out, &[])
        }
        Remainder => {
            // Python's modulo: the result takes the divisor's sign.
            let (a, c) = operands()?;
            let r = op("stablehlo.remainder", a, c)?;
            let fix = sign_fix(e, r, c, out, loc)?;
            let r2 = op("stablehlo.add", r, c)?;
            e.op("stablehlo.select", loc, &[fix, r2, r], out, &[])
        }
        Fmod => simple("stablehlo.remainder"),
        Pow => simple("stablehlo.power"),
        Maximum | Fmax if is_bool => simple("stablehlo.or"),
        Minimum | Fmin if is_bool => simple("stablehlo.and"),
        Maximum | Minimum => {
            let (a, c) = operands()?;
            e.max_min(b == Maximum, a, c, out, loc)
        }
        Fmax | Fmin if is_float => {
            // The other operand where one is NaN: NaN only where both are.
            let (a, c) = operands()?;
            let m = op(if b == Fmax { "stablehlo.maximum" } else { "stablehlo.minimum" }, a, c)?;
            let c_nan = e.compare(Dir::Ne, c, c, shape, loc)?;
            let v = e.op("stablehlo.select", loc, &[c_nan, a, m], out, &[])?;
            let a_nan = e.compare(Dir::Ne, a, a, shape, loc)?;
            e.op("stablehlo.select", loc, &[a_nan, c, v], out, &[])
        }
        Fmax => simple("stablehlo.maximum"),
        Fmin => simple("stablehlo.minimum"),
        Copysign => {
            let (a, c) = operands()?;
            copysign(e, a, c, out, loc)
        }
        Atan2 => simple("stablehlo.atan2"),
        Nextafter => simple("chlo.next_after"),
        Zeta => simple("chlo.zeta"),
        Polygamma => simple("chlo.polygamma"),
        Hypot => {
            // m * sqrt(1 + (n/m)^2) with m = max(|a|, |b|), n = min: no overflow in the squares;
            // m = 0 gives 0, and an infinite operand gives inf even beside a NaN (C's hypot).
            let (a, c) = operands()?;
            let (aa, ca) = (e.op("stablehlo.abs", loc, &[a], out, &[])?, e.op("stablehlo.abs", loc, &[c], out, &[])?);
            let m = op("stablehlo.maximum", aa, ca)?;
            let n = op("stablehlo.minimum", aa, ca)?;
            let zero = k(e, 0.0, out, loc)?;
            let is_zero = e.compare(Dir::Eq, m, zero, shape, loc)?;
            let r = op("stablehlo.divide", n, m)?;
            let r = e.op("stablehlo.select", loc, &[is_zero, zero, r], out, &[])?;
            let one = k(e, 1.0, out, loc)?;
            let s = op("stablehlo.add", one, op("stablehlo.multiply", r, r)?)?;
            let h = op("stablehlo.multiply", m, e.op("stablehlo.sqrt", loc, &[s], out, &[])?)?;
            let inf = k(e, f64::INFINITY, out, loc)?;
            let a_inf = e.compare(Dir::Eq, aa, inf, shape, loc)?;
            let c_inf = e.compare(Dir::Eq, ca, inf, shape, loc)?;
            let bt = TensorType::new(DType::Bool, shape.clone());
            let any_inf = e.op("stablehlo.or", loc, &[a_inf, c_inf], &bt, &[])?;
            e.op("stablehlo.select", loc, &[any_inf, inf, h], out, &[])
        }
        BitwiseAnd => simple("stablehlo.and"),
        BitwiseOr => simple("stablehlo.or"),
        BitwiseXor => simple("stablehlo.xor"),
    }
}

/// A logical op (`name` on bools) of `x != 0` and `y != 0`, broadcast to `out`.
fn logical<'c, 'a>(e: &Emitter<'c, 'a>, name: &str, x: Operand<'c, 'a, '_>, y: Operand<'c, 'a, '_>, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (xb, yb) = (to_bool(e, x, loc)?, to_bool(e, y, loc)?);
    let bt = TensorType::new(DType::Bool, x.1.shape.clone());
    let ybt = TensorType::new(DType::Bool, y.1.shape.clone());
    let (xb, yb) = (e.broadcast(xb, &bt, out, loc)?, e.broadcast(yb, &ybt, out, loc)?);
    e.op(name, loc, &[xb, yb], out, &[])
}

/// `copysign(a, b)` on a float type: `a`'s magnitude bits with `b`'s sign bit, through the
/// integer type of the same width.
fn copysign<'c, 'a>(e: &Emitter<'c, 'a>, a: V<'c, 'a>, b: V<'c, 'a>, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let bits = bits_of(out.dtype).ok_or_else(|| e.internal(format!("copysign on {}: inference gives a float type", out.dtype)))?;
    // The sign bit alone, sign-extended: i64::MIN shifted down to the integer's width.
    let sign = i64::MIN >> (64 - 8 * bits.size_bytes());
    let it = TensorType::new(bits, out.shape.clone());
    let cast = |v| e.op("stablehlo.bitcast_convert", loc, &[v], &it, &[]);
    let and = |v, m| e.op("stablehlo.and", loc, &[v, m], &it, &[]);
    let magnitude = and(cast(a)?, e.splat(Scalar::Int(!sign), &it, loc)?)?;
    let sign = and(cast(b)?, e.splat(Scalar::Int(sign), &it, loc)?)?;
    let r = e.op("stablehlo.or", loc, &[magnitude, sign], &it, &[])?;
    e.op("stablehlo.bitcast_convert", loc, &[r], out, &[])
}

/// The signed integer type of a float's width, to reach its bits through `bitcast_convert`
/// (the sign bit is the integer's sign).
fn bits_of(float: DType) -> Option<DType> {
    match float {
        DType::F64 => Some(DType::I64),
        DType::F32 => Some(DType::I32),
        DType::F16 | DType::BF16 => Some(DType::I16),
        _ => None,
    }
}

/// `r != 0 && (r < 0) != (b < 0)`: where a truncating remainder/quotient needs Python's fix.
fn sign_fix<'c, 'a>(e: &Emitter<'c, 'a>, r: V<'c, 'a>, b: V<'c, 'a>, t: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let zero = e.splat(Scalar::Int(0), t, loc)?;
    let bt = TensorType::new(DType::Bool, t.shape.clone());
    let nonzero = e.compare(Dir::Ne, r, zero, &t.shape, loc)?;
    let rneg = e.compare(Dir::Lt, r, zero, &t.shape, loc)?;
    let bneg = e.compare(Dir::Lt, b, zero, &t.shape, loc)?;
    let differ = e.op("stablehlo.xor", loc, &[rneg, bneg], &bt, &[])?;
    e.op("stablehlo.and", loc, &[nonzero, differ], &bt, &[])
}

/// Comparison in the operands' promoted dtype.
pub fn compare<'c, 'a>(e: &Emitter<'c, 'a>, c: CompareOp, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, y) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let dtype = infer::result_type(&[x.1, y.1]);
    let (a, b) = (prepare(e, x, dtype, &out.shape, loc)?, prepare(e, y, dtype, &out.shape, loc)?);
    let dir = match c {
        CompareOp::Eq => Dir::Eq,
        CompareOp::Ne => Dir::Ne,
        CompareOp::Lt => Dir::Lt,
        CompareOp::Le => Dir::Le,
        CompareOp::Gt => Dir::Gt,
        CompareOp::Ge => Dir::Ge,
    };
    e.compare(dir, a, b, &out.shape, loc)
}

/// `where(cond, a, b)`.
pub fn select<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let cond = prepare(e, arg(e, operands, 0)?, DType::Bool, &out.shape, loc)?;
    let a = prepare(e, arg(e, operands, 1)?, out.dtype, &out.shape, loc)?;
    let b = prepare(e, arg(e, operands, 2)?, out.dtype, &out.shape, loc)?;
    e.op("stablehlo.select", loc, &[cond, a, b], out, &[])
}

/// `clamp(x, min, max)` as `minimum(maximum(x, min), max)` (NaN propagates).
pub fn clamp<'c, 'a>(
    e: &Emitter<'c, 'a>,
    min: Option<Scalar>,
    max: Option<Scalar>,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let mut v = e.convert(arg(e, operands, 0)?.0, arg(e, operands, 0)?.1, out.dtype, loc)?;
    if let Some(lo) = min {
        v = e.max_min(true, v, e.splat(lo, out, loc)?, out, loc)?;
    }
    if let Some(hi) = max {
        v = e.max_min(false, v, e.splat(hi, out, loc)?, out, loc)?;
    }
    Ok(v)
}

/// Conversion to the result dtype (float → int truncates toward zero; non-zero → true), or a
/// plain copy.
pub fn convert<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let x = arg(e, operands, 0)?;
    if out.dtype == DType::Bool && x.1.dtype != DType::Bool {
        return to_bool(e, x, loc);
    }
    e.convert(x.0, x.1, out.dtype, loc)
}

/// `elu(x) = scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1))`.
#[allow(clippy::too_many_arguments)]
pub fn elu<'c, 'a>(
    e: &Emitter<'c, 'a>,
    alpha: Scalar,
    scale: Scalar,
    input_scale: Scalar,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let (x, pos) = positive(e, operands, out, loc)?;
    let mul = |a, b| e.op("stablehlo.multiply", loc, &[a, b], out, &[]);
    let scaled = mul(x, e.splat(input_scale, out, loc)?)?;
    let em1 = e.op("stablehlo.exponential_minus_one", loc, &[scaled], out, &[])?;
    let neg = mul(em1, e.splat(alpha, out, loc)?)?;
    let sel = e.op("stablehlo.select", loc, &[pos, x, neg], out, &[])?;
    mul(sel, e.splat(scale, out, loc)?)
}

/// `leaky_relu(x) = x > 0 ? x : slope * x`.
pub fn leaky_relu<'c, 'a>(e: &Emitter<'c, 'a>, slope: Scalar, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (x, pos) = positive(e, operands, out, loc)?;
    let neg = e.op("stablehlo.multiply", loc, &[x, e.splat(slope, out, loc)?], out, &[])?;
    e.op("stablehlo.select", loc, &[pos, x, neg], out, &[])
}

/// Operand 0 and where it is `> 0` (the branch of `elu` and `leaky_relu`).
fn positive<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<(V<'c, 'a>, V<'c, 'a>)> {
    let x = arg(e, operands, 0)?;
    let zero = e.splat(Scalar::Int(0), out, loc)?;
    Ok((x.0, e.compare(Dir::Gt, x.0, zero, &out.shape, loc)?))
}

/// `clamp(x, min_tensor, max_tensor)` with broadcasting and promotion.
pub fn clamp_tensor<'c, 'a>(e: &Emitter<'c, 'a>, has_min: bool, has_max: bool, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let mut v = prepare(e, arg(e, operands, 0)?, out.dtype, &out.shape, loc)?;
    let mut i = 1;
    if has_min {
        let lo = prepare(e, arg(e, operands, i)?, out.dtype, &out.shape, loc)?;
        v = e.max_min(true, v, lo, out, loc)?;
        i += 1;
    }
    if has_max {
        let hi = prepare(e, arg(e, operands, i)?, out.dtype, &out.shape, loc)?;
        v = e.max_min(false, v, hi, out, loc)?;
    }
    Ok(v)
}

/// `copy(self, src)`: `src` in `self`'s dtype and shape.
pub fn copy_into<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let src = arg(e, operands, 1)?;
    let v = if out.dtype == DType::Bool { to_bool(e, src, loc)? } else { e.convert(src.0, src.1, out.dtype, loc)? };
    e.broadcast(v, &TensorType::new(out.dtype, src.1.shape.clone()), out, loc)
}

//! Elementwise ops: unary and binary math, comparisons, `where`, clamps, conversions and
//! copies, and the activations with parameters (`gelu`, `elu`, `leaky_relu`, `hardtanh`).

use std::collections::HashMap;
use std::sync::OnceLock;

use rustc_hash::FxBuildHasher;

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::{BinaryOp, CompareOp, Op, Scalar, UnaryOp};

use super::{Call, Mapping, Operand, Unsupported};

/// Maps an elementwise target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    if let Some(u) = unary(&c.aten_name) {
        if !matches!(u, UnaryOp::Gelu | UnaryOp::GeluTanh) {
            return c.op1(Op::Unary(u));
        }
    }
    if let Some(cmp) = CompareOp::from_name(&c.aten_name) {
        return c.op(Op::Compare(cmp), smallvec![a.tensor(0, "self")?, a.tensor(1, "other")?]);
    }
    match c.name {
        "gelu" => match a.string(1, "approximate").unwrap_or("none") {
            "none" => c.op1(Op::Unary(UnaryOp::Gelu)),
            "tanh" => c.op1(Op::Unary(UnaryOp::GeluTanh)),
            other => Err(Unsupported::value("approximate", format!("`{other}`"), "`none` and `tanh`")),
        },
        "add" | "sub" => {
            let b = if c.name == "add" { BinaryOp::Add } else { BinaryOp::Sub };
            let other = a.tensor(1, "other")?;
            // An `alpha` that is not a number is ignored, as it always was (the ATen schema
            // makes it a number).
            let other = match a.scalar(2, "alpha").ok() {
                None => other,
                Some(alpha) if alpha.as_f64() == 1.0 => other,
                Some(alpha) => Operand::Scaled(Box::new(other), alpha),
            };
            c.op(Op::Binary(b), smallvec![c.x()?, other])
        }
        "rsub" => {
            // rsub(self, other, alpha) = other - alpha * self
            let s = match a.scalar(2, "alpha").ok() {
                Some(alpha) if alpha.as_f64() != 1.0 => Operand::Scaled(Box::new(c.x()?), alpha),
                _ => c.x()?,
            };
            c.op(Op::Binary(BinaryOp::Sub), smallvec![a.tensor(1, "other")?, s])
        }
        "mul" => c.bin(BinaryOp::Mul),
        "div" => match a.string(2, "rounding_mode") {
            None => c.bin(BinaryOp::Div),
            Some("trunc") => c.bin(BinaryOp::DivTrunc),
            Some("floor") => c.bin(BinaryOp::DivFloor),
            Some(other) => Err(Unsupported::value("rounding_mode", format!("`{other}`"), "None, `trunc` and `floor`")),
        },
        "remainder" => c.bin(BinaryOp::Remainder),
        "fmod" => c.bin(BinaryOp::Fmod),
        "maximum" => c.bin(BinaryOp::Maximum),
        "minimum" => c.bin(BinaryOp::Minimum),
        "atan2" => c.bin(BinaryOp::Atan2),
        "nextafter" => c.bin(BinaryOp::Nextafter),
        "hypot" => c.bin(BinaryOp::Hypot),
        "zeta" | "special_zeta" => c.bin(BinaryOp::Zeta),
        "polygamma" => c.op(Op::Binary(BinaryOp::Polygamma), smallvec![a.tensor(0, "n")?, a.tensor(1, "self")?]),
        // prims' names of unary ops that ATen spells otherwise.
        "erf_inv" => c.op1(Op::Unary(UnaryOp::Erfinv)),
        "bessel_i1e" => c.op1(Op::Unary(UnaryOp::I1e)),
        "bessel_i1" => c.op1(Op::Unary(UnaryOp::I1)),
        "fmax" => c.bin(BinaryOp::Fmax),
        "fmin" => c.bin(BinaryOp::Fmin),
        "copysign" if c.overload == "Tensor" => c.bin(BinaryOp::Copysign),
        // `max(x, other)` / `min(x, other)` are `maximum` / `minimum` (the other overloads
        // are reductions).
        "max" | "min" if c.overload == "other" => c.bin(if c.name == "max" { BinaryOp::Maximum } else { BinaryOp::Minimum }),
        "logical_and" => c.bin(BinaryOp::LogicalAnd),
        "logical_or" => c.bin(BinaryOp::LogicalOr),
        "logical_xor" => c.bin(BinaryOp::LogicalXor),
        "bitwise_and" => c.bin(BinaryOp::BitwiseAnd),
        "bitwise_or" => c.bin(BinaryOp::BitwiseOr),
        "bitwise_xor" => c.bin(BinaryOp::BitwiseXor),
        "pow" => {
            let base = a.tensor(0, "self")?;
            c.op(Op::Binary(BinaryOp::Pow), smallvec![base, a.tensor(1, "exponent")?])
        }
        "where" => c.op(Op::Where, smallvec![a.tensor(0, "condition")?, a.tensor(1, "self")?, a.tensor(2, "other")?]),
        "clamp" if c.overload == "Tensor" => {
            let (has_min, has_max) = (a.has(1, "min"), a.has(2, "max"));
            let mut ops = smallvec![c.x()?];
            if has_min {
                ops.push(a.tensor(1, "min")?);
            }
            if has_max {
                ops.push(a.tensor(2, "max")?);
            }
            c.op(Op::ClampTensor { has_min, has_max }, ops)
        }
        "clamp" => c.op1(Op::Clamp { min: a.opt_scalar(1, "min")?, max: a.opt_scalar(2, "max")? }),
        "clamp_min" => c.op1(Op::Clamp { min: Some(a.scalar(1, "min")?), max: None }),
        "clamp_max" => c.op1(Op::Clamp { min: None, max: Some(a.scalar(1, "max")?) }),
        "hardtanh" => {
            // hardtanh keeps the input dtype: on integers its (float) bounds truncate.
            let int = c.results.first().is_some_and(|t| !t.dtype.is_float());
            let bound = |v: Scalar| if int { Scalar::Int(v.as_f64() as i64) } else { v };
            c.op1(Op::Clamp {
                min: Some(bound(a.scalar(1, "min_val").unwrap_or(Scalar::float(-1.0)))),
                max: Some(bound(a.scalar(2, "max_val").unwrap_or(Scalar::float(1.0)))),
            })
        }
        "_to_copy" | "convert_element_type" => {
            let dtype = if c.name == "_to_copy" { a.kwarg_dtype("dtype")? } else { a.dtype(1, "dtype")? };
            // Without a dtype, a copy to the result's own dtype.
            let dtype = match dtype {
                Some(d) => d,
                None => c.result()?.dtype,
            };
            c.op1(Op::Convert { dtype })
        }
        "clone" | "alias" | "lift_fresh_copy" | "contiguous" | "detach" => c.op1(Op::Copy),
        "copy" => c.op(Op::CopyInto, smallvec![c.x()?, a.tensor(1, "src")?]),
        "elu" => c.op1(Op::Elu {
            alpha: a.scalar(1, "alpha").unwrap_or(Scalar::Int(1)),
            scale: a.scalar(2, "scale").unwrap_or(Scalar::Int(1)),
            input_scale: a.scalar(3, "input_scale").unwrap_or(Scalar::Int(1)),
        }),
        "leaky_relu" => c.op1(Op::LeakyRelu { slope: a.scalar(1, "negative_slope").unwrap_or(Scalar::float(0.01)) }),
        "complex" => c.op(Op::Binary(BinaryOp::Complex), smallvec![a.tensor(0, "real")?, a.tensor(1, "imag")?]),
        // `_conj` is PyTorch's lazy conjugate view; a functional graph may hold it as a value.
        "_conj" | "conj" | "_conj_physical" | "conj_physical" => c.op1(Op::Unary(UnaryOp::Conj)),
        _ => Err(Unsupported::NoLowering),
    }
}

/// `UnaryOp::from_name` through a map built once: the linear search over every unary op's name
/// was a tenth of import time (most nodes of a trace are tried as unary ops first).
fn unary(name: &str) -> Option<UnaryOp> {
    static BY_NAME: OnceLock<HashMap<&'static str, UnaryOp, FxBuildHasher>> = OnceLock::new();
    BY_NAME.get_or_init(|| UnaryOp::ALL.iter().map(|u| (u.name(), *u)).collect()).get(name).copied()
}

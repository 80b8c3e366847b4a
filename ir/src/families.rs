//! The small enums that distinguish ops of one family (elementwise unary, binary, comparison,
//! reduction), each with its IR name and a table of all members for the parser.

use serde::{Deserialize, Serialize};

macro_rules! family {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name { $($(#[$vdoc])* $variant,)* }

        impl $name {
            /// Every member, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The IR name (`aten.<op>`).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The member with IR name `name`.
            pub fn from_name(name: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|m| m.name() == name)
            }
        }
    };
}

family!(
    /// Elementwise unary ops. Result dtype: float ops on integer input promote to the default
    /// float (f32), as PyTorch does; the rest keep the input dtype (the `is*` tests give bool).
    UnaryOp {
        Abs => "aten.abs",
        Neg => "aten.neg",
        Exp => "aten.exp",
        Expm1 => "aten.expm1",
        Log => "aten.log",
        Log1p => "aten.log1p",
        Log2 => "aten.log2",
        Log10 => "aten.log10",
        Sqrt => "aten.sqrt",
        Rsqrt => "aten.rsqrt",
        Reciprocal => "aten.reciprocal",
        Sin => "aten.sin",
        Cos => "aten.cos",
        Tan => "aten.tan",
        Tanh => "aten.tanh",
        Asin => "aten.asin",
        Acos => "aten.acos",
        Atan => "aten.atan",
        Sinh => "aten.sinh",
        Cosh => "aten.cosh",
        Asinh => "aten.asinh",
        Acosh => "aten.acosh",
        Atanh => "aten.atanh",
        Sigmoid => "aten.sigmoid",
        Erf => "aten.erf",
        Relu => "aten.relu",
        Silu => "aten.silu",
        /// Exact GELU (`approximate='none'`).
        Gelu => "aten.gelu",
        /// GELU with `approximate='tanh'`.
        GeluTanh => "aten.gelu_tanh",
        Floor => "aten.floor",
        Ceil => "aten.ceil",
        /// Round half to even, as `torch.round`.
        Round => "aten.round",
        Trunc => "aten.trunc",
        Sign => "aten.sign",
        LogicalNot => "aten.logical_not",
        BitwiseNot => "aten.bitwise_not",
        IsNan => "aten.isnan",
        IsInf => "aten.isinf",
        /// `erfc(x) = 1 - erf(x)`, accurate where `erf` nears 1.
        Erfc => "aten.erfc",
        /// Inverse error function.
        Erfinv => "aten.erfinv",
        /// `2^x`.
        Exp2 => "aten.exp2",
        /// `log|Γ(x)|`.
        Lgamma => "aten.lgamma",
        /// `Γ'(x)/Γ(x)`.
        Digamma => "aten.digamma",
        /// Exponentially scaled modified Bessel function of the first kind, order 1.
        I1e => "aten.special_i1e",
        /// Modified Bessel function of the first kind, order 1.
        I1 => "aten.special_i1",
        /// Whether the sign bit is set (`-0.0` and negative NaNs included).
        Signbit => "aten.signbit",
        /// The real part of a complex value (a real value is its own).
        Real => "aten.real",
        /// The imaginary part of a complex value (zero for a real value).
        Imag => "aten.imag",
        /// The complex conjugate, materialized (PyTorch's `conj` is a lazy view bit).
        Conj => "aten.conj_physical",
    }
);

impl UnaryOp {
    /// Ops whose result is always bool.
    pub fn returns_bool(self) -> bool {
        matches!(self, UnaryOp::LogicalNot | UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::Signbit)
    }

    /// Ops whose result is the real type of a complex operand (`|z|`, the parts).
    pub fn returns_real_part(self) -> bool {
        matches!(self, UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag)
    }

    /// Ops that compute in floating point (integer inputs give the default float dtype).
    pub fn is_float_math(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Exp | Expm1 | Log | Log1p | Log2 | Log10 | Sqrt | Rsqrt | Reciprocal | Sin | Cos | Tan | Tanh | Asin | Acos | Atan
                | Sinh | Cosh | Asinh | Acosh | Atanh | Sigmoid | Erf | Silu | Gelu | GeluTanh | Erfc | Erfinv | Exp2
                | Lgamma | Digamma | I1e | I1
        )
    }
}

family!(
    /// Elementwise binary ops with broadcasting and PyTorch type promotion.
    BinaryOp {
        Add => "aten.add",
        Sub => "aten.sub",
        Mul => "aten.mul",
        /// True division: integer operands give the default float dtype.
        Div => "aten.div",
        /// `div(rounding_mode='trunc')`.
        DivTrunc => "aten.div_trunc",
        /// `div(rounding_mode='floor')`.
        DivFloor => "aten.div_floor",
        Remainder => "aten.remainder",
        Fmod => "aten.fmod",
        Pow => "aten.pow",
        Maximum => "aten.maximum",
        Minimum => "aten.minimum",
        Atan2 => "aten.atan2",
        /// Maximum that ignores a NaN operand (NaN only where both are).
        Fmax => "aten.fmax",
        /// Minimum that ignores a NaN operand.
        Fmin => "aten.fmin",
        /// `a`'s magnitude with `b`'s sign bit; integer operands give the default float.
        Copysign => "aten.copysign",
        /// The next float after `a` toward `b`.
        Nextafter => "aten.nextafter",
        /// `sqrt(a² + b²)` without overflow or underflow in the squares.
        Hypot => "aten.hypot",
        /// Hurwitz zeta `ζ(a, b)`.
        Zeta => "aten.special_zeta",
        /// `polygamma(n, x)`: the `n`-th derivative of digamma (`n` a non-negative integer).
        Polygamma => "aten.polygamma",
        /// `complex(real, imag)`: f32 parts give c64, f64 parts c128.
        Complex => "aten.complex",
        LogicalAnd => "aten.logical_and",
        LogicalOr => "aten.logical_or",
        LogicalXor => "aten.logical_xor",
        BitwiseAnd => "aten.bitwise_and",
        BitwiseOr => "aten.bitwise_or",
        BitwiseXor => "aten.bitwise_xor",
    }
);

impl BinaryOp {
    /// Ops whose result is always bool.
    pub fn returns_bool(self) -> bool {
        matches!(self, BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor)
    }
}

family!(
    /// Elementwise comparisons; the result is bool.
    CompareOp {
        Eq => "aten.eq",
        Ne => "aten.ne",
        Lt => "aten.lt",
        Le => "aten.le",
        Gt => "aten.gt",
        Ge => "aten.ge",
    }
);

family!(
    /// Reductions over a list of dims.
    ReduceOp {
        /// Bool and integer inputs sum to i64, as in PyTorch.
        Sum => "aten.sum",
        Mean => "aten.mean",
        Prod => "aten.prod",
        Amax => "aten.amax",
        Amin => "aten.amin",
        Any => "aten.any",
        All => "aten.all",
    }
);

family!(
    /// The transforms of `stablehlo.fft`, over the innermost `length.len()` (1 to 3) dims.
    /// `ifft` and `irfft` divide by the signal size, as XLA does.
    FftKind {
        /// Complex to complex, forward, unnormalized.
        Fft => "fft",
        /// Complex to complex, inverse, divided by the signal size.
        Ifft => "ifft",
        /// Real to complex, forward: the last dim keeps `n / 2 + 1` (one-sided).
        Rfft => "rfft",
        /// One-sided complex to real, inverse: the last dim becomes `length`'s last.
        Irfft => "irfft",
    }
);

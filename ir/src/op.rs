//! The operations of the IR: a Rust enum with derived `Eq`/`Hash`, never compared as strings.
//!
//! Each variant names the ATen op (or op family) it models; `Op::Unknown` keeps any other ATen
//! target so that import never fails on an op fxhlo cannot lower yet (lowering reports all of
//! them at once).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a graph input is fed, following `torch.export`'s input kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// An argument the caller passes on every call.
    UserInput,
    /// A module parameter (`nn.Parameter`), uploaded once and kept resident.
    Parameter,
    /// A module buffer (e.g. batch-norm running stats).
    Buffer,
    /// A lifted tensor constant.
    Constant,
}

impl InputKind {
    /// The name used in the IR text and the trace (`user_input`, `parameter`, ...).
    pub fn name(self) -> &'static str {
        match self {
            InputKind::UserInput => "user_input",
            InputKind::Parameter => "parameter",
            InputKind::Buffer => "buffer",
            InputKind::Constant => "constant",
        }
    }
}

/// A scalar literal. Floats are kept as their bit pattern so that `Op` can derive `Eq` and
/// `Hash` (two NaNs with the same bits are the same constant, as a hash key must have it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scalar {
    /// A floating-point value, stored as `f64::to_bits`.
    Float(u64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    /// A float scalar.
    pub fn float(v: f64) -> Self {
        Scalar::Float(v.to_bits())
    }

    /// The value as f64 (bools are 0 or 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(bits) => f64::from_bits(bits),
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as i64 as f64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            // `{:?}` keeps a decimal point (1.0, not 1) and prints inf/NaN readably.
            Scalar::Float(bits) => write!(f, "{:?}", f64::from_bits(bits)),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// One IR operation. Result types live on the node; attributes that change semantics live here.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// A graph input (FX placeholder). `weight` names the tensor in the bundle's weights file
    /// for parameters, buffers and constants.
    Input { kind: InputKind, weight: Option<String> },
    /// A tensor filled with one value (its type is the node's result type).
    Full { value: Scalar },
    /// `aten.add.Tensor` with alpha = 1: elementwise, broadcasting.
    Add,
    /// `aten.mul.Tensor`: elementwise, broadcasting.
    Mul,
    /// `aten.relu.default`.
    Relu,
    /// `aten.mm.default`: `[m,k] x [k,n] -> [m,n]`.
    Mm,
    /// `aten.addmm.default` with beta = alpha = 1: `bias + a @ b`, bias broadcast to `[m,n]`.
    Addmm,
    /// `aten.permute.default`: result dim `i` is operand dim `dims[i]`.
    Permute { dims: Vec<i64> },
    /// `aten.expand.default`: broadcast to `sizes` (numpy rules, `-1` keeps a dim).
    Expand { sizes: Vec<i64> },
    /// Any ATen op fxhlo does not model yet; its result types come from the trace's meta.
    Unknown { target: String },
}

impl Op {
    /// The op's name in the IR text (`aten.add`, `input`, `full`, or the unknown target).
    pub fn name(&self) -> &str {
        match self {
            Op::Input { .. } => "input",
            Op::Full { .. } => "full",
            Op::Add => "aten.add",
            Op::Mul => "aten.mul",
            Op::Relu => "aten.relu",
            Op::Mm => "aten.mm",
            Op::Addmm => "aten.addmm",
            Op::Permute { .. } => "aten.permute",
            Op::Expand { .. } => "aten.expand",
            Op::Unknown { target } => target,
        }
    }

    /// How many operands the op takes, or `None` where any number is valid.
    pub fn arity(&self) -> Option<usize> {
        match self {
            Op::Input { .. } | Op::Full { .. } => Some(0),
            Op::Relu | Op::Permute { .. } | Op::Expand { .. } => Some(1),
            Op::Add | Op::Mul | Op::Mm => Some(2),
            Op::Addmm => Some(3),
            Op::Unknown { .. } => None,
        }
    }

    /// Attributes as `key = value` pairs, in a fixed order, for the printer.
    pub fn attributes(&self) -> Vec<(&'static str, String)> {
        let list = |v: &[i64]| {
            let items: Vec<String> = v.iter().map(|d| d.to_string()).collect();
            format!("[{}]", items.join(", "))
        };
        match self {
            Op::Input { kind, weight } => {
                let mut a = vec![("kind", kind.name().to_string())];
                if let Some(w) = weight {
                    a.push(("weight", format!("{w:?}")));
                }
                a
            }
            Op::Full { value } => vec![("value", value.to_string())],
            Op::Permute { dims } => vec![("dims", list(dims))],
            Op::Expand { sizes } => vec![("sizes", list(sizes))],
            Op::Add | Op::Mul | Op::Relu | Op::Mm | Op::Addmm | Op::Unknown { .. } => vec![],
        }
    }
}

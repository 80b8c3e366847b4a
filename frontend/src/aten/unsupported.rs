//! Why a call imports as `Op::Unknown`: a typed reason naming the argument and what is wrong.
//!
//! The importer keeps the reason's text on the node (`Op::Unknown::reason`), so that the
//! lowering report, which runs long after the trace is gone, can say why each op is
//! unsupported. Every sentence names the argument by its ATen schema name and says what fxhlo
//! would take instead.

use std::fmt;

use fxhlo_ir::DType;

/// Why one call of a target could not be mapped to an IR op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// fxhlo maps no op for this target (or for this overload of it). The IR keeps no reason
    /// for it: the lowering report names the target itself.
    NoLowering,
    /// A required argument is absent, neither at its position nor by keyword.
    Missing { arg: &'static str },
    /// An argument of another kind than the op takes there: a tensor computed in the graph
    /// where fxhlo needs a constant, or a value of the wrong type.
    Kind { arg: &'static str, expected: &'static str, found: &'static str },
    /// A dtype argument naming a dtype fxhlo does not have.
    DType { arg: &'static str, found: String },
    /// An argument whose value fxhlo does not lower (a mode, a flag, a dim out of range).
    Value { arg: &'static str, found: String, supported: String },
    /// The node's result meta does not fit the op (too few results, too low a rank).
    Results { problem: String },
}

impl Unsupported {
    /// An argument with a value fxhlo does not lower; `supported` says what it does lower.
    pub fn value(arg: &'static str, found: impl fmt::Display, supported: impl Into<String>) -> Unsupported {
        Unsupported::Value { arg, found: found.to_string(), supported: supported.into() }
    }

    /// A result meta that does not fit the op.
    pub fn results(problem: impl Into<String>) -> Unsupported {
        Unsupported::Results { problem: problem.into() }
    }

    /// The reason as the IR keeps it on `Op::Unknown`: `None` for a target fxhlo has no
    /// lowering for (the report names the target), else the sentence.
    pub fn into_reason(self) -> Option<String> {
        match self {
            Unsupported::NoLowering => None,
            other => Some(other.to_string()),
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::NoLowering => write!(f, "fxhlo has no lowering for this target"),
            Unsupported::Missing { arg } => write!(
                f,
                "argument `{arg}` is missing (given neither by position nor by keyword); export the model again with this fxhlo"
            ),
            // A tensor where a constant is needed: the value is computed in the graph, and the
            // IR needs it when the graph is compiled (a shape, a dim, a mode).
            Unsupported::Kind { arg, expected, found: "tensor" } => write!(
                f,
                "argument `{arg}` is a tensor computed in the graph, but fxhlo needs {expected} known when the graph is captured; make it a Python constant in the model"
            ),
            Unsupported::Kind { arg, expected, found } => write!(
                f,
                "argument `{arg}` is of kind `{found}` where fxhlo expects {expected}; export the model again with this fxhlo"
            ),
            Unsupported::DType { arg, found } => {
                let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
                write!(f, "argument `{arg}` asks for dtype `{found}`, which fxhlo does not support (it has {}); cast to one of those in the model", names.join(", "))
            }
            Unsupported::Value { arg, found, supported } => {
                write!(f, "argument `{arg}` is {found}; fxhlo lowers only {supported}")
            }
            Unsupported::Results { problem } => write!(f, "the trace's result meta does not fit the op: {problem}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason names its argument and says what to do; only `NoLowering` leaves the IR
    /// without a reason (the report names the target instead).
    #[test]
    fn every_reason_names_its_argument_and_a_remedy() {
        let cases = [
            (Unsupported::Missing { arg: "other" }, "argument `other` is missing"),
            (
                Unsupported::Kind { arg: "dim", expected: "an int", found: "tensor" },
                "argument `dim` is a tensor computed in the graph, but fxhlo needs an int known when the graph is captured; make it a Python constant",
            ),
            (Unsupported::Kind { arg: "keepdim", expected: "a bool", found: "string" }, "argument `keepdim` is of kind `string` where fxhlo expects a bool"),
            (Unsupported::DType { arg: "dtype", found: "q8".into() }, "argument `dtype` asks for dtype `q8`, which fxhlo does not support (it has f64, f32,"),
            (Unsupported::value("approximate", "`erf`", "`none` and `tanh`"), "argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`"),
            (Unsupported::results("1 result, the random bits are the second"), "result meta does not fit the op: 1 result"),
        ];
        for (reason, want) in cases {
            let text = reason.to_string();
            assert!(text.contains(want), "{text}");
            assert_eq!(reason.into_reason(), Some(text));
        }
        assert_eq!(Unsupported::NoLowering.into_reason(), None);
    }
}

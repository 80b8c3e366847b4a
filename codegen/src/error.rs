//! Errors of codegen: unsupported input (reported all at once, each op with its reason) and
//! internal failures.

use std::fmt;

/// One op of a graph that fxhlo cannot lower, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedOp {
    /// The ATen target with overload (`aten.foo.default`).
    pub target: String,
    /// The FX node name.
    pub node: String,
    /// `file:line` in the user's model, where the trace has it.
    pub source: Option<String>,
    /// Why, as a sentence: `fxhlo has no lowering for <target>`, or what is wrong with the
    /// call's arguments (the importer's reason) or with how its results are used.
    pub reason: String,
}

/// Prints `<target> at node `<node>` (<file:line>): <reason>`. The Python fallback reads the
/// ops from the error's fields, not from this text, but users and tests read the text: keep
/// the target and node first.
impl fmt::Display for UnsupportedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at node `{}`", self.target, self.node)?;
        if let Some(s) = &self.source {
            write!(f, " ({s})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// A codegen error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The graph holds ops fxhlo cannot lower; every one of them is listed.
    #[error("graph `{graph}` has {} op(s) fxhlo cannot lower:\n{}", .ops.len(), list(.ops))]
    Unsupported { graph: String, ops: Vec<UnsupportedOp> },
    /// The graph is not valid IR (a bug in an earlier stage).
    #[error("codegen: invalid graph: {0}")]
    Ir(#[from] fxhlo_ir::Error),
    /// A constant whose bytes the graph does not hold: IR text names a constant by its
    /// digest only, so a graph parsed from a dump cannot be compiled with its weights.
    #[error("codegen: constant `{node}` has no data (a graph read from IR text names constants by digest only); compile the bundle or model itself, with --freeze, instead")]
    MissingData { node: String },
    /// Building or verifying MLIR failed: a bug in a lowering. Names the node.
    #[error("codegen: node `{node}`: {message}")]
    Internal { node: String, message: String },
}

fn list(ops: &[UnsupportedOp]) -> String {
    ops.iter().map(|o| format!("  - {o}")).collect::<Vec<_>>().join("\n")
}

/// Result alias of codegen.
pub type Result<T, E = Error> = std::result::Result<T, E>;

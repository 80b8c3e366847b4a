//! Errors of the IR crate: graph construction and verification.

/// An IR error. Verifier errors mean a bug in fxhlo or in an importer (the graph breaks an
/// invariant); each names the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("node `{node}` uses a value that does not exist")]
    DanglingOperand { node: String },
    #[error("a graph output refers to a value that does not exist")]
    DanglingOutput,
    #[error("the graph has a cycle through node `{node}`")]
    Cycle { node: String },
    #[error("IR text, line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("verifier: node `{node}`: {message}")]
    Verify { node: String, message: String },
}

/// Result alias of the IR crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

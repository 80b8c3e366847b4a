//! Errors of the frontend: everything that can be wrong with a trace bundle.

use std::path::PathBuf;

/// A frontend error. Each names the file and, where there is one, the node or input, and says
/// what is wrong; none is a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a trace bundle: found neither graph.json nor graph.bin (export one with fxhlo.export)")]
    NotABundle { path: PathBuf },
    #[error("{path}:{line}:{column}: malformed trace JSON: {message}")]
    Json { path: PathBuf, line: usize, column: usize, message: String },
    #[error("{path}: malformed bincode trace: {message}")]
    Bincode { path: PathBuf, message: String },
    #[error("{path}: `{node}` has symbolic size `{size}` at dim {dim}: fxhlo specializes shapes; capture with dynamic=False")]
    SymbolicSize { path: PathBuf, node: String, dim: usize, size: String },
    #[error("{path}: not an fxhlo trace (format is `{found}`, expected `fxhlo-trace`)")]
    Format { path: PathBuf, found: String },
    #[error("{path}: trace schema version {found} is not supported (this fxhlo reads version {supported}); re-export the model with a matching fxhlo")]
    Version { path: PathBuf, found: u32, supported: u32 },
    #[error("{path}: name `{name}` is defined twice")]
    DuplicateName { path: PathBuf, name: String },
    #[error("{path}: node `{node}` refers to `{name}`, which is not an input or an earlier node")]
    UnknownValue { path: PathBuf, node: String, name: String },
    #[error("{path}: `{node}`: {source}")]
    DType { path: PathBuf, node: String, source: fxhlo_ir::UnknownDType },
    #[error("{path}: node `{node}` ({target}): {message}")]
    BadArgument { path: PathBuf, node: String, target: String, message: String },
    #[error("{path}: node `{node}` ({target}): trace meta says {meta} but shape inference gives {inferred}")]
    MetaMismatch { path: PathBuf, node: String, target: String, meta: String, inferred: String },
    #[error("{path}: malformed safetensors file: {message}")]
    Weights { path: PathBuf, message: String },
    #[error("{path}: input `{input}` needs tensor `{key}`, which the file does not hold")]
    MissingWeight { path: PathBuf, input: String, key: String },
    #[error("{path}: tensor `{key}` for input `{input}` is {found}, the graph expects {expected}")]
    WeightMismatch { path: PathBuf, input: String, key: String, expected: String, found: String },
    #[error("{path}: the imported graph is invalid: {source}")]
    Ir { path: PathBuf, source: fxhlo_ir::Error },
}

/// Result alias of the frontend.
pub type Result<T, E = Error> = std::result::Result<T, E>;

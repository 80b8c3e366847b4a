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
    /// The path given is neither a folder nor a regular file (a FIFO, a socket, a device).
    #[error("{path} is {kind}, expected a bundle folder or a trace file (graph.json or graph.bin)")]
    NotABundleOrTrace { path: PathBuf, kind: &'static str },
    /// `graph.json` or `graph.bin` inside a bundle is not a regular file.
    #[error("{path} is {kind}, expected a trace file")]
    NotATraceFile { path: PathBuf, kind: &'static str },
    /// A file given directly that is neither JSON nor a bincode trace.
    #[error("{path}: not a trace file (neither JSON nor a bincode trace with the FXHLOTRC header); expected a bundle folder, a graph.json or a graph.bin")]
    UnknownTraceFile { path: PathBuf },
    /// The bundle folder cannot be read or searched.
    #[error("{path}: permission denied reading the folder")]
    FolderAccess { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}:{column}: malformed trace JSON: {message}")]
    Json { path: PathBuf, line: usize, column: usize, message: String },
    /// `offset` is the byte of the file where decoding stopped; `message` says what was wrong
    /// and what was being read there (the header, a field of input or node N, ...).
    #[error("{path}: malformed bincode trace at byte {offset}: {message}")]
    Bincode { path: PathBuf, offset: usize, message: String },
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
    #[error("{path}: `{node}` has type {ty}, whose size in bytes overflows a 64-bit integer: no device can hold it (check the sizes the model computed)")]
    TooLarge { path: PathBuf, node: String, ty: String },
    #[error("{path}: malformed safetensors file: {message}")]
    Weights { path: PathBuf, message: String },
    #[error("{path}: input `{input}` needs tensor `{key}`, which the file does not hold")]
    MissingWeight { path: PathBuf, input: String, key: String },
    /// The bundle has no weights file, yet an input names a tensor in it.
    #[error("{path}: no such file, but {kind} `{input}` needs tensor `{key}` from it (export the bundle again, or copy the weights file beside the graph)")]
    MissingWeightsFile { path: PathBuf, input: String, kind: &'static str, key: String },
    #[error("{path}: tensor `{key}` for input `{input}` is {found}, the graph expects {expected}")]
    WeightMismatch { path: PathBuf, input: String, key: String, expected: String, found: String },
    #[error("{path}: the imported graph is invalid: {source}")]
    Ir { path: PathBuf, source: fxhlo_ir::Error },
}

/// Result alias of the frontend.
pub type Result<T, E = Error> = std::result::Result<T, E>;

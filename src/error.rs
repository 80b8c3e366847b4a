//! The facade's error: one variant per stage, plus inputs and reference checks.

/// An error from any stage of fxhlo; the message names the stage's file, node or setting.
/// Stage errors are boxed: they carry paths and messages, and `Result`s stay small.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Frontend(Box<fxhlo_frontend::Error>),
    #[error(transparent)]
    Ir(#[from] fxhlo_ir::Error),
    #[error(transparent)]
    Passes(Box<fxhlo_passes::Error>),
    #[error(transparent)]
    Codegen(Box<fxhlo_codegen::Error>),
    #[error(transparent)]
    Runtime(Box<fxhlo_runtime::Error>),
    /// The caller's inputs do not match the graph (count, dtype or shape), or a bundle lacks
    /// the tensors needed to run it.
    #[error("inputs: {0}")]
    Input(String),
    /// Options that do not parse (a field fxhlo does not know, a value of the wrong kind).
    #[error("options: {0}")]
    Options(String),
    /// A file fxhlo writes (a stage dump) could not be written.
    #[error("{}: {source}", path.display())]
    Io { path: std::path::PathBuf, source: std::io::Error },
    /// With `check_indices`, a run read an index outside its tensor (XLA would have clamped it).
    #[error("graph `{graph}`: node `{node}` used an index out of range (eager PyTorch raises IndexError; without check_indices the device clamps it to the nearest valid index)")]
    IndexOutOfRange { graph: String, node: String },
    /// `FXHLO_ERROR_ON_COMPILE` is set and the cache has no executable for a graph.
    #[error("graph `{graph}`: FXHLO_ERROR_ON_COMPILE is set and the compile cache has no executable for it: {detail}")]
    CompileRefused { graph: String, detail: String },
    /// The ahead-of-time worker process could not be started or misbehaved.
    #[error("graph `{graph}`: {message}")]
    AotWorker { graph: String, message: String },
    /// The target's compiler rejected the module (ahead of time, in the worker process).
    #[error("graph `{graph}`: the {target} compiler rejected the module: {message}")]
    AotCompile { graph: String, target: String, message: String },
    /// The target's compiler crashed (in the worker process: the caller lives on).
    #[error("graph `{graph}`: the {target} compiler crashed ({status}) compiling it; the module is kept in {} \
             for a bug report (reproduce: `fxhlo compile <that file> --target {target}`). Its last words:\n{stderr}", module.display())]
    TargetCompilerCrashed { graph: String, target: String, status: String, module: std::path::PathBuf, stderr: String },
    /// A trace handed over as values of another language (the Python bridge's objects) that
    /// does not fit the trace schema: a field missing or of the wrong kind, a value no trace
    /// holds. `origin` names the trace (`<fxhlo_0_0>`).
    #[error("{}: the trace does not fit fxhlo's schema: {message}", origin.display())]
    Schema { origin: std::path::PathBuf, message: String },
    /// A run's outputs differ from the stored PyTorch reference beyond tolerance.
    #[error("check failed: {0}")]
    Mismatch(String),
    /// Lowering or the device's compiler failed: `source` says why; `repro` where the graph
    /// (and the module) that failed were written and the `fxhlo` command that fails the same
    /// way from them (see [`crate::repro`]).
    #[error("{source}\n{repro}")]
    Reproducible { source: Box<Error>, repro: Box<crate::Repro> },
}

impl Error {
    /// The error itself, seen through [`Error::Reproducible`].
    pub fn root(&self) -> &Error {
        match self {
            Error::Reproducible { source, .. } => source.root(),
            other => other,
        }
    }

    /// The reproduction of a failed compile, when one was written.
    pub fn repro(&self) -> Option<&crate::Repro> {
        match self {
            Error::Reproducible { repro, .. } => Some(repro),
            _ => None,
        }
    }
}

macro_rules! boxed_from {
    ($($variant:ident: $ty:ty),*) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::$variant(Box::new(e))
            }
        }
    )*};
}

boxed_from!(Frontend: fxhlo_frontend::Error, Passes: fxhlo_passes::Error, Codegen: fxhlo_codegen::Error, Runtime: fxhlo_runtime::Error);

/// Result alias of the facade.
pub type Result<T, E = Error> = std::result::Result<T, E>;

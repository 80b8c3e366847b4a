//! The facade's error: one variant per stage, plus inputs and reference checks.

/// An error from any stage of fxhlo; the message names the stage's file, node or setting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Frontend(#[from] fxhlo_frontend::Error),
    #[error(transparent)]
    Ir(#[from] fxhlo_ir::Error),
    #[error(transparent)]
    Passes(#[from] fxhlo_passes::Error),
    #[error(transparent)]
    Codegen(#[from] fxhlo_codegen::Error),
    #[error(transparent)]
    Runtime(#[from] fxhlo_runtime::Error),
    /// The caller's inputs do not match the graph (count, dtype or shape), or a bundle lacks
    /// the tensors needed to run it.
    #[error("inputs: {0}")]
    Input(String),
    /// A run's outputs differ from the stored PyTorch reference beyond tolerance.
    #[error("check failed: {0}")]
    Mismatch(String),
}

/// Result alias of the facade.
pub type Result<T, E = Error> = std::result::Result<T, E>;

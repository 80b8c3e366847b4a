//! The `Pass` trait and the registry of every pass, by name.

use fxhlo_ir::Graph;

use crate::{Error, Result};

/// A graph-to-graph transformation. Implementations are unit structs, one per file, and never
/// print or write files (the pass manager does that).
pub trait Pass: Sync {
    /// The pass's name: the same in code, on the command line and in test file names.
    fn name(&self) -> &'static str;
    /// Rewrites `graph` in place; returns whether anything changed.
    fn run(&self, graph: &mut Graph) -> Result<bool>;
}

/// Every registered pass.
pub static PASSES: &[&dyn Pass] = &[&crate::CheckIndices];

/// The default pipeline, in order. Empty for now; each entry will carry a comment saying why
/// it sits where it does.
pub fn default_pipeline() -> Vec<&'static dyn Pass> {
    Vec::new()
}

/// The pass named `name`, or an error listing the valid names.
pub fn lookup(name: &str) -> Result<&'static dyn Pass> {
    PASSES.iter().copied().find(|p| p.name() == name).ok_or_else(|| Error::UnknownPass {
        name: name.to_string(),
        valid: if PASSES.is_empty() {
            "(none registered yet)".to_string()
        } else {
            PASSES.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        },
    })
}

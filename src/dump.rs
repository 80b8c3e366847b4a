//! Stage dumps: each stage's output written to a folder for people to read.
//!
//! Layout (ARCHITECTURE.md, "Dumps"): `<dir>/<graph>-<hash8>/NN-<stage>.<ext>`, numbered in
//! pipeline order: `00-trace.json` (when compiled from a trace), `01-import.gir` (the IR as
//! imported), `02-passes.gir` (after the pass pipeline, only when it changed the graph),
//! `03-stablehlo.mlir`. `hash8` is the first 8 hex digits of the blake3 hash of the imported
//! IR text, so two graphs of one name never share a folder and recompiling the same graph
//! rewrites the same files.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// `name` (a graph's, from the user's model) kept to characters every file system takes in a
/// file name: the others become `_`.
pub(crate) fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// The folder one graph's stages are written to.
#[derive(Debug, Clone)]
pub struct Dump {
    dir: PathBuf,
}

impl Dump {
    /// Creates `<root>/<graph>-<hash8>` for a graph whose imported IR text is `ir_text`.
    pub fn create(root: &Path, graph: &str, ir_text: &str) -> Result<Dump> {
        let hash = blake3::hash(ir_text.as_bytes()).to_hex();
        let dir = root.join(format!("{}-{}", file_safe(graph), &hash.as_str()[..8]));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        Ok(Dump { dir })
    }

    /// The graph's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes a file that is not a stage (`cache-key.json`) under `name`, atomically.
    pub fn write_file(&self, name: &str, contents: &[u8]) -> Result<PathBuf> {
        let path = self.dir.join(name);
        fxhlo_frontend::write_atomic(&path, contents).map_err(|source| Error::Io { path: path.clone(), source })?;
        Ok(path)
    }

    /// Writes stage `index` named `stage` with extension `ext`.
    pub fn write(&self, index: u32, stage: &str, ext: &str, contents: &[u8]) -> Result<PathBuf> {
        let path = self.dir.join(format!("{index:02}-{stage}.{ext}"));
        // Atomically (a temporary file renamed over the old one): a reader of a dump that is
        // being rewritten sees the old file or the new one, never half of one.
        fxhlo_frontend::write_atomic(&path, contents).map_err(|source| Error::Io { path: path.clone(), source })?;
        tracing::debug!(path = %path.display(), "dumped");
        Ok(path)
    }
}

//! Trace bundles: a folder (`<model>.fxt/`) with `graph.json`, `weights.safetensors` and
//! optionally `reference.safetensors` (inputs and outputs computed by PyTorch eager).

use std::path::{Path, PathBuf};

use fxhlo_ir::{Graph, Op};

use crate::schema::Trace;
use crate::weights::TensorFile;
use crate::{encoding, import, Error, Result};

/// The graph in JSON (for people).
pub const GRAPH_JSON: &str = "graph.json";
/// The graph in bincode (for speed); preferred when both are present.
pub const GRAPH_BIN: &str = "graph.bin";
/// Weights (parameters, buffers, constants) keyed by their fully qualified names.
pub const WEIGHTS: &str = "weights.safetensors";
/// PyTorch eager reference: `input.<placeholder>` and `output.<index>` tensors.
pub const REFERENCE: &str = "reference.safetensors";

/// An opened, validated bundle: the imported graph and its mapped tensor files.
pub struct Bundle {
    /// The bundle folder.
    pub dir: PathBuf,
    /// The parsed trace as stored.
    pub trace: Trace,
    /// The imported, verified graph.
    pub graph: Graph,
    /// Weights, if the bundle has a weights file.
    pub weights: Option<TensorFile>,
    /// PyTorch's reference inputs and outputs, if present.
    pub reference: Option<TensorFile>,
}

impl Bundle {
    /// Opens a bundle folder (or the `graph.json` inside one), imports the graph and checks
    /// that every weight the graph needs is present with the right dtype and shape.
    pub fn open(path: &Path) -> Result<Bundle> {
        let dir = if path.is_file() { path.parent().unwrap_or(Path::new(".")).to_path_buf() } else { path.to_path_buf() };
        if !dir.exists() {
            return Err(Error::Io {
                path: dir,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            });
        }
        let (bin, json) = (dir.join(GRAPH_BIN), dir.join(GRAPH_JSON));
        let (graph_path, trace) = if bin.is_file() {
            let trace = read_bin(&bin)?;
            (bin, trace)
        } else if json.is_file() {
            let trace = read_json(&json)?;
            (json, trace)
        } else {
            return Err(Error::NotABundle { path: dir });
        };
        let graph = import::import(&trace, &graph_path)?;
        let open_opt = |name: &str| {
            let p = dir.join(name);
            if p.exists() { TensorFile::open(&p).map(Some) } else { Ok(None) }
        };
        let weights = open_opt(WEIGHTS)?;
        let reference = open_opt(REFERENCE)?;
        check_weights(&graph, weights.as_ref(), &dir.join(WEIGHTS))?;
        Ok(Bundle { dir, trace, graph, weights, reference })
    }
}

/// Reads a JSON trace file; errors carry the line and column.
pub fn read_json(path: &Path) -> Result<Trace> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
    encoding::parse_json(&bytes, path)
}

/// Reads a bincode trace file.
pub fn read_bin(path: &Path) -> Result<Trace> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
    encoding::parse_bin(&bytes, path)
}

fn check_weights(graph: &Graph, weights: Option<&TensorFile>, path: &Path) -> Result<()> {
    for &id in graph.inputs() {
        let node = graph.node(id);
        let Op::Input { weight: Some(key), .. } = &node.op else { continue };
        let missing = || Error::MissingWeight { path: path.into(), input: node.name.to_string(), key: key.clone() };
        let view = weights.ok_or_else(missing)?.get(key).ok_or_else(missing)?;
        let found = view.tensor_type();
        if found != node.results[0] {
            return Err(Error::WeightMismatch {
                path: path.into(),
                input: node.name.to_string(),
                key: key.clone(),
                expected: node.results[0].to_string(),
                found: found.to_string(),
            });
        }
    }
    Ok(())
}

//! Trace bundles: a folder (`<model>.fxt/`) with `graph.json` (and/or `graph.bin`),
//! `weights.safetensors` and optionally `reference.safetensors` (inputs and outputs computed by
//! PyTorch eager).

use std::path::{Path, PathBuf};

use fxhlo_ir::{Graph, Op};

use crate::schema::Trace;
use crate::weights::TensorFile;
use crate::{encoding, import, Error, Result};

/// The graph in JSON (for people).
pub const GRAPH_JSON: &str = "graph.json";
/// The graph in bincode (for speed); read when it is at least as new as `graph.json`.
pub const GRAPH_BIN: &str = "graph.bin";
/// Weights (parameters, buffers, constants) keyed by their fully qualified names.
pub const WEIGHTS: &str = "weights.safetensors";
/// PyTorch eager reference: `input.<placeholder>` and `output.<index>` tensors.
pub const REFERENCE: &str = "reference.safetensors";

/// An opened, validated bundle: the imported graph and its mapped tensor files.
pub struct Bundle {
    /// The bundle folder.
    pub dir: PathBuf,
    /// The trace file the graph was read from (`graph.json`, `graph.bin`, or the file named).
    pub graph_file: PathBuf,
    /// Which encoding was read and why, when the folder holds both `graph.json` and `graph.bin`
    /// (for the user to see: the CLI prints it).
    pub choice: Option<String>,
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
    /// Opens a bundle, imports the graph and checks that every weight the graph needs is
    /// present with the right dtype and shape.
    ///
    /// `path` is either a trace file, which is read whatever else lies beside it (the tensor
    /// files are those of its folder), or a bundle folder, where the newer of `graph.json` and
    /// `graph.bin` is read, `graph.bin` on equal modification times ([`Bundle::choice`] says
    /// which and why). See `docs/trace-format.md`.
    pub fn open(path: &Path) -> Result<Bundle> {
        let (dir, graph_file, encoding, choice) = locate(path)?;
        if let Some(why) = &choice {
            tracing::info!("{why}");
        }
        let trace = match encoding {
            Encoding::Json => read_json(&graph_file)?,
            Encoding::Bin => read_bin(&graph_file)?,
        };
        let graph = import::import(&trace, &graph_file)?;
        let open_opt = |name: &str| {
            let p = dir.join(name);
            if p.exists() { TensorFile::open(&p).map(Some) } else { Ok(None) }
        };
        let weights = open_opt(WEIGHTS)?;
        let reference = open_opt(REFERENCE)?;
        check_weights(&graph, weights.as_ref(), &dir.join(WEIGHTS))?;
        Ok(Bundle { dir, graph_file, choice, trace, graph, weights, reference })
    }
}

/// The trace file [`Bundle::open`] reads for `path` (a trace file, or the chosen one of a
/// bundle folder), without reading it: what a dump of a bundle that fails to import saves.
pub fn trace_file(path: &Path) -> Result<PathBuf> {
    locate(path).map(|(_, file, _, _)| file)
}

/// The two encodings of a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Json,
    Bin,
}

/// The bundle folder, the trace file to read, its encoding and, when a folder holds both
/// encodings, which was chosen and why.
fn locate(path: &Path) -> Result<(PathBuf, PathBuf, Encoding, Option<String>)> {
    let meta = std::fs::metadata(path).map_err(|source| {
        let source = match source.kind() {
            std::io::ErrorKind::NotFound => std::io::Error::new(source.kind(), "no such file or directory"),
            _ => source,
        };
        Error::Io { path: path.into(), source }
    })?;
    if meta.is_file() {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        return Ok((dir, path.to_path_buf(), sniff(path)?, None));
    }
    if !meta.is_dir() {
        return Err(Error::NotABundleOrTrace { path: path.into(), kind: kind_of(&meta.file_type()) });
    }
    let dir = path.to_path_buf();
    let (bin, json) = (dir.join(GRAPH_BIN), dir.join(GRAPH_JSON));
    let (bin_meta, json_meta) = (probe(&dir, &bin)?, probe(&dir, &json)?);
    Ok(match (bin_meta, json_meta) {
        (Some(_), None) => (dir, bin, Encoding::Bin, None),
        (None, Some(_)) => (dir, json, Encoding::Json, None),
        (None, None) => return Err(Error::NotABundle { path: dir }),
        (Some(b), Some(j)) => {
            let both = format!("{} has both {GRAPH_JSON} and {GRAPH_BIN}", dir.display());
            match (b.modified(), j.modified()) {
                (Ok(b), Ok(j)) if j > b => {
                    let why = format!("{both}: reading {GRAPH_JSON}, modified after {GRAPH_BIN} (rewrite it with `fxhlo import --write-bin`, or delete it)");
                    (dir, json, Encoding::Json, Some(why))
                }
                (Ok(_), Ok(_)) => {
                    let why = format!("{both}: reading {GRAPH_BIN}, modified at the same time as or after {GRAPH_JSON}");
                    (dir, bin, Encoding::Bin, Some(why))
                }
                _ => {
                    let why = format!("{both}: reading {GRAPH_BIN} (modification times unavailable)");
                    (dir, bin, Encoding::Bin, Some(why))
                }
            }
        }
    })
}

/// The metadata of trace file `file` in bundle folder `dir` if it is a regular file, `None` if
/// it does not exist; an error if it is something else or the folder cannot be searched.
fn probe(dir: &Path, file: &Path) -> Result<Option<std::fs::Metadata>> {
    match std::fs::metadata(file) {
        Ok(m) if m.is_file() => Ok(Some(m)),
        Ok(m) => Err(Error::NotATraceFile { path: file.into(), kind: kind_of(&m.file_type()) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A symbolic link to nowhere is not "no file".
            match std::fs::symlink_metadata(file) {
                Ok(_) => Err(Error::NotATraceFile { path: file.into(), kind: "a broken symbolic link" }),
                Err(_) => Ok(None),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(Error::FolderAccess { path: dir.into(), source: e }),
        Err(source) => Err(Error::Io { path: file.into(), source }),
    }
}

/// The encoding of a trace file named directly: by its extension (`.json`, `.bin`), otherwise
/// by its first bytes (the bincode header, or JSON's `{`).
fn sniff(path: &Path) -> Result<Encoding> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => return Ok(Encoding::Json),
        Some("bin") => return Ok(Encoding::Bin),
        _ => {}
    }
    let mut head = [0u8; 64];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|source| Error::Io { path: path.into(), source })?;
        f.read(&mut head).map_err(|source| Error::Io { path: path.into(), source })?
    };
    let head = &head[..n];
    if head.starts_with(encoding::MAGIC) {
        Ok(Encoding::Bin)
    } else if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        Ok(Encoding::Json)
    } else {
        Err(Error::UnknownTraceFile { path: path.into() })
    }
}

/// What a file of type `t` is, for messages ("a directory", "a FIFO", ...).
fn kind_of(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
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
        let Op::Input { kind, weight: Some(key), .. } = &node.op else { continue };
        let Some(weights) = weights else {
            return Err(Error::MissingWeightsFile { path: path.into(), input: node.name.to_string(), kind: kind.name(), key: key.clone() });
        };
        let missing = || Error::MissingWeight { path: path.into(), input: node.name.to_string(), key: key.clone() };
        let view = weights.get(key).ok_or_else(missing)?;
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

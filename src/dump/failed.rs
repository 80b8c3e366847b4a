//! Dumps of compiles that fail: which stage an error belongs to, and the dump of a trace that
//! did not import (no graph, so no cache key and no [`super::Dump`] yet).
//!
//! A failure after import is dumped by the graph's own [`super::Dump`] (`error.txt`, the trace
//! and the reproduction beside the stages written so far, see [`crate::repro`]). A trace that
//! fails to import (malformed JSON or bincode, another schema version, shape inference
//! disagreeing with the trace's metadata, a bad argument) gets a folder named by the trace's
//! own digest, `<graph>-<trace8>/`, with the trace as received, `error.txt`, `command.txt`
//! (the `fxhlo compile` of that trace, which fails the same way) and the report. A graph the
//! Python exporter refused (no trace at all) gets `<graph>-<graph8>/`, named by the digest of
//! the files that describe it, with those files (the FX graph), `error.txt` and the report.

use std::path::{Path, PathBuf};

use super::{file_safe, write, DumpConfig, Report};
use crate::repro::Repro;
use crate::{Error, Result};

/// The stage of a compile that `error` stopped: `import`, `passes`, `codegen`, `PJRT compile`,
/// or `compile` for what belongs to none (inputs, options, files).
pub fn stage_of(error: &Error) -> &'static str {
    match error.root() {
        Error::Frontend(_) | Error::Ir(_) | Error::Schema { .. } => "import",
        Error::Passes(_) => "passes",
        Error::Codegen(_) => "codegen",
        Error::Runtime(_) | Error::AotCompile { .. } | Error::TargetCompilerCrashed { .. } | Error::AotWorker { .. } => {
            "PJRT compile"
        }
        _ => "compile",
    }
}

/// `error.txt`'s text: the stage, then the error (which names the file, node and op).
pub(crate) fn error_text(error: &Error) -> String {
    format!("failed at: {}\n{error}\n", stage_of(error))
}

/// Writes the dump of `trace` (the bytes fxhlo was given, JSON or bincode; `origin` names it),
/// whose import failed with `error`, under `config`'s folder, and returns `error` with the
/// reproduction ([`Error::Reproducible`], whose message says where the dump is). When the
/// files cannot be written, `error` comes back as it is (with a warning): the import's error
/// is the one to report.
pub fn import_failed(config: &DumpConfig, trace: &[u8], origin: &Path, error: Error) -> Error {
    if matches!(error, Error::Reproducible { .. }) {
        return error;
    }
    match write_import_failure(config, trace, origin, &error) {
        Ok(repro) => Error::Reproducible { source: Box::new(error), repro: Box::new(repro) },
        Err(e) => {
            tracing::warn!("cannot write the dump of a trace that failed to import: {e}");
            error
        }
    }
}

fn write_import_failure(config: &DumpConfig, trace: &[u8], origin: &Path, error: &Error) -> Result<Repro> {
    let binary = trace.starts_with(fxhlo_frontend::encoding::MAGIC);
    // A bincode trace is dumped as its JSON (for reading) when it decodes, else as it came.
    let decoded = binary.then(|| fxhlo_frontend::parse_bin(trace, origin).ok()).flatten();
    let (name, contents, file) = match &decoded {
        Some(t) => (t.name.clone(), fxhlo_frontend::to_json(t).into_bytes(), "00-trace.json"),
        None if binary => (fallback_name(origin), trace.to_vec(), "00-trace.bin"),
        None => (json_name(trace).unwrap_or_else(|| fallback_name(origin)), trace.to_vec(), "00-trace.json"),
    };
    let digest = blake3::hash(trace).to_hex();
    let dir = config.dir.join(format!("{}-{}", file_safe(&name), &digest[..8]));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    let path = write(&dir, file, &contents)?;
    write(&dir, "error.txt", error_text(error).as_bytes())?;
    let command = format!("fxhlo compile {}", crate::repro::quote(&path.to_string_lossy()));
    write(&dir, "command.txt", format!("{command}\n").as_bytes())?;
    let report = Report {
        key: "none: the trace did not import".to_string(),
        stages: vec![super::StageRecord { file: Some(file.to_string()), ..super::StageRecord::named("import") }],
        graph: name,
        filter: config.filter.to_string(),
        folder: dir.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        error: Some(format!("{}: {error}", stage_of(error))),
        ..Report::default()
    };
    write(&dir, "report.txt", report.to_text().as_bytes())?;
    write(&dir, "report.json", report.to_json().as_bytes())?;
    tracing::info!(dir = %dir.display(), "dumped a trace that failed to import");
    Ok(Repro { dir, command, note: None, dumped: true })
}

/// Writes the dump of a graph that failed before there was a trace (the Python exporter
/// refused it): `files` (name, contents: the FX graph as Python prints it, its nodes) and
/// `error.txt` (`failed at: export`, then `error`: the exporter's message and where it was
/// raised), with the report, into `<graph>-<digest8>/` under `config`'s folder, `digest` the
/// blake3 of `files`. Returns the folder. A file name that is not a plain name (empty, `.`,
/// `..`, a path separator) is refused.
pub fn export_failed(config: &DumpConfig, graph: &str, files: &[(&str, &[u8])], error: &str) -> Result<PathBuf> {
    let mut hasher = blake3::Hasher::new();
    for (name, contents) in files {
        if name.is_empty() || *name == "." || *name == ".." || name.contains(['/', '\\', '\0']) {
            return Err(Error::Input(format!("dump file name {name:?} is not a plain file name")));
        }
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&(contents.len() as u64).to_le_bytes());
        hasher.update(contents);
    }
    let digest = hasher.finalize().to_hex();
    let name = if graph.is_empty() { "graph" } else { graph };
    let dir = config.dir.join(format!("{}-{}", file_safe(name), &digest[..8]));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    for (file, contents) in files {
        write(&dir, file, contents)?;
    }
    let error = error.trim_end();
    write(&dir, "error.txt", format!("failed at: export\n{error}\n").as_bytes())?;
    let first_line = error.lines().next().unwrap_or_default();
    let report = Report {
        key: "none: the exporter refused the graph (no trace)".to_string(),
        graph: name.to_string(),
        filter: config.filter.to_string(),
        folder: dir.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        error: Some(format!("export: {first_line}")),
        ..Report::default()
    };
    write(&dir, "report.txt", report.to_text().as_bytes())?;
    write(&dir, "report.json", report.to_json().as_bytes())?;
    tracing::info!(dir = %dir.display(), "dumped a graph the exporter refused");
    Ok(dir)
}

/// The `name` of a JSON trace that parses as JSON (whatever else is wrong with it).
fn json_name(trace: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(trace).ok()?;
    value.get("name")?.as_str().map(str::to_string).filter(|n| !n.is_empty())
}

/// A name for a trace whose own cannot be read: its bundle folder's or file's stem
/// (`mlp` of `mlp.fxt/graph.json`, `fxhlo_0_0` of Python's `<fxhlo_0_0>`).
fn fallback_name(origin: &Path) -> String {
    let stem = |p: &Path| p.file_stem().map(|s| s.to_string_lossy().trim_matches(['<', '>']).to_string());
    let file = stem(origin).unwrap_or_default();
    let name = if file == "graph" { origin.parent().and_then(stem).unwrap_or(file) } else { file };
    if name.is_empty() { "trace".to_string() } else { name }
}

/// The trace file of a bundle path that failed to open, and its bytes, for
/// [`import_failed`]; `None` when there is none to read (no such path, no trace in the folder).
pub(crate) fn trace_of_bundle(path: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let file = fxhlo_frontend::trace_file(path).ok()?;
    let bytes = std::fs::read(&file).ok()?;
    Some((file, bytes))
}

//! Reproductions of a failed compile: when lowering (a pass, codegen) or the PJRT compile
//! fails, the graph as imported (`graph.gir`, or the dump's `01-import.gir`) and the StableHLO that failed (when lowering got
//! that far) are written, dumping on or off, and the error carries the one `fxhlo` command
//! that fails the same way from those files ([`Error::Reproducible`]). With dumping on they go
//! into the graph's dump folder, beside the trace and the stages written before the failure
//! (and every failure gets one there, an op fxhlo does not lower included); else into
//! `fxhlo-repro-<key8>/` under `FXHLO_DUMP_DIR`, else the temporary folder. A trace that fails
//! to import is dumped by [`crate::dump::import_failed`].

use std::path::PathBuf;

use fxhlo_ir::Graph;

use crate::cache::CacheKey;
use crate::dump::{write, Dump};
use crate::pipeline::{Frozen, Options};
use crate::{env, Error, Result};

/// Where a failure's files are and the command that reproduces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repro {
    /// The folder holding `graph.gir` or `01-import.gir` (and `stablehlo.mlir`, `plan.json`,
    /// `error.txt`).
    pub dir: PathBuf,
    /// `fxhlo compile <dir>/graph.gir --target cpu ...` (or `01-import.gir`), quoted for a POSIX shell.
    pub command: String,
    /// What the command cannot carry (frozen weights), if anything.
    pub note: Option<String>,
    /// `dir` is the compile's dump folder (dumping was on): the message says so.
    pub dumped: bool,
}

impl std::fmt::Display for Repro {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.dumped {
            writeln!(f, "dumped to {}", self.dir.display())?;
        }
        write!(f, "reproduce with: {}", self.command)?;
        if let Some(note) = &self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

/// What failed: lowering (reproduced from the graph) or the device's compiler (from the
/// StableHLO module).
pub(crate) enum Failed<'a> {
    Lowering,
    Compile { mlir: &'a str },
}

/// `error` wrapped with a reproduction of it (the files written into `dump`'s folder when it
/// has one, else the default folder); `error` as it is when the files cannot be written (a
/// warning says why).
pub(crate) fn wrap(error: Error, failed: Failed<'_>, graph: &Graph, options: &Options, key: &CacheKey, frozen: &Frozen, dump: Option<&Dump>) -> Error {
    if matches!(error, Error::Reproducible { .. }) {
        return error;
    }
    match write_files(&error, failed, graph, options, key, frozen, dump) {
        Ok(repro) => Error::Reproducible { source: Box::new(error), repro: Box::new(repro) },
        Err(e) => {
            tracing::warn!("cannot write the reproduction of a failed compile: {e}");
            error
        }
    }
}

fn write_files(error: &Error, failed: Failed<'_>, graph: &Graph, options: &Options, key: &CacheKey, frozen: &Frozen, dump: Option<&Dump>) -> Result<Repro> {
    let dumped = dump.and_then(Dump::dir);
    let dir = match &dumped {
        Some(dir) => dir.clone(),
        None => dump
            .map(|d| d.config().dir.clone())
            .or_else(|| env::var(env::FXHLO_DUMP_DIR).map(PathBuf::from))
            .unwrap_or_else(std::env::temp_dir)
            .join(format!("fxhlo-repro-{}", &key.hex()[..8])),
    };
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    // The graph as imported: the dump's own `01-import.gir` when it wrote one (the same text),
    // else `graph.gir`.
    let gir = match dump.filter(|_| dumped.is_some()).and_then(Dump::import_file) {
        Some(file) => file,
        None => write(&dir, "graph.gir", fxhlo_ir::print(graph).as_bytes())?,
    };
    write(&dir, "error.txt", format!("{error}\n").as_bytes())?;
    let mut args: Vec<String> = vec!["fxhlo".into(), "compile".into()];
    match failed {
        Failed::Compile { mlir } => {
            let module = write(&dir, "stablehlo.mlir", mlir.as_bytes())?;
            args.push(quote(&module.to_string_lossy()));
            args.extend(["--target".into(), options.device.to_string()]);
            if let Some(tp) = &options.tensor_parallel {
                args.extend(["--tensor-parallel".into(), tp.devices.to_string()]);
            }
        }
        Failed::Lowering => {
            args.push(quote(&gir.to_string_lossy()));
            args.extend(["--target".into(), options.device.to_string()]);
            if options.opt_level != fxhlo_passes::DEFAULT_OPT_LEVEL {
                args.push(format!("-O{}", options.opt_level));
            }
            if let Some(passes) = &options.passes {
                args.extend(["--passes".into(), passes.join(",")]);
            }
            if let Some(n) = options.max_passes {
                args.extend(["--max-passes".into(), n.to_string()]);
            }
            if options.check_indices {
                args.push("--check-indices".into());
            }
            if let Some(tp) = &options.tensor_parallel {
                let text = serde_json::to_string_pretty(tp).map_err(|e| Error::Options(e.to_string()))?;
                let plan = write(&dir, "plan.json", text.as_bytes())?;
                args.extend(["--plan".into(), quote(&plan.to_string_lossy())]);
            }
        }
    }
    let command = args.join(" ");
    write(&dir, "command.txt", format!("{command}\n").as_bytes())?;
    let note = (!frozen.is_empty()).then(|| {
        format!("{} frozen weights were constants of the failed compile; the command compiles them as inputs", frozen.len())
    });
    Ok(Repro { dir, command, note, dumped: dumped.is_some() })
}

/// `text` as one POSIX shell word.
pub(crate) fn quote(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:+=,@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

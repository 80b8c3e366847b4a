//! Stage dumps: each stage of a compile written to a folder for people to read.
//!
//! One switch: [`DumpConfig`] (`FXHLO_DUMP=<filter>` with `FXHLO_DUMP_DIR`, `fxhlo compile
//! --dump <filter> --dump-dir D`, Python's `options={"dump": ...}`). Each compiled graph gets
//! a folder `<dir>/<graph>-<key8>/` (`key8`: the first 8 hex digits of its cache key), with
//! its files numbered in pipeline order by the pipeline itself:
//!
//! ```text
//! 00-trace.json            the trace, when compiled from one
//! 01-import.gir (.dot .svg) the IR as imported
//! NN-after-<pass>.gir ...  the IR after each pass that changed it (changed nodes filled)
//! NN-stablehlo.mlir        the StableHLO module
//! NN-xla/                  XLA's own dump of the HLO it compiled (xla_dump_to), on a PJRT compile
//! cache-key.json           the cache key's fields
//! report.txt, report.json  time per stage, nodes before/after each pass, cache hit or miss
//! error.txt, command.txt   a failed compile: the stage and error; the command failing alike
//! graph.gir (stablehlo.mlir) a failure after import: what the command reproduces it from
//!                          (graph.gir only when the filter left 01-import.gir out: the
//!                          command then reads that)
//! ```
//!
//! A failed compile always keeps `00-trace.json`, whatever the filter; a trace that fails to
//! import gets a folder named by the trace's digest instead (see [`failed`]).
//!
//! Numbers do not depend on the filter: a stage left out of the filter keeps its number, so
//! the files of two dumps of one graph line up. Every file is written atomically (a temporary
//! file renamed over the old one). Dumps never change what is compiled: they are not part of
//! [`crate::Options`] nor of the cache key.

mod failed;
mod graphviz;
mod report;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use fxhlo_ir::Graph;
use fxhlo_passes::PassRun;

use crate::cache::CacheKey;
use crate::env;
use crate::{Error, Result};
pub use failed::{export_failed, import_failed, stage_of};
pub(crate) use failed::trace_of_bundle;
pub use report::{Report, StageRecord};

/// Stage names a filter may name besides pass names (`passes` names every pass).
pub const STAGES: [&str; 6] = ["trace", "import", "passes", "stablehlo", "xla", "dot"];

/// `name` (a graph's, from the user's model) kept to characters every file system takes in a
/// file name: the others become `_`.
pub(crate) fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// Which stages a dump writes: `all`, or a comma list of [`STAGES`] and pass names
/// (`import,dce,stablehlo`). `cache-key.json` and the report are written whenever a graph is
/// dumped at all; `dot` adds the Graphviz files beside the IR files that are written (`all`
/// includes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpFilter {
    all: bool,
    names: BTreeSet<String>,
}

impl DumpFilter {
    /// Every stage.
    pub fn all() -> DumpFilter {
        DumpFilter { all: true, names: BTreeSet::new() }
    }

    /// Parses `all` or a comma list of names; an unknown name is an error listing the valid
    /// ones.
    pub fn parse(text: &str) -> Result<DumpFilter> {
        let mut names = BTreeSet::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                return Ok(DumpFilter::all());
            }
            if !STAGES.contains(&name) && fxhlo_passes::lookup(name).is_err() {
                let passes: Vec<&str> = fxhlo_passes::PASSES.iter().map(|p| p.name()).collect();
                return Err(Error::Options(format!(
                    "dump filter: unknown stage `{name}`; give `all` or a comma list of stages ({}) and passes ({})",
                    STAGES.join(", "),
                    passes.join(", ")
                )));
            }
            names.insert(name.to_string());
        }
        if names.is_empty() {
            return Err(Error::Options(format!("dump filter `{text}` names no stage: give `all` or stage names")));
        }
        Ok(DumpFilter { all: false, names })
    }

    /// Whether stage `stage` (one of [`STAGES`]) is written.
    pub fn wants(&self, stage: &str) -> bool {
        self.all || self.names.contains(stage)
    }

    /// Whether the IR after `pass` is written.
    pub fn wants_pass(&self, pass: &str) -> bool {
        self.all || self.names.contains("passes") || self.names.contains(pass)
    }
}

impl std::fmt::Display for DumpFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.all {
            return f.write_str("all");
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        f.write_str(&names.join(","))
    }
}

/// What to dump and where: the one switch of every caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpConfig {
    pub filter: DumpFilter,
    /// The root folder; each graph gets a folder under it.
    pub dir: PathBuf,
}

impl DumpConfig {
    /// `filter` (see [`DumpFilter::parse`]) into `dir`, else `FXHLO_DUMP_DIR`, else
    /// `./fxhlo-dump`.
    pub fn new(filter: &str, dir: Option<PathBuf>) -> Result<DumpConfig> {
        Ok(DumpConfig { filter: DumpFilter::parse(filter)?, dir: dir.unwrap_or_else(default_dir) })
    }

    /// `FXHLO_DUMP` with `FXHLO_DUMP_DIR`: `None` when `FXHLO_DUMP` is unset; a bad filter
    /// is an error.
    pub fn from_env() -> Result<Option<DumpConfig>> {
        env::var(env::FXHLO_DUMP).map(|filter| DumpConfig::new(&filter, None)).transpose()
    }
}

/// `FXHLO_DUMP_DIR`, else `./fxhlo-dump`.
pub fn default_dir() -> PathBuf {
    env::var(env::FXHLO_DUMP_DIR).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env::DEFAULT_DUMP_DIR))
}

/// The dump of one graph's compile. The caller makes it (with the trace, when there is one);
/// the pipeline opens its folder once the cache key is known and writes each stage as it
/// happens; the session adds XLA's dump and the cache outcome. Shared by reference across
/// those steps, hence the lock.
#[derive(Debug)]
pub struct Dump {
    config: DumpConfig,
    graph: String,
    trace: Option<Vec<u8>>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    dir: Option<PathBuf>,
    /// The number of the next stage.
    next: u32,
    /// Identities of the nodes of the last graph dumped (to mark what a pass changed).
    previous: HashSet<u64>,
    /// The time the trace took to import, when there was one.
    import_time: Option<Duration>,
    /// `01-import.gir`, once written (the graph as imported: what a failure's command reads).
    import_file: Option<PathBuf>,
    report: Report,
}

impl Dump {
    /// A dump of the graph named `graph` with `config`.
    pub fn new(config: DumpConfig, graph: &str) -> Dump {
        let report = Report { graph: graph.to_string(), filter: config.filter.to_string(), ..Report::default() };
        let state = State { report, ..State::default() };
        Dump { config, graph: graph.to_string(), trace: None, state: Mutex::new(state) }
    }

    /// With the trace the graph was imported from (`00-trace.json`), and the import's time.
    pub fn with_trace(mut self, json: Vec<u8>, import_time: Duration) -> Dump {
        self.trace = Some(json);
        self.lock().import_time = Some(import_time);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &DumpConfig {
        &self.config
    }

    /// `01-import.gir` in the graph's folder, when the filter had it written.
    pub(crate) fn import_file(&self) -> Option<PathBuf> {
        self.lock().import_file.clone()
    }

    /// The graph's folder, once the pipeline opened it.
    pub fn dir(&self) -> Option<PathBuf> {
        self.lock().dir.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates `<dir>/<graph>-<key8>/` and writes `cache-key.json` and the trace.
    pub fn open(&self, key: &CacheKey) -> Result<PathBuf> {
        let hex = key.hex();
        let dir = self.config.dir.join(format!("{}-{}", file_safe(&self.graph), &hex[..8]));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        write(&dir, "cache-key.json", key.to_json().as_bytes())?;
        if let (Some(json), true) = (&self.trace, self.config.filter.wants("trace")) {
            write(&dir, "00-trace.json", json)?;
        }
        tracing::info!(dir = %dir.display(), "dumping");
        let mut state = self.lock();
        state.dir = Some(dir.clone());
        state.next = 1;
        state.report.key = hex;
        state.report.folder = dir.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(dir)
    }

    /// Stage 01: the graph as imported.
    pub fn imported(&self, graph: &Graph) -> Result<()> {
        let mut state = self.lock();
        let wanted = self.config.filter.wants("import");
        let file = self.write_ir(&mut state, "import", wanted, graph)?;
        state.import_file = state.dir.as_ref().zip(file.as_ref()).map(|(dir, f)| dir.join(f));
        state.report.imported_nodes = graph.node_count();
        let record = match state.import_time {
            Some(time) => StageRecord::timed("import", time),
            None => StageRecord::named("import"),
        };
        state.report.stages.push(StageRecord { file, nodes_after: Some(graph.node_count()), ..record });
        Ok(())
    }

    /// After a pass (the pass manager's observer): its timing and node counts, and, when it
    /// changed the graph, the next stage `NN-after-<pass>.gir`.
    pub fn pass(&self, run: &PassRun, graph: &Graph) -> Result<()> {
        let mut state = self.lock();
        let file = if run.changed {
            let wanted = self.config.filter.wants_pass(run.pass);
            self.write_ir(&mut state, &format!("after-{}", run.pass), wanted, graph)?
        } else {
            None
        };
        state.report.stages.push(StageRecord {
            file,
            changed: Some(run.changed),
            nodes_before: Some(run.nodes_before),
            nodes_after: Some(run.nodes_after),
            detail: run.summary.clone(),
            ..StageRecord::timed(&format!("pass {}", run.pass), run.time)
        });
        Ok(())
    }

    /// The IR stage `stage`: numbered, and written (with its DOT and SVG) when `wanted`;
    /// remembers the graph's nodes to mark the next stage's changes. The file's name.
    fn write_ir(&self, state: &mut State, stage: &str, wanted: bool, graph: &Graph) -> Result<Option<String>> {
        let index = state.next;
        state.next += 1;
        let now = graphviz::identities(graph);
        let mut file = None;
        if let (Some(dir), true) = (state.dir.clone(), wanted) {
            let name = format!("{index:02}-{stage}");
            write(&dir, &format!("{name}.gir"), fxhlo_ir::print(graph).as_bytes())?;
            if self.config.filter.wants("dot") {
                // Imported: nothing is marked; after a pass: what it created or changed.
                let first = index == 1;
                let previous = &state.previous;
                let dot = fxhlo_ir::to_dot_marked(graph, |id| !first && !previous.contains(&graphviz::identity(graph, id)));
                let dot_path = write(&dir, &format!("{name}.dot"), dot.as_bytes())?;
                let svg = dir.join(format!("{name}.svg"));
                if let Some(note) = graphviz::render_svg(&dot_path, &svg, graph.node_count()) {
                    if !state.report.notes.contains(&note) {
                        state.report.notes.push(note);
                    }
                }
            }
            file = Some(format!("{name}.gir"));
        }
        state.previous = now;
        Ok(file)
    }

    /// The next stage: the StableHLO module and the time codegen took.
    pub fn stablehlo(&self, mlir: &str, time: Duration) -> Result<()> {
        let mut state = self.lock();
        let index = state.next;
        state.next += 1;
        let mut record = StageRecord::timed("codegen", time);
        if let (Some(dir), true) = (&state.dir, self.config.filter.wants("stablehlo")) {
            let name = format!("{index:02}-stablehlo.mlir");
            write(dir, &name, mlir.as_bytes())?;
            record.file = Some(name);
        }
        state.report.stages.push(record);
        Ok(())
    }

    /// The folder XLA dumps into (`NN-xla/`, created), when the filter wants it.
    pub fn xla_dir(&self) -> Result<Option<PathBuf>> {
        let mut state = self.lock();
        let Some(dir) = state.dir.clone() else { return Ok(None) };
        if !self.config.filter.wants("xla") {
            return Ok(None);
        }
        let index = state.next;
        state.next += 1;
        let xla = dir.join(format!("{index:02}-xla"));
        std::fs::create_dir_all(&xla).map_err(|source| Error::Io { path: xla.clone(), source })?;
        // XLA wants an absolute folder (it may run with another working directory).
        Ok(Some(std::path::absolute(&xla).unwrap_or(xla)))
    }

    /// The executable's provenance: `cache` says hit or miss and why, `time` the PJRT
    /// compile (or the load from the cache).
    pub fn executable(&self, cache: String, time: Duration, xla_dir: Option<&Path>) -> Result<()> {
        let mut state = self.lock();
        let mut record = StageRecord::timed("PJRT compile", time);
        if let Some(xla) = xla_dir {
            record.file = xla.file_name().map(|f| format!("{}/", f.to_string_lossy()));
        }
        state.report.stages.push(record);
        state.report.cache = Some(cache);
        Ok(())
    }

    /// Writes why compiling stopped (`error.txt`: the stage, then the error), for a reader of
    /// the dump, and the trace (`00-trace.json`) whatever the filter: a failed compile's
    /// folder always holds what it failed on.
    pub fn failed(&self, error: &Error) -> Result<()> {
        let mut state = self.lock();
        state.report.error = Some(format!("{}: {error}", stage_of(error)));
        let Some(dir) = &state.dir else { return Ok(()) };
        if let Some(json) = &self.trace {
            write(dir, "00-trace.json", json)?;
        }
        write(dir, "error.txt", failed::error_text(error).as_bytes()).map(drop)
    }

    /// Writes `report.txt` and `report.json` with what is known so far (called after each
    /// step that ends a compile: lowering for a device-free compile, the PJRT compile).
    pub fn write_report(&self) -> Result<()> {
        let state = self.lock();
        let Some(dir) = &state.dir else { return Ok(()) };
        write(dir, "report.txt", state.report.to_text().as_bytes())?;
        write(dir, "report.json", state.report.to_json().as_bytes())?;
        Ok(())
    }

    /// A copy of the report so far.
    pub fn report(&self) -> Report {
        self.lock().report.clone()
    }
}

/// After lowering (or after the PJRT compile): writes why it failed, if it did, and the
/// report. A file that cannot be written is an error only when the compile itself succeeded
/// (a warning otherwise: the compile's own error is the one to report).
pub(crate) fn finish<T>(dump: Option<&Dump>, result: &Result<T>) -> Result<()> {
    let Some(d) = dump else { return Ok(()) };
    let written = match result {
        Err(e) => d.failed(e).and_then(|()| d.write_report()),
        Ok(_) => d.write_report(),
    };
    match (written, result) {
        (Err(e), Err(_)) => {
            tracing::warn!("cannot write the dump of a failed compile: {e}");
            Ok(())
        }
        (written, _) => written,
    }
}

/// Writes `dir/name` atomically: a reader of a dump that is being rewritten sees the old file
/// or the new one, never half of one.
pub(crate) fn write(dir: &Path, name: &str, contents: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    fxhlo_frontend::write_atomic(&path, contents).map_err(|source| Error::Io { path: path.clone(), source })?;
    tracing::debug!(path = %path.display(), "dumped");
    Ok(path)
}

//! Ahead-of-time compilation for a target with no device here (`tpu:v6e:2x2`): the
//! [`Lowered`] module goes to the plugin's topology compiler in a **child process** (the
//! [`Worker`]), because the TPU compiler can crash on valid programs and must not take the
//! caller (a Python process holding a model) with it. A crash becomes
//! [`Error::TargetCompilerCrashed`] naming the graph and the target, with the module kept on
//! disk for a bug report. Executables go through the [`CompileCache`] like any other target.
//!
//! The worker is `fxhlo aot-worker` (the CLI binary), or whatever [`Worker`] says: the Python
//! extension runs its own interpreter on `fxhlo/_aot_worker.py`, which loads the extension and
//! calls [`worker_main`] from the same code.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fxhlo_runtime::aot::{ALLOW_MULTIPLE_LIBTPU_LOAD, TPU_SKIP_MDS_QUERY};
use fxhlo_runtime::{AotCompiler, CompileOptions, CostAnalysis, EnvConfig, Target, TargetName, TopologyInfo};

use crate::cache::{plugin_identity, topology_target_id, CacheKey, CompileCache, Tier};
use crate::compile::{get_or_compile, Compiler, Origin};
use crate::dump::file_safe;
use crate::env::FXHLO_AOT_WORKER;
use crate::pipeline::{Lowered, Pipeline};
use crate::{Error, Result};


/// A target to compile for ahead of time, resolved: its plugin, its topology as the plugin
/// describes it, and the identity the cache key gives it.
#[derive(Debug, Clone)]
pub struct AotTarget {
    /// The target's name (`tpu:v6e:2x2`).
    pub name: TargetName,
    /// The plugin and topology.
    pub target: Target,
    /// What the plugin's description of the topology says (read in the worker process).
    pub topology: TopologyInfo,
    /// The cache key's target field ([`crate::cache::topology_target_id`]): the same text a
    /// client on a slice of this topology gives ([`crate::Session::target_id`]), so that a
    /// TPU VM finds the executable compiled here.
    pub id: String,
}

impl AotTarget {
    /// Finds the plugin for `name` (which must have a topology) and has the worker process
    /// describe the topology (once per process and plugin file: the plugin is never loaded
    /// here, where a crash or libtpu's start-up would take the caller down).
    pub fn resolve(name: &TargetName, env: &EnvConfig, worker: &Worker) -> Result<AotTarget> {
        if !name.is_ahead_of_time() {
            return Err(Error::Options(format!(
                "target `{name}` has no topology to compile for ahead of time (such as tpu:v6e:2x2)"
            )));
        }
        let target = Target::resolve_ahead_of_time(name, env)?;
        let topology = describe(&target, worker)?;
        let id = topology_target_id(name.device, &plugin_identity(&target.plugin), &topology);
        Ok(AotTarget { name: name.clone(), target, topology, id })
    }
}

/// Topologies described so far in this process, by plugin file (with its identity: another
/// build of the plugin is described again), topology name and worker program (a test's
/// stand-in worker describes what it likes).
type Described = Vec<((PathBuf, String, String, PathBuf), TopologyInfo)>;
static DESCRIBED: std::sync::Mutex<Described> = std::sync::Mutex::new(Vec::new());

/// `target`'s topology as its plugin describes it, read in the worker process (`--describe`):
/// the fields a client on such a slice reports too ([`fxhlo_runtime::Client::topology`]).
pub fn describe(target: &Target, worker: &Worker) -> Result<TopologyInfo> {
    let topology = target.topology.clone().unwrap_or_default();
    let memo = (target.plugin.clone(), plugin_identity(&target.plugin), topology.clone(), worker.program.clone());
    let described = DESCRIBED.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == memo).map(|(_, v)| v.clone());
    if let Some(info) = described {
        return Ok(info);
    }
    // What `Error::AotWorker` names: no graph yet, the target.
    let graph = format!("{}:{topology}", target.device);
    let dir = WorkDir::new()?;
    let out = dir.0.join("topology.json");
    let output = Command::new(&worker.program)
        .args(&worker.args)
        .arg("--plugin")
        .arg(&target.plugin)
        .arg("--topology")
        .arg(&topology)
        .arg("--describe")
        .arg(&out)
        .env(TPU_SKIP_MDS_QUERY.0, TPU_SKIP_MDS_QUERY.1)
        .env(ALLOW_MULTIPLE_LIBTPU_LOAD.0, ALLOW_MULTIPLE_LIBTPU_LOAD.1)
        .output()
        .map_err(|e| start_error(&graph, worker, e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr.lines().rev().find_map(|l| l.strip_prefix("error: ")).unwrap_or(stderr.trim()).to_string();
        if output.status.code() == Some(WORKER_COMPILE_ERROR) {
            // The worker's message is the plugin's own error, already saying what was asked.
            return Err(Error::AotWorker { graph, message });
        }
        let status = describe_status(&output.status);
        return Err(Error::AotWorker { graph, message: format!("the worker crashed ({status}) describing the topology: {message}") });
    }
    let bytes = std::fs::read(&out).map_err(|source| Error::Io { path: out.clone(), source })?;
    let info: TopologyInfo = serde_json::from_slice(&bytes)
        .map_err(|e| Error::AotWorker { graph, message: format!("the worker's topology description does not parse: {e}") })?;
    DESCRIBED.lock().unwrap_or_else(|e| e.into_inner()).push((memo, info.clone()));
    Ok(info)
}

/// Why the worker `worker` could not be started, as an error naming `graph`.
fn start_error(graph: &str, worker: &Worker, e: std::io::Error) -> Error {
    Error::AotWorker {
        graph: graph.to_string(),
        message: format!(
            "cannot start the ahead-of-time worker `{}`: {e}. Build the fxhlo binary (cargo build -p fxhlo-cli) \
             or point {FXHLO_AOT_WORKER} at it",
            worker.program.display()
        ),
    }
}

/// How to start the worker process: a program and the arguments before the worker's own.
#[derive(Debug, Clone)]
pub struct Worker {
    /// The program (the `fxhlo` binary, or a Python interpreter).
    pub program: PathBuf,
    /// Arguments before the worker's (`aot-worker` for the binary; the worker script and the
    /// extension's path for Python).
    pub args: Vec<OsString>,
}

impl Worker {
    /// `FXHLO_AOT_WORKER` when set, else `fxhlo` next to the running executable (the CLI
    /// itself; test binaries live one folder below it), else `fxhlo` on `PATH`.
    pub fn from_env() -> Worker {
        let binary = std::env::var_os(FXHLO_AOT_WORKER).map(PathBuf::from).unwrap_or_else(|| {
            let exe = std::env::current_exe().ok();
            let name = format!("fxhlo{}", std::env::consts::EXE_SUFFIX);
            exe.iter()
                .flat_map(|e| e.ancestors().skip(1).take(2))
                .map(|dir| dir.join(&name))
                .find(|p| p.is_file())
                .unwrap_or_else(|| PathBuf::from(name))
        });
        Worker { program: binary, args: vec!["aot-worker".into()] }
    }
}

/// What an ahead-of-time compile gives.
#[derive(Debug, Clone)]
pub struct AotCompiled {
    /// The graph's name.
    pub graph: String,
    /// The serialized executable, as the target's plugin loads it.
    pub bytes: Vec<u8>,
    /// XLA's cost analysis; `None` when the executable came from the cache (the cache keeps
    /// executables only).
    pub cost: Option<CostAnalysis>,
    /// The cache key.
    pub key: CacheKey,
    /// Where it came from: `None` when compiled now.
    pub cached: Option<Tier>,
    /// Time in the worker (or loading from the cache).
    pub compile_time: Duration,
}

/// The worker process as the [`Compiler`] of an ahead-of-time target's misses: its output is
/// the serialized executable, with XLA's cost analysis when compiled now.
struct WorkerCompiler<'a> {
    target: &'a AotTarget,
    worker: &'a Worker,
    partitions: usize,
}

impl Compiler for WorkerCompiler<'_> {
    type Output = (Vec<u8>, Option<CostAnalysis>);

    fn load(&self, bytes: &[u8]) -> Result<Self::Output> {
        Ok((bytes.to_vec(), None))
    }

    fn compile(&self, lowered: &Lowered, xla_dump_to: Option<&Path>) -> Result<(Self::Output, crate::compile::Serialized)> {
        let (bytes, cost) = run_worker(&lowered.graph, lowered.program().code, &self.target.name, &self.target.target, self.worker, self.partitions, xla_dump_to)?;
        Ok(((bytes.clone(), Some(cost)), Ok(bytes)))
    }

    fn rejected(&self, error: &Error) -> bool {
        // A crash keeps its module already.
        matches!(error, Error::AotCompile { .. })
    }

    fn how(&self) -> &'static str {
        " (compiled ahead of time in the worker process)"
    }
}

/// Lowers `graph` for `options.device` (a target with a topology) and compiles it ahead of
/// time through the process's compile cache (with `fresh`, not read from it: a cost analysis
/// comes only from a compile), in the worker process `worker` starts. Returns the lowered
/// module too. `frozen` and `dump` as in [`crate::Session::compile`]; `env` says where to find
/// the plugin. A module the target's compiler rejects comes with a reproduction (`fxhlo
/// compile <module> --target ..` runs the same compile).
pub fn compile(
    graph: &fxhlo_ir::Graph,
    frozen: &crate::Frozen,
    dump: Option<&crate::Dump>,
    options: crate::Options,
    env: &EnvConfig,
    worker: &Worker,
    fresh: bool,
) -> Result<(Lowered, AotCompiled)> {
    let target = AotTarget::resolve(&options.device, env, worker)?;
    let pipeline = Pipeline::new(options);
    let lowered = pipeline.lower(graph, frozen, dump, &target.id)?;
    let compiler = WorkerCompiler { target: &target, worker, partitions: pipeline.options().devices() };
    let origin = Origin { graph, frozen, options: pipeline.options() };
    let got = get_or_compile(&compiler, &CompileCache::global(), &lowered, Some(origin), dump, fresh)?;
    if got.cached.is_none() {
        tracing::info!(graph = %graph.name, target = %target.name, elapsed_ms = got.time.as_secs_f64() * 1e3, "compiled ahead of time");
    }
    let ((bytes, cost), key) = (got.output, lowered.key.clone());
    let compiled = AotCompiled { graph: graph.name.clone(), bytes, cost, key, cached: got.cached, compile_time: got.time };
    Ok((lowered, compiled))
}

/// Compiles a StableHLO module (text) for an ahead-of-time target in the worker, bypassing the
/// cache (there is no graph to key it by): for modules from a dump or a bug report.
pub fn compile_module(
    name: &str,
    mlir: &str,
    target: &TargetName,
    env: &EnvConfig,
    worker: &Worker,
) -> Result<(Vec<u8>, CostAnalysis)> {
    // No key, so no description of the topology: only its plugin.
    let resolved = Target::resolve_ahead_of_time(target, env)?;
    run_worker(name, mlir.as_bytes(), target, &resolved, worker, 1, None)
}

/// Runs the worker on `mlir` (text or bytecode) for `target`: the executable's bytes and its
/// cost analysis, or a typed error (a compile error with the plugin's message; a crash with
/// the module kept).
#[allow(clippy::too_many_arguments)]
fn run_worker(
    graph: &str,
    mlir: &[u8],
    name: &TargetName,
    target: &Target,
    worker: &Worker,
    partitions: usize,
    xla_dump_to: Option<&Path>,
) -> Result<(Vec<u8>, CostAnalysis)> {
    let label = name.to_string();
    let dir = WorkDir::new()?;
    let module = dir.0.join("module.mlir");
    let out = dir.0.join("executable.bin");
    let cost = dir.0.join("cost.json");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    std::fs::write(&module, mlir).map_err(io(&module))?;
    let topology = target.topology.clone().unwrap_or_default();
    let mut command = Command::new(&worker.program);
    command
        .args(&worker.args)
        .arg("--plugin")
        .arg(&target.plugin)
        .arg("--topology")
        .arg(&topology)
        .arg("--module")
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .arg("--cost")
        .arg(&cost)
        .arg("--partitions")
        .arg(partitions.to_string())
        .env(TPU_SKIP_MDS_QUERY.0, TPU_SKIP_MDS_QUERY.1)
        .env(ALLOW_MULTIPLE_LIBTPU_LOAD.0, ALLOW_MULTIPLE_LIBTPU_LOAD.1);
    if let Some(dir) = xla_dump_to {
        command.arg("--xla-dump-to").arg(dir);
    }
    let output = command.output().map_err(|e| start_error(graph, worker, e))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        let bytes = std::fs::read(&out).map_err(io(&out))?;
        let cost = std::fs::read(&cost)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        return Ok((bytes, cost));
    }
    // The worker's own error line (`error: ...`), as a compile error.
    if let Some(code) = output.status.code() {
        if code == WORKER_COMPILE_ERROR {
            let message = stderr
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(stderr.trim())
                .to_string();
            return Err(Error::AotCompile { graph: graph.to_string(), target: label, message });
        }
    }
    // Anything else: the compiler died. Keep the module for a bug report.
    let kept = std::env::temp_dir().join(format!("fxhlo-crash-{}-{}.mlir", file_safe(graph), std::process::id()));
    let kept = match std::fs::copy(&module, &kept) {
        Ok(_) => kept,
        Err(_) => {
            // The work folder then stays on disk, so that the path in the error exists.
            std::mem::forget(dir);
            module
        }
    };
    let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty() && !startup_noise(l)).collect();
    let tail = if tail.is_empty() {
        "(nothing beyond the plugin's start-up warnings)".to_string()
    } else {
        tail[tail.len().saturating_sub(5)..].join("\n")
    };
    Err(Error::TargetCompilerCrashed {
        graph: graph.to_string(),
        target: label,
        status: describe_status(&output.status),
        module: kept,
        stderr: tail,
    })
}

/// Lines libtpu prints on every start on a machine without a TPU (about hostnames, the
/// accelerator type and huge pages): harmless, and not what a crash report needs.
fn startup_noise(line: &str) -> bool {
    const NOISE: &[&str] = &[
        "TPU_WORKER_HOSTNAMES",
        "TPU_ACCELERATOR_TYPE",
        "could not determine TPU",
        "Logging before InitGoogle",
        "Source Location Trace",
        "libtpu_init_utils",
        "hugepage_text",
    ];
    NOISE.iter().any(|n| line.contains(n))
}

#[cfg(unix)]
fn describe_status(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
        (Some(code), _) => format!("exit status {code}"),
        _ => status.to_string(),
    }
}

#[cfg(not(unix))]
fn describe_status(status: &std::process::ExitStatus) -> String {
    status.to_string()
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL: out of memory?)",
        11 => " (SIGSEGV)",
        _ => "",
    }
}

/// A private temporary folder, removed on drop.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<WorkDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!("fxhlo-aot-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The worker's exit status for a compile error the plugin reported (anything else that is
/// not success is a crash).
pub const WORKER_COMPILE_ERROR: i32 = 3;

/// The worker: `--plugin <so> --topology <t> --module <mlir> --out <file> --cost <json>
/// [--partitions <n>] [--xla-dump-to <folder>]`, or `--plugin <so> --topology <t> --describe
/// <json>` to write the topology's [`TopologyInfo`] instead (what the cache key is made of).
/// Compiles the module for the topology, writes the serialized executable to `--out` and the
/// cost analysis as JSON to `--cost`. Returns the process exit status: 0, or
/// [`WORKER_COMPILE_ERROR`] after printing `error: <message>` on stderr, or 2 for bad
/// arguments. The caller must have set `TPU_SKIP_MDS_QUERY=1` and `ALLOW_MULTIPLE_LIBTPU_LOAD=1`
/// in the environment before the process started (the parent does).
pub fn worker_main(args: &[String]) -> i32 {
    let get = |flag: &str| -> Option<String> {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).cloned()
    };
    if let (Some(plugin), Some(topology), Some(out)) = (get("--plugin"), get("--topology"), get("--describe")) {
        let target = Target { device: fxhlo_runtime::DeviceKind::Tpu, plugin: PathBuf::from(&plugin), topology: Some(topology) };
        let described = AotCompiler::new(&target)
            .map_err(|e| e.to_string())
            .and_then(|c| serde_json::to_vec(c.info()).map_err(|e| e.to_string()))
            .and_then(|json| fxhlo_frontend::write_atomic(Path::new(&out), &json).map_err(|e| format!("{out}: {e}")));
        return match described {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("error: {message}");
                WORKER_COMPILE_ERROR
            }
        };
    }
    let (Some(plugin), Some(topology), Some(module), Some(out), Some(cost)) =
        (get("--plugin"), get("--topology"), get("--module"), get("--out"), get("--cost"))
    else {
        eprintln!("error: usage: aot-worker --plugin <so> --topology <t> --module <mlir> --out <file> --cost <json>");
        return 2;
    };
    // SPMD partitions (a tensor-parallel plan's devices); 1 when not given.
    let partitions: usize = match get("--partitions").map(|p| p.parse()) {
        None => 1,
        Some(Ok(p)) if p >= 1 => p,
        Some(_) => {
            eprintln!("error: --partitions takes a count of at least 1");
            return 2;
        }
    };
    let run = || -> std::result::Result<(), String> {
        // Text or bytecode (a frozen model's): PJRT's `mlir` format reads either; no signature
        // is read here.
        let mlir = std::fs::read(&module).map_err(|e| format!("{module}: {e}"))?;
        let target = Target { device: fxhlo_runtime::DeviceKind::Tpu, plugin: PathBuf::from(&plugin), topology: Some(topology.clone()) };
        let compiler = AotCompiler::new(&target).map_err(|e| e.to_string())?;
        let options = CompileOptions { xla_dump_to: get("--xla-dump-to").map(PathBuf::from), ..CompileOptions::partitioned(partitions) };
        let exe = compiler
            .compile(fxhlo_runtime::Program { code: &mlir, signature: fxhlo_runtime::ProgramSignature::Unknown }, &options)
            .map_err(|e| e.to_string())?;
        fxhlo_frontend::write_atomic(Path::new(&out), &exe.bytes)
            .map_err(|e| format!("{out}: {e}"))?;
        let json = serde_json::to_vec(&exe.cost).map_err(|e| e.to_string())?;
        std::fs::write(&cost, json).map_err(|e| format!("{cost}: {e}"))?;
        Ok(())
    };
    match run() {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            WORKER_COMPILE_ERROR
        }
    }
}

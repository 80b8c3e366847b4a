//! Per-thread state: one session (PJRT client) per device, and each program loaded on this
//! thread with its resident weights. PJRT clients are not `Send`, so nothing here crosses
//! threads; `Program` (the `Send` part) is the lowered module, which any thread loads through
//! the facade ([`fxhlo::Session::load`]: the cache, or a compile of the module's bytecode).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use fxhlo::runtime::EnvConfig;
use fxhlo::{Compiled, Lowered, Options, ResidentWeights, Session};
use pyo3::prelude::*;

use crate::errors::{error, Class};

/// One input of the graph as the Python caller passes it, in the graph's order.
pub(crate) struct CallerInput {
    pub(crate) name: String,
    /// Its position among the executable's inputs ([`Compiled::inputs`]); `None` when it was
    /// compiled in as a constant (`freeze`) and is not passed at all.
    pub(crate) position: Option<usize>,
    /// A parameter, buffer or constant: kept on the device between calls.
    pub(crate) resident: bool,
}

/// What a compiled graph is, independent of any thread: enough to load it anywhere.
pub(crate) struct Program {
    pub(crate) id: u64,
    /// The device and compile options it was compiled with (which session loads it).
    pub(crate) options: Options,
    /// The lowered module: its key, signature and bytecode.
    pub(crate) lowered: Arc<Lowered>,
    /// The graph's inputs in the order the caller passes them.
    pub(crate) caller: Vec<CallerInput>,
    /// How many of them the executable takes (those with a position).
    pub(crate) passed: usize,
    /// Whether the executable takes every one of them, in the same order.
    pub(crate) in_order: bool,
    /// The dense layout of each of the executable's inputs (`lendable`'s one-call check).
    pub(crate) layouts: Vec<crate::torch::DenseLayout>,
    /// How getting the executable went: seconds per stage, and the cache tier it came from.
    pub(crate) stages: Stages,
    pub(crate) calls: AtomicU64,
    pub(crate) weight_uploads: AtomicU64,
    pub(crate) input_uploads: AtomicU64,
    /// Weights and user inputs shared with the device instead of copied (`Executable.stats`).
    pub(crate) weight_shares: AtomicU64,
    pub(crate) input_shares: AtomicU64,
    /// Shared inputs read through the view the call before made (`Executable.stats`).
    pub(crate) views_reused: AtomicU64,
}

/// Seconds spent in each native stage of a compile, and where the executable came from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stages {
    /// Reading the trace and importing it into the IR.
    pub(crate) import_s: f64,
    /// The passes and codegen (with the cache key).
    pub(crate) lower_s: f64,
    /// The PJRT compile, or loading the executable from the cache.
    pub(crate) load_s: f64,
    /// The cache tier (`memory`, `disk`), `None` when compiled.
    pub(crate) cached: Option<&'static str>,
}

/// A program loaded on this thread's client for its device.
pub(crate) struct ThreadExec {
    pub(crate) session: Rc<Session>,
    pub(crate) compiled: Compiled,
    /// Parameters, buffers and constants kept on the device between calls.
    pub(crate) resident: ResidentWeights,
    /// How long the last timed execution took (the first calls and every 16th are timed): long
    /// ones release the GIL while they run.
    pub(crate) last_run: std::time::Duration,
}

/// Executions at least this long release the GIL so that other Python threads run meanwhile;
/// shorter ones keep it (releasing and taking it back costs more than they do, and another
/// thread holding it on the way back would stall the call).
pub(crate) const RELEASE_GIL_AFTER: std::time::Duration = std::time::Duration::from_micros(200);

thread_local! {
    /// One session (PJRT client) per device for this thread.
    static SESSIONS: RefCell<Vec<Rc<Session>>> = const { RefCell::new(Vec::new()) };
    /// Programs loaded on this thread, by [`Program::id`].
    pub(crate) static LOADED: RefCell<HashMap<u64, Rc<RefCell<ThreadExec>>>> = RefCell::new(HashMap::new());
}

/// This thread's session for `options` (its device and compile options), created on first use.
pub(crate) fn session(py: Python<'_>, options: &Options) -> PyResult<Rc<Session>> {
    if let Some(c) = SESSIONS.with_borrow(|cs| cs.iter().find(|c| c.options() == options).cloned()) {
        return Ok(c);
    }
    let env = plugin_env(py, options.device.device)?;
    let c = Rc::new(Session::new_in(options.clone(), &env).map_err(|e| error(py, Class::Device, &e.to_string()))?);
    SESSIONS.with_borrow_mut(|cs| cs.push(c.clone()));
    Ok(c)
}

/// The environment in which to look for `device`'s plugin: the process's, with the plugin this
/// interpreter imports when the environment does not choose one.
pub(crate) fn plugin_env(py: Python<'_>, device: fxhlo::runtime::DeviceKind) -> PyResult<EnvConfig> {
    let mut env = EnvConfig::from_env();
    if env.plugin.is_none() && env.venv.is_none() {
        // The plugin this interpreter imports: the one pip installed with fxhlo, in whatever
        // environment that is (fxhlo/_plugin.py says why). FXHLO_PJRT_PLUGIN and FXHLO_VENV,
        // when set, choose instead; when nothing is found the runtime's own search runs.
        let files = fxhlo::runtime::plugin::plugin_files(device).to_vec();
        env.plugin = py.import("fxhlo._plugin")?.call_method1("find", (files,))?.extract()?;
    }
    if env.venv.is_none() && env.virtual_env.is_none() {
        // Not activated (`.venv/bin/python` run directly): search the interpreter's own
        // environment, where scripts/setup.sh installs the plugins.
        env.virtual_env = Some(py.import("sys")?.getattr("prefix")?.extract()?);
    }
    Ok(env)
}

/// Records `compiled` as `p` loaded on this thread.
pub(crate) fn insert_loaded(p: &Program, session: Rc<Session>, compiled: Compiled) -> Rc<RefCell<ThreadExec>> {
    let t = Rc::new(RefCell::new(ThreadExec {
        session,
        resident: ResidentWeights::new(compiled.inputs.len()),
        compiled,
        // Unknown until the first run: assume long.
        last_run: RELEASE_GIL_AFTER,
    }));
    LOADED.with_borrow_mut(|m| m.insert(p.id, t.clone()));
    t
}

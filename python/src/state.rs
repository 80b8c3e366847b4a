//! Per-thread state: one session (PJRT client) per device, and each program loaded on this
//! thread with its resident weights. PJRT clients are not `Send`, so nothing here crosses
//! threads; `Program` (the `Send` part) says how to load a graph anywhere.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use fxhlo::runtime::{ElementType, EnvConfig, Executable as Loaded};
use fxhlo::{Options, ResidentWeights, Session};
use pyo3::prelude::*;

use crate::errors::error;

/// One input of a compiled graph, in calling order.
pub(crate) struct Arg {
    pub(crate) name: String,
    pub(crate) element: ElementType,
    /// The dims the graph sees.
    pub(crate) dims: Vec<i64>,
    /// The dims uploaded (`dims` permuted by `layout`).
    pub(crate) device_dims: Vec<i64>,
    /// Dense byte size.
    pub(crate) bytes: usize,
    /// A parameter, buffer or constant: kept on the device between calls.
    pub(crate) resident: bool,
    /// Compiled into the executable as a constant (`freeze`): not passed at all.
    pub(crate) frozen: bool,
    /// Uploaded permuted (`t.permute(layout)`, giving `device_dims`): the layout the device's
    /// kernels want.
    pub(crate) layout: Option<Vec<usize>>,
}

/// What a compiled graph is, independent of any thread: enough to load it anywhere.
pub(crate) struct Program {
    pub(crate) id: u64,
    /// The device and compile options (`check_indices`) it was compiled with.
    pub(crate) options: Options,
    /// The index checks that follow the graph's outputs (`check_indices`).
    pub(crate) checks: fxhlo::Checks,
    /// The compile cache's key: another thread loads the executable from the cache with it.
    pub(crate) key: fxhlo::CacheKey,
    pub(crate) graph: String,
    pub(crate) mlir: String,
    pub(crate) inputs: Vec<Arg>,
    /// The executable's parameters whose values the compile bound (large frozen weights), with
    /// their positions: uploaded once per thread's client, never passed by the caller.
    pub(crate) bound: Vec<(usize, fxhlo::InputSignature)>,
    pub(crate) calls: AtomicU64,
    pub(crate) weight_uploads: AtomicU64,
    pub(crate) input_uploads: AtomicU64,
}

/// A program loaded on this thread's client for its device.
pub(crate) struct ThreadExec {
    pub(crate) session: Rc<Session>,
    pub(crate) exe: Loaded,
    /// Parameters, buffers and constants kept on the device between calls.
    pub(crate) resident: ResidentWeights,
    /// The values of [`Program::bound`] on this thread's device.
    pub(crate) bound: Vec<fxhlo::runtime::DeviceBuffer>,
    /// How long the last execution took: long ones release the GIL while they run.
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
    let c = Rc::new(
        Session::new_in(options.clone(), &env)
            .map_err(|e| error(py, "DeviceError", &e.to_string()))?,
    );
    SESSIONS.with_borrow_mut(|cs| cs.push(c.clone()));
    Ok(c)
}

/// The environment in which to look for `device`'s plugin: the process's, with the plugin this
/// interpreter imports when the environment does not choose one.
pub(crate) fn plugin_env(
    py: Python<'_>,
    device: fxhlo::runtime::DeviceKind,
) -> PyResult<EnvConfig> {
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

/// Records `exe` as loaded on this thread, with the values of the program's bound parameters
/// on the session's device (`bound`: already uploaded, as a compile does).
pub(crate) fn insert_loaded(
    p: &Program,
    session: Rc<Session>,
    exe: Loaded,
    bound: Vec<fxhlo::runtime::DeviceBuffer>,
) -> Rc<RefCell<ThreadExec>> {
    let t = Rc::new(RefCell::new(ThreadExec {
        session,
        exe,
        resident: ResidentWeights::new(p.inputs.len()),
        bound,
        // Unknown until the first run: assume long.
        last_run: RELEASE_GIL_AFTER,
    }));
    LOADED.with_borrow_mut(|m| m.insert(p.id, t.clone()));
    t
}

impl Program {
    /// The executable's parameters in order: `caller`'s buffers (the unfrozen inputs, in order)
    /// with `bound`, this thread's buffers of [`Program::bound`], at their positions.
    pub(crate) fn parameters<'b>(
        &self,
        caller: &[&'b fxhlo::runtime::DeviceBuffer],
        bound: &'b [fxhlo::runtime::DeviceBuffer],
    ) -> Vec<&'b fxhlo::runtime::DeviceBuffer> {
        fxhlo::with_bound(caller, self.bound.iter().map(|(p, _)| *p).zip(bound))
    }
}

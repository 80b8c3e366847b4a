//! `fxhlo._native`: the bridge between the Python backend (`python/fxhlo/backend.py`) and the
//! Rust facade. Python hands over a trace (the exporter's objects, read straight into the
//! schema; or a trace file's bytes) and gets an [`Executable`]; it calls that with torch tensors
//! and gets torch tensors back. The bridge only converts: compiling is the facade's
//! `Session::compile`, calling its `Compiled::prepare` / `Call::execute` (the same path as the
//! CLI's and a Rust user's). Nothing here shells out.
//!
//! Threads: PJRT clients (and so executables and device buffers) are not `Send` in `pjrt` 0.2.
//! The Python object holds only what is `Send` (the lowered module: its key, signature and
//! bytecode); the loaded executable, its client and the resident weights live in thread-local
//! state, made on first use in each thread by `Session::load` (from the compile cache, or by
//! compiling the module's bytecode where no cache holds the executable). The common case, one
//! thread, pays one hash lookup per call.
//!
//! Transfers: a tensor in memory the device addresses (a dense CPU tensor on the CPU plugin, a
//! CUDA tensor on the CUDA plugin) is shared, not copied: the device buffer is a view of the
//! tensor's storage, which it keeps alive (`TorchArgs::lend`); any other is copied once into a
//! device buffer. Outputs the same way back: in memory torch addresses they become torch
//! tensors without a copy (DLPack: the tensor owns the PJRT buffer); elsewhere (a TPU) they are
//! written straight into a fresh `torch.empty` tensor (one copy).
//! Parameters and buffers stay on the device between calls and are uploaded again only when
//! their tensor object, storage pointer or version counter changed.

mod args;
mod dlpack;
mod pytrace;
mod errors;
mod state;
mod torch;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use fxhlo::runtime::{DeviceBuffer, MemoryKind};
use fxhlo::CallArgs;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use smallvec::SmallVec;

use args::TorchArgs;
use errors::{call_error, compile_error, error, Class};
use state::{insert_loaded, session, CallerInput, Program, Stages, ThreadExec, LOADED, RELEASE_GIL_AFTER};
use torch::{data_ptr, dtypes};

/// Source of [`Program`] ids (keys of the thread-local state).
static NEXT_PROGRAM: AtomicU64 = AtomicU64::new(1);

/// A value that crosses `Python::detach` although it is not `Send`: the closure runs on the
/// calling thread before `detach` returns, so nothing actually moves between threads.
struct SameThread<T>(T);
// SAFETY: see above; `detach` runs its closure synchronously on the current thread.
unsafe impl<T> Send for SameThread<T> {}

impl<T> SameThread<T> {
    fn into_inner(self) -> T {
        self.0
    }
}

/// A compiled graph, callable with torch tensors.
#[pyclass(frozen, module = "fxhlo._native")]
struct Executable {
    program: Arc<Program>,
}

impl Executable {
    /// This thread's loaded copy: the facade loads the program's module on this thread's
    /// client (from the compile cache, or compiling its bytecode when the cache cannot have it).
    fn loaded(&self, py: Python<'_>) -> PyResult<Rc<RefCell<ThreadExec>>> {
        let p = &self.program;
        if let Some(t) = LOADED.with_borrow(|m| m.get(&p.id).cloned()) {
            return Ok(t);
        }
        let session = session(py, &p.options)?;
        let compiled = session.load(p.lowered.clone()).map_err(|e| compile_error(py, &e))?;
        Ok(insert_loaded(p, session, compiled))
    }

    /// `args` (every graph input, in the graph's order; `len` of them) as the executable's
    /// arguments: the frozen ones dropped, the rest in the executable's input order.
    fn arguments<'a, 'py>(&'a self, py: Python<'py>, args: impl Iterator<Item = Bound<'py, PyAny>>, len: usize, dt: &'a torch::Dtypes) -> PyResult<TorchArgs<'a, 'py>> {
        let p = &self.program;
        if len != p.caller.len() {
            return Err(PyValueError::new_err(format!("graph `{}` takes {} inputs, got {len}", p.lowered.graph, p.caller.len())));
        }
        let missing = || error(py, Class::Execution, "internal: an executable input has no graph input");
        if p.in_order {
            let tensors = args.enumerate().collect();
            return Ok(TorchArgs { tensors, dt, layouts: &p.layouts, raised: RefCell::new(None) });
        }
        let mut tensors: Vec<Option<(usize, Bound<'py, PyAny>)>> = (0..p.passed).map(|_| None).collect();
        for (graph_position, (input, t)) in p.caller.iter().zip(args).enumerate() {
            if let Some(slot) = input.position.and_then(|i| tensors.get_mut(i)) {
                *slot = Some((graph_position, t));
            }
        }
        let tensors = tensors.into_iter().collect::<Option<_>>().ok_or_else(missing)?;
        Ok(TorchArgs { tensors, dt, layouts: &p.layouts, raised: RefCell::new(None) })
    }

    /// Runs the graph on `len` tensors in the graph's input order: [`Executable::run`] and
    /// `__call__`.
    fn call<'py>(&self, py: Python<'py>, args: impl Iterator<Item = Bound<'py, PyAny>>, len: usize) -> PyResult<Bound<'py, PyList>> {
        let p = &self.program;
        let dt = dtypes(py)?;
        let args = self.arguments(py, args, len, dt)?;
        let state = self.loaded(py)?;
        let mut st = state.borrow_mut();
        let st = &mut *st;
        let raise = |e: fxhlo::Error| args.raised.borrow_mut().take().unwrap_or_else(|| call_error(py, &e));
        // The facade's call path: uploads what the device does not hold, then runs.
        let call = st.compiled.prepare(&st.session, &mut st.resident, &args).map_err(raise)?;
        // An atomic add costs about what a clock read does: counters that did not move are
        // left alone, and only some calls are timed (the first ones, then every 16th).
        for (counter, n) in [
            (&p.weight_uploads, call.weight_uploads),
            (&p.input_uploads, call.input_uploads),
            (&p.weight_shares, call.weight_shares),
            (&p.input_shares, call.input_shares),
            (&p.views_reused, call.views_reused),
        ] {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
        let calls = p.calls.load(Ordering::Relaxed);
        let start = (calls < 4 || calls.is_multiple_of(16)).then(Instant::now);
        let outputs = if st.last_run >= RELEASE_GIL_AFTER {
            let call = SameThread(call);
            // A method call, so the closure captures the whole wrapper, not its fields.
            py.detach(move || SameThread(call.into_inner().execute())).into_inner()
        } else {
            call.execute()
        }
        .map_err(raise)?;
        if let Some(start) = start {
            st.last_run = start.elapsed();
        }
        p.calls.fetch_add(1, Ordering::Relaxed);
        outputs_to_torch(py, dt, outputs, st.session.client().memory_kind(0))
    }
}

#[pymethods]
impl Executable {
    /// Runs the graph on `args` (torch tensors in the graph's input order) and returns its
    /// outputs as new contiguous CPU tensors.
    fn run<'py>(&self, py: Python<'py>, args: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        self.call(py, args.iter(), args.len())
    }

    /// Counters since compilation: `calls`, `weight_uploads` (parameters, buffers and
    /// constants sent to the device: once each unless PyTorch's version counter says the
    /// tensor changed), `input_uploads` (user inputs copied to the device, one per input per
    /// call), and the same two given to the device as views of the tensor's own memory instead
    /// of copies: `weight_shares`, `input_shares`; and `views_reused`, the inputs shared through
    /// the view the call before made of the same memory (no new view).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let p = &self.program;
        d.set_item("calls", p.calls.load(Ordering::Relaxed))?;
        d.set_item("weight_uploads", p.weight_uploads.load(Ordering::Relaxed))?;
        d.set_item("input_uploads", p.input_uploads.load(Ordering::Relaxed))?;
        d.set_item("weight_shares", p.weight_shares.load(Ordering::Relaxed))?;
        d.set_item("input_shares", p.input_shares.load(Ordering::Relaxed))?;
        d.set_item("views_reused", p.views_reused.load(Ordering::Relaxed))?;
        Ok(d)
    }

    /// Seconds spent getting this executable, per native stage: `import_s` (the trace read
    /// into the IR), `lower_s` (cache key, passes, codegen), `load_s` (the PJRT compile, or
    /// loading from the cache), `cached` (`"memory"`, `"disk"`, or None when compiled), and
    /// `passes`: one dict per pass of `lower`, in order (`name`, `s`, `changed`,
    /// `nodes_before`, `nodes_after`, `summary`: the pass's own account or None; `eqsat` gives
    /// its e-graph's size, stop reason and the rules that fired).
    #[getter]
    fn stages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.program.stages;
        let d = PyDict::new(py);
        d.set_item("import_s", s.import_s)?;
        d.set_item("lower_s", s.lower_s)?;
        d.set_item("load_s", s.load_s)?;
        d.set_item("cached", s.cached)?;
        let passes = PyList::empty(py);
        for run in &self.program.lowered.passes {
            let p = PyDict::new(py);
            p.set_item("name", run.pass)?;
            p.set_item("s", run.time.as_secs_f64())?;
            p.set_item("changed", run.changed)?;
            p.set_item("nodes_before", run.nodes_before)?;
            p.set_item("nodes_after", run.nodes_after)?;
            p.set_item("summary", run.summary.as_deref())?;
            passes.append(p)?;
        }
        d.set_item("passes", passes)?;
        Ok(d)
    }

    /// The StableHLO module that was compiled (large constants elided).
    #[getter]
    fn mlir(&self) -> &str {
        &self.program.lowered.mlir
    }

    /// The device it runs on (`cpu`, `cuda`, `tpu`).
    #[getter]
    fn device(&self) -> String {
        self.program.options.device.to_string()
    }

    /// The names of the executable's parameters whose values were bound when it was compiled
    /// (frozen weights over `LARGE_CONSTANT_ELEMENTS` elements, which `hoist-large-constants`
    /// passes as parameters instead of constants): uploaded once per thread, never passed.
    #[getter]
    fn bound(&self) -> Vec<String> {
        self.program.lowered.inputs.iter().filter(|s| s.value.is_some()).map(|s| s.name.clone()).collect()
    }

    /// The graph's inputs in calling order: `(name, how)`, `how` being `"input"` (uploaded
    /// every call), `"resident"` (a weight kept on the device) or `"frozen"` (compiled in).
    #[getter]
    fn inputs(&self) -> Vec<(String, &'static str)> {
        let how = |a: &CallerInput| match (a.position, a.resident) {
            (None, _) => "frozen",
            (Some(_), true) => "resident",
            (Some(_), false) => "input",
        };
        self.program.caller.iter().map(|a| (a.name.clone(), how(a))).collect()
    }

    /// Times, measured in Rust on this executable, of the raw PJRT work of one call over
    /// `iters` calls with `args`: `execute_ns` (run on inputs already on the device and wait),
    /// `upload_ns` (every input from host bytes), `download_ns` (every output into preallocated
    /// host memory), `upload_execute_ns` (upload, run: the PJRT work of a call whose outputs
    /// are handed over without a copy, as on the CPU plugin) and `roundtrip_ns` (upload, run,
    /// download). Medians in nanoseconds. The reference for fxhlo's per-call
    /// overhead: a Python call costs this plus what the bridge adds.
    fn bench_raw<'py>(&self, py: Python<'py>, args: &Bound<'py, PyList>, iters: usize) -> PyResult<Bound<'py, PyDict>> {
        let dt = dtypes(py)?;
        let args = self.arguments(py, args.iter(), args.len(), dt)?;
        let state = self.loaded(py)?;
        let st = state.borrow();
        let c = &st.compiled;
        let client = st.session.client();
        let rt = |e: fxhlo::Error| args.raised.borrow_mut().take().unwrap_or_else(|| call_error(py, &e));
        let views = c.inputs.iter().enumerate().map(|(i, sig)| args.view(i, sig)).collect::<fxhlo::Result<Vec<_>>>().map_err(rt)?;
        // Every input in the layout the device takes, as host bytes read once here.
        let views = views
            .iter()
            .zip(&c.inputs)
            .map(|(a, sig)| a.view.clone().in_layout(sig.layout.as_deref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| rt(e.into()))?;
        let upload = || -> fxhlo::Result<Vec<DeviceBuffer>> { views.iter().map(|v| Ok(client.upload_view_to(0, v)?)).collect() };
        let run = |bufs: &[DeviceBuffer]| -> fxhlo::Result<Vec<DeviceBuffer>> {
            Ok(c.executable.run(&c.parameters(&bufs.iter().collect::<Vec<_>>(), 0)?)?)
        };
        let bufs = upload().map_err(rt)?;
        let first = run(&bufs).map_err(rt)?;
        let mut sinks: Vec<Vec<u8>> = first.iter().map(|b| b.byte_size().map(|n| vec![0u8; n])).collect::<Result<_, _>>().map_err(|e| rt(e.into()))?;
        let iters = iters.max(1);
        // The median time of `iters` runs of `f`, in nanoseconds.
        let median = |f: &mut dyn FnMut() -> fxhlo::Result<()>| -> PyResult<u128> {
            let mut times = Vec::with_capacity(iters);
            for _ in 0..iters {
                let start = Instant::now();
                f().map_err(rt)?;
                times.push(start.elapsed().as_nanos());
            }
            times.sort_unstable();
            Ok(times[times.len() / 2])
        };
        let execute = median(&mut || run(&bufs).map(drop))?;
        let uploads = median(&mut || upload().map(drop))?;
        let downloads = median(&mut || Ok(first.iter().zip(sinks.iter_mut()).try_for_each(|(o, sink)| o.copy_into(sink))?))?;
        let upload_execute = median(&mut || run(&upload()?).map(drop))?;
        let roundtrip = median(&mut || {
            let outs = run(&upload()?)?;
            Ok(outs.iter().zip(sinks.iter_mut()).try_for_each(|(o, sink)| o.copy_into(sink))?)
        })?;
        let d = PyDict::new(py);
        d.set_item("execute_ns", execute)?;
        d.set_item("upload_ns", uploads)?;
        d.set_item("download_ns", downloads)?;
        d.set_item("upload_execute_ns", upload_execute)?;
        d.set_item("roundtrip_ns", roundtrip)?;
        Ok(d)
    }
}

/// A call's outputs as torch tensors: in `memory` torch can address (host memory on the CPU
/// plugin, CUDA memory on the CUDA plugin) the tensor adopts the PJRT buffer (DLPack, no copy);
/// elsewhere (a TPU) each is copied into a fresh CPU `torch.empty` tensor.
fn outputs_to_torch<'py>(py: Python<'py>, dt: &torch::Dtypes, outputs: Vec<DeviceBuffer>, memory: Option<MemoryKind>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let rt = |e: fxhlo::runtime::Error| call_error(py, &e.into());
    for out in outputs {
        let (element, dims) = (out.element_type(), SmallVec::<[i64; 6]>::from_slice(out.dims()));
        let len = out.byte_size().map_err(rt)?;
        let out = if len > 0 {
            match out.into_shared(memory).map_err(rt)? {
                Ok(host) => {
                    let capsule = dlpack::capsule(py, host, element, &dims)?;
                    list.append(dt.from_dlpack.bind(py).call1((capsule,))?)?;
                    continue;
                }
                Err(out) => out,
            }
        } else {
            out
        };
        let kwargs = PyDict::new(py);
        kwargs.set_item(pyo3::intern!(py, "dtype"), dt.torch(element).bind(py))?;
        let tensor = dt.torch_empty.bind(py).call((PyTuple::new(py, &dims)?,), Some(&kwargs))?;
        if len > 0 {
            let ptr = data_ptr(&tensor)?;
            // SAFETY: `tensor` is a fresh contiguous CPU tensor of exactly `len` bytes that
            // nothing else references yet.
            let dst = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
            out.copy_into(dst).map_err(rt)?;
        }
        list.append(tensor)?;
    }
    Ok(list)
}

/// An [`Executable`] called with the graph's inputs as positional arguments, as Dynamo calls a
/// compiled graph: what `torch.compile` calls when nothing needs doing around the executable
/// (`fxhlo.graph_capture._direct`), so that no Python frame runs between Dynamo and Rust.
/// It keeps `graph` (the `fxhlo.backend.CompiledGraph` it comes from) alive with it.
#[pyclass(frozen, module = "fxhlo._native")]
struct PositionalCall {
    executable: Py<Executable>,
    #[pyo3(get)]
    graph: Py<PyAny>,
}

#[pymethods]
impl PositionalCall {
    #[new]
    fn new(executable: Py<Executable>, graph: Py<PyAny>) -> PositionalCall {
        PositionalCall { executable, graph }
    }

    #[pyo3(signature = (*args))]
    fn __call__<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyList>> {
        self.executable.get().call(py, args.iter(), args.len())
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        // Frees this thread's copy now; copies on other threads go when those threads end.
        let id = self.program.id;
        let _ = LOADED.try_with(|m| m.borrow_mut().remove(&id));
    }
}

/// The names of every registered pass (what `options={"passes": [...]}` may name).
#[pyfunction]
fn pass_names() -> Vec<&'static str> {
    fxhlo::passes::PASSES.iter().map(|p| p.name()).collect()
}

/// The passes `opt_level` runs, in order, for `device` (`cpu`, `cuda`, `tpu`, `tpu:v6e:2x2`):
/// what an ablation starts from (`options={"passes": [...]}` without one of them).
#[pyfunction]
#[pyo3(signature = (opt_level, device = "cpu"))]
fn pipeline_names(opt_level: u8, device: &str) -> PyResult<Vec<&'static str>> {
    let target: fxhlo::runtime::TargetName = device.parse().map_err(|e: fxhlo::runtime::Error| PyValueError::new_err(e.to_string()))?;
    Ok(fxhlo::passes::pipeline(opt_level, fxhlo::pass_target(target.device)).iter().map(|p| p.name()).collect())
}

/// A dump filter (`all`, or a comma list of stage and pass names) checked and written in its
/// normal form; `ValueError` naming the valid names otherwise.
#[pyfunction]
fn dump_filter(filter: &str) -> PyResult<String> {
    fxhlo::DumpFilter::parse(filter).map(|f| f.to_string()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The dump configuration of `dump` (a filter) and `dump_dir` (a folder); `None` when neither
/// is given (then the session's, from `FXHLO_DUMP`, applies).
fn dump_config(dump: Option<&str>, dump_dir: Option<PathBuf>) -> PyResult<Option<fxhlo::DumpConfig>> {
    if dump.is_none() && dump_dir.is_none() {
        return Ok(None);
    }
    fxhlo::DumpConfig::new(dump.unwrap_or("all"), dump_dir).map(Some).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Compiles a trace (the exporter's JSON, `origin` naming it in errors) with `options`, the
/// JSON of [`fxhlo::Options`] (`{"device": "cpu", "check_indices": false}`; the backend builds
/// it from `torch.compile(..., options={...})`); with `dump` (a filter: `all`, or stage and
/// pass names) and `dump_dir`, each stage's output is written under that folder (see
/// docs/dumps.md; neither: `FXHLO_DUMP` decides). `frozen` maps input names to the tensors
/// compiled in as constants (`freeze`); those inputs are then ignored by `run`. With
/// `check_indices`, `run` raises `IndexError` when an index was out of range.
#[pyfunction]
#[pyo3(signature = (trace, origin, options = "{}", dump = None, frozen = None, dump_dir = None))]
fn compile(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    origin: &str,
    options: &str,
    dump: Option<&str>,
    frozen: Option<&Bound<'_, PyDict>>,
    dump_dir: Option<PathBuf>,
) -> PyResult<Executable> {
    let options = fxhlo::Options::from_json(options).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let dump = dump_config(dump, dump_dir)?;
    let session = session(py, &options)?;
    let values = frozen_values(frozen)?;
    let from_env = session.dump_config().cloned();
    let start = Instant::now();
    let (graph, dump) = import(py, trace, origin, dump.as_ref().or(from_env.as_ref()))?;
    let import_s = start.elapsed().as_secs_f64();
    let compiled = session.compile(&graph, &values, dump.as_ref()).map_err(|e| compile_error(py, &e))?;
    // What the caller passes: every graph input, in the graph's order; the executable takes
    // the unfrozen ones, which the compile kept in that order.
    let mut positions = compiled.inputs.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect::<HashMap<_, _>>();
    let caller = graph
        .inputs()
        .iter()
        .map(|&id| {
            let node = graph.node(id);
            let resident = !matches!(&node.op, fxhlo::ir::Op::Input { kind: fxhlo::ir::InputKind::UserInput, .. });
            let position = if values.contains_key(&*node.name) { None } else { positions.remove(&*node.name) };
            CallerInput { name: node.name.to_string(), position, resident }
        })
        .collect::<Vec<_>>();
    let passed = caller.iter().filter(|c| c.position.is_some()).count();
    if passed != compiled.inputs.len() {
        return Err(error(
            py,
            Class::Compile,
            &format!("internal: graph `{}` has {passed} unfrozen inputs but compiled to {}", graph.name, compiled.inputs.len()),
        ));
    }
    let program = Arc::new(Program {
        id: NEXT_PROGRAM.fetch_add(1, Ordering::Relaxed),
        options,
        lowered: compiled.lowered.clone(),
        in_order: caller.iter().enumerate().all(|(i, c)| c.position == Some(i)),
        layouts: compiled.inputs.iter().map(|sig| torch::DenseLayout::of(py, sig)).collect::<PyResult<_>>()?,
        caller,
        passed,
        stages: Stages {
            import_s,
            lower_s: compiled.codegen_time.as_secs_f64(),
            load_s: compiled.compile_time.as_secs_f64(),
            cached: compiled.cached.map(fxhlo::Tier::name),
        },
        calls: AtomicU64::new(0),
        weight_uploads: AtomicU64::new(0),
        input_uploads: AtomicU64::new(0),
        weight_shares: AtomicU64::new(0),
        input_shares: AtomicU64::new(0),
        views_reused: AtomicU64::new(0),
    });
    insert_loaded(&program, session, compiled);
    Ok(Executable { program })
}

/// Imports `trace`: the exporter's trace dict, read straight into the schema, or a trace file's
/// bytes (JSON or bincode). With `dump`, a trace that fails to import, one that does not fit
/// the schema included, is dumped (`fxhlo::import_failed`) and the error says where.
fn import(py: Python<'_>, trace: &Bound<'_, PyAny>, origin: &str, dump: Option<&fxhlo::DumpConfig>) -> PyResult<(fxhlo::ir::Graph, Option<fxhlo::Dump>)> {
    let start = Instant::now();
    let imported = match trace.cast::<pyo3::types::PyBytes>() {
        Ok(bytes) => fxhlo::import_trace(bytes.as_bytes(), origin.as_ref(), dump),
        Err(_) => match pytrace::from_py::<fxhlo::frontend::schema::Trace>(trace) {
            Ok(parsed) => fxhlo::import_parsed(&parsed, origin.as_ref(), dump, start),
            Err(e) => {
                let e = fxhlo::Error::Schema { origin: origin.into(), message: e.to_string() };
                // With dumping on, the objects as JSON (what JSON cannot hold as its repr) go
                // where a trace file that fails to import goes, with the error and the command.
                Err(match dump {
                    Some(config) => fxhlo::import_failed(config, pytrace::to_json(trace).as_bytes(), origin.as_ref(), e),
                    None => e,
                })
            }
        },
    };
    imported.map_err(|e| compile_error(py, &e))
}

/// The bytes of each frozen tensor (input name -> tensor), copied out of PyTorch.
fn frozen_values(frozen: Option<&Bound<'_, PyDict>>) -> PyResult<fxhlo::Frozen> {
    let mut values = fxhlo::Frozen::new();
    if let Some(frozen) = frozen {
        for (name, t) in frozen.iter() {
            let name: String = name.extract()?;
            let mut dense = t.clone();
            if !dense.getattr("is_cpu")?.is_truthy()? {
                dense = dense.call_method0("cpu")?;
            }
            dense = dense.call_method0("contiguous")?;
            // Shared, not copied: a 50M-parameter model's weights are 200 MB.
            values.insert(name, fxhlo::ir::TensorData::new(torch::TensorBytes::new(&dense)?));
        }
    }
    Ok(values)
}

/// Writes the dump of a graph the exporter refused (an `ExportError`: no trace exists) when
/// dumping is on (`dump`, `dump_dir` as for [`compile`]; neither: `FXHLO_DUMP`): `files` (name,
/// text: the FX graph, its nodes) and `error` (the message and traceback) into
/// `<dump-dir>/<graph>-<digest8>/` with `error.txt` and the report. Returns the folder, or
/// None when dumping is off.
#[pyfunction]
#[pyo3(signature = (graph, files, error, dump = None, dump_dir = None))]
fn dump_export_failure(graph: &str, files: Vec<(String, String)>, error: &str, dump: Option<&str>, dump_dir: Option<PathBuf>) -> PyResult<Option<String>> {
    let config = match dump_config(dump, dump_dir)? {
        Some(config) => config,
        None => match fxhlo::DumpConfig::from_env().map_err(|e| PyValueError::new_err(e.to_string()))? {
            Some(config) => config,
            None => return Ok(None),
        },
    };
    let files: Vec<(&str, &[u8])> = files.iter().map(|(name, text)| (name.as_str(), text.as_bytes())).collect();
    let dir = fxhlo::export_failed(&config, graph, &files, error).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    Ok(Some(dir.display().to_string()))
}

/// Compiles a trace ahead of time for the target in `options` (`{"device": "tpu:v6e:2x2"}`)
/// through the compile cache, in a worker process started as `worker` (program and arguments;
/// `fxhlo/_aot_worker.py` under this interpreter), so that a crash of the target's compiler
/// raises `CompileError` instead of ending this process. Returns a dict: `graph`, `target`,
/// `key` (hex), `size` (bytes of the executable), `seconds`, `cached` (`"memory"`, `"disk"`
/// or None when compiled now) and, when compiled now, `cost` (XLA's cost analysis, a dict).
#[pyfunction]
#[pyo3(signature = (trace, origin, options, worker, dump = None, frozen = None, dump_dir = None))]
#[allow(clippy::too_many_arguments)]
fn compile_ahead_of_time<'py>(
    py: Python<'py>,
    trace: &Bound<'py, PyAny>,
    origin: &str,
    options: &str,
    worker: Vec<String>,
    dump: Option<&str>,
    frozen: Option<&Bound<'py, PyDict>>,
    dump_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let options =
        fxhlo::Options::from_json(options).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let dump = dump_config(dump, dump_dir)?;
    let Some((program, args)) = worker.split_first() else {
        return Err(PyValueError::new_err(
            "worker: give the program and its arguments",
        ));
    };
    let worker = fxhlo::aot::Worker {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
    };
    let values = frozen_values(frozen)?;
    let env = state::plugin_env(py, options.device.device)?;
    let target = options.device.to_string();
    let from_env = fxhlo::DumpConfig::from_env().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (graph, dump) = import(py, trace, origin, dump.as_ref().or(from_env.as_ref()))?;
    let compiled = py
        .detach(|| fxhlo::aot::compile(&graph, &values, dump.as_ref(), options, &env, &worker, false))
        .map_err(|e| compile_error(py, &e))?
        .1;
    let d = PyDict::new(py);
    d.set_item("graph", &compiled.graph)?;
    d.set_item("target", target)?;
    d.set_item("key", compiled.key.hex())?;
    d.set_item("size", compiled.bytes.len())?;
    d.set_item("seconds", compiled.compile_time.as_secs_f64())?;
    let cached = compiled.cached.map(fxhlo::Tier::name);
    d.set_item("cached", cached)?;
    if let Some(cost) = &compiled.cost {
        let c = PyDict::new(py);
        for (k, v) in &cost.properties {
            c.set_item(k, v)?;
        }
        d.set_item("cost", c)?;
    }
    Ok(d)
}

/// The ahead-of-time worker (`fxhlo/_aot_worker.py` calls this with its arguments): the same
/// code as `fxhlo aot-worker`. Returns the process exit status.
#[pyfunction]
fn aot_worker(args: Vec<String>) -> i32 {
    fxhlo::aot::worker_main(&args)
}

/// The process's compile cache counters (`fxhlo.cache_stats()`): `compiles` (PJRT compiles
/// done because the cache missed), `memory_hits`, `disk_hits`, `misses_by_reason` (a dict),
/// `bytes_on_disk`, `entries_on_disk`, and `dir` and `mode`.
#[pyfunction]
fn cache_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let cache = fxhlo::CompileCache::global();
    let s = cache.stats();
    let d = PyDict::new(py);
    d.set_item("compiles", s.compiles)?;
    d.set_item("memory_hits", s.memory_hits)?;
    d.set_item("disk_hits", s.disk_hits)?;
    let misses = PyDict::new(py);
    for (reason, n) in &s.misses_by_reason {
        misses.set_item(reason, n)?;
    }
    d.set_item("misses_by_reason", misses)?;
    d.set_item("bytes_on_disk", s.bytes_on_disk)?;
    d.set_item("entries_on_disk", s.entries_on_disk)?;
    d.set_item("dir", cache.config().dir.as_ref().map(|p| p.display().to_string()))?;
    let mode = match cache.config().mode {
        fxhlo::CacheMode::ReadWrite => "read-write",
        fxhlo::CacheMode::ReadOnly => "read-only",
        fxhlo::CacheMode::Off => "off",
    };
    d.set_item("mode", mode)?;
    Ok(d)
}

/// The Python module `fxhlo._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // fxhlo's own warnings (an unusable cache entry, a cache folder that cannot be written)
    // reach stderr as in the CLI; `FXHLO_LOG` chooses the level (default `warn`; `info` shows
    // why each compile missed the cache). Another subscriber set by the host process wins.
    let filter = tracing_subscriber::EnvFilter::try_from_env("FXHLO_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    m.add_class::<Executable>()?;
    m.add_class::<PositionalCall>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(pass_names, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline_names, m)?)?;
    m.add_function(wrap_pyfunction!(dump_filter, m)?)?;
    m.add_function(wrap_pyfunction!(dump_export_failure, m)?)?;
    m.add_function(wrap_pyfunction!(compile_ahead_of_time, m)?)?;
    m.add_function(wrap_pyfunction!(aot_worker, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The highest `opt_level` (the backend checks options against it).
    m.add("MAX_OPT_LEVEL", fxhlo::passes::MAX_OPT_LEVEL)?;
    // The level used when none is given (`-O2`, the e-graph, is opt-in).
    m.add("DEFAULT_OPT_LEVEL", fxhlo::passes::DEFAULT_OPT_LEVEL)?;
    Ok(())
}

//! The thread-bound half of compiling and running: a [`Session`] holds one PJRT client for one
//! device (PJRT clients in `pjrt` 0.2 are `Rc`-based: not `Send`), gets executables through
//! the one compile orchestration ([`crate::compile`]) and loads them ([`Compiled`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fxhlo_ir::Graph;
use fxhlo_runtime::{Client, CompileOptions, DeviceBuffer, EnvConfig, Executable, HostView, Target};

use crate::cache::{plugin_identity, target_id, topology_target_id, CacheKey, CompileCache};
use crate::call::{split_bound, Compiled};
use crate::compile::{get_or_compile, Compiler, Origin};
use crate::dump::{Dump, DumpConfig};
use crate::pipeline::{Frozen, InputSignature, Lowered, Options, Pipeline};
use crate::tensor::element_type;
use crate::{Error, Result};

/// One PJRT client for one device, and the pipeline that feeds it. Not `Send`: PJRT clients
/// in `pjrt` 0.2 are `Rc`-based, so a session lives on the thread that created it (one per
/// thread and device); what crosses threads is the [`Pipeline`], the [`Lowered`] module and
/// the [`CompileCache`].
pub struct Session {
    pipeline: Pipeline,
    target: Target,
    client: Client,
    cache: Arc<CompileCache>,
    /// What to dump of each graph compiled (`FXHLO_DUMP`, or [`Session::set_dump`]).
    dump: Option<DumpConfig>,
    /// The cache key's target field for this client (see [`Session::target_id`]).
    target_id: String,
}

impl Session {
    /// Finds the plugin for `options.device` and creates its client. A `tpu` device fails at
    /// once where the machine has no TPU.
    pub fn new(options: Options) -> Result<Session> {
        Session::new_in(options, &EnvConfig::from_env())
    }

    /// [`Session::new`] with explicit settings instead of the process environment (the
    /// Python extension adds the running interpreter's environment to the plugin search).
    pub fn new_in(options: Options, env: &EnvConfig) -> Result<Session> {
        Session::with_cache(options, env, CompileCache::global())
    }

    /// [`Session::new_in`] with its own compile cache instead of the process's.
    pub fn with_cache(options: Options, env: &EnvConfig, cache: Arc<CompileCache>) -> Result<Session> {
        options.check()?;
        let dump = DumpConfig::from_env()?;
        if options.device.is_ahead_of_time() {
            return Err(Error::Options(format!(
                "device `{}` is a topology to compile for ahead of time, with no device to run on here: \
                 compile with fxhlo::aot (`fxhlo compile <bundle> --target {}`)",
                options.device, options.device
            )));
        }
        let target = Target::resolve_in(options.device.device, env)?;
        let client = Client::with_devices(&target, env, options.devices())?;
        tracing::info!(device = %options.device, platform = %client.platform_name(), "PJRT client ready");
        let target_id = client_target_id(&target, &client);
        Ok(Session { pipeline: Pipeline::new(options), target, client, cache, dump, target_id })
    }

    /// What this session dumps of each graph it compiles (from `FXHLO_DUMP` unless set).
    pub fn dump_config(&self) -> Option<&DumpConfig> {
        self.dump.as_ref()
    }

    /// Dumps each graph compiled from now on as `dump` says (`None`: no dumps).
    pub fn set_dump(&mut self, dump: Option<DumpConfig>) {
        self.dump = dump;
    }

    /// The compile cache this session reads and fills.
    pub fn cache(&self) -> &Arc<CompileCache> {
        &self.cache
    }

    /// This session's target as the cache key names it. On a TPU, what the client's topology
    /// description says and the plugin's identity ([`topology_target_id`]): the same fields,
    /// read the same way, as an ahead-of-time compile for that topology keys its executable
    /// with, so a TPU VM starts warm from a cache filled on another machine. On other devices,
    /// the plugin's platform name and version as PJRT reports them, and the device count.
    pub fn target_id(&self) -> String {
        self.target_id.clone()
    }

    /// The key of `graph` (as imported) compiled by this session with `frozen` inputs.
    pub fn key(&self, graph: &Graph, frozen: &Frozen) -> CacheKey {
        self.pipeline.key(graph, frozen, &self.target_id())
    }

    /// The options this session compiles with.
    pub fn options(&self) -> &Options {
        self.pipeline.options()
    }

    /// The device-free pipeline this session compiles with.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The target (device and plugin) in use.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The PJRT client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs the pass pipeline on a copy of `graph`, lowers it to StableHLO and gets its
    /// executable: from the compile cache, or compiled (and cached) on a miss. Inputs named in
    /// `frozen` (parameters, usually) become constants of the executable, holding the given
    /// bytes, and are not inputs of [`Compiled`]: XLA may fold them, and later changes to the
    /// tensors they came from are not seen. The stages are written to `dump` when given (see
    /// [`Dump`]: the IR, StableHLO, XLA's own dump of the HLO it compiled, the report with the
    /// cache's hit or miss), else as [`Session::dump_config`] says. A failure of a pass, of
    /// codegen or of the PJRT compiler comes with a reproduction ([`Error::Reproducible`]).
    pub fn compile(&self, graph: &Graph, frozen: &Frozen, dump: Option<&Dump>) -> Result<Compiled> {
        let own = match dump {
            Some(_) => None,
            None => self.dump.as_ref().map(|c| Dump::new(c.clone(), &graph.name)),
        };
        let dump = dump.or(own.as_ref());
        let start = Instant::now();
        let lowered = self.pipeline.lower(graph, frozen, dump, &self.target_id())?;
        let codegen_time = start.elapsed();
        let origin = Origin { graph, frozen, options: self.options() };
        self.obtain(Arc::new(lowered), Some(origin), dump, codegen_time)
    }

    /// The executable of a module lowered elsewhere (by this pipeline on another thread, say):
    /// from the compile cache, or compiled again from its bytecode on a miss (an executable
    /// the plugin could not serialize is never in the cache).
    pub fn load(&self, lowered: Arc<Lowered>) -> Result<Compiled> {
        let here = self.target_id();
        if lowered.key.target != here {
            return Err(Error::Input(format!(
                "graph `{}` was lowered for `{}`, but this session's target is `{here}`",
                lowered.graph, lowered.key.target
            )));
        }
        self.obtain(lowered, None, None, Duration::ZERO)
    }

    /// The one way to an executable on this session's client.
    fn obtain(&self, lowered: Arc<Lowered>, origin: Option<Origin<'_>>, dump: Option<&Dump>, codegen_time: Duration) -> Result<Compiled> {
        let compiler = ClientCompiler { client: &self.client, devices: self.options().devices() };
        let got = get_or_compile(&compiler, &self.cache, &lowered, origin, dump, false)?;
        let (inputs, bound) = split_bound(lowered.inputs.clone());
        let bound_buffers = (0..self.options().devices())
            .map(|d| upload_bound(&self.client, &bound, d))
            .collect::<Result<_>>()?;
        tracing::info!(graph = %lowered.graph, ?codegen_time, compile_time = ?got.time, cached = ?got.cached, bound = bound.len(), "compiled");
        let mut executable = got.output;
        executable.set_may_donate(may_donate(&lowered.mlir));
        // The IR's shapes are static, so are the module's results.
        executable.set_static_outputs(true);
        Ok(Compiled {
            lowered,
            executable,
            inputs,
            bound,
            bound_buffers,
            cached: got.cached,
            codegen_time,
            compile_time: got.time,
            calls: Default::default(),
        })
    }
}

/// Whether a module may mark a parameter donated (its attributes `tf.aliasing_output`,
/// `jax.buffer_donor`). Codegen marks none, so a run need not name every argument non-donatable;
/// a module that does keeps the list (none of the caller's buffers is consumed).
fn may_donate(mlir: &str) -> bool {
    mlir.contains("tf.aliasing_output") || mlir.contains("jax.buffer_donor") || mlir.contains("mhlo.input_output_alias")
}

/// The cache key's target field for `client` (see [`Session::target_id`]). A TPU plugin that
/// cannot describe its topology keys as other devices do (with a warning): its entries then
/// miss ahead-of-time ones, and nothing else changes. The CPU plugin's executables are code for
/// this machine's CPU, so its target names the CPU's extensions
/// ([`fxhlo_runtime::host::cpu_features`]); a CUDA client's names its devices' kinds where the
/// plugin describes them (the GPU model decides the code too).
fn client_target_id(target: &Target, client: &Client) -> String {
    use fxhlo_runtime::DeviceKind;
    if target.device == DeviceKind::Tpu {
        match client.topology() {
            Ok(topology) => return topology_target_id(target.device, &plugin_identity(&target.plugin), &topology),
            Err(e) => tracing::warn!("fxhlo cache: {e}; keying without the topology, so executables compiled ahead of time are not found"),
        }
    }
    let id = target_id(&client.platform_name(), &client.platform_version(), client.addressable_device_count(), target.topology.as_deref());
    match target.device {
        DeviceKind::Cpu => format!("{id}; host {}", fxhlo_runtime::host::cpu_features()),
        DeviceKind::Cuda => match client.topology() {
            Ok(t) if !t.device_kinds.is_empty() => format!("{id}; {}", t.device_kinds.join(", ")),
            _ => id,
        },
        DeviceKind::Tpu => id,
    }
}

/// A PJRT client as the [`Compiler`] of a session's misses.
struct ClientCompiler<'a> {
    client: &'a Client,
    devices: usize,
}

impl Compiler for ClientCompiler<'_> {
    type Output = Executable;

    fn load(&self, bytes: &[u8]) -> Result<Executable> {
        Ok(self.client.load_serialized(bytes)?)
    }

    fn compile(&self, lowered: &Lowered, xla_dump_to: Option<&Path>) -> Result<(Executable, crate::compile::Serialized)> {
        let options = CompileOptions { xla_dump_to: xla_dump_to.map(Path::to_path_buf), ..CompileOptions::partitioned(self.devices) };
        let executable = self.client.compile_with_options(lowered.program(), &options)?;
        let bytes = executable.serialize().map_err(|e| e.to_string());
        Ok((executable, bytes))
    }

    fn rejected(&self, error: &Error) -> bool {
        matches!(error, Error::Runtime(r) if matches!(**r, fxhlo_runtime::Error::Compile { .. }))
    }
}

/// Uploads the values of `bound` parameters (from [`split_bound`]) to the addressable device
/// `device` of `client`, in order: done once per client, when compiled or loaded.
fn upload_bound(client: &Client, bound: &[(usize, InputSignature)], device: usize) -> Result<Vec<DeviceBuffer>> {
    bound
        .iter()
        .map(|(_, sig)| {
            let bytes = sig.value.as_ref().and_then(|v| v.bytes()).ok_or_else(|| {
                Error::Input(format!(
                    "input `{}` is bound to a value whose bytes are not here (a graph read from IR text): \
                     compile from the bundle or trace instead",
                    sig.name
                ))
            })?;
            let view = HostView::dense(element_type(sig.ty.dtype), sig.ty.shape.to_vec(), bytes).in_layout(sig.layout.as_deref())?;
            Ok(client.upload_view_to(device, &view)?)
        })
        .collect()
}

/// Imports a trace (the exporter's JSON or its bincode encoding, told apart by their first
/// bytes; `origin` names it in errors) and, with a dump configuration, makes the graph's
/// [`Dump`] holding the trace and the import's time. What every caller with a trace starts
/// with, before [`Session::compile`] or [`crate::aot::compile`]. With a dump configuration, a
/// trace that fails to import is dumped ([`crate::dump::import_failed`]) and the error says
/// where.
pub fn import_trace(trace: &[u8], origin: &Path, dump: Option<&DumpConfig>) -> Result<(Graph, Option<Dump>)> {
    import_trace_undumped(trace, origin, dump).map_err(|e| match dump {
        Some(config) => crate::dump::import_failed(config, trace, origin, e),
        None => e,
    })
}

/// [`import_trace`] without the dump of a failure.
fn import_trace_undumped(trace: &[u8], origin: &Path, dump: Option<&DumpConfig>) -> Result<(Graph, Option<Dump>)> {
    let start = Instant::now();
    if !trace.starts_with(fxhlo_frontend::encoding::MAGIC) {
        return import_parsed_undumped(&fxhlo_frontend::parse_json(trace, origin)?, origin, dump, start);
    }
    let view = fxhlo_frontend::parse_bin_view(trace, origin)?;
    let graph = fxhlo_frontend::import::import_view(&view, origin)?;
    let import_time = start.elapsed();
    let dump = match dump {
        // Dumps are for reading: the trace is written as its JSON.
        Some(config) => {
            let text = fxhlo_frontend::to_json(&fxhlo_frontend::parse_bin(trace, origin)?);
            Some(Dump::new(config.clone(), &graph.name).with_trace(text.into_bytes(), import_time))
        }
        None => None,
    };
    Ok((graph, dump))
}

/// [`import_trace`] of a trace already read into the schema (the Python bridge reads the
/// exporter's objects straight into it); `start` is when reading it began.
pub fn import_parsed(trace: &fxhlo_frontend::schema::Trace, origin: &Path, dump: Option<&DumpConfig>, start: Instant) -> Result<(Graph, Option<Dump>)> {
    import_parsed_undumped(trace, origin, dump, start).map_err(|e| match dump {
        Some(config) => crate::dump::import_failed(config, fxhlo_frontend::to_json(trace).as_bytes(), origin, e),
        None => e,
    })
}

/// Opens a trace bundle (a folder or a trace file, see [`fxhlo_frontend::Bundle::open`]);
/// with a dump configuration, one whose trace fails to import (or whose weights do not fit
/// it) is dumped as [`import_trace`] dumps a failure, and the error says where.
pub fn open_bundle(path: &Path, dump: Option<&DumpConfig>) -> Result<fxhlo_frontend::Bundle> {
    fxhlo_frontend::Bundle::open(path).map_err(|e| {
        let e = Error::from(e);
        match (dump, crate::dump::trace_of_bundle(path)) {
            (Some(config), Some((file, bytes))) => crate::dump::import_failed(config, &bytes, &file, e),
            _ => e,
        }
    })
}

/// [`import_parsed`] without the dump of a failure.
fn import_parsed_undumped(trace: &fxhlo_frontend::schema::Trace, origin: &Path, dump: Option<&DumpConfig>, start: Instant) -> Result<(Graph, Option<Dump>)> {
    let graph = fxhlo_frontend::import::import(trace, origin)?;
    let import_time = start.elapsed();
    let dump = dump.map(|config| Dump::new(config.clone(), &graph.name).with_trace(fxhlo_frontend::to_json(trace).into_bytes(), import_time));
    Ok((graph, dump))
}

#[cfg(test)]
mod tests {
    use super::may_donate;

    #[test]
    fn a_module_that_marks_a_parameter_donated_may_donate() {
        let plain = "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {";
        assert!(!may_donate(plain));
        for attr in ["tf.aliasing_output = 0 : i32", "jax.buffer_donor = true", "mhlo.input_output_alias = []"] {
            assert!(may_donate(&format!("func.func @main(%arg0: tensor<4xf32> {{{attr}}}) -> tensor<4xf32> {{")), "{attr}");
        }
    }
}

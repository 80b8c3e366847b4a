//! The thread-bound half of compiling and running: a [`Session`] holds one PJRT client for one
//! device (PJRT clients in `pjrt` 0.2 are `Rc`-based: not `Send`), gets executables from the
//! [`CompileCache`] or compiles what the [`Pipeline`] lowered, and runs them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fxhlo_frontend::Bundle;
use fxhlo_ir::Graph;
use fxhlo_runtime::{Client, CompileOptions, DeviceBuffer, EnvConfig, Executable, HostTensor, Program, Target};

use crate::cache::{target_id, CacheKey, CompileCache, Tier};
use crate::dump::{Dump, DumpConfig};
use crate::pipeline::{Checks, Frozen, InputSignature, Lowered, Options, Pipeline};
use crate::resident::{ResidentWeights, WeightStamp};
use crate::tensor::{element_type, host_tensor};
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
        Ok(Session { pipeline: Pipeline::new(options), target, client, cache, dump })
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

    /// This session's target as the cache key names it: the plugin's platform name and
    /// version as PJRT reports them, and the device count.
    pub fn target_id(&self) -> String {
        let c = &self.client;
        target_id(&c.platform_name(), &c.platform_version(), c.addressable_device_count(), self.target.topology.as_deref())
    }

    /// The key of `graph` (as imported) compiled by this session with `frozen` inputs.
    pub fn key(&self, graph: &Graph, frozen: &Frozen) -> CacheKey {
        self.pipeline.key(graph, frozen, &self.target_id())
    }

    /// The executable of `key` from the cache, or `mlir` compiled (and cached) on a miss; with
    /// where it came from (`None`: compiled). With `FXHLO_ERROR_ON_COMPILE` a miss is an error.
    pub fn executable<'p>(&self, graph: &str, key: &CacheKey, program: impl Into<Program<'p>>) -> Result<(Executable, Option<Tier>)> {
        self.executable_dumped(graph, key, program, None)
    }

    /// [`Session::executable`], with XLA dumping what it compiles into `xla_dump_to` (the
    /// options XLA gets are its defaults otherwise: the executable is the same).
    fn executable_dumped<'p>(&self, graph: &str, key: &CacheKey, program: impl Into<Program<'p>>, xla_dump_to: Option<&Path>) -> Result<(Executable, Option<Tier>)> {
        if let Some((bytes, tier)) = self.cache.get(key) {
            match self.client.load_serialized(&bytes) {
                Ok(exe) => return Ok((exe, Some(tier))),
                Err(e) => {
                    tracing::warn!(graph, "fxhlo cache: the plugin cannot load the cached executable ({e}); compiling again");
                    self.cache.forget(key);
                }
            }
        }
        if self.cache.config().error_on_compile {
            let (_, detail) = self.cache.explain_miss(key);
            return Err(Error::CompileRefused { graph: graph.to_string(), detail });
        }
        let options = CompileOptions {
            xla_dump_to: xla_dump_to.map(Path::to_path_buf),
            ..CompileOptions::partitioned(self.pipeline.options().devices())
        };
        let executable = self.client.compile_with_options(program, &options)?;
        self.cache.count_compile();
        match executable.serialize() {
            Ok(bytes) => self.cache.put(key, bytes),
            Err(e) => tracing::warn!(graph, "fxhlo cache: the plugin cannot serialize this executable ({e}); not cached"),
        }
        Ok((executable, None))
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

    /// Runs the pass pipeline on a copy of `graph`, lowers it to StableHLO and compiles it;
    /// dumped as [`Session::dump_config`] says.
    pub fn compile(&self, graph: &Graph) -> Result<Compiled> {
        self.compile_frozen(graph, &Frozen::new())
    }

    /// [`Session::compile`] with the inputs named in `frozen` compiled in as constants (see
    /// [`Session::compile_dumped`]).
    pub fn compile_frozen(&self, graph: &Graph, frozen: &Frozen) -> Result<Compiled> {
        let dump = self.dump.as_ref().map(|c| Dump::new(c.clone(), &graph.name));
        self.compile_dumped(graph, dump.as_ref(), frozen)
    }

    /// Parses a JSON trace (`origin` names it in errors), imports it and compiles it, dumped
    /// as `dump` says (else as [`Session::dump_config`] says), the trace included. Inputs
    /// named in `frozen` are compiled in as constants (see [`Session::compile_dumped`]).
    pub fn compile_json(
        &self,
        json: &[u8],
        origin: &Path,
        dump: Option<&DumpConfig>,
        frozen: &Frozen,
    ) -> Result<(Graph, Compiled)> {
        let (graph, dump) = import_json(json, origin, dump.or(self.dump.as_ref()))?;
        let compiled = self.compile_dumped(&graph, dump.as_ref(), frozen)?;
        Ok((graph, compiled))
    }

    /// [`Session::compile`], writing the stages to `dump` when given (see [`Dump`]): the IR
    /// and StableHLO, XLA's own dump of the HLO it compiled, and the report with the cache's
    /// hit or miss. Inputs named in `frozen` (parameters, usually) become constants of the
    /// executable, holding the given bytes, and are not inputs of [`Compiled`]: XLA may fold
    /// them, and later changes to the tensors they came from are not seen. A failure of the
    /// PJRT compiler comes with a reproduction ([`Error::Reproducible`]), dump or not.
    pub fn compile_dumped(&self, graph: &Graph, dump: Option<&Dump>, frozen: &Frozen) -> Result<Compiled> {
        let start = Instant::now();
        let lowered = self.pipeline.lower(graph, frozen, dump, &self.target_id())?;
        let codegen_time = start.elapsed();
        let start = Instant::now();
        let xla_dir = match dump {
            Some(d) => d.xla_dir()?,
            None => None,
        };
        // Why the cache misses, asked before the compile fills it (only for the report).
        let miss = dump.map(|_| self.cache.explain_miss(&lowered.key).1);
        let result = self.executable_dumped(&graph.name, &lowered.key, lowered.program(), xla_dir.as_deref()).map_err(|e| {
            let compiler = matches!(&e, Error::Runtime(r) if matches!(**r, fxhlo_runtime::Error::Compile { .. }));
            if !compiler {
                return e;
            }
            let root = dump.map(|d| d.config().dir.as_path());
            crate::repro::wrap(e, crate::repro::Failed::Compile { mlir: &lowered.mlir }, graph, self.options(), &lowered.key, frozen, root)
        });
        let compile_time = start.elapsed();
        if let (Some(d), Ok((_, cached))) = (dump, &result) {
            let outcome = match (cached, miss) {
                (Some(tier), _) => format!("hit ({} tier): XLA did not compile, so it dumped nothing", tier.name()),
                (None, Some(why)) => format!("miss: {why}"),
                (None, None) => "miss".to_string(),
            };
            if let (Some(dir), Some(_)) = (&xla_dir, cached) {
                // Nothing was compiled: leave no empty folder behind.
                let _ = std::fs::remove_dir(dir);
            }
            d.executable(outcome, compile_time, xla_dir.as_deref().filter(|_| cached.is_none()))?;
        }
        crate::dump::finish(dump, &result)?;
        let (executable, cached) = result?;
        let Lowered { mlir, key, inputs, checks, .. } = lowered;
        let (inputs, bound) = split_bound(inputs);
        let bound_buffers = (0..self.options().devices())
            .map(|d| upload_bound(&self.client, &bound, d))
            .collect::<Result<_>>()?;
        tracing::info!(graph = %graph.name, ?codegen_time, ?compile_time, ?cached, bound = bound.len(), "compiled");
        Ok(Compiled {
            graph: graph.name.clone(),
            executable,
            mlir,
            inputs,
            bound,
            bound_buffers,
            checks,
            key,
            cached,
            codegen_time,
            compile_time,
        })
    }
}

/// Splits an executable's parameters into the caller's inputs and the bound ones (those with
/// a [`InputSignature::value`]), each bound one with its position among the parameters.
pub fn split_bound(parameters: Vec<InputSignature>) -> (Vec<InputSignature>, Vec<(usize, InputSignature)>) {
    let mut inputs = Vec::with_capacity(parameters.len());
    let mut bound = Vec::new();
    for (i, p) in parameters.into_iter().enumerate() {
        match p.value {
            Some(_) => bound.push((i, p)),
            None => inputs.push(p),
        }
    }
    (inputs, bound)
}

/// Uploads the values of `bound` parameters (from [`split_bound`]) to the addressable device
/// `device` of `client`, in order: done once per client, when compiled or loaded.
pub fn upload_bound(client: &Client, bound: &[(usize, InputSignature)], device: usize) -> Result<Vec<DeviceBuffer>> {
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
            let dims = sig.ty.shape.to_vec();
            Ok(client.upload_bytes_permuted_to(device, element_type(sig.ty.dtype), &dims, bytes, sig.layout.as_deref())?)
        })
        .collect()
}

/// The executable's parameters in order: `caller`'s in their order, with each bound `(position,
/// value)` placed at its position (positions ascending, as [`split_bound`] gives them).
pub fn with_bound<T: Copy>(caller: &[T], bound: impl IntoIterator<Item = (usize, T)>) -> Vec<T> {
    let mut out = Vec::with_capacity(caller.len());
    let mut caller = caller.iter();
    for (position, b) in bound {
        while out.len() < position {
            match caller.next() {
                Some(c) => out.push(*c),
                None => break,
            }
        }
        out.push(b);
    }
    out.extend(caller);
    out
}

/// A compiled graph: the PJRT executable, the StableHLO it came from and its signature.
pub struct Compiled {
    /// The graph's name (for errors).
    pub graph: String,
    pub executable: Executable,
    /// The StableHLO module text that was compiled (large constants elided: see
    /// [`Lowered::mlir`]).
    pub mlir: String,
    /// The inputs the caller passes, in calling order.
    pub inputs: Vec<InputSignature>,
    /// The executable's parameters whose values the compile bound (large frozen weights the
    /// `hoist-large-constants` pass made parameters), with their positions among its
    /// parameters. The values are kept (shared, not copied) for a client that loads the
    /// executable later.
    pub bound: Vec<(usize, InputSignature)>,
    /// The bound values on the device, one list per device: uploaded once, when compiled.
    pub bound_buffers: Vec<Vec<DeviceBuffer>>,
    /// The index checks that follow the graph's outputs (empty without `check_indices`).
    pub checks: Checks,
    /// The compile cache's key of this executable.
    pub key: CacheKey,
    /// Where the executable came from: `None` when PJRT compiled it, else the cache tier.
    pub cached: Option<Tier>,
    /// Time spent in codegen (IR → MLIR text).
    pub codegen_time: Duration,
    /// Time spent in the PJRT compiler, or loading the executable from the cache.
    pub compile_time: Duration,
}

impl Compiled {
    /// Runs on host tensors given in calling order (every input of [`Compiled::inputs`],
    /// weights included; not the bound ones); checks each against the signature first.
    pub fn run(&self, session: &Session, args: &[HostTensor]) -> Result<Vec<HostTensor>> {
        let unkept: Vec<(&HostTensor, Option<WeightStamp>)> = args.iter().map(|a| (a, None)).collect();
        self.run_resident(session, &mut ResidentWeights::new(args.len()), &unkept)
    }

    /// [`Compiled::run`] keeping weights on the device: each argument comes with the
    /// [`WeightStamp`] of the tensor it was read from (`None`: a user input, or a weight without
    /// a version, uploaded every call). A weight whose stamp matches what `weights` holds for
    /// it is not uploaded again. The stamps' identities are the caller's to choose: the
    /// address of a tensor it keeps alive while `weights` lives, for instance.
    pub fn run_resident(
        &self,
        session: &Session,
        weights: &mut ResidentWeights,
        args: &[(&HostTensor, Option<WeightStamp>)],
    ) -> Result<Vec<HostTensor>> {
        if args.len() != self.inputs.len() {
            return Err(Error::Input(format!(
                "expected {} inputs, got {}",
                self.inputs.len(),
                args.len()
            )));
        }
        for (sig, (arg, _)) in self.inputs.iter().zip(args) {
            let want = element_type(sig.ty.dtype);
            if arg.element_type != want || arg.dims != sig.ty.shape {
                return Err(Error::Input(format!(
                    "input `{}` expects {} but got {:?}{:?}",
                    sig.name, sig.ty, arg.element_type, arg.dims
                )));
            }
        }
        let devices = session.options().devices();
        if devices > 1 {
            let args: Vec<&HostTensor> = args.iter().map(|(a, _)| *a).collect();
            return self.run_partitioned(session, &args, devices);
        }
        let mut fresh: Vec<Option<DeviceBuffer>> = Vec::with_capacity(args.len());
        for (i, (sig, (arg, stamp))) in self.inputs.iter().zip(args).enumerate() {
            if weights.hit(i, *stamp).is_some() {
                fresh.push(None);
                continue;
            }
            let buffer = session.client().upload_permuted(arg, sig.layout.as_deref())?;
            match stamp {
                Some(stamp) => {
                    weights.keep(i, *stamp, buffer, Box::new(()));
                    fresh.push(None);
                }
                None => fresh.push(Some(buffer)),
            }
        }
        let refs = fresh
            .iter()
            .enumerate()
            .map(|(i, f)| f.as_ref().or(weights.buffer(i)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Input("internal: an input has no device buffer".into()))?;
        let outputs = self.executable.run(&self.with_bound(&refs, 0)?)?;
        self.to_host(&outputs)
    }

    /// The executable's parameters on `device`: the caller's buffers with the bound ones.
    fn with_bound<'b>(&'b self, caller: &[&'b DeviceBuffer], device: usize) -> Result<Vec<&'b DeviceBuffer>> {
        let bound = self.bound_buffers.get(device).map(Vec::as_slice).unwrap_or_default();
        if bound.len() != self.bound.len() {
            return Err(Error::Input(format!("internal: device {device} holds {} of {} bound inputs", bound.len(), self.bound.len())));
        }
        Ok(with_bound(caller, self.bound.iter().map(|(p, _)| *p).zip(bound)))
    }

    /// The outputs copied to the host, with the index checks taken off (an error if one
    /// failed).
    fn to_host(&self, outputs: &[DeviceBuffer]) -> Result<Vec<HostTensor>> {
        let mut outputs: Vec<HostTensor> = outputs
            .iter()
            .map(|b| b.to_host().map_err(Error::from))
            .collect::<Result<_>>()?;
        self.checks.strip(&self.graph, &mut outputs, |t| {
            Ok(t.bytes.iter().any(|&b| b != 0))
        })?;
        Ok(outputs)
    }

    /// A tensor-parallel run over `devices`: device `d` gets the `d`-th slice of each split
    /// input (uploaded as a strided view of the host tensor, no copy on the host) and all of
    /// the others; the results are replicated, so device 0's are returned. Weights are uploaded
    /// on every call (no residency across devices yet).
    fn run_partitioned(
        &self,
        session: &Session,
        args: &[&HostTensor],
        devices: usize,
    ) -> Result<Vec<HostTensor>> {
        let client = session.client();
        let mut per_device: Vec<Vec<DeviceBuffer>> = (0..devices)
            .map(|_| Vec::with_capacity(args.len()))
            .collect();
        for (sig, arg) in self.inputs.iter().zip(args) {
            for (d, list) in per_device.iter_mut().enumerate() {
                let buffer = match sig.split {
                    Some(dim) => client.upload_shard_to(d, arg, dim, devices, d)?,
                    None => client.upload_permuted_to(d, arg, sig.layout.as_deref())?,
                };
                list.push(buffer);
            }
        }
        let refs = per_device
            .iter()
            .enumerate()
            .map(|(d, l)| self.with_bound(&l.iter().collect::<Vec<_>>(), d))
            .collect::<Result<Vec<_>>>()?;
        let outputs = self.executable.run_partitioned(&refs)?;
        let first = outputs.into_iter().next().unwrap_or_default();
        self.to_host(&first)
    }

    /// Runs with inputs from a bundle: weights from `weights.safetensors`, user inputs from the
    /// reference file (`input.<name>`).
    pub fn run_bundle(&self, session: &Session, bundle: &Bundle) -> Result<Vec<HostTensor>> {
        let mut args = Vec::with_capacity(self.inputs.len());
        for sig in &self.inputs {
            let view = match &sig.weight {
                Some(key) => bundle.weights.as_ref().and_then(|w| w.get(key)),
                None => bundle.reference.as_ref().and_then(|r| r.get(&format!("input.{}", sig.name))),
            };
            let view = view.ok_or_else(|| {
                Error::Input(format!(
                    "{}: no tensor for input `{}` (user inputs come from reference.safetensors as `input.{}`)",
                    bundle.dir.display(),
                    sig.name,
                    sig.name
                ))
            })?;
            args.push(host_tensor(&view)?);
        }
        self.run(session, &args)
    }
}

/// Imports a trace (the exporter's JSON; `origin` names it in errors) and, with a dump
/// configuration, makes the graph's [`Dump`] holding the trace and the import's time.
pub(crate) fn import_json(
    json: &[u8],
    origin: &Path,
    dump: Option<&DumpConfig>,
) -> Result<(Graph, Option<Dump>)> {
    let start = Instant::now();
    let trace = fxhlo_frontend::parse_json(json, origin)?;
    let graph = fxhlo_frontend::import::import(&trace, origin)?;
    let dump = dump.map(|config| Dump::new(config.clone(), &graph.name).with_trace(json.to_vec(), start.elapsed()));
    Ok((graph, dump))
}

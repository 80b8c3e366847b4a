//! The thread-bound half of compiling and running: a [`Session`] holds one PJRT client for one
//! device (PJRT clients in `pjrt` 0.2 are `Rc`-based: not `Send`), gets executables from the
//! [`CompileCache`] or compiles what the [`Pipeline`] lowered, and runs them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fxhlo_frontend::Bundle;
use fxhlo_ir::Graph;
use fxhlo_runtime::{Program, 
    Client, CompileOptions, DeviceBuffer, EnvConfig, Executable, HostTensor, Target,
};

use crate::cache::{target_id, CacheKey, CompileCache, Tier};
use crate::dump::Dump;
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
        Ok(Session { pipeline: Pipeline::new(options), target, client, cache })
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
        let partitions = CompileOptions::partitioned(self.pipeline.options().devices());
        let executable = self.client.compile_with_options(program, &partitions)?;
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

    /// Runs the pass pipeline on a copy of `graph`, lowers it to StableHLO and compiles it.
    pub fn compile(&self, graph: &Graph) -> Result<Compiled> {
        self.compile_dumped(graph, None, &Frozen::new())
    }

    /// Parses a JSON trace (`origin` names it in errors), imports it and compiles it; with
    /// `dump`, each stage's output goes under that folder (see [`Dump`]). Inputs named in
    /// `frozen` are compiled in as constants (see [`Session::compile_dumped`]).
    pub fn compile_json(
        &self,
        json: &[u8],
        origin: &Path,
        dump: Option<&Path>,
        frozen: &Frozen,
    ) -> Result<(Graph, Compiled)> {
        let (graph, dump) = import_json(json, origin, dump)?;
        let compiled = self.compile_dumped(&graph, dump.as_ref(), frozen)?;
        Ok((graph, compiled))
    }

    /// [`Session::compile`], writing the IR and StableHLO stages to `dump` when given. Inputs
    /// named in `frozen` (parameters, usually) become constants of the executable, holding the
    /// given bytes, and are not inputs of [`Compiled`]: XLA may fold them, and later changes
    /// to the tensors they came from are not seen.
    pub fn compile_dumped(&self, graph: &Graph, dump: Option<&Dump>, frozen: &Frozen) -> Result<Compiled> {
        let start = Instant::now();
        let lowered = self.pipeline.lower(graph, frozen, dump, &self.target_id())?;
        let codegen_time = start.elapsed();
        let start = Instant::now();
        let (executable, cached) = self.executable(&graph.name, &lowered.key, lowered.program())?;
        let Lowered { mlir, key, inputs, checks, .. } = lowered;
        let compile_time = start.elapsed();
        tracing::info!(graph = %graph.name, ?codegen_time, ?compile_time, ?cached, "compiled");
        Ok(Compiled { graph: graph.name.clone(), executable, mlir, inputs, checks, key, cached, codegen_time, compile_time })
    }
}

/// A compiled graph: the PJRT executable, the StableHLO it came from and its signature.
pub struct Compiled {
    /// The graph's name (for errors).
    pub graph: String,
    pub executable: Executable,
    /// The StableHLO module text that was compiled (large constants elided: see
    /// [`Lowered::mlir`]).
    pub mlir: String,
    /// Inputs in calling order.
    pub inputs: Vec<InputSignature>,
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
    /// Runs on host tensors given in calling order (every input, weights included); checks
    /// each against the signature first.
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
        let outputs = self.executable.run(&refs)?;
        self.to_host(&outputs)
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
        let refs: Vec<Vec<&DeviceBuffer>> = per_device.iter().map(|l| l.iter().collect()).collect();
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

/// Imports a trace (the exporter's JSON; `origin` names it in errors) and, with a `dump`
/// root, opens the graph's dump folder with the trace as its first stage.
pub(crate) fn import_json(
    json: &[u8],
    origin: &Path,
    dump: Option<&Path>,
) -> Result<(Graph, Option<Dump>)> {
    let trace = fxhlo_frontend::parse_json(json, origin)?;
    let graph = fxhlo_frontend::import::import(&trace, origin)?;
    let dump = match dump {
        Some(root) => {
            let d = Dump::create(root, &graph.name, &fxhlo_ir::print(&graph))?;
            d.write(0, "trace", "json", json)?;
            Some(d)
        }
        None => None,
    };
    Ok((graph, dump))
}

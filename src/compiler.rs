//! The compiler: options, a PJRT client for one target, and compile = passes → codegen →
//! PJRT compile.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fxhlo_frontend::Bundle;
use fxhlo_ir::{Graph, InputKind, Op, TensorType};
use fxhlo_passes::PassManager;
use fxhlo_runtime::{Client, DeviceBuffer, DeviceKind, EnvConfig, Executable, HostTensor, Target};

use crate::cache::{target_id, CacheKey, CompileCache, Tier};
use crate::dump::Dump;
pub use fxhlo_codegen::Frozen;
use crate::tensor::{element_type, host_tensor};
use crate::{Error, Result};

/// Compile options. The defaults compile for the CPU plugin with the default pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The device to compile for and run on.
    pub device: DeviceKind,
    /// Report out-of-range indices of `embedding`, `index`, `gather`, ... as
    /// [`Error::IndexOutOfRange`] after each run (the `check-indices` pass), instead of letting
    /// the device clamp them silently as XLA does. Off by default: it costs a reduction per
    /// index tensor.
    pub check_indices: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { device: DeviceKind::Cpu, check_indices: false }
    }
}

impl Options {
    /// Everything in these options that changes the executable, as stable text: part of the
    /// cache key (dump settings and logging are not options, so they never are).
    pub fn fingerprint(&self) -> String {
        let passes: Vec<&str> = fxhlo_passes::default_pipeline().iter().map(|p| p.name()).collect();
        format!("device={} check_indices={} passes=[{}]", self.device, self.check_indices, passes.join(","))
    }
}

/// A compiler bound to one PJRT client. Not `Send`: PJRT clients in `pjrt` 0.2 are `Rc`-based,
/// so a compiler lives on the thread that created it.
pub struct Compiler {
    options: Options,
    target: Target,
    client: Client,
    cache: Arc<CompileCache>,
}

impl Compiler {
    /// Finds the plugin for `options.device` and creates its client. A `tpu` device fails at
    /// once where the machine has no TPU.
    pub fn new(options: Options) -> Result<Compiler> {
        Compiler::new_in(options, &EnvConfig::from_env())
    }

    /// [`Compiler::new`] with explicit settings instead of the process environment (the
    /// Python extension adds the running interpreter's environment to the plugin search).
    pub fn new_in(options: Options, env: &EnvConfig) -> Result<Compiler> {
        Compiler::with_cache(options, env, CompileCache::global())
    }

    /// [`Compiler::new_in`] with its own compile cache instead of the process's.
    pub fn with_cache(options: Options, env: &EnvConfig, cache: Arc<CompileCache>) -> Result<Compiler> {
        let target = Target::resolve_in(options.device, env)?;
        let client = Client::new_in(&target, env)?;
        tracing::info!(device = %options.device, platform = %client.platform_name(), "PJRT client ready");
        Ok(Compiler { options, target, client, cache })
    }

    /// The compile cache this compiler reads and fills.
    pub fn cache(&self) -> &Arc<CompileCache> {
        &self.cache
    }

    /// The key of `graph` (as imported) compiled by this compiler with `frozen` inputs.
    pub fn key(&self, graph: &Graph, frozen: &Frozen) -> CacheKey {
        let c = &self.client;
        let target = target_id(&c.platform_name(), &c.platform_version(), c.addressable_device_count(), self.target.topology.as_deref());
        CacheKey::new(graph, &self.options, frozen, target)
    }

    /// The executable of `key` from the cache, or `mlir` compiled (and cached) on a miss; with
    /// where it came from (`None`: compiled). With `FXHLO_ERROR_ON_COMPILE` a miss is an error.
    pub fn executable(&self, graph: &str, key: &CacheKey, mlir: &str) -> Result<(Executable, Option<Tier>)> {
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
        let executable = self.client.compile(mlir)?;
        self.cache.count_compile();
        match executable.serialize() {
            Ok(bytes) => self.cache.put(key, bytes),
            Err(e) => tracing::warn!(graph, "fxhlo cache: the plugin cannot serialize this executable ({e}); not cached"),
        }
        Ok((executable, None))
    }

    /// The options this compiler was built with.
    pub fn options(&self) -> &Options {
        &self.options
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
    /// `frozen` are compiled in as constants (see [`Compiler::compile_dumped`]).
    pub fn compile_json(&self, json: &[u8], origin: &Path, dump: Option<&Path>, frozen: &Frozen) -> Result<(Graph, Compiled)> {
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
        let compiled = self.compile_dumped(&graph, dump.as_ref(), frozen)?;
        Ok((graph, compiled))
    }

    /// [`Compiler::compile`], writing the IR and StableHLO stages to `dump` when given. Inputs
    /// named in `frozen` (parameters, usually) become constants of the executable, holding the
    /// given bytes, and are not inputs of [`Compiled`]: XLA may fold them, and later changes
    /// to the tensors they came from are not seen.
    pub fn compile_dumped(&self, graph: &Graph, dump: Option<&Dump>, frozen: &Frozen) -> Result<Compiled> {
        let key = self.key(graph, frozen);
        if let Some(d) = dump {
            d.write_file("cache-key.json", key.to_json().as_bytes())?;
        }
        let start = Instant::now();
        let Lowered { mlir, inputs, checks } = lower(graph, dump, frozen, &self.options)?;
        let codegen_time = start.elapsed();
        let start = Instant::now();
        let (executable, cached) = self.executable(&graph.name, &key, &mlir)?;
        let compile_time = start.elapsed();
        tracing::info!(graph = %graph.name, ?codegen_time, ?compile_time, ?cached, "compiled");
        Ok(Compiled { graph: graph.name.clone(), executable, mlir, inputs, checks, key, cached, codegen_time, compile_time })
    }
}

/// A graph lowered for the device: the StableHLO module and its parameters in calling order.
#[derive(Debug, Clone)]
pub struct Lowered {
    /// The StableHLO module text.
    pub mlir: String,
    /// `@main`'s parameters, in calling order (frozen inputs are not among them).
    pub inputs: Vec<InputSignature>,
    /// With `check_indices`: the nodes whose index checks follow the graph's own outputs, one
    /// bool scalar output each, in this order (see [`Checks`]).
    pub checks: Checks,
}

/// The index checks a compiled graph returns after its own outputs (the `check-indices`
/// pass): the names of the nodes checked, in output order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks(pub Vec<String>);

impl Checks {
    /// Splits the check outputs off `outputs` (a run's results, read on the host by `read`)
    /// and fails with [`Error::IndexOutOfRange`] naming the first node whose check is true.
    pub fn strip<T>(&self, graph: &str, outputs: &mut Vec<T>, read: impl Fn(&T) -> Result<bool>) -> Result<()> {
        let n = outputs.len().checked_sub(self.0.len()).ok_or_else(|| {
            Error::Input(format!("graph `{graph}`: {} outputs, fewer than its {} index checks", outputs.len(), self.0.len()))
        })?;
        let checks = outputs.split_off(n);
        for (node, flag) in self.0.iter().zip(&checks) {
            if read(flag)? {
                return Err(Error::IndexOutOfRange { graph: graph.to_string(), node: node.clone() });
            }
        }
        Ok(())
    }
}

/// Runs the pass pipeline on a copy of `graph`, chooses the device layouts of its resident
/// weights and lowers it to StableHLO: everything [`Compiler::compile`] does before the PJRT
/// compiler, with no device needed (`fxhlo compile` prints it). With `dump`, the imported IR,
/// the IR after passes (if they changed it) and the module (or the lowering error) are written.
pub fn lower(graph: &Graph, dump: Option<&Dump>, frozen: &Frozen, options: &Options) -> Result<Lowered> {
    let imported = dump.map(|_| fxhlo_ir::print(graph));
    if let (Some(d), Some(text)) = (dump, &imported) {
        d.write(1, "import", "gir", text.as_bytes())?;
    }
    let mut optimized = graph.clone();
    let mut pipeline = fxhlo_passes::default_pipeline();
    if options.check_indices {
        // Last: it checks the indices of the graph that runs, after every other rewrite.
        pipeline.push(&fxhlo_passes::CheckIndices);
    }
    PassManager::new(pipeline).run(&mut optimized)?;
    let checks = Checks(
        optimized.outputs().get(graph.outputs().len()..).unwrap_or_default()
            .iter()
            .map(|v| {
                let name = &optimized.node(v.node).name;
                fxhlo_passes::checked_node(name).unwrap_or(name).to_string()
            })
            .collect(),
    );
    if let (Some(d), Some(text)) = (dump, &imported) {
        let after = fxhlo_ir::print(&optimized);
        if after != *text {
            d.write(2, "passes", "gir", after.as_bytes())?;
        }
    }
    for &id in graph.inputs() {
        let n = graph.node(id);
        if let Some(bytes) = frozen.get(&*n.name) {
            if bytes.len() != n.results[0].size_bytes() {
                return Err(Error::Input(format!(
                    "frozen input `{}` is {} but was given {} bytes",
                    n.name,
                    n.results[0],
                    bytes.len()
                )));
            }
        }
    }
    // Weights the device keeps get the layout its kernels want (see codegen::layout).
    let layouts = fxhlo_codegen::input_layouts(&optimized, |id| match &optimized.node(id).op {
        Op::Input { kind, .. } => *kind != InputKind::UserInput && !frozen.contains_key(&*optimized.node(id).name),
        _ => false,
    });
    let lowered = fxhlo_codegen::lower_with(&optimized, frozen, &layouts);
    if let (Some(d), Err(e)) = (dump, &lowered) {
        // The reason compilation stopped is part of what a reader of the dump wants.
        d.write(3, "stablehlo-error", "txt", e.to_string().as_bytes())?;
    }
    let mlir = lowered?;
    if let Some(d) = dump {
        d.write(3, "stablehlo", "mlir", mlir.as_bytes())?;
    }
    let inputs = optimized
        .inputs()
        .iter()
        .filter(|&&id| !frozen.contains_key(&*optimized.node(id).name))
        .map(|&id| {
            let n = optimized.node(id);
            let (kind, weight) = match &n.op {
                Op::Input { kind, weight } => (*kind, weight.clone()),
                _ => (InputKind::UserInput, None),
            };
            InputSignature { name: n.name.to_string(), kind, weight, ty: n.results[0].clone(), layout: layouts.get(&id).cloned() }
        })
        .collect();
    Ok(Lowered { mlir, inputs, checks })
}

/// One input of a compiled graph, in calling order.
#[derive(Debug, Clone)]
pub struct InputSignature {
    pub name: String,
    pub kind: InputKind,
    pub weight: Option<String>,
    /// The input's type as the graph sees it.
    pub ty: TensorType,
    /// When set, the executable takes this input permuted: pass `permute(layout)` of it (the
    /// device layout of a resident weight, see `codegen::layout`).
    pub layout: Option<Vec<usize>>,
}

/// A compiled graph: the PJRT executable, the StableHLO it came from and its signature.
pub struct Compiled {
    /// The graph's name (for errors).
    pub graph: String,
    pub executable: Executable,
    /// The StableHLO module text that was compiled.
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
    pub fn run(&self, compiler: &Compiler, args: &[HostTensor]) -> Result<Vec<HostTensor>> {
        if args.len() != self.inputs.len() {
            return Err(Error::Input(format!("expected {} inputs, got {}", self.inputs.len(), args.len())));
        }
        let mut buffers: Vec<DeviceBuffer> = Vec::with_capacity(args.len());
        for (sig, arg) in self.inputs.iter().zip(args) {
            let want = element_type(sig.ty.dtype);
            if arg.element_type != want || arg.dims != sig.ty.shape {
                return Err(Error::Input(format!(
                    "input `{}` expects {} but got {:?}{:?}",
                    sig.name, sig.ty, arg.element_type, arg.dims
                )));
            }
            match &sig.layout {
                Some(perm) => buffers.push(compiler.client().upload(&arg.permuted(perm)?)?),
                None => buffers.push(compiler.client().upload(arg)?),
            }
        }
        let refs: Vec<&DeviceBuffer> = buffers.iter().collect();
        let outputs = self.executable.run(&refs)?;
        let mut outputs: Vec<HostTensor> = outputs.iter().map(|b| b.to_host().map_err(Error::from)).collect::<Result<_>>()?;
        self.checks.strip(&self.graph, &mut outputs, |t| Ok(t.bytes.iter().any(|&b| b != 0)))?;
        Ok(outputs)
    }

    /// Runs with inputs from a bundle: weights from `weights.safetensors`, user inputs from the
    /// reference file (`input.<name>`).
    pub fn run_bundle(&self, compiler: &Compiler, bundle: &Bundle) -> Result<Vec<HostTensor>> {
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
        self.run(compiler, &args)
    }
}

//! The device-free half of compiling: [`Options`] and the [`Pipeline`] that turns an imported
//! graph into a [`Lowered`] module (passes, StableHLO) and its cache key.
//! `Send + Sync` and needs no PJRT client, so it can run on any thread, and (issue 12) for a
//! target that has no device here.

use std::collections::BTreeSet;

use fxhlo_ir::{Graph, InputKind, Op, TensorType};
use fxhlo_passes::{Pass, PassManager};
use fxhlo_runtime::TargetName;

use crate::cache::CacheKey;
use crate::dump::Dump;
use crate::sharding::TensorParallel;
use crate::{Error, Result};
/// Frozen inputs: the value (by input name) of each input compiled in as a constant by the
/// `freeze` pass instead of passed on every call. The bytes are shared, not copied (see
/// [`fxhlo_ir::TensorData`]).
pub type Frozen = std::collections::HashMap<String, fxhlo_ir::TensorData>;

/// Everything that changes the executable, one serde type for the CLI, the Rust API and Python
/// (which builds it from `torch.compile(..., options={...})` and hands it over as JSON). The
/// defaults compile for the CPU plugin with the default pipeline. Dump folders and logging are
/// not options: they never change the executable, so they are not part of the cache key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// The target to compile for (and run on): `cpu`, `cuda`, `tpu`, or `tpu:<topology>` such
    /// as `tpu:v6e:2x2` to compile ahead of time for TPU chips this machine does not have.
    pub device: TargetName,
    /// Report out-of-range indices of `embedding`, `index`, `gather`, ... as
    /// [`Error::IndexOutOfRange`] after each run (the `check-indices` pass), instead of letting
    /// the device clamp them silently as XLA does. Off by default: it costs a reduction per
    /// index tensor.
    pub check_indices: bool,
    /// Split the weights a plan names across devices and run the graph as one SPMD program
    /// over them (see [`TensorParallel`]); `None`: one device.
    pub tensor_parallel: Option<TensorParallel>,
    /// `0`: none of fxhlo's passes (XLA alone optimizes); `1` (the default): the pipeline of
    /// [`fxhlo_passes::pipeline`] for the target.
    pub opt_level: u8,
    /// Run exactly these passes, in this order, instead of the optimization level's pipeline
    /// (names from [`fxhlo_passes::PASSES`]; `check-indices` is still added by `check_indices`).
    pub passes: Option<Vec<String>>,
    /// Run only the first `n` passes of the pipeline: bisects a miscompile to one pass.
    pub max_passes: Option<usize>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            device: TargetName::default(),
            check_indices: false,
            tensor_parallel: None,
            opt_level: fxhlo_passes::DEFAULT_OPT_LEVEL,
            passes: None,
            max_passes: None,
        }
    }
}

/// The kind of target the pass pipeline is chosen for, for a device kind.
pub fn pass_target(device: fxhlo_runtime::DeviceKind) -> fxhlo_passes::Target {
    match device {
        fxhlo_runtime::DeviceKind::Cpu => fxhlo_passes::Target::Cpu,
        fxhlo_runtime::DeviceKind::Tpu => fxhlo_passes::Target::Tpu,
        fxhlo_runtime::DeviceKind::Cuda => fxhlo_passes::Target::Other,
    }
}

impl Options {
    /// Options from JSON (`{"device": "cpu", "check_indices": true}`; missing fields take
    /// their defaults); an unknown field or a bad value is an error naming it.
    pub fn from_json(text: &str) -> Result<Options> {
        let options: Options = serde_json::from_str(text).map_err(|e| Error::Options(e.to_string()))?;
        options.check()?;
        Ok(options)
    }

    /// Refuses settings no compile can honour: an optimization level past the highest, a pass
    /// name not in the registry (the error lists the valid ones).
    pub fn check(&self) -> Result<()> {
        for name in self.passes.iter().flatten() {
            fxhlo_passes::lookup(name).map_err(|e| Error::Options(e.to_string()))?;
        }
        if self.opt_level > fxhlo_passes::MAX_OPT_LEVEL {
            return Err(Error::Options(format!(
                "opt_level {} does not exist: 0 (XLA alone) to {} ({} is the default)",
                self.opt_level,
                fxhlo_passes::MAX_OPT_LEVEL,
                fxhlo_passes::DEFAULT_OPT_LEVEL
            )));
        }
        Ok(())
    }

    /// The passes these options run, in order: the pipeline of the optimization level for the
    /// target (or the `passes` named), cut to `max_passes`, then `check-indices` when
    /// asked (last: it checks the indices of the graph that runs, after every other rewrite).
    pub fn passes(&self) -> Vec<&'static dyn fxhlo_passes::Pass> {
        let target = pass_target(self.device.device);
        let mut passes = match &self.passes {
            // Unknown names are refused by `check` (`from_json`, `Pipeline::lower`).
            Some(names) => names.iter().filter_map(|n| fxhlo_passes::lookup(n).ok()).map(|p| fxhlo_passes::for_target(p, target.is_cpu())).collect(),
            None => fxhlo_passes::pipeline(self.opt_level, target),
        };
        if let Some(n) = self.max_passes {
            passes.truncate(n);
        }
        if self.check_indices {
            passes.push(&fxhlo_passes::CheckIndices);
        }
        passes
    }

    /// Everything in these options that changes the executable, as stable text: part of the
    /// cache key (dump settings and logging are not options, so they never are).
    pub fn fingerprint(&self) -> String {
        let tp = match &self.tensor_parallel {
            Some(tp) => serde_json::to_string(tp).unwrap_or_default(),
            None => "none".into(),
        };
        // The device kind only: a topology (`tpu:v6e:2x2`) is the key's target field, which a
        // TPU VM's client (`tpu`) describes alike, so both key one executable the same.
        format!(
            "device={} check_indices={} tensor_parallel={tp} {}",
            self.device.device,
            self.check_indices,
            passes_text(&self.passes())
        )
    }

    /// The devices one run of the executable uses: the tensor-parallel plan's, else 1.
    pub fn devices(&self) -> usize {
        self.tensor_parallel
            .as_ref()
            .map_or(1, |tp| tp.devices.max(1))
    }
}

/// A pass list as the fingerprint writes it: `passes=[a,b]`.
pub fn passes_text(passes: &[&'static dyn fxhlo_passes::Pass]) -> String {
    let names: Vec<&str> = passes.iter().map(|p| p.name()).collect();
    format!("passes=[{}]", names.join(","))
}

/// The device-free stages of a compile, for one [`Options`].
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    options: Options,
}

impl Pipeline {
    /// A pipeline compiling with `options`.
    pub fn new(options: Options) -> Pipeline {
        Pipeline { options }
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The cache key of `graph` (as imported) with `frozen` inputs for the target `target`
    /// (see [`crate::cache::target_id`]).
    pub fn key(&self, graph: &Graph, frozen: &Frozen, target: &str) -> CacheKey {
        CacheKey::new(graph, &self.options, frozen, target.to_string())
    }

    /// Runs the pass pipeline on a copy of `graph` (`freeze` first when inputs are frozen; the
    /// `device-layout` pass among them chooses the layouts of its resident weights) and lowers
    /// it to StableHLO, keyed for `target`: everything before the PJRT compiler, with no device
    /// needed (`fxhlo compile` prints it). With `dump`, the graph's dump folder is opened and
    /// each stage written as it happens (see [`Dump`]). A failure of a pass or of codegen comes
    /// with a reproduction ([`Error::Reproducible`]), dump or not; ops that do not lower yet
    /// do not (the error names them).
    pub fn lower(&self, graph: &Graph, frozen: &Frozen, dump: Option<&Dump>, target: &str) -> Result<Lowered> {
        // Options built in Rust skip `from_json`'s check: a misspelt pass must not be dropped.
        self.options.check()?;
        let key = self.key(graph, frozen, target);
        if let Some(d) = dump {
            d.open(&key)?;
        }
        let lowered = self.lower_keyed(graph, frozen, dump, key.clone()).map_err(|e| match e {
            // With dumping on, every failure gets its reproduction in the graph's dump folder.
            e if dump.is_some() => crate::repro::wrap(e, crate::repro::Failed::Lowering, graph, &self.options, &key, frozen, dump),
            // Ops fxhlo does not lower yet are named by the error itself (and are what Python's
            // eager fallback expects): no compiler failure to reproduce, so no folder.
            Error::Codegen(c) if matches!(*c, fxhlo_codegen::Error::Unsupported { .. }) => Error::Codegen(c),
            Error::Passes(_) | Error::Codegen(_) => {
                crate::repro::wrap(e, crate::repro::Failed::Lowering, graph, &self.options, &key, frozen, None)
            }
            other => other,
        });
        crate::dump::finish(dump, &lowered)?;
        lowered
    }

    /// [`Pipeline::lower`] once the key is known and the dump open.
    fn lower_keyed(&self, graph: &Graph, frozen: &Frozen, dump: Option<&Dump>, key: CacheKey) -> Result<Lowered> {
        if let Some(d) = dump {
            d.imported(graph)?;
        }
        let mut optimized = graph.clone();
        let device_layout = fxhlo_passes::DeviceLayout { keep: self.layout_kept(graph)? };
        let mut passes: Vec<&dyn Pass> = self
            .options
            .passes()
            .into_iter()
            .map(|p| if p.name() == device_layout.name() { &device_layout } else { p })
            .collect();
        if !frozen.is_empty() {
            bind_frozen(&mut optimized, frozen)?;
            // Asked for by the caller, at every level: it changes the executable's signature.
            passes.insert(0, &fxhlo_passes::Freeze);
        }
        // The dump writes the IR after each pass that changed it (passes write no files).
        let pass_runs = PassManager::new(passes).run_observed(&mut optimized, |run, g| match dump {
            Some(d) => d.pass(run, g),
            None => Ok(()),
        })?;
        let checks = Checks(
            optimized.outputs().get(graph.outputs().len()..).unwrap_or_default()
                .iter()
                .map(|v| {
                    let name = &optimized.node(v.node).name;
                    fxhlo_passes::checked_node(name).unwrap_or(name).to_string()
                })
                .collect(),
        );
        let shardings = match &self.options.tensor_parallel {
            Some(tp) => Some(tp.resolve(&optimized)?),
            None => None,
        };
        let split = |id| shardings.as_ref().and_then(|s| s.split.get(&id).copied());
        // PJRT gets MLIR bytecode: no text to parse, and the constants that stay (frozen
        // weights at -O0) are copied from their bytes, never formatted as text (session 7: 43.5 s
        // against 4.6 s for 50M weights). The text is for reading (dumps, the signature).
        let start = std::time::Instant::now();
        let fxhlo_codegen::Module { text: mlir, bytecode } =
            fxhlo_codegen::lower_module(&optimized, shardings.as_ref(), Some(BYTECODE_VERSION))?;
        if let Some(d) = dump {
            d.stablehlo(&mlir, start.elapsed())?;
        }
        // `@main`'s parameters as the device takes them (each input's declared type, in its
        // layout): the runtime checks every run against them.
        let signature = fxhlo_runtime::Signature::of_tensors(optimized.inputs().iter().map(|&id| {
            let ty = &optimized.node(id).results[0];
            (crate::tensor::element_type(ty.dtype), ty.shape.to_vec())
        }));
        let inputs = optimized
            .inputs()
            .iter()
            .map(|&id| {
                let n = optimized.node(id);
                let (kind, weight, layout) = match &n.op {
                    Op::Input { kind, weight, layout } => (*kind, weight.clone(), layout.clone()),
                    _ => (InputKind::UserInput, None, None),
                };
                // The node has the declared type; the caller passes the logical one.
                let ty = match &layout {
                    Some(perm) => fxhlo_ir::layout::logical(&n.results[0], perm),
                    None => n.results[0].clone(),
                };
                let value = optimized.input_value(id).cloned();
                InputSignature { name: n.name.to_string(), kind, weight, ty, layout, split: split(id), value }
            })
            .collect();
        Ok(Lowered { graph: graph.name.clone(), mlir, bytecode, inputs, checks, key, signature, passes: pass_runs })
    }

    /// The inputs of `graph` the `device-layout` pass must leave in their logical layout,
    /// whatever their uses: the weights the tensor-parallel plan splits (a shard must stay a
    /// plain slice of the host tensor; the plan names weights, so it is resolved on the graph
    /// as imported, whose inputs the passes keep). Frozen inputs need no entry: `freeze` runs
    /// first, and they are constants by then.
    fn layout_kept(&self, graph: &Graph) -> Result<BTreeSet<String>> {
        let mut keep = BTreeSet::new();
        if let Some(tp) = &self.options.tensor_parallel {
            keep.extend(tp.resolve(graph)?.split.keys().map(|&id| graph.node(id).name.to_string()));
        }
        Ok(keep)
    }
}

/// The MLIR bytecode version fxhlo writes: one the PJRT plugins' MLIR reads (XLA reads every
/// version up to its own; MLIR 22 writes a newer one by default).
pub const BYTECODE_VERSION: i64 = 0;

/// The weights of `bundle` as frozen inputs (`fxhlo run --freeze`): every parameter, buffer
/// and constant input whose weight the bundle holds, by input name (copied out of the mapped
/// file, which the bundle owns).
pub fn frozen_weights(bundle: &fxhlo_frontend::Bundle) -> Frozen {
    let g = &bundle.graph;
    let Some(weights) = &bundle.weights else { return Frozen::new() };
    g.inputs()
        .iter()
        .filter_map(|&id| match &g.node(id).op {
            Op::Input { kind, weight: Some(key), .. } if *kind != InputKind::UserInput => {
                Some((g.node(id).name.to_string(), fxhlo_ir::TensorData::new(weights.get(key)?.bytes.to_vec())))
            }
            _ => None,
        })
        .collect()
}

/// Binds each frozen value to the graph input of that name (for the `freeze` pass), checking
/// that the names exist and the sizes fit.
fn bind_frozen(graph: &mut Graph, frozen: &Frozen) -> Result<()> {
    for (name, data) in frozen {
        let id = graph.inputs().iter().copied().find(|&id| graph.node(id).name == *name).ok_or_else(|| {
            Error::Input(format!("frozen input `{name}` is not an input of graph `{}`", graph.name))
        })?;
        let ty = &graph.node(id).results[0];
        if data.len() != ty.size_bytes() {
            return Err(Error::Input(format!("frozen input `{name}` is {ty} but was given {} bytes", data.len())));
        }
        graph.bind_input(id, data.clone());
    }
    Ok(())
}

// The pipeline is a value every thread may hold (PJRT clients are not).
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pipeline>();
};

/// A graph lowered for the device: the StableHLO module, its parameters in calling order, and
/// its cache key.
#[derive(Debug, Clone)]
pub struct Lowered {
    /// The graph's name (for messages and logs).
    pub graph: String,
    /// The StableHLO module text, for reading: its large constants are elided
    /// (`dense_resource<__elided__>`): compile [`Lowered::program`], not this.
    pub mlir: String,
    /// The module as MLIR bytecode: what PJRT compiles (`None` only for a module built
    /// without it).
    pub bytecode: Option<Vec<u8>>,
    /// The compile cache's key of the executable this module compiles to.
    pub key: CacheKey,
    /// `@main`'s parameters, in order: the caller's inputs (frozen ones are not among them)
    /// and the bound ones (with a `value`).
    pub inputs: Vec<InputSignature>,
    /// With `check_indices`: the nodes whose index checks follow the graph's own outputs, one
    /// bool scalar output each, in this order (see [`Checks`]).
    pub checks: Checks,
    /// `@main`'s parameter types as the device takes them, known from the graph rather than
    /// read back from the text.
    pub signature: fxhlo_runtime::Signature,
    /// What each pass of the pipeline did (time, nodes, its summary), in order.
    pub passes: Vec<fxhlo_passes::PassRun>,
}

impl Lowered {
    /// What PJRT compiles: the bytecode when there is some, else the text.
    pub fn program(&self) -> fxhlo_runtime::Program<'_> {
        let code = self.bytecode.as_deref().unwrap_or(self.mlir.as_bytes());
        fxhlo_runtime::Program::typed(code, &self.signature)
    }
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

/// One input of a compiled graph, in calling order.
#[derive(Debug, Clone)]
pub struct InputSignature {
    pub name: String,
    pub kind: InputKind,
    pub weight: Option<String>,
    /// The input's type as the caller passes it (the model's, before any `layout`).
    pub ty: TensorType,
    /// When set, the executable takes this input permuted: pass `permute(layout)` of it (the
    /// device layout of a resident weight: the input's `layout` in the graph after passes,
    /// chosen by the `device-layout` pass).
    pub layout: Option<Vec<usize>>,
    /// With a tensor-parallel plan: the dimension this input is split along, device `d`
    /// taking the `d`-th of `devices` equal slices; `None`: every device takes all of it.
    pub split: Option<usize>,
    /// The input's value when the compile knows it (a large frozen weight that the
    /// `hoist-large-constants` pass made a parameter): the session uploads it once and the
    /// caller never passes it.
    pub value: Option<fxhlo_ir::TensorData>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_json_with_defaults_and_name_what_is_wrong() {
        assert_eq!(Options::from_json("{}").ok(), Some(Options::default()));
        let o = Options::from_json(r#"{"device": "cpu", "check_indices": true}"#).ok();
        assert_eq!(o, Some(Options { device: TargetName::default(), check_indices: true, ..Options::default() }));
        let unknown = Options::from_json(r#"{"devise": "cpu"}"#).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(unknown.contains("unknown field `devise`"), "{unknown}");
        let bad = Options::from_json(r#"{"device": "gpu"}"#).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(bad.contains("gpu"), "{bad}");
        // The JSON form round-trips, and another value changes the fingerprint.
        let text = serde_json::to_string(&Options::default()).unwrap_or_default();
        assert_eq!(Options::from_json(&text).ok(), Some(Options::default()));
        assert_ne!(Options::default().fingerprint(), Options { check_indices: true, ..Options::default() }.fingerprint());
    }
}

//! `fxhlo explain <bundle>`: what `fxhlo compile` with the same flags would do, without
//! compiling anything: the graph's ops and whether codegen lowers each, the passes that would
//! run and what each changed (run on a copy of the graph), and whether the compile cache holds
//! the executable, or else how its nearest entry differs.
//!
//! The cache key is the one `compile --cache` (and `run`) computes: for a device target its
//! target field comes from the plugin's client (created, never asked to compile); an
//! ahead-of-time target (`tpu:v6e:2x2`) needs no client. Where neither can be had (`--target
//! tpu` on a machine without one) the lookup says `unknown` and still shows the nearest entry.
//! Nothing in the cache folder is written, touched or removed.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use fxhlo::cache::{disk, Miss};
use fxhlo::codegen::UnsupportedOp;
use fxhlo::frontend::Bundle;
use fxhlo::ir::{Graph, Op};
use fxhlo::passes::{PassManager, PassRun};
use fxhlo::runtime::EnvConfig;
use fxhlo::{CacheConfig, CacheKey, CacheMode, CompileCache, Frozen, Options, Pipeline, Session};
use serde_json::{json, Value};

/// Explains `path` compiled with `options` on stdout, as text or as one JSON object.
pub(crate) fn run(path: &Path, options: &Options, as_json: bool) -> anyhow::Result<ExitCode> {
    let bundle = crate::open(path)?;
    let report = Report {
        ops: Ops::of(&bundle)?,
        pipeline: PipelineRun::of(&bundle.graph, options)?,
        cache: CacheLookup::of(&bundle.graph, options),
        bundle,
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report.json())?);
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}

struct Report {
    bundle: Bundle,
    ops: Ops,
    pipeline: PipelineRun,
    cache: CacheLookup,
}

/// One distinct op: its IR op and ATen target, how many nodes have it, and those of them that
/// codegen cannot lower.
struct OpRow {
    /// The IR op's name (`aten.addmm`), `unknown` for an op imported as `Op::Unknown`.
    op: String,
    /// The trace's target (`aten.addmm.default`); `None` for nodes the importer made.
    target: Option<String>,
    count: usize,
    unsupported: Vec<UnsupportedOp>,
    /// Why codegen cannot lower it (its first unsupported node's reason).
    reason: Option<String>,
}

/// The ops of the graph as imported, regions included.
struct Ops {
    nodes: usize,
    inputs: usize,
    /// Of `nodes`, those in the regions of control-flow ops.
    in_regions: usize,
    /// By count (most first), then op and target.
    rows: Vec<OpRow>,
}

/// ATen targets by node name, borrowed from the trace.
type Targets<'t> = HashMap<&'t str, &'t str>;

fn name_and_target(n: &fxhlo::frontend::schema::NodeSpec) -> (&str, &str) {
    (&n.name, &n.target)
}

/// Nodes not lowered, by node name, walked in the order `unsupported_ops` lists them.
type Pending = std::iter::Peekable<std::vec::IntoIter<UnsupportedOp>>;

impl Ops {
    fn of(bundle: &Bundle) -> anyhow::Result<Ops> {
        // Each node's trace target, by node name: the graph's, and each subgraph's (a region
        // has its subgraph's name; node names are unique only within one graph).
        let top: Targets = bundle.trace.nodes.iter().map(name_and_target).collect();
        let sub: HashMap<&str, Targets> = bundle
            .trace
            .subgraphs
            .iter()
            .map(|s| (s.name.as_str(), s.nodes.iter().map(name_and_target).collect()))
            .collect();
        let mut pending = fxhlo::codegen::unsupported_ops(&bundle.graph)?.into_iter().peekable();
        let mut ops = Ops { nodes: 0, inputs: 0, in_regions: 0, rows: Vec::new() };
        let mut rows = BTreeMap::new();
        ops.walk(&bundle.graph, Some(&top), &sub, false, &mut pending, &mut rows)?;
        ops.rows = rows.into_values().collect();
        ops.rows.sort_by_key(|r| std::cmp::Reverse(r.count));
        Ok(ops)
    }

    /// Counts `graph`'s nodes, then its regions', in the order `unsupported_ops` visits them
    /// (so that each of its entries is matched to its node by name, in turn).
    fn walk(
        &mut self,
        graph: &Graph,
        targets: Option<&Targets>,
        sub: &HashMap<&str, Targets>,
        region: bool,
        pending: &mut Pending,
        rows: &mut BTreeMap<(String, Option<String>), OpRow>,
    ) -> anyhow::Result<()> {
        for id in graph.topo_order()? {
            let node = graph.node(id);
            self.nodes += 1;
            self.in_regions += usize::from(region);
            if matches!(node.op, Op::Input { .. }) {
                self.inputs += 1;
                continue;
            }
            let op = match &node.op {
                Op::Unknown { .. } => "unknown".to_string(),
                other => other.name().to_string(),
            };
            let target = targets.and_then(|t| t.get(&*node.name)).map(|t| t.to_string());
            let row = rows.entry((op.clone(), target.clone())).or_insert_with(|| OpRow { op, target, count: 0, unsupported: Vec::new(), reason: None });
            row.count += 1;
            if let Some(u) = pending.next_if(|u| *u.node == *node.name) {
                row.reason.get_or_insert_with(|| match &node.op {
                    Op::Unknown { .. } => format!("imported as unknown: {}", u.reason),
                    _ => u.reason.clone(),
                });
                row.unsupported.push(u);
            }
        }
        for r in graph.regions() {
            self.walk(r, sub.get(r.name.as_str()), sub, true, pending, rows)?;
        }
        Ok(())
    }

    fn unsupported(&self) -> usize {
        self.rows.iter().filter(|r| !r.unsupported.is_empty()).count()
    }
}

/// The pipeline for the options, run pass by pass on a copy of the graph.
struct PipelineRun {
    /// Where the pass list comes from: `-O1 for cpu`, `--passes a,b`, ...
    origin: String,
    passes: Vec<&'static str>,
    /// What each pass that ran did (the pass manager's own record, node counts included).
    steps: Vec<PassRun>,
    /// The pass that failed (the verifier's error, a pass's own), stopping the pipeline.
    error: Option<(&'static str, String)>,
    nodes_after: usize,
    /// What codegen could not lower in the graph the passes left (what compile would refuse).
    unsupported_after: Vec<UnsupportedOp>,
}

impl PipelineRun {
    fn of(graph: &Graph, options: &Options) -> anyhow::Result<PipelineRun> {
        let mut origin = match &options.passes {
            Some(names) => format!("--passes {}", names.join(",")),
            None => format!("-O{} for {}", options.opt_level, options.device),
        };
        if let Some(n) = options.max_passes {
            let _ = write!(origin, ", --max-passes {n}");
        }
        let passes = options.passes();
        let mut run = PipelineRun {
            origin,
            passes: passes.iter().map(|p| p.name()).collect(),
            steps: Vec::new(),
            error: None,
            nodes_after: 0,
            unsupported_after: Vec::new(),
        };
        // The manager verifies after each pass and records it; a failure stops it at the pass
        // after the last one recorded.
        let mut g = graph.clone();
        let steps = &mut run.steps;
        let result = PassManager::new(passes.clone()).run_observed(&mut g, |r, _| -> Result<(), fxhlo::passes::Error> {
            steps.push(r.clone());
            Ok(())
        });
        if let Err(e) = result {
            // The pass after the last one recorded; the last one if it failed after its record.
            let failed = passes.get(run.steps.len()).or(passes.last()).map_or("(none)", |p| p.name());
            run.error = Some((failed, e.to_string()));
        }
        run.nodes_after = g.node_count();
        run.unsupported_after = fxhlo::codegen::unsupported_ops(&g)?;
        Ok(run)
    }
}

/// What the cache lookup found.
enum Found {
    /// The entry is there and whole.
    Hit { entry: PathBuf, bytes: u64 },
    /// The entry is there but unusable: compile would remove it and compile again.
    Corrupt { entry: PathBuf, why: String },
    /// No entry of this key.
    Miss(Miss),
    /// No disk tier to look in: `FXHLO_CACHE=off`, or no folder.
    NoDisk(String),
    /// The key's target field could not be had (no device, no plugin): the nearest entry.
    Unknown { why: String, miss: Miss },
}

struct CacheLookup {
    config: CacheConfig,
    key: CacheKey,
    found: Found,
}

impl CacheLookup {
    /// Looks `graph`'s key for `options` up in the environment's cache folder, read-only.
    fn of(graph: &Graph, options: &Options) -> CacheLookup {
        let config = CacheConfig::from_env();
        let pipeline = Pipeline::new(options.clone());
        let cache = CompileCache::new(config.clone());
        let target = target_id(options);
        let key = pipeline.key(graph, &Frozen::new(), target.as_deref().unwrap_or("(unknown)"));
        let disk = match config.mode {
            CacheMode::Off => None,
            _ => config.dir.clone(),
        };
        let found = match (target, disk) {
            (Err(why), _) => Found::Unknown { why, miss: cache.miss(&key) },
            (Ok(_), None) if config.mode == CacheMode::Off => Found::NoDisk(format!("{}=off: no disk tier, every new process compiles", fxhlo::env::FXHLO_CACHE)),
            (Ok(_), None) => Found::NoDisk(format!("no cache folder ({} is unset, and so are XDG_CACHE_HOME and HOME)", fxhlo::env::FXHLO_CACHE_DIR)),
            (Ok(_), Some(dir)) => {
                let entry = disk::entry_path(&dir, &key);
                match std::fs::read(&entry) {
                    Ok(bytes) => match disk::decode(&bytes, &key) {
                        Ok(_) => Found::Hit { entry, bytes: bytes.len() as u64 },
                        Err(disk::Corrupt(why)) => Found::Corrupt { entry, why },
                    },
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::Miss(cache.miss(&key)),
                    Err(e) => Found::Corrupt { entry, why: format!("cannot read it ({e})") },
                }
            }
        };
        CacheLookup { config, key, found }
    }

    /// `hit`, `miss` or `unknown`.
    fn status(&self) -> &'static str {
        match self.found {
            Found::Hit { .. } => "hit",
            Found::Unknown { .. } => "unknown",
            _ => "miss",
        }
    }

    /// The reason of a miss as the cache counts it (`new graph`, `options`, `inputs,target`,
    /// `corrupt`, ...); `None` for a hit.
    fn reason(&self) -> Option<String> {
        match &self.found {
            Found::Hit { .. } => None,
            Found::Corrupt { .. } => Some("corrupt".into()),
            Found::Miss(m) | Found::Unknown { miss: m, .. } => Some(m.reason()),
            Found::NoDisk(_) => Some("no disk tier".into()),
        }
    }
}

/// The key's target field, as the session (device target) or the ahead-of-time compile would
/// write it; the error's text when it cannot be had.
fn target_id(options: &Options) -> Result<String, String> {
    let env = EnvConfig::from_env();
    if options.device.is_ahead_of_time() {
        return fxhlo::aot::AotTarget::resolve(&options.device, &env, &fxhlo::aot::Worker::from_env()).map(|t| t.id).map_err(|e| e.to_string());
    }
    // A cache of its own, off: the session is only asked for its target, never to compile.
    let off = CacheConfig { mode: CacheMode::Off, error_on_compile: true, ..CacheConfig::from_env() };
    Session::with_cache(options.clone(), &env, Arc::new(CompileCache::new(off))).map(|s| s.target_id()).map_err(|e| e.to_string())
}

/// The mode as `FXHLO_CACHE` spells it.
fn mode(mode: CacheMode) -> &'static str {
    match mode {
        CacheMode::ReadWrite => "read-write",
        CacheMode::ReadOnly => "read-only",
        CacheMode::Off => "off",
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Report {
    fn text(&self) -> String {
        let mut out = String::new();
        let g = &self.bundle.graph;
        let _ = writeln!(out, "graph `{}` from {}", g.name, self.bundle.graph_file.display());
        // Ops.
        let ops = &self.ops;
        let regions = if ops.in_regions > 0 { format!(", {} in regions", ops.in_regions) } else { String::new() };
        let _ = writeln!(
            out,
            "\nops: {} nodes ({} inputs{regions}), {} distinct ops, {} unsupported",
            ops.nodes,
            ops.inputs,
            ops.rows.len(),
            ops.unsupported()
        );
        let width = ops.rows.iter().map(|r| r.op.len()).max().unwrap_or(0).max(2);
        let twidth = ops.rows.iter().map(|r| r.target.as_deref().map_or(1, str::len)).max().unwrap_or(0).max(6);
        let _ = writeln!(out, "  {:>5}  {:width$}  {:twidth$}  lowers", "count", "op", "target");
        for r in &ops.rows {
            let status = if r.unsupported.is_empty() { "yes".to_string() } else { format!("NO: {}", r.reason.as_deref().unwrap_or("")) };
            let _ = writeln!(out, "  {:>5}  {:width$}  {:twidth$}  {status}", r.count, r.op, r.target.as_deref().unwrap_or("-"));
            for u in r.unsupported.iter().take(3) {
                let at = u.source.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
                // Calls of one target may be refused for different arguments: a node whose
                // reason is not the row's (the first node's) gives its own.
                let own = match r.unsupported.first() {
                    Some(first) if first.reason != u.reason => format!(": {}", u.reason),
                    _ => String::new(),
                };
                let _ = writeln!(out, "         at node `{}`{at}{own}", u.node);
            }
            if r.unsupported.len() > 3 {
                let _ = writeln!(out, "         and {} more", r.unsupported.len() - 3);
            }
        }
        // Pipeline.
        let p = &self.pipeline;
        let _ = writeln!(out, "\npipeline ({}): {} passes", p.origin, p.passes.len());
        let width = p.passes.iter().map(|n| n.len()).max().unwrap_or(0).max(4);
        if !p.passes.is_empty() {
            let _ = writeln!(out, "  {:>2}  {:width$}  {:7}  {:>15}  {:>9}", "#", "pass", "changed", "nodes", "time");
        }
        for (i, name) in p.passes.iter().enumerate() {
            match p.steps.get(i) {
                Some(s) => {
                    let changed = if s.changed { "yes" } else { "no" };
                    let nodes = format!("{} -> {}", s.nodes_before, s.nodes_after);
                    let _ = writeln!(out, "  {:>2}  {:width$}  {changed:7}  {nodes:>15}  {:>6.3} ms", i + 1, s.pass, ms(s.time));
                }
                None => match &p.error {
                    Some((failed, e)) if failed == name => {
                        let _ = writeln!(out, "  {:>2}  {name:width$}  FAILED: {e}", i + 1);
                    }
                    _ => {
                        let _ = writeln!(out, "  {:>2}  {name:width$}  (not run)", i + 1);
                    }
                },
            }
        }
        let lowering = match p.unsupported_after.len() {
            0 => "every op lowers".to_string(),
            n => format!("lowering would fail: {n} op(s) codegen cannot lower"),
        };
        let _ = writeln!(out, "  after passes: {} nodes; {lowering}", p.nodes_after);
        // Cache.
        let c = &self.cache;
        let folder = match &c.config.dir {
            Some(dir) => format!("{} ({})", dir.display(), mode(c.config.mode)),
            None => "no folder".to_string(),
        };
        let reason = c.reason().map(|r| format!(" ({r})")).unwrap_or_default();
        let _ = writeln!(out, "\ncache: {}{reason}", c.status());
        let _ = writeln!(out, "  folder:  {folder}");
        match c.found {
            Found::Unknown { .. } => {
                let _ = writeln!(out, "  key:     not known without its target field");
            }
            _ => {
                let _ = writeln!(out, "  key:     {}", c.key.hex());
            }
        }
        let _ = writeln!(out, "  target:  {}", c.key.target);
        let _ = writeln!(out, "  options: {}", c.key.options);
        match &c.found {
            Found::Hit { entry, bytes } => {
                let _ = writeln!(out, "  entry:   {} ({}): compile --cache and run would load it, not compile", entry.display(), crate::cache::human_bytes(*bytes));
            }
            Found::Corrupt { entry, why } => {
                let _ = writeln!(out, "  entry:   {} is unusable ({why}): compile would remove it and compile again", entry.display());
            }
            Found::NoDisk(why) => {
                let _ = writeln!(out, "  miss:    {why}");
            }
            Found::Miss(miss) => write_miss(&mut out, "miss", miss),
            Found::Unknown { why, miss } => {
                let _ = writeln!(out, "  unknown: the key's target field needs the target's plugin: {why}");
                write_miss(&mut out, "nearest", miss);
            }
        }
        out
    }

    fn json(&self) -> Value {
        let ops: Vec<Value> = self
            .ops
            .rows
            .iter()
            .map(|r| {
                json!({
                    "op": r.op,
                    "target": r.target,
                    "count": r.count,
                    "supported": r.unsupported.is_empty(),
                    "reason": r.reason,
                    "unsupported_nodes": r.unsupported.iter().map(|u| json!({"node": u.node, "source": u.source, "reason": u.reason})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let p = &self.pipeline;
        let steps: Vec<Value> = p
            .steps
            .iter()
            .map(|s| json!({"pass": s.pass, "changed": s.changed, "nodes_before": s.nodes_before, "nodes_after": s.nodes_after, "time_ms": ms(s.time)}))
            .collect();
        let c = &self.cache;
        let key: Value = serde_json::from_str(&c.key.to_json()).unwrap_or(Value::Null);
        let mut cache = json!({
            "status": c.status(),
            "reason": c.reason(),
            "folder": c.config.dir.as_ref().map(|d| d.display().to_string()),
            "mode": mode(c.config.mode),
            "key": key,
        });
        let extra = match &c.found {
            Found::Hit { entry, bytes } => json!({"entry": entry.display().to_string(), "entry_bytes": bytes}),
            Found::Corrupt { entry, why } => json!({"entry": entry.display().to_string(), "corrupt": why}),
            Found::NoDisk(why) => json!({"detail": why}),
            Found::Miss(miss) => miss_json(miss),
            Found::Unknown { why, miss } => {
                let mut v = miss_json(miss);
                v["target_error"] = Value::String(why.clone());
                v
            }
        };
        if let (Some(cache), Value::Object(extra)) = (cache.as_object_mut(), extra) {
            cache.extend(extra);
        }
        json!({
            "graph": self.bundle.graph.name,
            "file": self.bundle.graph_file.display().to_string(),
            "ops": {
                "nodes": self.ops.nodes,
                "inputs": self.ops.inputs,
                "in_regions": self.ops.in_regions,
                "distinct": self.ops.rows.len(),
                "unsupported": self.ops.unsupported(),
                "list": ops,
            },
            "pipeline": {
                "origin": p.origin,
                "passes": p.passes,
                "runs": steps,
                "error": p.error.as_ref().map(|(pass, e)| json!({"pass": pass, "error": e})),
                "nodes_after": p.nodes_after,
                "unsupported_after": p.unsupported_after.len(),
            },
            "cache": cache,
        })
    }
}

/// The nearest entry of a miss and each field it differs in, the entry's value above this
/// compile's.
fn write_miss(out: &mut String, label: &str, miss: &Miss) {
    let Some((nearest, diffs)) = &miss.nearest else {
        let _ = writeln!(out, "  {label}:{:pad$}{}", "", miss.detail(), pad = 8usize.saturating_sub(label.len()));
        return;
    };
    let entry = nearest.entry.as_ref().map_or_else(|| nearest.key.hex(), |p| p.display().to_string());
    let _ = writeln!(out, "  {label}:{:pad$}the nearest entry of this graph, {entry}, differs in {}", "", miss.reason(), pad = 8usize.saturating_sub(label.len()));
    for d in diffs {
        let _ = writeln!(out, "    {}:\n      cached: {}\n      now:    {}", d.field, d.cached, d.wanted);
    }
}

fn miss_json(miss: &Miss) -> Value {
    match &miss.nearest {
        None => json!({"detail": miss.detail(), "nearest": Value::Null}),
        Some((nearest, diffs)) => json!({
            "detail": miss.detail(),
            "nearest": {
                "entry": nearest.entry.as_ref().map(|p| p.display().to_string()),
                "digest": nearest.key.hex(),
                "differences": diffs.iter().map(|d| json!({"field": d.field, "cached": d.cached, "now": d.wanted})).collect::<Vec<_>>(),
            },
        }),
    }
}

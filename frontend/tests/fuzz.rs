//! Deterministic, time-bounded mutational fuzzing of both trace decoders (`parse_json`,
//! `parse_bin`), the importer behind them and the IR text parser: whatever the bytes, the
//! outcome is `Ok` or a typed error naming the file, never a panic or an allocation out of
//! proportion to the input.
//!
//! Stable Rust, no cargo-fuzz: every target is an ordinary test that mutates seeds with a
//! seeded PRNG until its time budget is spent. Seeds are every `testsuite/fixtures/*.fxt` and
//! `testsuite/fixtures/*/*.fxt` bundle's `graph.json` (globbed, so new fixtures join by
//! themselves), their bincode encodings, their imported IR text, generated chains
//! (`synth_trace` of `benches/import.rs`) and an op zoo (one node per op family the fixtures
//! lack). Mutations are byte level (flips, truncations, insertions, splices, dictionary tokens,
//! huge length prefixes) and structure aware (on the `serde_json::Value` of a trace: extreme
//! numbers, renamed and swapped names, deleted and duplicated keys and nodes, other dtypes and
//! targets, other argument kinds, dangling references, metas that disagree, 0-d inputs).
//!
//! Each case runs under `catch_unwind`. These are findings, and fail the test: a panic; an error
//! that does not name the file; an import error from the IR verifier, or an imported graph the
//! verifier refuses (the importer let through what it should have refused; release builds do
//! not run the verifier inside import, the fuzzers always do); a decoder allocating more at once
//! than 1 MiB plus 32 times the input; a trace whose bincode or JSON encoding does not decode
//! back to it; the fast bincode path (`parse_bin_view`, `import_view`) and the owned one giving
//! different verdicts, error variants or graphs; IR text that parses
//! but does not print, parse and print back identically. The input is saved under `fuzz/` in
//! Cargo's test tmp dir (`CARGO_TARGET_TMPDIR`) and printed. Each test also asserts a minimum
//! number of cases and a share of rejected (and accepted) inputs, so that a fuzzer that stopped
//! reaching the checks fails too, and prints its counts:
//!
//! ```text
//! cargo test -p fxhlo-frontend fuzz -- --nocapture
//! ```
//!
//! `FXHLO_FUZZ_SECS` (default 2) is the budget of each target in seconds. A long run wants an
//! optimized build that keeps overflow checks (they catch size arithmetic that a plain release
//! build would silently wrap):
//!
//! ```text
//! FXHLO_FUZZ_SECS=120 CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
//!     cargo test --release -p fxhlo-frontend fuzz_ -- --nocapture --test-threads 2
//! ```
//!
//! The case sequence is fixed by each target's seed; a longer budget runs further along it.

// The frontend's `Error` is what it is; closures here only pass it along.
#![allow(clippy::result_large_err)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fxhlo_frontend::schema::Trace;
use fxhlo_frontend::{import, parse_bin, parse_bin_view, parse_json, to_bin, to_json, Bundle, Error, GRAPH_JSON};
use serde_json::{json, Value};

#[path = "../benches/import.rs"]
#[allow(dead_code)]
mod bench;

// ---------------------------------------------------------------------------------------------
// Allocation bound: the largest single allocation each thread asks for.

struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: forwards every call to the system allocator unchanged; only records sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// `f`'s result and the largest single allocation it requested on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(|l| l.get()))
}

/// The most a decoder may allocate at once for an `n`-byte input: a bounded preallocation
/// (serde caps a collection's at 1 MiB) plus a small multiple of the input.
fn allocation_bound(n: usize) -> usize {
    (1 << 20) + 32 * n
}

// ---------------------------------------------------------------------------------------------
// Budget, PRNG, seeds.

/// Seconds per target: `FXHLO_FUZZ_SECS`, default 2.
fn budget() -> Duration {
    match std::env::var("FXHLO_FUZZ_SECS") {
        Err(_) => Duration::from_secs(2),
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Duration::from_secs_f64(v),
            _ => panic!("FXHLO_FUZZ_SECS must be a positive number of seconds, found `{s}`"),
        },
    }
}

/// SplitMix64: small, fast, and the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`0` when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Everything the targets start from, built once per test binary.
struct Seeds {
    /// `(label, graph.json bytes)` of the fixtures and the generated chains.
    json: Vec<(String, Vec<u8>)>,
    values: Vec<Value>,
    bins: Vec<Vec<u8>>,
    /// IR text of every seed that imports.
    ir: Vec<String>,
    /// Value names, targets and IR op names seen in the seeds (mutation vocabulary).
    names: Vec<String>,
    targets: Vec<String>,
    ops: Vec<String>,
}

/// Every bundle `testsuite/fixtures/*.fxt` and one level down (`fixtures/ops/*.fxt`), sorted.
fn fixture_dirs() -> Vec<PathBuf> {
    let bundles = |dir: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
        entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()
    };
    let mut dirs = Vec::new();
    for p in bundles(&bench::fixtures_dir()) {
        if p.extension().is_some_and(|e| e == "fxt") {
            dirs.push(p);
        } else {
            dirs.extend(bundles(&p).into_iter().filter(|q| q.extension().is_some_and(|e| e == "fxt")));
        }
    }
    dirs.retain(|d| d.join(GRAPH_JSON).is_file());
    dirs.sort();
    dirs
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut json = Vec::new();
        for dir in fixture_dirs() {
            let label = dir.strip_prefix(bench::fixtures_dir()).unwrap_or(&dir).to_string_lossy().into_owned();
            json.push((label, std::fs::read(dir.join(GRAPH_JSON)).expect("fixture readable")));
        }
        assert!(json.iter().any(|(l, _)| l == "mlp.fxt"), "the fixtures include mlp.fxt");
        for n in [12, 40] {
            json.push((format!("synth{n}"), to_json(&bench::synth_trace(n)).into_bytes()));
        }
        json.push(("zoo".into(), op_zoo()));
        json.push(("control_flow".into(), CONTROL_FLOW_SEED.as_bytes().to_vec()));
        let mut s = Seeds { json, values: vec![], bins: vec![], ir: vec![], names: vec![], targets: vec![], ops: vec![] };
        let path = Path::new(GRAPH_JSON);
        for (label, bytes) in &s.json {
            if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
                s.values.push(v);
            }
            let Ok(trace) = parse_json(bytes, path) else {
                println!("fuzz seeds: {label} does not parse; used as bytes only");
                continue;
            };
            s.bins.push(to_bin(&trace));
            s.names.extend(trace.inputs.iter().map(|i| i.name.clone()));
            s.names.extend(trace.nodes.iter().map(|n| n.name.clone()));
            s.targets.extend(trace.nodes.iter().map(|n| n.target.clone()));
            match import::import(&trace, path) {
                Ok(g) => {
                    let text = fxhlo_ir::print(&g);
                    for line in text.lines() {
                        if let Some(op) = line.split(" = ").nth(1).and_then(|r| r.split_whitespace().next()) {
                            s.ops.push(op.to_string());
                        }
                    }
                    s.ir.push(text);
                }
                Err(e) => println!("fuzz seeds: {label} does not import: {e}"),
            }
        }
        s.targets.extend(EXTRA_TARGETS.iter().map(|t| t.to_string()));
        for v in [&mut s.names, &mut s.targets, &mut s.ops] {
            v.sort();
            v.dedup();
        }
        s
    })
}

/// A trace with a `while_loop` whose body holds a `cond` (subgraphs nested two deep), and the
/// random bits op: what the fixtures lack of the schema's control flow.
const CONTROL_FLOW_SEED: &str = r#"{"format": "fxhlo-trace", "version": 1, "name": "loops",
 "inputs": [{"name": "x", "kind": "user_input", "meta": {"dtype": "f32", "sizes": [3], "strides": [1]}},
            {"name": "n", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [], "strides": []}},
            {"name": "s", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [2], "strides": [1]}}],
 "nodes": [
  {"name": "rng", "target": "fxhlo.rng_bit_generator.default", "args": [{"tensor": "s"}, {"ints": [3]}, {"dtype": "i32"}],
   "meta": [{"dtype": "i64", "sizes": [2], "strides": [1]}, {"dtype": "i32", "sizes": [3], "strides": [1]}]},
  {"name": "bits", "target": "getitem", "args": [{"tensor": "rng"}, {"int": 1}], "meta": [{"dtype": "i32", "sizes": [3], "strides": [1]}]},
  {"name": "zero", "target": "aten.full.default", "args": [{"ints": []}, {"int": 0}], "kwargs": {"dtype": {"dtype": "i64"}},
   "meta": [{"dtype": "i64", "sizes": [], "strides": []}]},
  {"name": "loop", "target": "higher_order.while_loop",
   "args": [{"graph": "c"}, {"graph": "b"}, {"tensors": ["zero", "x"]}, {"tensors": ["n"]}],
   "meta": [{"dtype": "i64", "sizes": [], "strides": []}, {"dtype": "f32", "sizes": [3], "strides": [1]}]},
  {"name": "y", "target": "getitem", "args": [{"tensor": "loop"}, {"int": 1}], "meta": [{"dtype": "f32", "sizes": [3], "strides": [1]}]}],
 "outputs": [{"tensor": "y"}, {"tensor": "bits"}],
 "subgraphs": [
  {"name": "c", "inputs": [{"name": "i", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [], "strides": []}},
                          {"name": "a", "kind": "user_input", "meta": {"dtype": "f32", "sizes": [3], "strides": [1]}},
                          {"name": "m", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [], "strides": []}}],
   "nodes": [{"name": "lt", "target": "aten.lt.Tensor", "args": [{"tensor": "i"}, {"tensor": "m"}], "meta": [{"dtype": "bool", "sizes": [], "strides": []}]}],
   "outputs": [{"tensor": "lt"}]},
  {"name": "b", "inputs": [{"name": "i", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [], "strides": []}},
                          {"name": "a", "kind": "user_input", "meta": {"dtype": "f32", "sizes": [3], "strides": [1]}},
                          {"name": "m", "kind": "user_input", "meta": {"dtype": "i64", "sizes": [], "strides": []}}],
   "nodes": [{"name": "i1", "target": "aten.add.Tensor", "args": [{"tensor": "i"}, {"int": 1}], "meta": [{"dtype": "i64", "sizes": [], "strides": []}]},
             {"name": "s", "target": "aten.sum.default", "args": [{"tensor": "a"}], "meta": [{"dtype": "f32", "sizes": [], "strides": []}]},
             {"name": "p", "target": "aten.gt.Scalar", "args": [{"tensor": "s"}, {"int": 0}], "meta": [{"dtype": "bool", "sizes": [], "strides": []}]},
             {"name": "k", "target": "higher_order.cond", "args": [{"tensor": "p"}, {"graph": "b/t"}, {"graph": "b/f"}, {"tensors": ["a"]}],
              "meta": [{"dtype": "f32", "sizes": [3], "strides": [1]}]},
             {"name": "a1", "target": "getitem", "args": [{"tensor": "k"}, {"int": 0}], "meta": [{"dtype": "f32", "sizes": [3], "strides": [1]}]}],
   "outputs": [{"tensor": "i1"}, {"tensor": "a1"}]},
  {"name": "b/t", "inputs": [{"name": "a", "kind": "user_input", "meta": {"dtype": "f32", "sizes": [3], "strides": [1]}}],
   "nodes": [{"name": "r", "target": "aten.sin.default", "args": [{"tensor": "a"}], "meta": [{"dtype": "f32", "sizes": [3], "strides": [1]}]}],
   "outputs": [{"tensor": "r"}]},
  {"name": "b/f", "inputs": [{"name": "a", "kind": "user_input", "meta": {"dtype": "f32", "sizes": [3], "strides": [1]}}],
   "nodes": [{"name": "r", "target": "aten.neg.default", "args": [{"tensor": "a"}], "meta": [{"dtype": "f32", "sizes": [3], "strides": [1]}]}],
   "outputs": [{"tensor": "r"}]}]}"#;

const EXTRA_TARGETS: &[&str] = &[
    "higher_order.cond", "higher_order.while_loop", "fxhlo.rng_bit_generator.default",
    "getitem", "aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.amax.default", "aten.view.default",
    "aten.expand.default", "aten.slice.Tensor", "aten.select.int", "aten.squeeze.dims", "aten.unsqueeze.default",
    "aten.cat.default", "aten.index.Tensor", "aten.convolution.default", "aten.max_pool2d_with_indices.default",
    "aten.avg_pool2d.default", "aten._adaptive_avg_pool2d.default", "aten.upsample_nearest2d.vec",
    "aten.native_group_norm.default", "aten.native_layer_norm.default", "aten.transpose.int", "aten.t.default",
    "aten.div.Tensor_mode", "aten.rsub.Scalar", "aten.clamp.default", "aten.hardtanh.default", "aten.gelu.default",
    "prims.convert_element_type.default", "aten._to_copy.default", "aten.arange.default", "aten.full.default",
    "aten.embedding.default", "aten.where.self", "aten.mm.default", "aten.bmm.default", "aten.pow.Tensor_Scalar",
    "aten.nonexistent.default", "aten.", "aten", ".", "", "prims.", "aten.upsample_nearest1d.default",
    "aten.constant_pad_nd.default", "aten.reflection_pad2d.default", "aten.replication_pad1d.default",
    "aten.repeat.default", "aten.flip.default", "aten.diagonal.default", "aten.as_strided.default", "aten.gather.default",
    "aten.index_select.default", "aten.scatter.src", "aten.scatter_add.default", "aten.scatter_reduce.two",
    "aten.index_put.default", "aten.select_scatter.default", "aten.slice_scatter.default", "aten.sort.default",
    "aten.topk.default", "aten.argmax.default", "aten.max.dim", "aten.var.correction", "aten.var.dim",
    "aten.cumsum.default", "aten.split.Tensor", "aten.split_with_sizes.default", "aten.upsample_bilinear2d.vec",
    "aten.elu.default", "aten.leaky_relu.default", "aten.copy.default", "aten.fill.Scalar", "aten.full_like.default",
];

const DTYPES: &[&str] = &["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool", "complex64", "F32", ""];

/// A generated seed with one node per op family the fixtures lack (slicing, scatter, padding,
/// sorting, ...), so that mutations reach their inference rules. Its metas are filled in from
/// the importer's own inference (each `MetaMismatch` names the inferred types).
fn op_zoo() -> Vec<u8> {
    let t = |n: &str| json!({"tensor": n});
    let i = |v: i64| json!({"int": v});
    let is = |v: &[i64]| json!({"ints": v});
    let f = |v: f64| json!({"float": v});
    let b = |v: bool| json!({"bool": v});
    let nodes: Vec<(&str, &str, Vec<Value>)> = vec![
        ("slice", "aten.slice.Tensor", vec![t("x"), i(1), i(0), i(2), i(1)]),
        ("select", "aten.select.int", vec![t("x"), i(2), i(1)]),
        ("cat", "aten.cat.default", vec![json!({"tensors": ["x", "x"]}), i(0)]),
        ("unsqueeze", "aten.unsqueeze.default", vec![t("x"), i(0)]),
        ("squeeze", "aten.squeeze.dims", vec![t("unsqueeze"), is(&[0])]),
        ("expand", "aten.expand.default", vec![t("unsqueeze"), is(&[5, 2, 3, 4])]),
        ("sum", "aten.sum.dim_IntList", vec![t("x"), is(&[1]), b(true)]),
        ("amax", "aten.amax.default", vec![t("x"), is(&[2])]),
        ("mean", "aten.mean.dim", vec![t("x"), is(&[-1]), b(true)]),
        ("softmax", "aten._softmax.default", vec![t("x"), i(-1), b(false)]),
        ("transpose", "aten.transpose.int", vec![t("x"), i(0), i(2)]),
        ("pad", "aten.constant_pad_nd.default", vec![t("x"), is(&[1, 1])]),
        ("repeat", "aten.repeat.default", vec![t("x"), is(&[2, 1, 1])]),
        ("flip", "aten.flip.default", vec![t("x"), is(&[0])]),
        ("cumsum", "aten.cumsum.default", vec![t("x"), i(1)]),
        ("index_select", "aten.index_select.default", vec![t("x"), i(0), t("idx")]),
        ("index", "aten.index.Tensor", vec![t("x"), json!({"optional_tensors": [null, "idx"]})]),
        ("select_scatter", "aten.select_scatter.default", vec![t("x"), t("select"), i(2), i(1)]),
        ("slice_scatter", "aten.slice_scatter.default", vec![t("x"), t("slice"), i(1), i(0), i(2), i(1)]),
        ("diagonal", "aten.diagonal.default", vec![t("x"), i(0), i(0), i(1)]),
        ("as_strided", "aten.as_strided.default", vec![t("x"), is(&[2, 2]), is(&[1, 2]), i(0)]),
        ("topk", "aten.topk.default", vec![t("x"), i(2), i(-1)]),
        ("topk_0", "getitem", vec![t("topk"), i(0)]),
        ("sort", "aten.sort.default", vec![t("x"), i(-1)]),
        ("sort_1", "getitem", vec![t("sort"), i(1)]),
        ("argmax", "aten.argmax.default", vec![t("x"), i(1)]),
        ("max", "aten.max.dim", vec![t("x"), i(1)]),
        ("max_0", "getitem", vec![t("max"), i(0)]),
        ("var", "aten.var.correction", vec![t("x"), is(&[1])]),
        ("split", "aten.split_with_sizes.default", vec![t("x"), is(&[1, 2]), i(1)]),
        ("split_1", "getitem", vec![t("split"), i(1)]),
        ("view", "aten.view.default", vec![t("x"), is(&[6, 4])]),
        ("tr", "aten.t.default", vec![t("view")]),
        ("mm", "aten.mm.default", vec![t("view"), t("tr")]),
        ("lt", "aten.lt.Scalar", vec![t("x"), f(0.5)]),
        ("where", "aten.where.self", vec![t("lt"), t("x"), t("flip")]),
        ("clamp", "aten.clamp.default", vec![t("x"), f(0.0), f(1.0)]),
        ("elu", "aten.elu.default", vec![t("x")]),
        ("leaky_relu", "aten.leaky_relu.default", vec![t("x"), f(0.2)]),
        ("rsub", "aten.rsub.Scalar", vec![t("x"), f(1.0)]),
        ("div", "aten.div.Tensor_mode", vec![t("x"), t("flip")]),
        ("full", "aten.full.default", vec![is(&[2]), f(1.5)]),
        ("arange", "aten.arange.start_step", vec![i(0), i(4), i(1)]),
    ];
    let kwargs = |name: &str| match name {
        "div" => json!({"rounding_mode": {"string": "floor"}}),
        "rsub" => json!({"alpha": {"int": 2}}),
        _ => json!({}),
    };
    let meta = |dtype: &str, sizes: &[i64]| json!({"dtype": dtype, "sizes": sizes, "strides": vec![1; sizes.len()], "storage_offset": 0});
    let multi = ["topk", "sort", "max", "split"];
    let mut v = json!({
        "format": "fxhlo-trace", "version": 1, "name": "zoo", "decomposition_table": "core_aten",
        "inputs": [
            {"name": "x", "kind": "user_input", "meta": meta("f32", &[2, 3, 4])},
            {"name": "idx", "kind": "user_input", "meta": meta("i64", &[2])},
        ],
        "nodes": nodes.iter().map(|(n, target, args)| json!({
            "name": n, "target": target, "args": args, "kwargs": kwargs(n),
            "meta": if multi.contains(n) { vec![meta("f32", &[1]), meta("i64", &[1])] } else { vec![meta("f32", &[1])] },
            "source": {"file": "zoo.py", "line": 1},
        })).collect::<Vec<_>>(),
        "outputs": nodes.iter().filter(|(n, ..)| !multi.contains(n)).map(|(n, ..)| json!({"tensor": n})).collect::<Vec<_>>(),
    });
    // Nodes whose mapping reads the meta itself start from the right one.
    for (n, metas) in [
        ("arange", json!([meta("i64", &[4])])),
        ("tr", json!([meta("f32", &[4, 6])])),
        ("transpose", json!([meta("f32", &[4, 3, 2])])),
        ("split", json!([meta("f32", &[2, 1, 4]), meta("f32", &[2, 2, 4])])),
    ] {
        v["nodes"][nodes.iter().position(|(m, ..)| *m == n).expect("a zoo node")]["meta"] = metas;
    }
    let path = Path::new("zoo.json");
    for _ in 0..=nodes.len() {
        let trace = parse_json(v.to_string().as_bytes(), path).expect("the zoo parses");
        let (node, inferred) = match import::import(&trace, path) {
            Ok(_) => break,
            Err(Error::MetaMismatch { node, inferred, .. }) => (node, inferred),
            Err(e) => panic!("the op zoo does not import: {e}"),
        };
        // `f32[2,3], i64[2]` → metas.
        let metas: Vec<Value> = inferred
            .split("], ")
            .map(|ty| {
                let (dtype, dims) = ty.trim_end_matches(']').split_once('[').expect("a type");
                let sizes: Vec<i64> = dims.split(',').filter(|d| !d.is_empty()).map(|d| d.parse().expect("a size")).collect();
                meta(dtype, &sizes)
            })
            .collect();
        let k = nodes.iter().position(|(n, ..)| *n == node).expect("a zoo node");
        v["nodes"][k]["meta"] = Value::Array(metas);
    }
    serde_json::to_string_pretty(&v).expect("serializes").into_bytes()
}

// ---------------------------------------------------------------------------------------------
// The harness: one `Fuzz` per target.

#[derive(Default)]
struct Stats {
    cases: u64,
    accepted: u64,
    rejected: u64,
    /// Rejections by error variant (`Json`, `MetaMismatch`, ...).
    errors: BTreeMap<String, u64>,
    findings: Vec<String>,
}

/// What a case found, short of a panic.
enum Verdict {
    Accepted,
    /// Rejected with this error variant.
    Rejected(String),
    /// A bug that is not a panic: a wrong error, an oversized allocation, a broken round trip.
    Finding(String),
}

struct Fuzz {
    target: &'static str,
    rng: Rng,
    started: Instant,
    deadline: Instant,
    stats: Stats,
}

impl Fuzz {
    fn new(target: &'static str, seed: u64) -> Fuzz {
        let started = Instant::now();
        Fuzz { target, rng: Rng(seed), started, deadline: started + budget(), stats: Stats::default() }
    }

    /// Whether to run another case: the budget is not spent and fewer than five findings.
    fn running(&self) -> bool {
        Instant::now() < self.deadline && self.stats.findings.len() < 5
    }

    /// Runs one case on `input` (saved as `<target>-<case>.<ext>` if it finds something).
    fn case(&mut self, input: &[u8], ext: &str, f: impl FnOnce() -> Verdict) {
        self.stats.cases += 1;
        let verdict = match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => v,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".into());
                Verdict::Finding(format!("panic: {msg}"))
            }
        };
        match verdict {
            Verdict::Accepted => self.stats.accepted += 1,
            Verdict::Rejected(kind) => {
                self.stats.rejected += 1;
                *self.stats.errors.entry(kind).or_default() += 1;
            }
            Verdict::Finding(what) => {
                let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz");
                let file = dir.join(format!("{}-{}.{ext}", self.target, self.stats.cases));
                let saved = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, input));
                let head = String::from_utf8_lossy(&input[..input.len().min(300)]).into_owned();
                let msg = format!(
                    "{}: case {}: {what}\n    input ({} bytes) {}; starts {head:?}",
                    self.target,
                    self.stats.cases,
                    input.len(),
                    match saved {
                        Ok(()) => format!("saved to {}", file.display()),
                        Err(e) => format!("not saved ({e})"),
                    }
                );
                eprintln!("{msg}");
                self.stats.findings.push(msg);
            }
        }
    }

    /// Prints the counts and asserts: no findings, at least `per_sec` cases per second of the
    /// budget (a fifth to a tenth of what a loaded 2-core machine runs in the debug profile),
    /// and rejected and accepted shares of at least `min_rejected` and `min_accepted`.
    fn finish(self, per_sec: u64, min_rejected: f64, min_accepted: f64) {
        let min_cases = (per_sec as f64 * budget().as_secs_f64()) as u64;
        let s = &self.stats;
        let share = |n: u64| n as f64 / s.cases.max(1) as f64;
        println!(
            "fuzz {}: {} cases in {:.1} s, {} rejected ({:.0}%), {} accepted ({:.0}%), {} findings; errors {:?}",
            self.target,
            s.cases,
            self.started.elapsed().as_secs_f64(),
            s.rejected,
            100.0 * share(s.rejected),
            s.accepted,
            100.0 * share(s.accepted),
            s.findings.len(),
            s.errors
        );
        assert!(s.findings.is_empty(), "{} finding(s):\n{}", s.findings.len(), s.findings.join("\n"));
        assert!(s.cases >= min_cases, "{}: only {} cases ran (want {min_cases})", self.target, s.cases);
        assert!(share(s.rejected) >= min_rejected, "{}: only {:.1}% rejected", self.target, 100.0 * share(s.rejected));
        assert!(share(s.accepted) >= min_accepted, "{}: only {:.1}% accepted", self.target, 100.0 * share(s.accepted));
    }
}

/// The variant name of an error (`Json`, `BadArgument`, ...).
fn variant(e: &Error) -> String {
    let d = format!("{e:?}");
    d.split(|c: char| !c.is_alphanumeric()).next().unwrap_or_default().to_string()
}

/// Imports a decoded trace, checks that an error names the file, prints an accepted graph,
/// and checks that both encodings round-trip the trace exactly.
fn import_checked(trace: Result<Trace, Error>, file: &str) -> Verdict {
    let path = Path::new(file);
    let rejected = |e: Error| {
        let msg = e.to_string();
        if matches!(e, Error::Ir { .. }) {
            Verdict::Finding(format!("the verifier, not the importer, refused the trace: {msg}"))
        } else if !msg.contains(file) {
            Verdict::Finding(format!("error does not name {file}: {msg}"))
        } else {
            Verdict::Rejected(variant(&e))
        }
    };
    let trace = match trace {
        Ok(t) => t,
        Err(e) => return rejected(e),
    };
    let bin = to_bin(&trace);
    // The header carries the version: a bincode trace of another version is refused unread.
    match parse_bin(&bin, path) {
        _ if trace.version != fxhlo_frontend::schema::SCHEMA_VERSION => {}
        Ok(t) if to_bin(&t) == bin => {}
        Ok(_) => return Verdict::Finding("bincode round trip changed the trace".into()),
        Err(e) => return Verdict::Finding(format!("to_bin output does not decode: {e}")),
    }
    // Compared as JSON values (NaN is "nan" whatever its bits), floats to within FLOAT_ULPS.
    let json = to_json(&trace);
    let value = |t: &Trace| serde_json::to_value(t).unwrap_or_default();
    match parse_json(json.as_bytes(), path) {
        Ok(t) if same_json(&value(&t), &value(&trace)) => {}
        Ok(_) => return Verdict::Finding("JSON round trip changed the trace".into()),
        Err(e) => return Verdict::Finding(format!("to_json output does not parse: {e}")),
    }
    match import::import(&trace, path) {
        // Release builds skip the verifier inside import; the fuzzers always run it.
        Ok(g) => match fxhlo_ir::verify(&g) {
            Ok(()) => {
                let _ = fxhlo_ir::print(&g);
                Verdict::Accepted
            }
            Err(e) => Verdict::Finding(format!("import accepted a graph the verifier refuses: {e}")),
        },
        Err(e) => rejected(e),
    }
}

/// The fast bincode path (`parse_bin_view`, then `import_view`) against the owned one
/// (`parse_bin`, then `import`): the same verdict, the same error variant, the same graph.
fn bin_paths_agree(input: &[u8], file: &str) -> Verdict {
    let path = Path::new(file);
    let (view, largest) = largest_allocation(|| parse_bin_view(input, path));
    if largest > allocation_bound(input.len()) {
        return Verdict::Finding(format!("decoding a view of {} bytes allocated {largest} bytes at once", input.len()));
    }
    let fast = view.and_then(|v| import::import_view(&v, path));
    let slow = parse_bin(input, path).and_then(|t| import::import(&t, path));
    match (fast, slow) {
        (Ok(a), Ok(b)) if fxhlo_ir::print(&a) == fxhlo_ir::print(&b) => decode_import(input, file, parse_bin),
        (Ok(_), Ok(_)) => Verdict::Finding("the two bincode paths import different graphs".into()),
        (Err(a), Err(b)) if variant(&a) == variant(&b) => decode_import(input, file, parse_bin),
        (a, b) => Verdict::Finding(format!(
            "the bincode paths disagree: view {:?}, owned {:?}",
            a.map(|_| "Ok").map_err(|e| e.to_string()),
            b.map(|_| "Ok").map_err(|e| e.to_string())
        )),
    }
}

/// How far apart, in units in the last place, a float may come back from a JSON round trip.
/// 0: the workspace enables serde_json's `float_roundtrip` (without it some 17-digit floats
/// such as `0.11844674407370955`, which PyTorch's exporter writes, read back one ulp off).
const FLOAT_ULPS: u64 = 0;

/// `a == b`, but floats within [`FLOAT_ULPS`] of each other are equal.
// FLOAT_ULPS is 0 now; the tolerance stays a knob, so the comparison may be `<= 0`.
#[allow(clippy::absurd_extreme_comparisons)]
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (p, q) = (x.as_f64().unwrap_or_default(), y.as_f64().unwrap_or_default());
            p.is_sign_negative() == q.is_sign_negative() && p.to_bits().abs_diff(q.to_bits()) <= FLOAT_ULPS
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_json(v, w)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// A decoder run with the allocation bound checked, then [`import_checked`].
fn decode_import(input: &[u8], file: &str, decode: fn(&[u8], &Path) -> fxhlo_frontend::Result<Trace>) -> Verdict {
    let (trace, largest) = largest_allocation(|| decode(input, Path::new(file)));
    if largest > allocation_bound(input.len()) {
        return Verdict::Finding(format!("decoding {} bytes allocated {largest} bytes at once", input.len()));
    }
    import_checked(trace, file)
}

// ---------------------------------------------------------------------------------------------
// Byte-level mutation.

const JSON_TOKENS: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "-1", "0", "1", "-0", "0.5", "1e999", "-1e999",
    "9223372036854775807", "-9223372036854775808", "18446744073709551616", "4294967296", "\"none\"", "\"s0\"",
    "\"inf\"", "\"nan\"", "\"f32\"", "\"bool\"", "\"getitem\"", "{\"tensor\": \"x\"}", "{\"int\": -1}",
    "{\"ints\": []}", "\\u0000", "\\ud800", "\\\"", "\"kwargs\": {},", "\"meta\": [],", "[[[[[[[[[[[[",
];

const BIN_TOKENS: &[&[u8]] = &[
    &[0], &[1], &[0xfa], &[0xfb, 0xff, 0xff], &[0xfc, 0xff, 0xff, 0xff, 0xff], &[0xfc, 0xff, 0xff, 0xff, 0x3f],
    &[0xfc, 0, 0, 0, 0x40], &[0xfc, 0, 0, 0x10, 0], &[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0xfd, 0, 0, 0, 0, 0, 1, 0, 0], &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff], &[0x80], &[0xff], b"FXHLOTRC", b"aten.", &[0xc0, 0x80], &[0xed, 0xa0, 0x80],
];

/// Applies 1 to 8 stacked byte mutations; `pool` supplies splices, `tokens` dictionary words.
fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>, pool: &[&[u8]], tokens: &[&[u8]]) {
    for _ in 0..1 << rng.below(4) {
        let len = data.len();
        let at = rng.below(len + 1);
        match rng.below(12) {
            0 if len > 0 => data[at.min(len - 1)] ^= 1 << rng.below(8),
            1 if len > 0 => data[at.min(len - 1)] = rng.next() as u8,
            2 if len > 0 => {
                let i = at.min(len - 1);
                data[i] = data[i].wrapping_add(if rng.chance(50) { 1 } else { 255 });
            }
            3 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(at..at, bytes);
            }
            4 if len > 0 => {
                let end = (at + 1 + rng.below(64)).min(len);
                data.drain(at.min(len - 1)..end);
            }
            5 => data.truncate(at),
            6 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(256)).min(len);
                let chunk = data[start..end].to_vec();
                let to = rng.below(data.len() + 1);
                data.splice(to..to, chunk);
            }
            7 if !pool.is_empty() => {
                let other = *rng.pick(pool);
                if !other.is_empty() {
                    let start = rng.below(other.len());
                    let end = (start + 1 + rng.below(512)).min(other.len());
                    let cut = (at + rng.below(512)).min(len);
                    data.splice(at..cut, other[start..end].iter().copied());
                }
            }
            8 | 9 => {
                let t = *rng.pick(tokens);
                if rng.chance(50) || len == 0 {
                    data.splice(at..at, t.iter().copied());
                } else {
                    let end = (at + t.len()).min(len);
                    data.splice(at..end, t.iter().copied());
                }
            }
            10 if len >= 8 => {
                let v: u64 = *rng.pick(&[0, 1, u64::MAX, i64::MAX as u64, 1 << 31, 1 << 32, 1 << 63, 0xfd]);
                let width = *rng.pick(&[1usize, 2, 4, 8]);
                let i = at.min(len - width);
                data[i..i + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
            _ => {
                let n = rng.below(32);
                data.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Structure-aware mutation of a trace's JSON value.

/// A JSON pointer to a value in a trace, with what the value is and the key it sits under.
struct Ptr {
    path: String,
    kind: Kind,
    /// The key, if it is one the mutations look for.
    key: Option<&'static str>,
}

const KEYS: &[&str] = &["dtype", "tensor", "sizes", "meta"];

#[derive(PartialEq)]
enum Kind {
    Number,
    String,
    Array,
    Object,
    Other,
}

/// Pointers to every value in `v` (the root last).
fn pointers(v: &Value) -> Vec<Ptr> {
    fn walk(v: &Value, path: &mut String, key: &str, out: &mut Vec<Ptr>) {
        let len = path.len();
        let kind = match v {
            Value::Object(m) => {
                for (k, x) in m {
                    path.push('/');
                    if k.contains(['~', '/']) {
                        path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    } else {
                        path.push_str(k);
                    }
                    walk(x, path, k, out);
                    path.truncate(len);
                }
                Kind::Object
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let _ = std::fmt::Write::write_fmt(path, format_args!("/{i}"));
                    walk(x, path, "", out);
                    path.truncate(len);
                }
                Kind::Array
            }
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            _ => Kind::Other,
        };
        out.push(Ptr { path: path.clone(), kind, key: KEYS.iter().find(|k| **k == key).copied() });
    }
    let mut out = Vec::new();
    walk(v, &mut String::new(), "", &mut out);
    out
}

/// A key under which a duplicate of another key is written (JSON objects cannot hold two).
const DUP: &str = "\u{1}dup";

fn extreme_number(rng: &mut Rng) -> Value {
    rng.pick(&[
        json!(-1),
        json!(0),
        json!(1),
        json!(2),
        json!(-2),
        json!(3),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1u64 << 31),
        json!(1u64 << 32),
        json!(1u64 << 40),
        json!(i64::MAX / 2 + 1),
        json!(-(1i64 << 62)),
        json!(1e308),
        json!(-1e308),
        json!(0.5),
        json!(-0.0),
        json!(255),
        json!(65536),
    ])
    .clone()
}

fn weird_string(rng: &mut Rng, s: &Seeds) -> String {
    match rng.below(7) {
        0 => rng.pick(&s.names).clone(),
        // The name the importer gives a scalar operand it materializes.
        6 => format!("{}.{}{}", rng.pick(&s.names), rng.pick(&["scalar", "alpha", "scaled"]), rng.below(3)),
        1 => rng.pick(&s.targets).clone(),
        2 => rng.pick(DTYPES).to_string(),
        3 => "x".repeat(1 + rng.below(2000)),
        _ => rng
            .pick(&["", "ghost", "ü\u{0}\n\"", "%a#1", "a,b", "a b", "nan", "inf", "none", "s0", "fxhlo-trace", "user_input"])
            .to_string(),
    }
}

fn random_arg(rng: &mut Rng, s: &Seeds) -> Value {
    let name = rng.pick(&s.names).clone();
    match rng.below(14) {
        0 => json!({"tensor": name}),
        1 => json!({"tensors": [name, rng.pick(&s.names)]}),
        2 => json!({"optional_tensors": [name, null]}),
        3 => json!({"int": extreme_number(rng)}),
        4 => json!({"ints": [extreme_number(rng), extreme_number(rng)]}),
        5 => json!({"float": rng.pick(&[json!(0.5), json!("inf"), json!("nan"), json!(-0.0), json!(1e308)])}),
        6 => json!({"floats": [1.0, "-inf"]}),
        7 => json!({"bool": rng.chance(50)}),
        8 => json!({"bools": [true, false]}),
        9 => json!({"string": rng.pick(&["tanh", "none", "floor", "trunc", "?"])}),
        10 => json!({"dtype": rng.pick(DTYPES)}),
        11 => json!({"device": "cpu"}),
        12 => json!({"memory_format": "contiguous_format"}),
        _ => json!("none"),
    }
}

/// The paths of the pointers under `key`.
fn keyed<'a>(ptrs: &'a [Ptr], key: &str) -> Vec<&'a String> {
    ptrs.iter().filter(|p| p.key == Some(key)).map(|p| &p.path).collect()
}

/// The paths of the pointers of `kind`.
fn of_kind(ptrs: &[Ptr], kind: Kind) -> Vec<&String> {
    ptrs.iter().filter(|p| p.kind == kind).map(|p| &p.path).collect()
}

/// Applies one structure-aware mutation; false when the picked kind found nothing to change.
fn mutate_value(rng: &mut Rng, v: &mut Value, s: &Seeds) -> bool {
    let ptrs = pointers(v);
    let node_count = v["nodes"].as_array().map_or(0, |a| a.len());
    let entry_ptrs: Vec<String> = (0..v["inputs"].as_array().map_or(0, |a| a.len()))
        .map(|i| format!("/inputs/{i}"))
        .chain((0..node_count).map(|i| format!("/nodes/{i}")))
        .collect();
    let p = rng.pick(&ptrs).path.clone();
    match rng.below(26) {
        // Any number to an extreme, or to another type.
        0 | 1 => {
            let nums = of_kind(&ptrs, Kind::Number);
            let Some(&p) = nums.get(rng.below(nums.len())) else { return false };
            let new = if rng.chance(70) {
                extreme_number(rng)
            } else {
                rng.pick(&[json!("3"), json!("s0"), json!("inf"), Value::Null, json!(true), json!([]), json!({}), json!(1.5)]).clone()
            };
            *v.pointer_mut(p).unwrap() = new;
        }
        // Any string to another.
        2 => {
            let strs = of_kind(&ptrs, Kind::String);
            let Some(&p) = strs.get(rng.below(strs.len())) else { return false };
            *v.pointer_mut(p).unwrap() = Value::String(weird_string(rng, s));
        }
        // Arrays: empty, drop, duplicate, reverse, grow huge.
        3 | 4 => {
            let arrs = of_kind(&ptrs, Kind::Array);
            let Some(&p) = arrs.get(rng.below(arrs.len())) else { return false };
            let a = v.pointer_mut(p).unwrap().as_array_mut().unwrap();
            match rng.below(5) {
                0 => a.clear(),
                1 if !a.is_empty() => {
                    a.remove(rng.below(a.len()));
                }
                2 if !a.is_empty() => {
                    let x = a[rng.below(a.len())].clone();
                    a.insert(rng.below(a.len() + 1), x);
                }
                3 => a.reverse(),
                _ if !a.is_empty() => {
                    // Huge lists of scalars (ranks, dims); a few more nodes or args.
                    let x = a[rng.below(a.len())].clone();
                    let n = if x.is_object() || x.is_array() { *rng.pick(&[2usize, 16]) } else { *rng.pick(&[64usize, 1000, 20_000]) };
                    a.extend(std::iter::repeat_n(x, n));
                }
                _ => return false,
            }
        }
        // Objects: remove, add unknown, duplicate a key.
        5 | 6 => {
            let objs = of_kind(&ptrs, Kind::Object);
            let Some(&p) = objs.get(rng.below(objs.len())) else { return false };
            let o = v.pointer_mut(p).unwrap().as_object_mut().unwrap();
            let keys: Vec<String> = o.keys().cloned().collect();
            match rng.below(3) {
                0 if !keys.is_empty() => {
                    o.remove(rng.pick(&keys));
                }
                1 => {
                    o.insert(rng.pick(&["colour", "meta", "name", "tensor", "kwargs", "weight"]).to_string(), json!(1));
                }
                _ if !keys.is_empty() => {
                    let k = rng.pick(&keys).clone();
                    let dup = if rng.chance(50) { o[&k].clone() } else { json!(0) };
                    o.insert(format!("{DUP}{k}"), dup);
                }
                _ => return false,
            }
        }
        // A subtree replaced by one from any seed, or by null / {} / [] / "none".
        7 => {
            let donor = rng.pick(&s.values);
            let dp = pointers(donor);
            let sub = if rng.chance(70) {
                donor.pointer(&rng.pick(&dp).path).cloned().unwrap_or(Value::Null)
            } else {
                rng.pick(&[Value::Null, json!({}), json!([]), json!("none")]).clone()
            };
            if p.is_empty() {
                return false;
            }
            *v.pointer_mut(&p).unwrap() = sub;
        }
        // Swap the names of two entries, or give one another's name.
        8 | 9 => {
            if entry_ptrs.len() < 2 {
                return false;
            }
            let (a, b) = (format!("{}/name", rng.pick(&entry_ptrs)), format!("{}/name", rng.pick(&entry_ptrs)));
            let (Some(na), Some(nb)) = (v.pointer(&a).cloned(), v.pointer(&b).cloned()) else { return false };
            *v.pointer_mut(&a).unwrap() = nb;
            if rng.chance(50) {
                *v.pointer_mut(&b).unwrap() = na;
            }
        }
        // Nodes: delete, duplicate, swap, move, reverse.
        10 | 11 => {
            let Some(nodes) = v.get_mut("nodes").and_then(Value::as_array_mut) else { return false };
            if nodes.is_empty() {
                return false;
            }
            let (i, j) = (rng.below(nodes.len()), rng.below(nodes.len()));
            match rng.below(5) {
                0 => {
                    nodes.remove(i);
                }
                1 => {
                    let n = nodes[i].clone();
                    nodes.insert(j, n);
                }
                2 => nodes.swap(i, j),
                3 => {
                    let n = nodes.remove(i);
                    nodes.insert(j.min(nodes.len()), n);
                }
                _ => nodes.reverse(),
            }
        }
        // Dtypes and targets.
        12 => {
            let ds = keyed(&ptrs, "dtype");
            let Some(&p) = ds.get(rng.below(ds.len())) else { return false };
            *v.pointer_mut(p).unwrap() = json!(rng.pick(DTYPES));
        }
        13 => {
            let target = json!(rng.pick(&s.targets));
            let Some(node) = node_mut(v, rng.below(node_count)) else { return false };
            node.insert("target".into(), target);
        }
        // A tensor reference to a missing, later or arbitrary name.
        14 => {
            let ts = keyed(&ptrs, "tensor");
            let Some(&p) = ts.get(rng.below(ts.len())) else { return false };
            let later = v["nodes"].as_array().and_then(|n| n.last()).and_then(|n| n["name"].as_str()).unwrap_or("x").to_string();
            let name = match rng.below(3) {
                0 => "ghost".to_string(),
                1 => later,
                _ => rng.pick(&s.names).clone(),
            };
            *v.pointer_mut(p).unwrap() = json!(name);
        }
        // Metas that disagree: a size off by one, a dim more or less, a meta more or less.
        15 | 16 => {
            let sizes = keyed(&ptrs, "sizes");
            let Some(&p) = sizes.get(rng.below(sizes.len())) else { return false };
            let Some(a) = v.pointer_mut(p).and_then(Value::as_array_mut) else { return false };
            match rng.below(5) {
                0 if !a.is_empty() => {
                    let i = rng.below(a.len());
                    a[i] = json!(a[i].as_i64().unwrap_or(0).saturating_add(if rng.chance(50) { 1 } else { -1 }));
                }
                1 => a.push(json!(1)),
                2 => {
                    a.pop();
                }
                3 if !a.is_empty() => a[0] = json!(0),
                _ => {
                    let metas = keyed(&ptrs, "meta");
                    let Some(&m) = metas.get(rng.below(metas.len())) else { return false };
                    match v.pointer_mut(m) {
                        Some(Value::Array(ms)) if !ms.is_empty() => {
                            if rng.chance(50) {
                                let x = ms[0].clone();
                                ms.push(x);
                            } else {
                                ms.pop();
                            }
                        }
                        _ => return false,
                    }
                }
            }
        }
        // An argument of another kind, or extreme ints.
        17 | 18 => {
            let (i, arg) = (rng.below(node_count), random_arg(rng, s));
            let k = *rng.pick(&["alpha", "beta", "dtype", "keepdim", "approximate", "rounding_mode", "dim", "index", "memory_format"]);
            let kwarg = rng.chance(30);
            let Some(n) = node_mut(v, i) else { return false };
            if kwarg {
                match n.entry("kwargs").or_insert_with(|| json!({})).as_object_mut() {
                    Some(kw) => kw.insert(k.into(), arg),
                    None => return false,
                };
            } else if let Some(args) = n.get_mut("args").and_then(Value::as_array_mut) {
                match args.len() {
                    0 => args.push(arg),
                    len => args[rng.below(len)] = arg,
                }
            } else {
                return false;
            }
        }
        // Inputs: kind and weight.
        19 => {
            let inputs = v["inputs"].as_array().map_or(0, |a| a.len());
            let (k, weight) = (rng.below(3), weird_string(rng, s));
            let kind = json!(rng.pick(&["user_input", "parameter", "buffer", "constant", "output"]));
            let Some(i) = v.get_mut("inputs").and_then(|a| a.get_mut(rng.below(inputs))).and_then(Value::as_object_mut) else {
                return false;
            };
            match k {
                0 => i.insert("kind".into(), kind),
                1 => i.remove("weight"),
                _ => i.insert("weight".into(), json!(weight)),
            };
        }
        // Outputs.
        20 => {
            let out = match rng.below(4) {
                0 => json!([{"tensor": "ghost"}]),
                1 => json!([{"int": 1}]),
                2 => json!([]),
                _ => json!([{"tensor": rng.pick(&s.names)}, "none"]),
            };
            v["outputs"] = out;
        }
        // An input's sizes: 0-d, an empty or huge dim, one dim more or less. Its consumers
        // then run their inference on it before any meta is compared.
        22 | 23 => {
            let inputs = v["inputs"].as_array().map_or(0, |a| a.len());
            let k = rng.below(5);
            let big = *rng.pick(&[1i64 << 40, i64::MAX, 1 << 31]);
            let Some(a) = v.pointer_mut(&format!("/inputs/{}/meta/sizes", rng.below(inputs))).and_then(Value::as_array_mut) else {
                return false;
            };
            match k {
                0 => a.clear(),
                1 => a.push(json!(1)),
                2 => {
                    a.pop();
                }
                3 if !a.is_empty() => a[0] = json!(0),
                _ if !a.is_empty() => {
                    let i = rng.below(a.len());
                    a[i] = json!(big);
                }
                _ => return false,
            }
        }
        // An integer argument (dims, sizes, steps, offsets) to an edge value.
        24 | 25 => {
            let edge = *rng.pick(&[-1i64, 0, 1, 2, -2, -3, 5, i64::MAX, i64::MIN, 1 << 62, -(1 << 62), 1 << 31]);
            let (i, grow) = (rng.below(node_count), rng.chance(20));
            let Some(args) = node_mut(v, i).and_then(|n| n.get_mut("args")).and_then(Value::as_array_mut) else { return false };
            let ints: Vec<usize> = (0..args.len()).filter(|&j| args[j].get("int").is_some() || args[j].get("ints").is_some()).collect();
            let Some(&j) = ints.get(rng.below(ints.len())) else { return false };
            let which = rng.next() as usize;
            match args[j].as_object_mut() {
                Some(o) if o.contains_key("int") => {
                    o.insert("int".into(), json!(edge));
                }
                Some(o) => match o.get_mut("ints").and_then(Value::as_array_mut) {
                    Some(l) if grow || l.is_empty() => l.push(json!(edge)),
                    Some(l) => {
                        let len = l.len();
                        l[which % len] = json!(edge);
                    }
                    None => return false,
                },
                None => return false,
            }
        }
        // Header.
        _ => match rng.below(3) {
            0 => v["format"] = json!(rng.pick(&["onnx", "", "fxhlo-trace "])),
            1 => v["version"] = extreme_number(rng),
            _ => v["name"] = json!(weird_string(rng, s)),
        },
    }
    true
}

/// Node `i` of the trace, if it is an object.
fn node_mut(v: &mut Value, i: usize) -> Option<&mut serde_json::Map<String, Value>> {
    v.get_mut("nodes")?.get_mut(i)?.as_object_mut()
}

/// A structure-mutated seed, as JSON text (compact or pretty).
fn mutated_json(rng: &mut Rng, s: &Seeds) -> Vec<u8> {
    // The op zoo (last) a third of the time: it holds the most distinct inference rules.
    let mut v = if rng.chance(33) { s.values[s.values.len() - 1].clone() } else { rng.pick(&s.values).clone() };
    let rounds = 1 + rng.below(4);
    let mut applied = 0;
    for _ in 0..rounds * 4 {
        if applied == rounds {
            break;
        }
        applied += mutate_value(rng, &mut v, s) as usize;
    }
    let text = if rng.chance(50) { serde_json::to_string(&v) } else { serde_json::to_string_pretty(&v) };
    let text = text.expect("a Value serializes");
    // `"\u0001dupKEY": x` becomes a second `"KEY": x`.
    text.replace("\"\\u0001dup", "\"").into_bytes()
}

// ---------------------------------------------------------------------------------------------
// The targets.

#[test]
fn fuzz_json_bytes() {
    let s = seeds();
    let pool: Vec<&[u8]> = s.json.iter().map(|(_, b)| b.as_slice()).collect();
    let tokens: Vec<&[u8]> = JSON_TOKENS.iter().map(|t| t.as_bytes()).collect();
    let mut f = Fuzz::new("json-bytes", 0x15_0b17e5);
    while f.running() {
        let input = match f.rng.below(10) {
            // Arbitrary bytes, or arbitrary JSON-ish token soup.
            0 => (0..f.rng.below(256)).map(|_| f.rng.next() as u8).collect(),
            1 => (0..f.rng.below(64)).flat_map(|_| tokens[f.rng.below(tokens.len())].to_vec()).collect(),
            _ => {
                let mut d = f.rng.pick(&pool).to_vec();
                mutate_bytes(&mut f.rng, &mut d, &pool, &tokens);
                d
            }
        };
        f.case(&input, "json", || decode_import(&input, GRAPH_JSON, parse_json));
    }
    f.finish(150, 0.5, 0.0);
}

#[test]
fn fuzz_json_structure() {
    let s = seeds();
    let mut f = Fuzz::new("json-structure", 0x57_2c7e);
    while f.running() {
        let input = mutated_json(&mut f.rng, s);
        f.case(&input, "json", || decode_import(&input, GRAPH_JSON, parse_json));
    }
    f.finish(20, 0.3, 0.02);
}

#[test]
fn fuzz_bincode() {
    let s = seeds();
    let pool: Vec<&[u8]> = s.bins.iter().map(|b| b.as_slice()).collect();
    assert!(!pool.is_empty(), "no seed parses");
    let header = &s.bins[0][..12];
    let mut f = Fuzz::new("bincode", 0xb1_7c0de);
    while f.running() {
        let input = match f.rng.below(10) {
            // Arbitrary bytes after a valid header.
            0 | 1 => {
                let mut d = header.to_vec();
                d.extend((0..f.rng.below(512)).map(|_| f.rng.next() as u8));
                d
            }
            // A structure-mutated trace that still decodes, encoded, maybe then byte-mutated.
            2 | 3 => match parse_json(&mutated_json(&mut f.rng, s), Path::new(GRAPH_JSON)) {
                Ok(t) => {
                    let mut d = to_bin(&t);
                    if f.rng.chance(50) {
                        mutate_bytes(&mut f.rng, &mut d, &pool, BIN_TOKENS);
                    }
                    d
                }
                Err(_) => continue,
            },
            // A huge length prefix somewhere after the header.
            4 => {
                let mut d = f.rng.pick(&pool).to_vec();
                let at = 12 + f.rng.below(d.len() - 12);
                let mut prefix = vec![if f.rng.chance(50) { 0xfc } else { 0xfd }];
                let v = f.rng.next() >> f.rng.below(40);
                prefix.extend_from_slice(&v.to_le_bytes()[..if prefix[0] == 0xfc { 4 } else { 8 }]);
                d.splice(at..at + f.rng.below(2), prefix);
                d
            }
            _ => {
                let mut d = f.rng.pick(&pool).to_vec();
                mutate_bytes(&mut f.rng, &mut d, &pool, BIN_TOKENS);
                d
            }
        };
        f.case(&input, "bin", || bin_paths_agree(&input, "graph.bin"));
    }
    f.finish(50, 0.5, 0.005);
}

const IR_TOKENS: &[&str] = &[
    "%", "#1", "#0", ",", "{", "}", "[", "]", "(", ")", ":", "=", " : ", "loc(\"a\":1)", "loc(", "f32[]", "(f32[2], i64[2])",
    "9223372036854775807", "-9223372036854775808", "-1", "0", "aten.view", "unknown", "input", "\"", "\\u{0}", "//",
    "\n", "return", "NaN", "inf", "-inf", "none", "true", "1e400", "[9223372036854775807, 2]", "{target = \"x\"}",
];

/// Integer tokens in `text`: `(start, end)` byte ranges of `-?[0-9]+`.
fn int_tokens(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
            let mut end = i;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            out.push((start, end));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// A mutated IR text: line, token or byte level.
fn mutated_ir(rng: &mut Rng, s: &Seeds) -> String {
    let mut text = if rng.chance(33) { s.ir[s.ir.len() - 1].clone() } else { rng.pick(&s.ir).clone() };
    for _ in 0..1 + rng.below(3) {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let n = lines.len();
        match rng.below(9) {
            0 if n > 1 => {
                lines.remove(rng.below(n));
            }
            1 if n > 0 => {
                let l = lines[rng.below(n)].clone();
                lines.insert(rng.below(n + 1), l);
            }
            2 if n > 1 => lines.swap(rng.below(n), rng.below(n)),
            3 | 4 => {
                // An integer to an extreme.
                let ints = int_tokens(&text);
                if let Some(&(a, b)) = ints.get(rng.below(ints.len())) {
                    let v = rng.pick(&["9223372036854775807", "-9223372036854775808", "-1", "0", "4611686018427387904", "2", "-3", "18446744073709551615"]);
                    text.replace_range(a..b, v);
                }
                continue;
            }
            5 => {
                // A value name replaced by another, in one place or everywhere.
                let names: Vec<&str> = text.split('%').skip(1).filter_map(|t| t.split([' ', ',', '\n', '#']).next()).filter(|t| !t.is_empty()).collect();
                if names.len() >= 2 {
                    let (a, b) = (format!("%{}", rng.pick(&names)), rng.pick(&names).to_string());
                    let b = if rng.chance(30) { rng.pick(&["a,b", "a#1", "p#0", "é", "x y", ""]).to_string() } else { b };
                    text = if rng.chance(50) { text.replacen(&a, &format!("%{b}"), 1) } else { text.replace(&a, &format!("%{b}")) };
                }
                continue;
            }
            6 if n > 2 => {
                // Another op on a node line.
                let i = 1 + rng.below(n - 2);
                if let Some((lhs, rhs)) = lines[i].split_once(" = ") {
                    let rest = rhs.split_once(' ').map(|(_, r)| r).unwrap_or("");
                    lines[i] = format!("{lhs} = {} {rest}", rng.pick(&s.ops));
                }
            }
            7 => {
                // Another dtype in a type.
                let d = ["f32[", "i64[", "bool[", "f16[", "u8["];
                let (from, to) = (rng.pick(&d), rng.pick(&d));
                text = text.replacen(from, to, 1 + rng.below(3));
                continue;
            }
            _ => {
                let tokens: Vec<&[u8]> = IR_TOKENS.iter().map(|t| t.as_bytes()).collect();
                let pool: Vec<&[u8]> = s.ir.iter().map(|t| t.as_bytes()).collect();
                let mut bytes = text.into_bytes();
                mutate_bytes(rng, &mut bytes, &pool, &tokens);
                text = String::from_utf8_lossy(&bytes).into_owned();
                continue;
            }
        }
        text = lines.join("\n") + "\n";
    }
    text
}

/// Parses IR text; a graph it accepts must print, parse and print back identically.
fn parse_ir_checked(text: &str) -> Verdict {
    let g = match fxhlo_ir::parse(text) {
        Ok(g) => g,
        Err(e) => {
            let d = format!("{e:?}");
            return Verdict::Rejected(d.split(|c: char| !c.is_alphanumeric()).next().unwrap_or_default().to_string());
        }
    };
    let printed = fxhlo_ir::print(&g);
    match fxhlo_ir::parse(&printed) {
        Ok(g2) if fxhlo_ir::print(&g2) == printed => Verdict::Accepted,
        Ok(g2) => Verdict::Finding(format!("print → parse → print differs:\n{printed}---\n{}", fxhlo_ir::print(&g2))),
        Err(e) => Verdict::Finding(format!("the printed graph does not parse back: {e}\n{printed}")),
    }
}

#[test]
fn fuzz_ir_text() {
    let s = seeds();
    assert!(!s.ir.is_empty(), "no seed imports");
    let mut f = Fuzz::new("ir-text", 0x1e_7e47);
    while f.running() {
        let text = mutated_ir(&mut f.rng, s);
        f.case(text.as_bytes(), "gir", || parse_ir_checked(&text));
    }
    f.finish(100, 0.3, 0.01);
}

// ---------------------------------------------------------------------------------------------
// Deterministic checks next to the fuzzers.

/// A bincode trace whose header and leading fields are valid, up to (not including) the
/// length of `inputs`.
fn bin_prefix() -> Vec<u8> {
    let empty = Trace {
        format: "fxhlo-trace".into(),
        version: fxhlo_frontend::schema::SCHEMA_VERSION,
        name: "x".into(),
        decomposition_table: None,
        inputs: vec![],
        nodes: vec![],
        outputs: vec![],
        subgraphs: vec![],
    };
    let mut b = to_bin(&empty);
    b.truncate(b.len() - 4); // the four empty lengths: inputs, nodes, outputs, subgraphs
    b
}

#[test]
fn bincode_huge_lengths_fail_fast_without_allocating() {
    let header = &bin_prefix()[..12];
    let with = |base: &[u8], tail: &[u8]| [base, tail].concat();
    let u32le = |v: u32| [&[0xfc][..], &v.to_le_bytes()].concat();
    let u64le = |v: u64| [&[0xfd][..], &v.to_le_bytes()].concat();
    let prefix = bin_prefix();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("format length u64::MAX", with(header, &u64le(u64::MAX))),
        ("format length 2^40", with(header, &u64le(1 << 40))),
        ("format length 1 GiB - 1", with(header, &u32le((1 << 30) - 1))),
        ("format length 256 MiB", with(header, &u32le(1 << 28))),
        ("format length 1 MiB + 1", with(header, &u32le((1 << 20) + 1))),
        ("inputs length u64::MAX", with(&prefix, &u64le(u64::MAX))),
        ("inputs length 2^32", with(&prefix, &u64le(1 << 32))),
        ("nodes length 2^40", with(&prefix, &[&[0u8][..], &u64le(1 << 40)].concat())),
        ("name of first input 512 MiB", with(&prefix, &[&[1u8][..], &u32le(1 << 29)].concat())),
    ];
    for (what, input) in cases {
        let start = Instant::now();
        let (result, largest) = largest_allocation(|| parse_bin(&input, Path::new("graph.bin")));
        let elapsed = start.elapsed();
        let err = result.err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{what}: decoded"));
        println!("{what}: {} input bytes, Err in {elapsed:?}, largest allocation {largest} B: {err}", input.len());
        assert!(err.contains("graph.bin: malformed bincode trace"), "{what}: {err}");
        assert!(elapsed < Duration::from_millis(500), "{what}: took {elapsed:?}");
        assert!(largest <= allocation_bound(input.len()), "{what}: allocated {largest} bytes for {} input bytes", input.len());
        let (view, largest) = largest_allocation(|| parse_bin_view(&input, Path::new("graph.bin")).map(|_| ()));
        let err = view.err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{what}: decoded as a view"));
        assert!(err.contains("graph.bin: malformed bincode trace"), "{what} (view): {err}");
        assert!(largest <= allocation_bound(input.len()), "{what} (view): allocated {largest} bytes");
    }
}

#[test]
fn weights_are_borrowed_from_the_mapped_file() {
    let mut checked = 0;
    for dir in fixture_dirs() {
        let bundle = Bundle::open(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for file in [&bundle.weights, &bundle.reference].into_iter().flatten() {
            let map = file.mapped_range().expect("a tensor file is never empty");
            for name in file.names() {
                let bytes = file.get(name).expect("listed tensors resolve").bytes;
                let start = bytes.as_ptr() as usize;
                assert!(
                    map.start <= start && start + bytes.len() <= map.end,
                    "{}: tensor `{name}` lies outside the mapping (copied)",
                    file.path().display()
                );
                checked += 1;
            }
        }
    }
    println!("weights: {checked} tensor views, all inside their file's mapping");
    assert!(checked > 0);
}




/// Traces the fuzzers found, each with the error it must now give: they panicked (overflow,
/// division by zero, an index out of bounds) or reached the verifier, whose errors mean a bug
/// in fxhlo, instead of failing import with a typed error.
#[test]
fn import_regressions_found_by_fuzzing() {
    let meta = |sizes: Value| {
        let rank = sizes.as_array().map_or(0, |a| a.len());
        json!({"dtype": "f32", "sizes": sizes, "strides": vec![1; rank], "storage_offset": 0})
    };
    let node = |name: &str, target: &str, args: Value, sizes: Value| {
        json!({"name": name, "target": target, "args": args, "kwargs": {}, "meta": [meta(sizes)]})
    };
    let import = |nodes: Value, outputs: Value| {
        let v = json!({"format": "fxhlo-trace", "version": 1, "name": "t", "inputs": [
            {"name": "x", "kind": "user_input", "meta": meta(json!([2, 3]))}], "nodes": nodes, "outputs": outputs});
        let path = Path::new(GRAPH_JSON);
        let t = parse_json(v.to_string().as_bytes(), path).expect("parses");
        let r = import::import(&t, path);
        println!("{:?}", r.as_ref().map(|_| "imports").map_err(|e| e.to_string()));
        r
    };
    let relu = node("r", "aten.relu.default", json!([{"tensor": "x"}]), json!([2, 3]));
    let e = import(json!([relu]), json!([])).expect_err("no outputs");
    assert!(matches!(e, Error::BadArgument { .. }) && e.to_string().contains("no outputs"), "{e}");

    // A node named like the scalar operand the importer materializes for an earlier node.
    let nodes = json!([
        node("mul", "aten.mul.Tensor", json!([{"tensor": "x"}, {"float": 2.0}]), json!([2, 3])),
        node("mul.scalar1", "aten.relu.default", json!([{"tensor": "mul"}]), json!([2, 3])),
    ]);
    let e = import(nodes, json!([{"tensor": "mul.scalar1"}])).expect_err("duplicate");
    assert!(matches!(e, Error::DuplicateName { .. }), "{e}");

    // Sizes whose arithmetic overflows, windows that divide by zero, a scalar reduced over
    // dim 0: an error, or the right type, never a panic.
    let sum = node("s", "aten.sum.default", json!([{"tensor": "x"}]), json!([]));
    let cases = [
        ("aten.view.default", json!([{"tensor": "x"}, {"ints": [i64::MAX, 2]}]), json!([i64::MAX, 2]), false),
        ("aten.slice.Tensor", json!([{"tensor": "x"}, {"int": 1}, {"int": 0}, {"int": 3}, {"int": i64::MAX}]), json!([2, 1]), true),
        ("aten.sum.dim_IntList", json!([{"tensor": "s"}, {"ints": [0]}]), json!([]), true),
        ("aten.avg_pool1d.default", json!([{"tensor": "x"}, {"ints": [0]}, {"ints": [0]}]), json!([2, 3]), false),
        ("aten.max_pool2d_with_indices.default", json!([{"tensor": "x"}, {"ints": [2]}, {"ints": [i64::MAX]}, {"ints": [i64::MAX]}]), json!([1, 1]), false),
        ("aten.transpose.int", json!([{"tensor": "s"}, {"int": 0}, {"int": -1}]), json!([]), true),
        ("aten.constant_pad_nd.default", json!([{"tensor": "x"}, {"ints": [i64::MAX, 1]}]), json!([2, 3]), false),
        ("aten.repeat.default", json!([{"tensor": "x"}, {"ints": [i64::MAX, 2]}]), json!([2, 3]), false),
        ("aten.as_strided.default", json!([{"tensor": "x"}, {"ints": [2, 2]}, {"ints": [i64::MAX, 1]}]), json!([2, 2]), false),
        ("aten.split_with_sizes.default", json!([{"tensor": "x"}, {"ints": [i64::MAX, i64::MAX, 4]}]), json!([2, 3]), false),
    ];
    for (target, args, sizes, ok) in cases {
        let r = import(json!([sum, node("n", target, args, sizes)]), json!([{"tensor": "n"}]));
        assert_eq!(r.is_ok(), ok, "{target}: {:?}", r.err().map(|e| e.to_string()));
    }
    // `split.Tensor` sized from its metas: a 0-d one, and one whose size would mean 2^40 chunks
    // (a chunk list of 8 TiB: the process aborted).
    for sizes in [json!([]), json!([1i64 << 40])] {
        let split = node("n", "aten.split.Tensor", json!([{"tensor": "x"}, {"int": 1}, {"int": 0}]), sizes);
        let getitem = node("g", "getitem", json!([{"tensor": "n"}, {"int": 0}]), json!([1, 3]));
        assert!(import(json!([split, getitem]), json!([{"tensor": "g"}])).is_err());
    }
}

/// IR text the fuzzer found to panic the parser or the verifier behind it.
#[test]
fn ir_text_regressions_found_by_fuzzing() {
    let graph = |inputs: &str, body: &str| format!("graph @g {{\n{inputs}{body}  return %y\n}}\n");
    let x = |ty: &str| format!("  %x = input {{kind = user_input}} : {ty}\n");
    let w = |ty: &str| format!("  %w = input {{kind = parameter, weight = \"w\"}} : {ty}\n");
    let conv = |attrs: &str| format!("  %y = aten.convolution %x, %w {{{attrs}, has_bias = false}} : f32[1,1,3]\n");
    let cases = [
        // A `]` before the `[` of a type.
        (graph(&x("f32[2]"), "  %y = copy %x : f32]2[\n"), false),
        (graph(&x("f32[2]"), "  %y = aten.view %x {shape = [9223372036854775807, 2]} : f32[2]\n"), false),
        (graph(&x("f32[9223372036854775807]"), "  %y = aten.cat %x, %x {dim = 0} : f32[1]\n"), false),
        (graph(&x("f32[]"), "  %y = aten.sum %x {dims = [0], keepdim = false} : f32[]\n"), true),
        (graph(&x("f32[5]"), "  %y = aten.slice %x {dim = 0, start = 0, end = 5, step = 9223372036854775807} : f32[1]\n"), true),
        (
            graph(&(x("f32[1,1,4]") + &w("f32[1,1,2]")), &conv("stride = [0], padding = [0], dilation = [1], transposed = false, output_padding = [0], groups = 1")),
            false,
        ),
        (
            graph(&(x("f32[1,1,4]") + &w("f32[1,2,2]")), &conv("stride = [1], padding = [0], dilation = [1], transposed = false, output_padding = [0], groups = 9223372036854775807")),
            false,
        ),
        (
            graph(&(x("f32[1,1,4]") + &w("f32[1,1,2]")), &conv("stride = [9223372036854775807], padding = [0], dilation = [1], transposed = true, output_padding = [0], groups = 1")),
            false,
        ),
        (
            graph(&x("f32[1,4,4]"), "  %y = aten.max_pool %x {kernel = [0, 0], stride = [], padding = [0], dilation = [1], ceil_mode = true} : (f32[1,1,1], i64[1,1,1])\n"),
            false,
        ),
    ];
    // Slicing, selecting and concatenating a 0-d tensor (PyTorch refuses all of them).
    let scalar_cases = [
        "  %y = aten.slice %x {dim = 0, start = 0, end = 1, step = 1} : f32[]\n",
        "  %y = aten.select %x {dim = 0, index = 0} : f32[]\n",
        "  %y = aten.cat %x, %x {dim = 0} : f32[]\n",
        "  %y = aten.select_scatter %x, %x {dim = 0, index = 0} : f32[]\n",
        "  %y = aten.slice_scatter %x, %x {dim = 0, start = 0, end = 1, step = 1} : f32[]\n",
    ]
    .map(|body| (graph(&x("f32[]"), body), false));
    for (text, ok) in cases.into_iter().chain(scalar_cases) {
        let r = fxhlo_ir::parse(&text);
        println!("{:?}", r.as_ref().map(|_| "parses").map_err(|e| e.to_string()));
        assert_eq!(r.is_ok(), ok, "{text}");
    }
    // Unknown targets that are not one plain token print quoted, so that they read back.
    for target in ["a b", "%eq", "", "x{y}", "aten.add"] {
        let text = graph(&x("f32[2]"), &format!("  %y = unknown %x {{target = {target:?}}} : f32[2]\n"));
        match parse_ir_checked(&text) {
            Verdict::Accepted => {}
            Verdict::Rejected(e) => panic!("{target:?}: {e}\n{text}"),
            Verdict::Finding(f) => panic!("{target:?}: {f}"),
        }
    }
}





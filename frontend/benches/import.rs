//! Trace import benchmark: decoding (JSON vs bincode) and importing a generated 5,000-node
//! trace and the fixture with the largest `graph.json` (`testsuite/fixtures/*.fxt`), plus a
//! check that weights are mapped, not copied.
//!
//! `cargo bench -p fxhlo-frontend --bench import` (release build; prints a table, asserts
//! nothing about time). JSON goes bytes → `Trace` → graph, bincode bytes → `TraceView` (strings
//! borrowed from the bytes) → graph. `-- --loop bin` (or another stage, see [`profile_loop`])
//! runs one stage for ten seconds for a profiler instead. Figures are kept in `docs/benchmarks.md`. The trace
//! generator, [`synth_trace`], is also a seed of the fuzzer (`tests/fuzz.rs` includes this file).

use std::any::Any;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fxhlo_frontend::schema::{Arg, Dim, InputKindSpec, InputSpec, NodeSpec, SourceSpec, TensorMeta, Trace, FORMAT, SCHEMA_VERSION};
use fxhlo_frontend::{import, parse_bin, parse_bin_view, parse_json, to_bin, to_json, Bundle, GRAPH_JSON};

/// Batch and hidden size of the generated chain, and the group size of its reshapes.
const B: i64 = 8;
const H: i64 = 64;
const G: i64 = 8;

fn meta(sizes: &[i64], strides: &[i64]) -> TensorMeta {
    TensorMeta {
        dtype: "f32".into(),
        sizes: sizes.iter().map(|&d| Dim::Static(d)).collect(),
        strides: strides.to_vec(),
        storage_offset: 0,
    }
}

fn contiguous(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1];
    }
    strides
}

/// A deterministic trace of exactly `nodes` nodes, shaped like an exported MLP stack: per
/// layer `permute(w) → addmm(b, x, ·) → relu → mul(·, x) → view → permute → permute → view →
/// add(·, x)`, each layer with its own weight and bias parameters, full metas (strides
/// included) and source locations. The last node is the output.
pub fn synth_trace(nodes: usize) -> Trace {
    let mut t = Trace {
        format: FORMAT.into(),
        version: SCHEMA_VERSION,
        name: format!("synth{nodes}"),
        decomposition_table: Some("core_aten".into()),
        inputs: vec![InputSpec {
            name: "arg0_1".into(),
            kind: InputKindSpec::UserInput,
            weight: None,
            meta: meta(&[B, H], &[H, 1]),
        }],
        nodes: Vec::with_capacity(nodes),
        outputs: Vec::new(),
        subgraphs: Vec::new(),
    };
    let mut counts = std::collections::HashMap::<&str, usize>::new();
    let mut fresh = |base: &'static str| {
        let k = counts.entry(base).or_insert(0);
        *k += 1;
        if *k == 1 { base.to_string() } else { format!("{base}_{}", *k - 1) }
    };
    let tensor = |n: &str| Arg::Tensor(n.to_string());
    let mut cur = "arg0_1".to_string();
    let mut layer = 0;
    while t.nodes.len() < nodes {
        let (w, b) = (format!("arg{}_1", 2 * layer + 1), format!("arg{}_1", 2 * layer + 2));
        for (name, key, sizes) in [(&w, "weight", vec![H, H]), (&b, "bias", vec![H])] {
            let strides = contiguous(&sizes);
            t.inputs.push(InputSpec {
                name: name.clone(),
                kind: InputKindSpec::Parameter,
                weight: Some(format!("layers.{layer}.{key}")),
                meta: meta(&sizes, &strides),
            });
        }
        let line = 20 + (layer % 50) as u32;
        let (hg, bh) = (H / G, [B, H]);
        let steps: [(&'static str, &str, Vec<Arg>, TensorMeta); 9] = [
            ("permute", "aten.permute.default", vec![tensor(&w), Arg::Ints(vec![1, 0])], meta(&[H, H], &[1, H])),
            ("addmm", "aten.addmm.default", vec![tensor(&b), tensor(&cur), Arg::None], meta(&bh, &[H, 1])),
            ("relu", "aten.relu.default", vec![Arg::None], meta(&bh, &[H, 1])),
            ("mul", "aten.mul.Tensor", vec![Arg::None, tensor(&cur)], meta(&bh, &[H, 1])),
            ("view", "aten.view.default", vec![Arg::None, Arg::Ints(vec![B, G, hg])], meta(&[B, G, hg], &[H, hg, 1])),
            ("permute", "aten.permute.default", vec![Arg::None, Arg::Ints(vec![0, 2, 1])], meta(&[B, hg, G], &[H, 1, hg])),
            ("permute", "aten.permute.default", vec![Arg::None, Arg::Ints(vec![0, 2, 1])], meta(&[B, G, hg], &[H, hg, 1])),
            ("view", "aten.view.default", vec![Arg::None, Arg::Ints(bh.to_vec())], meta(&bh, &[H, 1])),
            ("add", "aten.add.Tensor", vec![Arg::None, tensor(&cur)], meta(&bh, &[H, 1])),
        ];
        // `Arg::None` above stands for the previous node of the layer (addmm's stands for the
        // transposed weight, its third argument).
        let mut prev = String::new();
        for (base, target, mut args, m) in steps {
            if t.nodes.len() == nodes {
                break;
            }
            if let Some(a) = args.iter_mut().find(|a| matches!(a, Arg::None)) {
                *a = tensor(&prev);
            }
            let name = fresh(base);
            t.nodes.push(NodeSpec {
                name: name.clone(),
                target: target.into(),
                args,
                kwargs: Default::default(),
                meta: vec![Some(m)],
                source: Some(SourceSpec { file: "model.py".into(), line }),
            });
            prev = name;
        }
        cur = prev;
        layer += 1;
    }
    t.outputs.push(Arg::Tensor(cur));
    t
}

/// The fixtures folder of the workspace.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures")
}

/// The fixture bundle with the largest `graph.json`.
pub fn largest_fixture() -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    for entry in std::fs::read_dir(fixtures_dir()).ok()?.flatten() {
        let dir = entry.path();
        let Ok(m) = std::fs::metadata(dir.join(GRAPH_JSON)) else { continue };
        if best.as_ref().is_none_or(|(len, _)| m.len() > *len) {
            best = Some((m.len(), dir));
        }
    }
    best.map(|(_, d)| d)
}

/// Times every stage `runs` times, round-robin after `warmup` untimed rounds, and gives each
/// stage's median and minimum. Round-robin, so that a burst of load on a shared machine hits
/// all stages alike; the minimum is the steadier figure there. Dropping a stage's result is not
/// timed (a caller keeps the trace and the graph).
fn sample(warmup: usize, runs: usize, stages: &mut [&mut dyn FnMut() -> Box<dyn Any>]) -> Vec<(Duration, Duration)> {
    let mut times = vec![Vec::with_capacity(runs); stages.len()];
    for round in 0..warmup + runs {
        for (i, stage) in stages.iter_mut().enumerate() {
            let start = Instant::now();
            let out = black_box(stage());
            let t = start.elapsed();
            drop(out);
            if round >= warmup {
                times[i].push(t);
            }
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            (t[t.len() / 2], t[0])
        })
        .collect()
}

fn ms((median, min): (Duration, Duration)) -> String {
    format!("{:.2} ({:.2})", median.as_secs_f64() * 1e3, min.as_secs_f64() * 1e3)
}

fn bench(label: &str, trace: &Trace, runs: usize) {
    let path = Path::new(GRAPH_JSON);
    let json = to_json(trace).into_bytes();
    let bin = to_bin(trace);
    let graph = import::import(trace, path).expect("the benchmarked trace imports");
    let view = parse_bin_view(&bin, path).expect("the benchmarked trace decodes");
    let warmup = runs / 5 + 1;
    let mut dec_json = || -> Box<dyn Any> { Box::new(parse_json(&json, path).unwrap()) };
    let mut dec_bin = || -> Box<dyn Any> { Box::new(parse_bin_view(&bin, path).unwrap().nodes.len()) };
    let mut imp_json = || -> Box<dyn Any> { Box::new(import::import(trace, path).unwrap()) };
    let mut imp_bin = || -> Box<dyn Any> { Box::new(import::import_view(&view, path).unwrap()) };
    let mut ver = || -> Box<dyn Any> {
        fxhlo_ir::verify(&graph).unwrap();
        Box::new(())
    };
    // The JSON trace and both graphs are kept, as `Bundle` keeps them; the bincode view
    // borrows the bytes and is dropped inside the timed stage (dropping it is part of the cost).
    let mut all_json = || -> Box<dyn Any> {
        let t = parse_json(&json, path).unwrap();
        let g = import::import(&t, path).unwrap();
        Box::new((t, g))
    };
    let mut all_bin = || -> Box<dyn Any> {
        let v = parse_bin_view(&bin, path).unwrap();
        Box::new(import::import_view(&v, path).unwrap())
    };
    let stages: &mut [&mut dyn FnMut() -> Box<dyn Any>] =
        &mut [&mut dec_json, &mut dec_bin, &mut imp_json, &mut imp_bin, &mut ver, &mut all_json, &mut all_bin];
    let r = sample(warmup, runs, stages);
    let ratio = |a: (Duration, Duration), b: (Duration, Duration)| {
        format!("{:.1}x ({:.1}x)", a.0.as_secs_f64() / b.0.as_secs_f64(), a.1.as_secs_f64() / b.1.as_secs_f64())
    };
    println!(
        "\n### {label}: {} nodes ({} in the IR), {} inputs; graph.json {} B, graph.bin {} B; {runs} runs\n",
        trace.nodes.len(),
        graph.node_count(),
        trace.inputs.len(),
        json.len(),
        bin.len()
    );
    println!("| stage, ms: median (min) | JSON | bincode | JSON / bincode |");
    println!("|---|---:|---:|---:|");
    println!("| decode (bytes → Trace / TraceView) | {} | {} | {} |", ms(r[0]), ms(r[1]), ratio(r[0], r[1]));
    println!("| import (→ verified Graph) | {} | {} | {} |", ms(r[2]), ms(r[3]), ratio(r[2], r[3]));
    println!("| total (bytes → verified Graph) | {} | {} | {} |", ms(r[5]), ms(r[6]), ratio(r[5], r[6]));
    println!("| `ir::verify` (debug builds and passes only) | {} | | |", ms(r[4]));
}

/// Checks that every weight view of the bundle points into its memory map; prints the result.
fn check_weights_mapped(dir: &Path) {
    let bundle = Bundle::open(dir).expect("the fixture opens");
    let Some(weights) = bundle.weights.as_ref() else {
        println!("\nweights: {} has no weights file", dir.display());
        return;
    };
    let map = weights.mapped_range().expect("a non-empty weights file is mapped");
    let (mut n, mut bytes, mut outside) = (0usize, 0usize, Vec::new());
    for name in weights.names() {
        let v = weights.get(name).expect("listed tensors resolve");
        let start = v.bytes.as_ptr() as usize;
        if start < map.start || start + v.bytes.len() > map.end {
            outside.push(name.to_string());
        }
        n += 1;
        bytes += v.bytes.len();
    }
    println!(
        "\nweights of {}: {n} tensors, {bytes} B, every view inside the {} B mapping: {}",
        dir.file_name().unwrap_or_default().to_string_lossy(),
        map.len(),
        if outside.is_empty() { "yes (no copies)".to_string() } else { format!("NO: {outside:?}") }
    );
    assert!(outside.is_empty(), "weights copied on import: {outside:?}");
}

/// `-- --loop <stage>`: runs one stage of the 5,000-node trace for ten seconds (`json`, `bin`:
/// decoding to a `Trace` or a `TraceView`; `bin-owned`: bincode to a `Trace`; `import`: a
/// `Trace` to a graph; `import-bin`: bincode bytes to a graph; `verify`) and prints nothing else, for a profiler (`perf record`) to attach to.
#[allow(clippy::result_large_err)] // the frontend's `Error` is what it is; dropped unread
fn profile_loop(stage: &str) {
    let (path, synth) = (Path::new(GRAPH_JSON), synth_trace(5000));
    let (json, bin) = (to_json(&synth).into_bytes(), to_bin(&synth));
    let graph = import::import(&synth, path).expect("the benchmarked trace imports");
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < Duration::from_secs(10) {
        match stage {
            "json" => drop(black_box(parse_json(&json, path))),
            "bin" => drop(black_box(parse_bin_view(&bin, path))),
            "bin-owned" => drop(black_box(parse_bin(&bin, path))),
            "import" => drop(black_box(import::import(&synth, path))),
            "import-bin" => drop(black_box(parse_bin_view(&bin, path).and_then(|v| import::import_view(&v, path)))),
            "verify" => drop(black_box(fxhlo_ir::verify(&graph))),
            _ => panic!("--loop takes json, bin, bin-owned, import, import-bin or verify, not `{stage}`"),
        }
        n += 1;
    }
    println!("{stage}: {n} iterations, {:.3} ms each", start.elapsed().as_secs_f64() * 1e3 / n as f64);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--loop") {
        return profile_loop(args.get(i + 1).map(String::as_str).unwrap_or(""));
    }
    let synth = synth_trace(5000);
    bench("generated chain", &synth, 31);
    if let Some(dir) = largest_fixture() {
        let path = dir.join(GRAPH_JSON);
        let bytes = std::fs::read(&path).expect("fixture readable");
        let trace = parse_json(&bytes, &path).expect("fixture parses");
        bench(&format!("largest fixture `{}`", dir.file_name().unwrap_or_default().to_string_lossy()), &trace, 201);
        check_weights_mapped(&dir);
    }
}

//! `fxhlo explain`: the ops of a bundle, the pipeline its flags run, and whether the compile
//! cache holds the executable `compile --cache` or `run` would make (and, when not, which key
//! fields the nearest entry differs in), without compiling or writing anything.

mod support;
use support::fxhlo;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures/mlp.fxt")
}

/// A fresh folder for one test (a cache folder, or a bundle copied into it by `copy_fixture`).
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-cli-explain-{tag}-{}", std::process::id()));
    fs::remove_dir_all(&dir).ok();
    dir
}

fn copy_fixture(tag: &str) -> PathBuf {
    let dir = scratch(tag);
    fs::create_dir_all(&dir).unwrap();
    for f in ["graph.json", "weights.safetensors", "reference.safetensors"] {
        fs::copy(fixture().join(f), dir.join(f)).unwrap();
    }
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the binary with the cache folder `dir`, read-write.
fn cached(args: &[&str], dir: &Path) -> Output {
    fxhlo(args, &[("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap())])
}

/// `explain ... --json` with the cache folder `dir`, parsed.
fn explain_json(args: &[&str], dir: &Path) -> Value {
    let bundle = fixture();
    let mut all = vec!["explain", bundle.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let out = cached(&all, dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The names of the files in `dir` with their modification times, sorted.
fn listing(dir: &Path) -> Vec<(String, std::time::SystemTime)> {
    let mut out: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().modified().unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn explain_lists_the_ops_and_the_pipeline() {
    let out = fxhlo(&["explain", fixture().to_str().unwrap()], &[]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("graph `mlp` from ") && text.contains("ops: 10 nodes (5 inputs), 3 distinct ops, 0 unsupported"), "{text}");
    let addmm = text.lines().find(|l| l.contains("aten.addmm.default")).unwrap_or_default();
    let words: Vec<&str> = addmm.split_whitespace().collect();
    assert_eq!(words, ["2", "aten.addmm", "aten.addmm.default", "yes"], "{text}");
    // The default pipeline, from the registry: every pass listed in order.
    let pipeline: Vec<&str> = fxhlo::passes::pipeline(fxhlo::passes::DEFAULT_OPT_LEVEL, fxhlo::passes::Target::Cpu).iter().map(|p| p.name()).collect();
    let level = fxhlo::passes::DEFAULT_OPT_LEVEL;
    assert!(text.contains(&format!("pipeline (-O{level} for cpu): {} passes", pipeline.len())), "{text}");
    let dce = text.lines().find(|l| l.trim_start().starts_with("1  dce")).unwrap_or_default();
    assert!(dce.contains(" no ") && dce.contains("10 -> 10"), "{text}");
    for (i, name) in pipeline.iter().enumerate() {
        assert!(text.contains(&format!("{}  {name}", i + 1)), "{name} is pass {}: {text}", i + 1);
    }
    // device-layout adds a permute after each weight it lays out.
    assert!(text.contains("after passes: 12 nodes; every op lowers"), "{text}");
    // The cache is off in tests unless asked for: a miss, saying so.
    assert!(text.contains("cache: miss (no disk tier)") && text.contains("FXHLO_CACHE=off"), "{text}");

    // The same as JSON; another pass list runs those passes.
    let out = fxhlo(&["explain", fixture().to_str().unwrap(), "--json", "--passes", "dce"], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["graph"], "mlp");
    assert_eq!((v["ops"]["nodes"].as_u64(), v["ops"]["distinct"].as_u64(), v["ops"]["unsupported"].as_u64()), (Some(10), Some(3), Some(0)));
    let ops = v["ops"]["list"].as_array().unwrap();
    assert!(ops.iter().any(|o| o["op"] == "aten.relu" && o["target"] == "aten.relu.default" && o["count"] == 1 && o["supported"] == true), "{v}");
    assert_eq!(v["pipeline"]["passes"], serde_json::json!(["dce"]));
    let run = &v["pipeline"]["runs"][0];
    assert_eq!((run["pass"].as_str(), run["changed"].as_bool(), run["nodes_before"].as_u64(), run["nodes_after"].as_u64()), (Some("dce"), Some(false), Some(10), Some(10)));
}

/// An op fxhlo does not model is listed as not lowering, with its reason and node.
#[test]
fn explain_names_an_unsupported_op_and_its_node() {
    let dir = copy_fixture("unknown");
    let json = fs::read_to_string(dir.join("graph.json")).unwrap().replace("aten.relu.default", "aten.frobnicate.default");
    fs::write(dir.join("graph.json"), json).unwrap();
    let out = fxhlo(&["explain", dir.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("3 distinct ops, 1 unsupported"), "{text}");
    let row = text.lines().find(|l| l.contains("aten.frobnicate.default")).unwrap_or_default();
    assert!(row.contains("unknown") && row.contains("NO: imported as unknown: fxhlo has no lowering for aten.frobnicate.default"), "{text}");
    assert!(text.contains("at node `relu` (scripts/gen_fixtures.py:30)"), "{text}");
    assert!(text.contains("lowering would fail: 1 op(s) codegen cannot lower"), "{text}");
    fs::remove_dir_all(dir).ok();
}

/// After `fxhlo run` fills the cache, `explain` with the same flags says hit; with other
/// flags (or another XLA_FLAGS) it says miss and names the field. It never writes the folder.
#[test]
fn explain_says_hit_after_a_run_and_names_what_differs_on_a_miss() {
    let dir = scratch("cache");
    let before = explain_json(&[], &dir);
    assert_eq!((before["cache"]["status"].as_str(), before["cache"]["reason"].as_str()), (Some("miss"), Some("new graph")), "{before}");
    assert!(!dir.exists(), "explain must not create the cache folder");

    assert!(cached(&["run", fixture().to_str().unwrap()], &dir).status.success());
    let entries = listing(&dir);
    assert_eq!(entries.len(), 1);
    let hit = explain_json(&[], &dir);
    assert_eq!(hit["cache"]["status"], "hit", "{hit}");
    assert_eq!(hit["cache"]["key"]["digest"].as_str().map(|d| format!("{d}.fxc")), Some(entries[0].0.clone()));
    let text = stdout(&cached(&["explain", fixture().to_str().unwrap()], &dir));
    assert!(text.contains("cache: hit\n") && text.contains("would load it, not compile"), "{text}");

    // -O0: the options differ (its pass list), nothing else.
    let miss = explain_json(&["-O0"], &dir);
    let cache = &miss["cache"];
    assert_eq!((cache["status"].as_str(), cache["reason"].as_str()), (Some("miss"), Some("options")), "{miss}");
    let diffs = cache["nearest"]["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{miss}");
    assert_eq!(diffs[0]["field"], "options");
    let pipeline: Vec<&str> = fxhlo::passes::pipeline(fxhlo::passes::DEFAULT_OPT_LEVEL, fxhlo::passes::Target::Cpu).iter().map(|p| p.name()).collect();
    assert!(diffs[0]["cached"].as_str().unwrap().contains(&format!("passes=[{}]", pipeline.join(","))), "{miss}");
    assert!(diffs[0]["now"].as_str().unwrap().contains("passes=[]"), "{miss}");
    let text = stdout(&cached(&["explain", fixture().to_str().unwrap(), "-O0"], &dir));
    assert!(text.contains("cache: miss (options)") && text.contains("differs in options"), "{text}");
    assert!(text.contains("      now:    device=cpu check_indices=false tensor_parallel=none passes=[]"), "{text}");

    // XLA_FLAGS is part of the key too.
    let env = [("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap()), ("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")];
    let out = fxhlo(&["explain", fixture().to_str().unwrap(), "--json"], &env);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["cache"]["reason"], "xla_flags", "{v}");

    // A compile with the same flags as the explain hits what explain said it would.
    assert!(cached(&["compile", fixture().to_str().unwrap(), "--cache", "-O0"], &dir).status.success());
    assert_eq!(explain_json(&["-O0"], &dir)["cache"]["status"], "hit");
    // Explaining read the folder only: the run's entry is as it was.
    assert!(listing(&dir).contains(&entries[0]));
    fs::remove_dir_all(dir).ok();
}

/// A target whose device this machine lacks is still explained: the lookup is `unknown`, with
/// the reason, and the nearest entry is shown.
#[test]
fn explain_works_without_the_device_of_the_target() {
    let dir = scratch("nodevice");
    let dev = scratch("nodevice-dev");
    fs::create_dir_all(&dev).unwrap();
    assert!(cached(&["compile", fixture().to_str().unwrap(), "--cache"], &dir).status.success());
    let env = [("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap()), ("FXHLO_DEV_DIR", dev.to_str().unwrap())];
    let out = fxhlo(&["explain", fixture().to_str().unwrap(), "--target", "tpu"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let level = fxhlo::passes::DEFAULT_OPT_LEVEL;
    assert!(text.contains(&format!("pipeline (-O{level} for tpu)")) && text.contains("cache: unknown"), "{text}");
    assert!(text.contains("no TPU found") && text.contains("nearest: the nearest entry of this graph"), "{text}");
    fs::remove_dir_all(dir).ok();
    fs::remove_dir_all(dev).ok();
}

/// Bad input is an error naming the file.
#[test]
fn explain_of_a_malformed_trace_names_the_file() {
    let dir = copy_fixture("malformed");
    fs::write(dir.join("graph.json"), "{\"format\": \"fxhlo-trace\", \"version\": ").unwrap();
    let out = fxhlo(&["explain", dir.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{}:1:", dir.join("graph.json").display())) && stderr.contains("malformed trace JSON"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

/// Node names are unique only within one graph: two branches of a `cond`, each with a node
/// `r` (one `sin`, one `neg`), are listed each with its own trace target.
#[test]
fn explain_reads_each_region_nodes_targets_from_its_own_subgraph() {
    let dir = scratch("regions");
    fs::create_dir_all(&dir).unwrap();
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/filetests/traces/cond_sin_neg.json");
    fs::copy(trace, dir.join("graph.json")).unwrap();
    let out = fxhlo(&["explain", dir.to_str().unwrap(), "--json"], &[("FXHLO_CACHE", "off")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ops"]["in_regions"], 4, "{v}");
    let targets: Vec<(String, String)> = v["ops"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["op"].as_str().unwrap_or_default().to_string(), r["target"].as_str().unwrap_or_default().to_string()))
        .collect();
    for want in [("aten.sin", "aten.sin.default"), ("aten.neg", "aten.neg.default")] {
        assert!(targets.iter().any(|(op, t)| op == want.0 && t == want.1), "{want:?} not in {targets:?}");
    }
    fs::remove_dir_all(dir).ok();
}

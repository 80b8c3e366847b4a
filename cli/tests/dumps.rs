//! Dumps and failure reproductions, through the binary as a user runs it: the files a dump
//! writes (snapshotted by name), that each IR file parses back and the dumped StableHLO
//! compiles on its own, that dumping changes neither the cache key nor the outputs, and that
//! the command a failure prints fails the same way.

mod support;
use support::fxhlo;

use std::fs;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures").join(name)
}

/// A fresh folder for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-dumps-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The only graph folder under a dump root.
fn graph_dir(root: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// The one entry of `dir` whose name ends with `suffix` (`-stablehlo.mlir`, `-xla`): its number
/// depends on how many passes changed the graph.
fn numbered(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().ends_with(suffix)).collect();
    assert_eq!(found.len(), 1, "one *{suffix} in {}: {found:?}", dir.display());
    found[0].clone()
}

/// The sorted names in `dir`, `.svg` files left out (they need Graphviz), folders with a `/`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() { format!("{name}/") } else { name }
        })
        .filter(|n| !n.ends_with(".svg"))
        .collect();
    names.sort();
    names
}

fn graphviz_installed() -> bool {
    std::process::Command::new("dot").arg("-V").output().is_ok_and(|o| o.status.success())
}

/// Every `.gir` parses back, and has its `.dot` (and `.svg` with Graphviz) beside it.
fn check_ir_files(dir: &Path) {
    for name in names(dir).iter().filter(|n| n.ends_with(".gir")) {
        let text = fs::read_to_string(dir.join(name)).unwrap();
        fxhlo_ir::parse(&text).unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let stem = name.trim_end_matches(".gir");
        assert!(dir.join(format!("{stem}.dot")).is_file(), "{name} has no .dot");
        assert_eq!(dir.join(format!("{stem}.svg")).is_file(), graphviz_installed(), "{name}'s .svg");
    }
}

/// A depthwise convolution with a dead node: `dce`, `channels-last` and `depthwise-conv-taps`
/// change it.
const DEPTHWISE: &str = "graph @depthwise {
  %x = input {kind = user_input} : f32[1,4,6,6]
  %w = input {kind = parameter, weight = \"conv.weight\"} : f32[4,1,3,3]
  %c = aten.convolution %x, %w {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 4, has_bias = false} : f32[1,4,6,6]
  %dead = aten.neg %x : f32[1,4,6,6]
  %r = aten.relu %c : f32[1,4,6,6]
  return %r
}
";

#[test]
fn a_dump_of_a_bundle_writes_every_stage_and_xlas_hlo() {
    let root = scratch("bundle");
    let cnn = fixture("cnn.fxt");
    let out = fxhlo(&["compile", cnn.to_str().unwrap(), "--cache", "--dump", "--dump-dir", root.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = graph_dir(&root);
    assert!(stderr(&out).contains(&format!("dumped to {}", dir.display())), "{}", stderr(&out));
    // The folder is named by the cache key the compile printed.
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let key = stdout(&out).split("cache key ").nth(1).unwrap_or_default().chars().take(8).collect::<String>();
    assert_eq!(name, format!("cnn-{key}"));
    insta::assert_snapshot!("cnn_dump_all", names(&dir).join("\n"));
    check_ir_files(&dir);
    // XLA's own dump of what it compiled, through the compile options (no XLA_FLAGS).
    let xla = fs::read_dir(numbered(&dir, "-xla")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect::<Vec<_>>();
    assert!(xla.iter().any(|f| f.ends_with("after_optimizations.txt")), "{xla:?}");
    let report = fs::read_to_string(dir.join("report.txt")).unwrap();
    for needle in ["import", "pass dce", "codegen", "PJRT compile", "cache: miss"] {
        assert!(report.contains(needle), "{needle} not in\n{report}");
    }
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["imported_nodes"].as_u64(), Some(28), "{json}");
    // The dumped module compiles on its own, as it is.
    let mlir = numbered(&dir, "-stablehlo.mlir");
    let out = fxhlo(&["compile", mlir.to_str().unwrap()], &[]);
    assert!(out.status.success() && stdout(&out).contains("PJRT compile"), "{}", stderr(&out));
    fs::remove_dir_all(root).ok();
}

#[test]
fn the_ir_after_each_pass_that_changed_it_is_numbered_in_pipeline_order() {
    let root = scratch("passes");
    let gir = root.join("depthwise.gir");
    fs::write(&gir, DEPTHWISE).unwrap();
    let dumps = root.join("all");
    let out = fxhlo(&["compile", gir.to_str().unwrap(), "--dump", "all", "--dump-dir", dumps.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = graph_dir(&dumps);
    insta::assert_snapshot!("depthwise_dump_all", names(&dir).join("\n"));
    let stablehlo = numbered(&dir, "-stablehlo.mlir").file_name().unwrap().to_string_lossy().into_owned();
    check_ir_files(&dir);
    // The nodes a pass made are filled; the imported graph has none.
    assert!(!fs::read_to_string(dir.join("01-import.dot")).unwrap().contains("fillcolor"));
    assert!(!fs::read_to_string(dir.join("02-after-dce.dot")).unwrap().contains("fillcolor"));
    let taps = fs::read_to_string(dir.join("04-after-depthwise-conv-taps.dot")).unwrap();
    assert!(taps.matches("fillcolor").count() >= 9, "{taps}");
    // A filter writes fewer files under the same numbers.
    let some = root.join("some");
    let out = fxhlo(&["compile", gir.to_str().unwrap(), "--dump", "import,stablehlo"], &[("FXHLO_DUMP_DIR", some.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = graph_dir(&some);
    assert_eq!(names(&dir), ["01-import.gir", stablehlo.as_str(), "cache-key.json", "report.json", "report.txt"]);
    // The variable alone is the same switch.
    let env = root.join("env");
    let out = fxhlo(&["compile", gir.to_str().unwrap()], &[("FXHLO_DUMP", "dce"), ("FXHLO_DUMP_DIR", env.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(names(&graph_dir(&env)), ["02-after-dce.gir", "cache-key.json", "report.json", "report.txt"]);
    // A name that is neither a stage nor a pass is refused with the valid ones.
    let out = fxhlo(&["compile", gir.to_str().unwrap(), "--dump", "import,dse"], &[]);
    assert!(!out.status.success() && stderr(&out).contains("unknown stage `dse`") && stderr(&out).contains("depthwise-conv-taps"), "{}", stderr(&out));
    fs::remove_dir_all(root).ok();
}

#[test]
fn dumping_changes_neither_the_key_nor_the_outputs() {
    let root = scratch("same");
    let cnn = fixture("cnn.fxt");
    let key = |extra: &[&str]| {
        let mut args = vec!["compile", cnn.to_str().unwrap(), "--cache"];
        args.extend_from_slice(extra);
        let out = fxhlo(&args, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).split("cache key ").nth(1).unwrap_or_default().split(',').next().unwrap_or_default().to_string()
    };
    let plain = key(&[]);
    assert_eq!(plain.len(), 64);
    assert_eq!(key(&["--dump", "--dump-dir", root.to_str().unwrap()]), plain);
    let outputs = |extra: &[&str]| {
        let mut args = vec!["run", cnn.to_str().unwrap(), "--check"];
        args.extend_from_slice(extra);
        let out = fxhlo(&args, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).lines().filter(|l| l.starts_with("output") || l.starts_with("check")).map(String::from).collect::<Vec<_>>()
    };
    assert_eq!(outputs(&["--dump", "--dump-dir", root.to_str().unwrap()]), outputs(&[]));
    fs::remove_dir_all(root).ok();
}

/// The error's text, up to the reproduction that follows it.
fn error_text(out: &std::process::Output) -> String {
    let text = stderr(out);
    let start = text.find("error: ").unwrap_or(0);
    let end = text.find("reproduce with: ").unwrap_or(text.len());
    text[start..end.max(start)].to_string()
}

#[test]
fn a_lowering_failure_leaves_a_reproduction_that_fails_the_same_way() {
    let root = scratch("repro");
    let gir = root.join("bad.gir");
    // A constant known only by its digest (IR text carries no weights): codegen cannot build
    // it. (An op fxhlo does not lower is not a failure to reproduce: the error names it.)
    fs::write(
        &gir,
        "graph @bad {
  %x = input {kind = user_input} : f32[4]
  %w = constant {data = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} : f32[4]
  %y = aten.mul %x, %w : f32[4]
  return %y
}
",
    )
    .unwrap();
    let repro_root = root.join("repros");
    let env = [("FXHLO_DUMP_DIR", repro_root.to_str().unwrap())];
    // Dumping off: the reproduction is written all the same.
    let out = fxhlo(&["compile", gir.to_str().unwrap(), "--max-passes", "1"], &env);
    assert_eq!(out.status.code(), Some(1));
    let error = error_text(&out);
    assert!(error.contains("constant `w` has no data"), "{}", stderr(&out));
    let command = stderr(&out).lines().find_map(|l| l.strip_prefix("reproduce with: ")).unwrap_or_default().to_string();
    let dir = graph_dir(&repro_root);
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("fxhlo-repro-"), "{dir:?}");
    let gir_copy = dir.join("graph.gir");
    assert_eq!(command, format!("fxhlo compile {} --target cpu --max-passes 1", gir_copy.display()));
    assert_eq!(names(&dir), ["command.txt", "error.txt", "graph.gir"]);
    // The command, run, fails with the same error.
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let again = fxhlo(&args, &env);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(error_text(&again), error);
    assert!(stderr(&again).contains(&command), "{}", stderr(&again));

    // An op fxhlo does not lower: the error names it, and no folder is written.
    let unknown = root.join("unknown.gir");
    fs::write(
        &unknown,
        "graph @unknown {
  %x = input {kind = user_input} : f32[4]
  %y = aten.frobnicate.default %x : f32[4]
  return %y
}
",
    )
    .unwrap();
    let none_root = root.join("no-repros");
    let out = fxhlo(&["compile", unknown.to_str().unwrap()], &[("FXHLO_DUMP_DIR", none_root.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(error_text(&out).contains("aten.frobnicate.default"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("reproduce with"), "{}", stderr(&out));
    assert!(!none_root.exists(), "no reproduction for an unsupported op");
    fs::remove_dir_all(root).ok();
}

/// `mlp.fxt`'s trace, changed by `edit`, as a bundle `<name>.fxt` under `root` (with the
/// fixture's weights).
fn broken_bundle(root: &Path, name: &str, edit: impl FnOnce(&str) -> String) -> PathBuf {
    let dir = root.join(format!("{name}.fxt"));
    fs::create_dir_all(&dir).unwrap();
    let json = fs::read_to_string(fixture("mlp.fxt").join("graph.json")).unwrap();
    let edited = edit(&json);
    assert_ne!(edited, json, "the edit changed nothing");
    fs::write(dir.join("graph.json"), edited).unwrap();
    fs::copy(fixture("mlp.fxt").join("weights.safetensors"), dir.join("weights.safetensors")).unwrap();
    dir
}

/// The `dumped to` and `reproduce with` lines of a failure.
fn dumped_and_command(out: &std::process::Output) -> (PathBuf, String) {
    let text = stderr(out);
    let dir = text.lines().find_map(|l| l.strip_prefix("dumped to ")).map(PathBuf::from).unwrap_or_default();
    let command = text.lines().find_map(|l| l.strip_prefix("reproduce with: ")).unwrap_or_default().to_string();
    (dir, command)
}

/// A compile that fails with dumping on leaves, in its dump folder, the trace it failed on,
/// `error.txt` (the stage, then the error naming the node and op) and `command.txt` (which
/// fails the same way), and the error says where the folder is: at import (shape inference
/// disagreeing with the trace's metadata; JSON that does not parse), and at codegen (an op
/// fxhlo does not know). Without dumping, a trace that fails to import writes nothing.
#[test]
fn a_failing_compile_with_dumping_on_leaves_its_trace_error_and_command() {
    let root = scratch("failed");
    // `permute`'s metadata says f32[8,15]; shape inference gives f32[8,16].
    let meta = broken_bundle(&root, "meta", |j| j.replacen("\"sizes\": [8, 16]", "\"sizes\": [8, 15]", 1));
    let malformed = broken_bundle(&root, "malformed", |j| j[..j.len() / 2].to_string());
    let unknown = broken_bundle(&root, "unknown", |j| j.replacen("aten.permute.default", "aten.frobnicate.default", 1));
    let cases: [(&Path, &str, &str, &[&str]); 3] = [
        (&meta, "import", "node `permute` (aten.permute.default): trace meta says f32[8,15]", &["00-trace.json", "command.txt", "error.txt", "report.json", "report.txt"]),
        (&malformed, "import", "malformed trace JSON", &["00-trace.json", "command.txt", "error.txt", "report.json", "report.txt"]),
        // The command reads the dump's `01-import.gir` (the filter has it written): no `graph.gir`.
        (&unknown, "codegen", "aten.frobnicate.default at node `permute`", &["00-trace.json", "01-import.gir", "command.txt", "error.txt"]),
    ];
    for (bundle, stage, says, files) in cases {
        let dumps = root.join(format!("dumps-{}", bundle.file_stem().unwrap().to_string_lossy()));
        let out = fxhlo(&["compile", bundle.to_str().unwrap(), "--dump", "import", "--dump-dir", dumps.to_str().unwrap()], &[]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let (dir, command) = dumped_and_command(&out);
        assert_eq!(dir, graph_dir(&dumps), "{}", stderr(&out));
        let written = names(&dir);
        for file in files {
            assert!(written.iter().any(|w| w == file), "{file} not in {written:?}");
        }
        assert!(!written.iter().any(|w| w == "graph.gir"), "the imported graph written twice: {written:?}");
        let error = fs::read_to_string(dir.join("error.txt")).unwrap();
        assert!(error.starts_with(&format!("failed at: {stage}\n")) && error.contains(says), "{error}");
        assert_eq!(fs::read_to_string(dir.join("command.txt")).unwrap().trim(), command);
        // The trace is the one given (the filter did not ask for it: a failure keeps it anyway).
        let trace = fs::read(dir.join("00-trace.json")).unwrap();
        assert_eq!(trace, fs::read(bundle.join("graph.json")).unwrap());
        // The command, run, fails with the same error.
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        let again = fxhlo(&args, &[]);
        assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
        assert!(stderr(&again).contains(says), "{}", stderr(&again));
    }
    // A filter without `import` writes no `01-import.gir`: the command reads `graph.gir`, written for it.
    let dumps = root.join("dumps-unknown-stablehlo");
    let out = fxhlo(&["compile", unknown.to_str().unwrap(), "--dump", "stablehlo", "--dump-dir", dumps.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (dir, command) = dumped_and_command(&out);
    let written = names(&dir);
    assert!(written.iter().any(|w| w == "graph.gir") && !written.iter().any(|w| w == "01-import.gir"), "{written:?}");
    assert!(command.starts_with(&format!("fxhlo compile {} ", dir.join("graph.gir").display())), "{command}");
    // Dumping off: the import's error alone, and no folder.
    let none = root.join("no-dumps");
    let out = fxhlo(&["compile", meta.to_str().unwrap()], &[("FXHLO_DUMP_DIR", none.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("dumped to") && !none.exists(), "{}", stderr(&out));
    fs::remove_dir_all(root).ok();
}

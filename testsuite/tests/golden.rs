//! File-driven golden tests: every fixture's imported IR and StableHLO (insta snapshots), IR
//! text files that must round-trip, and IR files that the parser or verifier must reject with a given message.

use std::fs;

use fxhlo::frontend::{self, Bundle};

/// The printed IR of each fixture, snapshotted; print → parse → print is byte-identical, and
/// the bincode encoding imports to the same graph as the JSON.
#[test]
fn fixtures_import_print_and_round_trip() {
    let mut count = 0;
    insta::glob!("..", "fixtures/*.fxt/graph.json", |path| {
        let bundle = Bundle::open(path.parent().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let printed = fxhlo::ir::print(&bundle.graph);
        insta::assert_snapshot!(printed);
        let reparsed = fxhlo::ir::parse(&printed).unwrap_or_else(|e| panic!("{}: {e}\n{printed}", path.display()));
        assert_eq!(fxhlo::ir::print(&reparsed), printed, "{}", path.display());
        let bin = frontend::to_bin(&bundle.trace);
        let trace = frontend::parse_bin(&bin, path).unwrap();
        assert_eq!(trace, bundle.trace);
        let via_bin = frontend::import::import(&trace, path).unwrap();
        assert_eq!(fxhlo::ir::print(&via_bin), printed);
        count += 1;
    });
    assert!(count >= 1, "no fixture found");
}

/// The StableHLO of each model fixture at the default level for the CPU plugin, snapshotted: a
/// change to codegen or to the pipeline shows as a diff of the module PJRT gets (a refactor
/// that should change nothing shows none).
#[test]
fn fixtures_lower_to_stablehlo_as_snapshotted() {
    let mut count = 0;
    insta::glob!("..", "fixtures/*.fxt/graph.json", |path| {
        let bundle = Bundle::open(path.parent().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let pipeline = fxhlo::Pipeline::new(fxhlo::Options::default());
        let lowered = pipeline.lower(&bundle.graph, &fxhlo::Frozen::new(), None, "cpu").unwrap_or_else(|e| panic!("{e}"));
        insta::assert_snapshot!(lowered.mlir);
        count += 1;
    });
    assert!(count >= 1, "no fixture found");
}

/// `filetests/ir/*.gir`: each file parses, verifies and prints back byte-identically.
#[test]
fn ir_files_round_trip() {
    let mut count = 0;
    insta::glob!("..", "filetests/ir/*.gir", |path| {
        let text = fs::read_to_string(path).unwrap();
        let body: String = text.lines().filter(|l| !l.starts_with("//")).map(|l| format!("{l}\n")).collect();
        let g = fxhlo::ir::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(fxhlo::ir::print(&g), body, "{}", path.display());
        count += 1;
    });
    assert!(count >= 1);
}

/// `filetests/verify/*.gir`: each file starts with `// error: <text>` and must be rejected
/// with a message containing that text.
#[test]
fn invalid_ir_files_are_rejected() {
    let mut count = 0;
    insta::glob!("..", "filetests/verify/*.gir", |path| {
        let text = fs::read_to_string(path).unwrap();
        let want = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// error: "))
            .unwrap_or_else(|| panic!("{}: first line must be `// error: <text>`", path.display()));
        let err = match fxhlo::ir::parse(&text) {
            Ok(_) => panic!("{}: accepted, expected an error containing `{want}`", path.display()),
            Err(e) => e.to_string(),
        };
        println!("{}: {err}", path.display());
        assert!(err.contains(want), "{}: got `{err}`, want `{want}`", path.display());
        count += 1;
    });
    assert!(count >= 5);
}

/// `filetests/passes/<pass>/*.gir`: each file is a graph before the pass named by its folder;
/// the graph after it is snapshotted (a changed rewrite shows as a diff; `INSTA_UPDATE=always`
/// accepts it), parses back, and a second run of the pass changes nothing.
#[test]
fn pass_files_rewrite_as_snapshotted() {
    let mut count = 0;
    insta::glob!("..", "filetests/passes/*/*.gir", |path| {
        let pass_name = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap();
        let pass = fxhlo::passes::lookup(pass_name).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = fs::read_to_string(path).unwrap();
        let mut g = fxhlo::ir::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let before = fxhlo::ir::print(&g);
        let changed = fxhlo::passes::PassManager::new(vec![pass]).run(&mut g).unwrap()[0].changed;
        let after = fxhlo::ir::print(&g);
        assert_eq!(changed, after != before, "{}: the pass's `changed` is wrong", path.display());
        insta::assert_snapshot!(after);
        fxhlo::ir::parse(&after).unwrap_or_else(|e| panic!("{}: the output does not parse: {e}", path.display()));
        let again = fxhlo::passes::PassManager::new(vec![pass]).run(&mut g).unwrap()[0].changed;
        assert!(!again && fxhlo::ir::print(&g) == after, "{}: a second run changed the graph", path.display());
        count += 1;
    });
    assert!(count >= 4, "only {count} pass files");
}

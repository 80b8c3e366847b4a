//! Dumps change nothing: the same fixture compiled by the PJRT CPU plugin with every stage
//! dumped (XLA's own dump included) and without gives the same cache key and bit-identical
//! outputs; and the dump's files are what the dump's report says.

use std::sync::Arc;

use fxhlo::frontend::Bundle;
use fxhlo::runtime::EnvConfig;
use fxhlo::{CacheConfig, CacheMode, CompileCache, Dump, DumpConfig, DumpFilter, Frozen, Options, Session};

#[test]
fn dumping_every_stage_changes_neither_the_key_nor_the_outputs() {
    let root = std::env::temp_dir().join(format!("fxhlo-testsuite-dumps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bundle = Bundle::open(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cnn.fxt")).unwrap();
    // A cache of its own that keeps nothing on disk; emptied before each compile, so both
    // compiles are PJRT compiles.
    let config = CacheConfig { mode: CacheMode::Off, error_on_compile: false, ..CacheConfig::from_env() };
    let session = Session::with_cache(Options::default(), &EnvConfig::from_env(), Arc::new(CompileCache::new(config))).unwrap();
    let key = session.key(&bundle.graph, &Frozen::new());
    session.cache().forget(&key);
    let plain = session.compile(&bundle.graph, &Frozen::new(), None).unwrap();
    session.cache().forget(&key);
    let dump = Dump::new(DumpConfig::new("all", Some(root.clone())).unwrap(), &bundle.graph.name);
    let dumped = session.compile(&bundle.graph, &Frozen::new(), Some(&dump)).unwrap();
    assert!(plain.cached.is_none() && dumped.cached.is_none());
    assert_eq!(dumped.lowered.key, plain.lowered.key);
    assert_eq!(dumped.lowered.mlir, plain.lowered.mlir);
    let a = plain.run_bundle(&session, &bundle).unwrap();
    let b = dumped.run_bundle(&session, &bundle).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.dims, y.dims);
        assert_eq!(x.bytes, y.bytes, "outputs differ with the dump on");
    }
    // The folder is named by the key, and the report lists each file it names.
    let dir = dump.dir().unwrap();
    assert_eq!(dir.file_name().unwrap().to_string_lossy(), format!("cnn-{}", &key.hex()[..8]));
    let report = dump.report();
    assert_eq!(report.key, key.hex());
    assert!(report.cache.as_deref().is_some_and(|c| c.starts_with("miss")), "{report:?}");
    for file in report.stages.iter().filter_map(|s| s.file.as_deref()) {
        assert!(dir.join(file).exists(), "{file} is in the report but not in {}", dir.display());
    }
    let stages: Vec<&str> = report.stages.iter().map(|s| s.stage.as_str()).collect();
    let passes = fxhlo::passes::pipeline(fxhlo::passes::DEFAULT_OPT_LEVEL, fxhlo::passes::Target::Cpu).into_iter().map(|p| format!("pass {}", p.name()));
    let want: Vec<String> = ["import".to_string()].into_iter().chain(passes).chain(["codegen".into(), "PJRT compile".into()]).collect();
    assert_eq!(stages, want);
    std::fs::remove_dir_all(root).ok();
}

#[test]
fn dump_filters_parse_and_name_what_is_wrong() {
    assert_eq!(DumpFilter::parse("all").ok(), Some(DumpFilter::all()));
    let f = DumpFilter::parse("import, dce,stablehlo").unwrap();
    assert!(f.wants("import") && f.wants("stablehlo") && !f.wants("trace") && !f.wants("xla"));
    assert!(f.wants_pass("dce") && !f.wants_pass("depthwise-conv-taps"));
    assert_eq!(f.to_string(), "dce,import,stablehlo");
    assert!(DumpFilter::parse("passes").unwrap().wants_pass("dce"));
    let err = DumpFilter::parse("import,dse").unwrap_err().to_string();
    assert!(err.contains("unknown stage `dse`") && err.contains("stablehlo") && err.contains("dce"), "{err}");
    assert!(DumpFilter::parse(" , ").is_err());
}

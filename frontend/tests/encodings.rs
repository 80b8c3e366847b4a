//! Both encodings of the trace schema: bincode round trip and header checks, symbolic sizes,
//! non-finite floats in JSON.

use std::path::Path;

use fxhlo_frontend::schema::{Arg, Dim, F64};
use fxhlo_frontend::{encoding, parse_bin, parse_json, read_json, to_bin, to_json};

use crate::fixture;

#[test]
fn bincode_round_trips_and_checks_its_header() {
    let trace = read_json(&fixture().join("graph.json")).unwrap();
    let bin = to_bin(&trace);
    assert_eq!(&bin[..8], encoding::MAGIC);
    let p = Path::new("graph.bin");
    assert_eq!(parse_bin(&bin, p).unwrap(), trace);

    let mut wrong_version = bin.clone();
    wrong_version[8] = 7;
    let err = parse_bin(&wrong_version, p).unwrap_err().to_string();
    assert!(err.contains("graph.bin: trace schema version 7 is not supported"), "{err}");

    let err = parse_bin(b"{\"format\": \"fxhlo-trace\"}", p).unwrap_err().to_string();
    assert!(err.contains("not a bincode fxhlo trace"), "{err}");

    let err = parse_bin(&bin[..bin.len() - 3], p).unwrap_err().to_string();
    assert!(err.contains("graph.bin: malformed bincode trace"), "{err}");

    let mut trailing = bin.clone();
    trailing.push(0);
    let err = parse_bin(&trailing, p).unwrap_err().to_string();
    assert!(err.contains("1 trailing bytes"), "{err}");
}

#[test]
fn json_round_trips_through_the_rust_writer() {
    let trace = read_json(&fixture().join("graph.json")).unwrap();
    let again = parse_json(to_json(&trace).as_bytes(), Path::new("x.json")).unwrap();
    assert_eq!(again, trace);
}

#[test]
fn symbolic_sizes_are_rejected_naming_the_input() {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("graph.json")).unwrap()).unwrap();
    v["inputs"][2]["meta"]["sizes"] = serde_json::json!(["s0", 8]);
    let p = Path::new("graph.json");
    let trace = parse_json(v.to_string().as_bytes(), p).unwrap();
    assert_eq!(trace.inputs[2].meta.sizes[0], Dim::Symbolic("s0".into()));
    let err = fxhlo_frontend::import::import(&trace, p).unwrap_err().to_string();
    assert!(err.contains("`arg2_1` has symbolic size `s0` at dim 0") && err.contains("dynamic=False"), "{err}");
    // Symbolic sizes survive the bincode encoding too, so the same error is given.
    let err = fxhlo_frontend::import::import(&parse_bin(&to_bin(&trace), p).unwrap(), p).unwrap_err().to_string();
    assert!(err.contains("symbolic size `s0`"), "{err}");
}

#[test]
fn non_finite_floats_use_strings_in_json_and_bits_in_bincode() {
    let text = r#"[{"float": "-inf"}, {"float": "nan"}, {"float": 0.5}, {"floats": ["inf", 2]}]"#;
    let args: Vec<Arg> = serde_json::from_str(text).unwrap();
    assert_eq!(args[0], Arg::Float(F64(f64::NEG_INFINITY)));
    assert!(matches!(args[1], Arg::Float(F64(v)) if v.is_nan()));
    assert_eq!(args[3], Arg::Floats(vec![F64(f64::INFINITY), F64(2.0)]));
    let back = serde_json::to_string(&args).unwrap();
    assert_eq!(back, r#"[{"float":"-inf"},{"float":"nan"},{"float":0.5},{"floats":["inf",2.0]}]"#);
    let err = serde_json::from_str::<Arg>(r#"{"float": "infinity"}"#).unwrap_err().to_string();
    assert!(err.contains("a number, \"inf\", \"-inf\" or \"nan\""), "{err}");
}

#[test]
fn the_bincode_view_imports_the_graph_the_owned_trace_does() {
    let dir = fixture().join("..");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let Ok(trace) = read_json(&entry.path().join("graph.json")) else { continue };
        let (p, bin) = (Path::new("graph.bin"), to_bin(&trace));
        let view = fxhlo_frontend::parse_bin_view(&bin, p).unwrap();
        assert_eq!((view.nodes.len(), view.inputs.len()), (trace.nodes.len(), trace.inputs.len()));
        let show = |g: fxhlo_frontend::Result<fxhlo_ir::Graph>| {
            g.map(|g| fxhlo_ir::verify(&g).map(|_| fxhlo_ir::print(&g))).map_err(|e| e.to_string())
        };
        let owned = show(fxhlo_frontend::import::import(&trace, p));
        let fast = show(fxhlo_frontend::import::import_view(&view, p));
        assert_eq!(fast, owned, "{}", entry.path().display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} fixtures");
}

#[test]
fn the_bincode_view_sorts_kwargs_and_keeps_the_last_duplicate() {
    // Two `keepdim` keywords out of order, as a hand-made bincode file could have them: the
    // owned decoder's BTreeMap keeps the last; the view must read the same call.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("graph.json")).unwrap()).unwrap();
    let x = v["inputs"][2]["name"].clone();
    let sizes = v["inputs"][2]["meta"]["sizes"].clone();
    v["nodes"] = serde_json::json!([{"name": "s", "target": "aten.sum.dim_IntList",
        "args": [{"tensor": x}, {"ints": [1]}], "kwargs": {"keepdim": {"bool": false}},
        "meta": [{"dtype": "f32", "sizes": [sizes[0], 1], "strides": [1, 1], "storage_offset": 0}]}]);
    v["outputs"] = serde_json::json!([{"tensor": "s"}]);
    let p = Path::new("graph.bin");
    let trace = parse_json(v.to_string().as_bytes(), p).unwrap();
    let bin = to_bin(&trace);
    // `keepdim` (7 bytes) is encoded once; splice in a second entry before it: `aaa: false`.
    let key = b"\x07keepdim";
    let at = bin.windows(key.len()).position(|w| w == key).unwrap();
    let mut edited = bin[..at - 1].to_vec();
    edited.push(2); // two kwargs
    edited.extend_from_slice(b"\x07keepdim\x07\x00"); // keepdim = bool false, then overridden
    edited.extend_from_slice(&bin[at..]);
    let last = edited.windows(key.len()).rposition(|w| w == key).unwrap();
    edited[last + key.len() + 1] = 1; // the second keepdim is true
    let owned = fxhlo_frontend::import::import(&parse_bin(&edited, p).unwrap(), p);
    let view = fxhlo_frontend::parse_bin_view(&edited, p).unwrap();
    let fast = fxhlo_frontend::import::import_view(&view, p);
    assert_eq!(view.kwargs(&view.nodes[0]).len(), 1);
    let show = |r: &fxhlo_frontend::Result<fxhlo_ir::Graph>| r.as_ref().map(fxhlo_ir::print).map_err(|e| e.to_string());
    assert_eq!(show(&fast), show(&owned));
    assert!(show(&owned).is_ok_and(|text| text.contains("keepdim = true")), "{:?}", show(&owned));
}

/// A malformed bincode trace says which part was being read (the header, a field of input or
/// node N with its name, ...) and at which byte of the file, never bincode's debug structs.
#[test]
fn bincode_errors_name_the_part_and_the_byte() {
    let trace = read_json(&fixture().join("graph.json")).unwrap();
    let bin = to_bin(&trace);
    let p = Path::new("graph.bin");
    let err = |bytes: &[u8]| parse_bin(bytes, p).unwrap_err().to_string();

    // Cut inside the first node's target string: the error names the node and the field, and
    // the byte is where the target's bytes start (its length prefix is one byte before).
    let target = b"aten.permute.default";
    let at = bin.windows(target.len()).position(|w| w == target).expect("the target is in the bincode");
    let msg = err(&bin[..at + 4]);
    assert_eq!(
        msg,
        format!("graph.bin: malformed bincode trace at byte {at}: unexpected end of input reading the target of node 0 `permute`")
    );

    // Every truncation says what and where, in words.
    for cut in 0..bin.len() {
        let msg = err(&bin[..cut]);
        assert!(msg.starts_with("graph.bin: malformed bincode trace at byte "), "cut at {cut}: {msg}");
        assert!(msg.contains(" reading ") || msg.contains("FXHLOTRC"), "cut at {cut}: {msg}");
        assert!(!msg.contains('{') && !msg.contains("UnexpectedEnd"), "cut at {cut}: {msg}");
    }
    assert_eq!(err(&bin[..10]), "graph.bin: malformed bincode trace at byte 10: unexpected end of input reading the schema version in the header (the file is 10 bytes)");

    let mut trailing = bin.clone();
    trailing.extend_from_slice(&[0, 0]);
    assert_eq!(err(&trailing), format!("graph.bin: malformed bincode trace at byte {}: 2 trailing bytes after the trace", bin.len()));
}

/// A trace with control flow: `cond(x.sum() > 0, sin, neg)` whose branches are subgraphs, each
/// with a node `r` (testsuite/filetests/traces/cond_sin_neg.json, shared with `fxhlo explain`'s
/// test).
fn control_flow_trace() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testsuite/filetests/traces/cond_sin_neg.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn import_json(v: &serde_json::Value) -> Result<fxhlo_ir::Graph, String> {
    let p = Path::new("graph.json");
    let trace = parse_json(v.to_string().as_bytes(), p).map_err(|e| e.to_string())?;
    fxhlo_frontend::import::import(&trace, p).map_err(|e| e.to_string())
}

#[test]
fn control_flow_subgraphs_import_from_both_encodings() {
    let v = control_flow_trace();
    let p = Path::new("graph.json");
    let trace = parse_json(v.to_string().as_bytes(), p).unwrap();
    let owned = fxhlo_ir::print(&fxhlo_frontend::import::import(&trace, p).unwrap());
    assert!(owned.contains("higher_order.cond %p, %x {then_region = 0, else_region = 1}"), "{owned}");
    assert!(owned.contains("region 1 {") && owned.contains("aten.neg"), "{owned}");
    let bin = to_bin(&trace);
    assert_eq!(parse_bin(&bin, Path::new("graph.bin")).unwrap(), trace);
    let view = fxhlo_frontend::parse_bin_view(&bin, Path::new("graph.bin")).unwrap();
    assert_eq!(fxhlo_ir::print(&fxhlo_frontend::import::import_view(&view, p).unwrap()), owned);
    assert_eq!(parse_json(to_json(&trace).as_bytes(), p).unwrap(), trace);
}

#[test]
fn bad_control_flow_is_refused_naming_the_node() {
    let mut v = control_flow_trace();
    v["nodes"][2]["args"][2] = serde_json::json!({"graph": "missing"});
    let err = import_json(&v).unwrap_err();
    assert!(err.contains("`c`") && err.contains("no subgraph `missing`"), "{err}");

    let mut v = control_flow_trace();
    v["subgraphs"][1]["nodes"][0]["target"] = "aten.sum.default".into();
    v["subgraphs"][1]["nodes"][0]["meta"] = serde_json::json!([{"dtype": "f32", "sizes": [], "strides": []}]);
    let err = import_json(&v).unwrap_err();
    assert!(err.contains("`c`") && err.contains("region 1 is (f32[3]) -> (f32[])"), "{err}");

    // A subgraph that runs itself: refused at the nesting limit, not a stack overflow.
    let mut v = control_flow_trace();
    let mut selfish = v["subgraphs"][0].clone();
    selfish["nodes"] = v["nodes"].clone();
    selfish["nodes"][0]["args"][0] = serde_json::json!({"tensor": "a"});
    selfish["nodes"][2]["args"][1] = serde_json::json!({"graph": "then"});
    selfish["nodes"][2]["args"][3] = serde_json::json!({"tensors": ["a"]});
    selfish["outputs"] = serde_json::json!([{"tensor": "y"}]);
    v["subgraphs"][0] = selfish;
    let err = import_json(&v).unwrap_err();
    assert!(err.contains("nested more than 32 deep"), "{err}");

    let mut v = control_flow_trace();
    v["nodes"][2]["args"][1] = serde_json::json!({"tensor": "x"});
    let err = import_json(&v).unwrap_err();
    assert!(err.contains("argument 1 must be a subgraph"), "{err}");
}

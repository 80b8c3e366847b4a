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

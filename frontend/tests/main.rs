//! Frontend tests: the bundled fixture imports, and each class of malformed bundle gives a
//! typed error whose message names the file and what is wrong (never a panic).

use std::fs;
use std::path::{Path, PathBuf};

mod encodings;
mod files;
mod fuzz;
mod unsupported;

use fxhlo_frontend::{Bundle, GRAPH_JSON, WEIGHTS};
use serde_json::{json, Value};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures/mlp.fxt")
}

/// A scratch copy of the MLP bundle whose graph.json is replaced by `edit(original)`.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("fxhlo-frontend-{tag}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for entry in fs::read_dir(fixture()).unwrap() {
            let p = entry.unwrap().path();
            fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
        Scratch(dir)
    }
    fn edit_graph(&self, edit: impl FnOnce(&mut Value)) -> &Path {
        let mut v: Value = serde_json::from_str(&fs::read_to_string(self.0.join(GRAPH_JSON)).unwrap()).unwrap();
        edit(&mut v);
        fs::write(self.0.join(GRAPH_JSON), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        fs::remove_dir_all(&self.0).ok();
    }
}

fn open_err(dir: &Path) -> String {
    let err = Bundle::open(dir).err().expect("bundle must be rejected").to_string();
    println!("{err}");
    err
}

#[test]
fn the_mlp_fixture_imports() {
    let b = Bundle::open(&fixture()).unwrap();
    assert_eq!(b.graph.name, "mlp");
    assert_eq!(b.graph.inputs().len(), 5);
    let text = fxhlo_ir::print(&b.graph);
    assert!(text.contains("aten.addmm"), "{text}");
}

#[test]
fn malformed_json_names_line_and_column() {
    let s = Scratch::new("json");
    fs::write(s.0.join(GRAPH_JSON), "{\n  \"format\": \"fxhlo-trace\",\n  \"version\": 1,,\n}").unwrap();
    let err = open_err(&s.0);
    assert!(err.contains("graph.json:3:") && err.contains("malformed trace JSON"), "{err}");
}

#[test]
fn wrong_schema_version_is_rejected() {
    let s = Scratch::new("version");
    let err = open_err(s.edit_graph(|v| v["version"] = json!(99)));
    assert!(err.contains("schema version 99 is not supported") && err.contains("reads version 1"), "{err}");
}

#[test]
fn not_a_trace_is_rejected() {
    let s = Scratch::new("format");
    let err = open_err(s.edit_graph(|v| v["format"] = json!("onnx")));
    assert!(err.contains("not an fxhlo trace (format is `onnx`"), "{err}");
}

#[test]
fn dangling_reference_names_node_and_value() {
    let s = Scratch::new("dangling");
    let err = open_err(s.edit_graph(|v| v["nodes"][1]["args"][1] = json!({"tensor": "ghost"})));
    assert!(err.contains("node `addmm` refers to `ghost`"), "{err}");
}

#[test]
fn duplicate_names_are_rejected() {
    let s = Scratch::new("dup");
    let err = open_err(s.edit_graph(|v| v["nodes"][1]["name"] = json!("permute")));
    assert!(err.contains("name `permute` is defined twice"), "{err}");
}

#[test]
fn use_before_definition_is_rejected() {
    // Swapping two nodes makes `addmm` use `permute` before it exists (FX order is topological).
    let s = Scratch::new("order");
    let err = open_err(s.edit_graph(|v| {
        let nodes = v["nodes"].as_array_mut().unwrap();
        nodes.swap(0, 1);
    }));
    assert!(err.contains("node `addmm` refers to `permute`"), "{err}");
}

#[test]
fn unknown_dtype_names_the_input() {
    let s = Scratch::new("dtype");
    let err = open_err(s.edit_graph(|v| v["inputs"][2]["meta"]["dtype"] = json!("complex64")));
    assert!(err.contains("`arg2_1`") && err.contains("unknown dtype `complex64`"), "{err}");
}

#[test]
fn meta_contradicting_inference_names_the_node() {
    let s = Scratch::new("meta");
    let err = open_err(s.edit_graph(|v| v["nodes"][0]["meta"][0]["sizes"] = json!([16, 8])));
    assert!(err.contains("node `permute` (aten.permute.default)") && err.contains("meta says f32[16,8]"), "{err}");
}

#[test]
fn missing_and_mismatched_weights_are_reported() {
    let s = Scratch::new("weights");
    let err = open_err(s.edit_graph(|v| v["inputs"][0]["weight"] = json!("fc9.weight")));
    assert!(err.contains("input `arg0_1` needs tensor `fc9.weight`"), "{err}");

    let s = Scratch::new("weights-shape");
    // A bias of shape [1] still broadcasts in addmm, so only the weights file disagrees.
    let err = open_err(s.edit_graph(|v| {
        v["inputs"][1]["meta"]["sizes"] = json!([1]);
        v["inputs"][1]["meta"]["strides"] = json!([1]);
    }));
    assert!(err.contains("tensor `fc1.bias` for input `arg1_1` is f32[16], the graph expects f32[1]"), "{err}");

    let s = Scratch::new("weights-corrupt");
    fs::write(s.0.join(WEIGHTS), b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}").unwrap();
    let err = open_err(&s.0);
    assert!(err.contains("weights.safetensors: malformed safetensors file"), "{err}");
}

#[test]
fn a_missing_bundle_is_a_clear_error() {
    let err = open_err(Path::new("/nonexistent/model.fxt"));
    assert!(err.contains("/nonexistent/model.fxt") && err.contains("no such file"), "{err}");
    let dir = std::env::temp_dir();
    let err = open_err(&dir);
    assert!(err.contains("not a trace bundle"), "{err}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A cheap deterministic fuzz: truncations and byte flips of the valid trace.
    let original = fs::read(fixture().join(GRAPH_JSON)).unwrap();
    let path = Path::new("graph.json");
    let mut rejected = 0;
    for cut in (0..original.len()).step_by(7) {
        if fxhlo_frontend::parse_json(&original[..cut], path).is_err() {
            rejected += 1;
        }
    }
    let mut state = 0x9E3779B97F4A7C15u64;
    for _ in 0..2000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut bytes = original.clone();
        let i = (state as usize) % bytes.len();
        bytes[i] = (state >> 32) as u8;
        if let Ok(trace) = fxhlo_frontend::parse_json(&bytes, path) {
            let _ = fxhlo_frontend::import::import(&trace, path);
        }
    }
    assert!(rejected > 0);
}

/// A `full` whose element count overflows (2^40 x 2^40) is refused at import, naming the node,
/// before any count is multiplied out; one that fits in bytes but not in memory still imports.
#[test]
fn a_size_that_overflows_is_an_import_error_naming_the_node() {
    let full = |size: i64| {
        json!({
            "name": "huge", "target": "aten.full.default",
            "args": [{"ints": [size, size]}, {"float": 1.0}],
            "kwargs": {"dtype": {"dtype": "f32"}},
            "meta": [{"dtype": "f32", "sizes": [size, size], "strides": [size, 1], "storage_offset": 0}],
        })
    };
    let s = Scratch::new("overflow");
    let err = open_err(s.edit_graph(|v| {
        v["nodes"].as_array_mut().unwrap().push(full(1 << 40));
        v["outputs"] = json!([{"tensor": "huge"}]);
    }));
    assert!(err.contains("`huge`") && err.contains("f32[1099511627776,1099511627776]") && err.contains("overflows"), "{err}");
    // 2^30 x 2^30 f32 is 2^62 bytes: representable, so the importer accepts it (the runtime
    // refuses what the device cannot allocate).
    let s = Scratch::new("overflow-fits");
    let dir = s.edit_graph(|v| {
        v["nodes"].as_array_mut().unwrap().push(full(1 << 30));
        v["outputs"] = json!([{"tensor": "huge"}]);
    });
    Bundle::open(dir).unwrap_or_else(|e| panic!("{e}"));
}

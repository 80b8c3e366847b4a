//! Calls the IR cannot express import as `Op::Unknown` with the reason why, naming the
//! argument; targets fxhlo has no op for import without one. The reason survives the IR text.

use std::path::Path;

use fxhlo_frontend::{import::import, parse_json};
use fxhlo_ir::{Graph, Op};
use serde_json::{json, Value};

/// A trace with input `x: f32[2,3]` and one node `n` calling `target`, typed by `meta`.
fn one_node(target: &str, args: Value, kwargs: Value, meta: Value) -> Graph {
    let m = |sizes: &[i64]| json!({"dtype": "f32", "sizes": sizes, "strides": [3, 1], "storage_offset": 0});
    let trace = json!({
        "format": "fxhlo-trace", "version": 1, "name": "one",
        "inputs": [{"name": "x", "kind": "user_input", "meta": m(&[2, 3])}],
        "nodes": [{"name": "n", "target": target, "args": args, "kwargs": kwargs, "meta": meta,
                   "source": {"file": "model.py", "line": 7}}],
        "outputs": [{"tensor": "n"}],
    });
    let p = Path::new("graph.json");
    import(&parse_json(trace.to_string().as_bytes(), p).unwrap(), p).unwrap_or_else(|e| panic!("{e}"))
}

fn f32_meta(sizes: &[i64]) -> Value {
    json!([{"dtype": "f32", "sizes": sizes, "strides": [], "storage_offset": 0}])
}

/// The op of node `n`, as (target, reason) when unknown.
fn unknown(g: &Graph) -> (String, Option<String>) {
    let id = g.node_ids().find(|&id| &*g.node(id).name == "n").expect("node n");
    match &g.node(id).op {
        Op::Unknown { target, reason } => (target.clone(), reason.clone()),
        other => panic!("n imported as {other:?}"),
    }
}

/// The reason of node `n`, which must be unknown with one.
fn reason(g: &Graph) -> String {
    let (_, reason) = unknown(g);
    let reason = reason.expect("a reason");
    println!("{reason}");
    reason
}

#[test]
fn a_tensor_where_a_constant_is_needed_is_named() {
    let g = one_node("aten.sum.dim_IntList", json!([{"tensor": "x"}, {"tensor": "x"}]), json!({}), f32_meta(&[2]));
    let r = reason(&g);
    assert!(r.contains("argument `dim` is a tensor computed in the graph") && r.contains("a list of ints known when the graph is captured"), "{r}");
    // The unknown op keeps its tensor arguments (data dependencies).
    assert_eq!(g.operands(g.node_ids().last().unwrap()).len(), 2);
}

#[test]
fn an_unsupported_dtype_is_named() {
    let g = one_node("aten._to_copy.default", json!([{"tensor": "x"}]), json!({"dtype": {"dtype": "f8e4m3"}}), f32_meta(&[2, 3]));
    let r = reason(&g);
    assert!(r.contains("argument `dtype` asks for dtype `f8e4m3`, which fxhlo does not support") && r.contains("bf16"), "{r}");
}

#[test]
fn a_mode_fxhlo_does_not_lower_is_named_with_the_ones_it_does() {
    let g = one_node("aten.gelu.default", json!([{"tensor": "x"}]), json!({"approximate": {"string": "erf"}}), f32_meta(&[2, 3]));
    assert_eq!(reason(&g), "argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`");
    let g = one_node("aten.div.Tensor_mode", json!([{"tensor": "x"}, {"tensor": "x"}]), json!({"rounding_mode": {"string": "ceil"}}), f32_meta(&[2, 3]));
    assert!(reason(&g).starts_with("argument `rounding_mode` is `ceil`; fxhlo lowers only None, `trunc` and `floor`"));
}

#[test]
fn a_missing_argument_is_named() {
    let g = one_node("aten.mul.Tensor", json!([{"tensor": "x"}]), json!({}), f32_meta(&[2, 3]));
    assert!(reason(&g).starts_with("argument `other` is missing"));
}

#[test]
fn values_out_of_range_are_named() {
    let g = one_node("aten.transpose.int", json!([{"tensor": "x"}, {"int": 5}, {"int": 0}]), json!({}), f32_meta(&[3, 2]));
    assert_eq!(reason(&g), "argument `dim0` is 5; fxhlo lowers only a dim of the rank-2 result");
    let g = one_node("aten.split.Tensor", json!([{"tensor": "x"}, {"int": 0}, {"int": 1}]), json!({}), f32_meta(&[2, 3]));
    assert_eq!(reason(&g), "argument `split_size` is 0; fxhlo lowers only a positive chunk size");
    let g = one_node("aten._fft_c2c.default", json!([{"tensor": "x"}, {"ints": [1]}, {"int": 1}, {"bool": true}]), json!({}), f32_meta(&[2, 3]));
    let r = reason(&g);
    assert!(r.starts_with("argument `normalization` is 1 with forward = true; fxhlo lowers only 0 forward or 2 (1/n) inverse"), "{r}");
}

#[test]
fn a_target_without_lowering_has_no_reason() {
    let g = one_node("aten.frobnicate.default", json!([{"tensor": "x"}, {"int": 3}]), json!({}), f32_meta(&[2, 3]));
    assert_eq!(unknown(&g), ("aten.frobnicate.default".to_string(), None));
    let g = one_node("mylib.twice.default", json!([{"tensor": "x"}]), json!({}), f32_meta(&[2, 3]));
    assert_eq!(unknown(&g), ("mylib.twice.default".to_string(), None));
    // An overload fxhlo does not map is such a target too.
    let g = one_node("aten.copysign.Scalar", json!([{"tensor": "x"}, {"float": 1.0}]), json!({}), f32_meta(&[2, 3]));
    assert_eq!(unknown(&g), ("aten.copysign.Scalar".to_string(), None));
}

/// The reason is part of the IR text: printed on the node and read back (dumps and golden
/// tests keep it).
#[test]
fn the_reason_survives_the_ir_text() {
    let g = one_node("aten.gelu.default", json!([{"tensor": "x"}]), json!({"approximate": {"string": "erf"}}), f32_meta(&[2, 3]));
    let text = fxhlo_ir::print(&g);
    assert!(
        text.contains(r#"%n = aten.gelu.default %x {reason = "argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`"} : f32[2,3]  loc("model.py":7)"#),
        "{text}"
    );
    let again = fxhlo_ir::parse(&text).unwrap();
    assert_eq!(fxhlo_ir::print(&again), text);
    assert_eq!(unknown(&again), unknown(&g));
}

//! The stable text form of a graph, MLIR-like, one node per line:
//!
//! ```text
//! graph @mlp {
//!   %w = input {kind = parameter, weight = "fc.weight"} : f32[16,8]
//!   %t = aten.permute %w {dims = [1, 0]} : f32[8,16]
//!   %y = aten.addmm %b, %x, %t : f32[2,16]  loc("model.py":12)
//!   return %y
//! }
//! ```
//!
//! Nodes print in [`Graph::topo_order`], which is deterministic, so the text can be hashed
//! (cache keys) and snapshotted (golden tests).

use std::fmt::Write;

use crate::graph::{Graph, ValueRef};

/// Prints the graph in the IR text format. A graph with a cycle prints its nodes in index
/// order (the verifier reports the cycle).
pub fn print(graph: &Graph) -> String {
    let order = graph.topo_order().unwrap_or_else(|_| graph.node_ids().collect());
    let mut out = String::new();
    let _ = writeln!(out, "graph @{} {{", graph.name);
    for id in order {
        let node = graph.node(id);
        let _ = write!(out, "  %{} = {}", node.name, node.op.text_name());
        let operands: Vec<String> = graph.operands(id).iter().map(|v| value_name(graph, *v)).collect();
        if !operands.is_empty() {
            let _ = write!(out, " {}", operands.join(", "));
        }
        let attrs = node.op.attributes();
        if !attrs.is_empty() {
            let items: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = write!(out, " {{{}}}", items.join(", "));
        }
        let types: Vec<String> = node.results.iter().map(|t| t.to_string()).collect();
        match types.len() {
            1 => { let _ = write!(out, " : {}", types[0]); }
            _ => { let _ = write!(out, " : ({})", types.join(", ")); }
        }
        if let Some(loc) = &node.source {
            let _ = write!(out, "  loc({:?}:{})", loc.file, loc.line);
        }
        out.push('\n');
    }
    let outs: Vec<String> = graph.outputs().iter().map(|v| value_name(graph, *v)).collect();
    let _ = writeln!(out, "  return {}", outs.join(", "));
    out.push_str("}\n");
    out
}

fn value_name(graph: &Graph, v: ValueRef) -> String {
    let name = &graph.node(v.node).name;
    if graph.node(v.node).results.len() == 1 {
        format!("%{name}")
    } else {
        format!("%{name}#{}", v.result)
    }
}

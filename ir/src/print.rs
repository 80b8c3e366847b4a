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
//! (cache keys) and snapshotted (golden tests). A graph's regions (the branches and loop
//! bodies of control-flow nodes) print after its `return`, indented, as `region N { ... }`.

use std::collections::HashMap;
use std::fmt::Write;

use crate::graph::{Graph, NodeId, ValueRef};

/// Prints the graph in the IR text format. A graph with a cycle prints its nodes in index
/// order (the verifier reports the cycle).
pub fn print(graph: &Graph) -> String {
    let mut out = String::new();
    write_graph(&mut out, graph, false, None);
    out
}

/// The graph's canonical text, for cache keys: what the executable depends on and nothing
/// else. Values are numbered by position (`%0`, `%1`, ... in topological order) instead of
/// named, and the graph name, source locations and inputs' weight keys are left out, so the
/// same model traced by another script, with other FX node names or reached through another
/// path (`net.0.weight` or `0.weight`), prints the same. Not parseable (no names).
pub fn print_canonical(graph: &Graph) -> String {
    let mut out = String::new();
    write_graph(&mut out, graph, true, None);
    out
}

/// Writes `graph` (`region`: its index when it is a region, printed nested) to `out`.
fn write_graph(out: &mut String, graph: &Graph, canonical: bool, region: Option<(usize, &str)>) {
    let order = graph.topo_order().unwrap_or_else(|_| graph.node_ids().collect());
    let position: HashMap<NodeId, usize> = if canonical { order.iter().enumerate().map(|(i, &id)| (id, i)).collect() } else { HashMap::new() };
    let value = |v: ValueRef| -> String {
        let node = graph.node(v.node);
        let name = match position.get(&v.node) {
            Some(i) => i.to_string(),
            None => node.name.to_string(),
        };
        if node.results.len() == 1 {
            format!("%{name}")
        } else {
            format!("%{name}#{}", v.result)
        }
    };
    let pad = region.map_or("", |(_, pad)| pad);
    match region {
        Some((index, _)) => { let _ = writeln!(out, "{pad}region {index} {{"); }
        None => { let _ = writeln!(out, "graph @{} {{", if canonical { "_" } else { graph.name.as_str() }); }
    }
    for id in order {
        let node = graph.node(id);
        let name = match position.get(&id) {
            Some(i) => i.to_string(),
            None => node.name.to_string(),
        };
        let _ = write!(out, "{pad}  %{name} = {}", node.op.text_name());
        let operands: Vec<String> = graph.operands(id).iter().map(|v| value(*v)).collect();
        if !operands.is_empty() {
            let _ = write!(out, " {}", operands.join(", "));
        }
        let mut attrs = node.op.attributes();
        if let Some(data) = graph.input_value(id) {
            attrs.push(("value", crate::attr::quote(&data.digest_hex())));
        }
        if canonical {
            // Which weights feed an input is the caller's business, not the executable's.
            attrs.retain(|(k, _)| *k != "weight");
        }
        if !attrs.is_empty() {
            let items: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = write!(out, " {{{}}}", items.join(", "));
        }
        let types: Vec<String> = node.results.iter().map(|t| t.to_string()).collect();
        match types.len() {
            1 => { let _ = write!(out, " : {}", types[0]); }
            _ => { let _ = write!(out, " : ({})", types.join(", ")); }
        }
        if let (Some(loc), false) = (&node.source, canonical) {
            let _ = write!(out, "  loc({:?}:{})", loc.file, loc.line);
        }
        out.push('\n');
    }
    let outs: Vec<String> = graph.outputs().iter().map(|v| value(*v)).collect();
    let _ = writeln!(out, "{pad}  return {}", outs.join(", "));
    let inner = format!("{pad}  ");
    for (i, r) in graph.regions().iter().enumerate() {
        write_graph(out, r, canonical, Some((i, &inner)));
    }
    let _ = writeln!(out, "{pad}}}");
}

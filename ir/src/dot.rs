//! Graphviz DOT export of a graph: one box per node (name, op, result types), inputs as
//! ellipses, an edge per use labelled with the operand index (and `#k` for result k of a
//! multi-result node), and a `return` sink. Deterministic: nodes in topological order.
//! [`to_dot_marked`] fills chosen nodes (a dump marks the nodes a pass created or changed).

use std::fmt::Write;

use crate::graph::{Graph, NodeId};
use crate::op::Op;

/// The fill colour of marked nodes (a light amber, readable under black text).
pub const MARK_COLOR: &str = "#ffd27f";

/// The DOT text of `graph` (`dot -Tsvg` renders it).
pub fn to_dot(graph: &Graph) -> String {
    to_dot_marked(graph, |_| false)
}

/// [`to_dot`] with the nodes for which `marked` is true filled in [`MARK_COLOR`].
pub fn to_dot_marked(graph: &Graph, marked: impl Fn(NodeId) -> bool) -> String {
    let order = graph.topo_order().unwrap_or_else(|_| graph.node_ids().collect());
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", esc(&graph.name));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    for &id in &order {
        let n = graph.node(id);
        let types: Vec<String> = n.results.iter().map(|t| t.to_string()).collect();
        let shape = if matches!(n.op, Op::Input { .. }) { ", shape=ellipse" } else { "" };
        let unknown = if matches!(n.op, Op::Unknown { .. }) { ", color=red" } else { "" };
        let fill = if marked(id) { format!(", style=filled, fillcolor=\"{MARK_COLOR}\"") } else { String::new() };
        let _ = writeln!(
            out,
            "  n{} [label=\"%{}\\n{}\\n{}\"{shape}{unknown}{fill}];",
            id.index(),
            esc(&n.name),
            esc(n.op.name()),
            esc(&types.join(", "))
        );
    }
    for &id in &order {
        for (i, v) in graph.operands(id).iter().enumerate() {
            let res = if graph.node(v.node).results.len() > 1 { format!("#{} ", v.result) } else { String::new() };
            let _ = writeln!(out, "  n{} -> n{} [label=\"{res}{i}\"];", v.node.index(), id.index());
        }
    }
    out.push_str("  ret [label=\"return\", shape=doublecircle];\n");
    for (i, v) in graph.outputs().iter().enumerate() {
        let _ = writeln!(out, "  n{} -> ret [label=\"{i}\"];", v.node.index());
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use crate::{DType, Graph, InputKind, Op, TensorType, UnaryOp, ValueRef};

    #[test]
    fn dot_has_every_node_and_edge() {
        let mut g = Graph::new("g");
        let t = TensorType::new(DType::F32, vec![2]);
        let x = g.add_input("x", InputKind::UserInput, None, t.clone(), None);
        let r = g.add_node("r", Op::Unary(UnaryOp::Relu), &[ValueRef::first(x)], vec![t], None).unwrap();
        g.set_outputs(vec![ValueRef::first(r)]).unwrap();
        let dot = super::to_dot(&g);
        assert!(dot.starts_with("digraph \"g\" {"), "{dot}");
        assert!(dot.contains("label=\"%r\\naten.relu\\nf32[2]\""), "{dot}");
        assert!(dot.contains(&format!("n{} -> n{} [label=\"0\"]", x.index(), r.index())), "{dot}");
        assert!(dot.contains(&format!("n{} -> ret", r.index())), "{dot}");
        assert!(!dot.contains("fillcolor"), "{dot}");
        let marked = super::to_dot_marked(&g, |id| id == r);
        assert!(marked.contains(&format!("n{} [label=\"%r\\naten.relu\\nf32[2]\", style=filled, fillcolor=", r.index())), "{marked}");
        assert_eq!(marked.matches("fillcolor").count(), 1, "{marked}");
    }
}

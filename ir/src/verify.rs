//! The verifier: checks that a graph is well formed. Run by the pass manager after every pass.
//!
//! Invariants checked, each reported as [`Error::Verify`] or [`Error::Cycle`] naming the node:
//! 1. node names are unique;
//! 2. a node's incoming edges fill operand slots `0..n` exactly once each, and `n` matches the
//!    op's arity where it has one;
//! 3. every operand refers to an existing result of its producer;
//! 4. the graph is acyclic;
//! 5. every node has at least one result, no result has a negative dimension, and every
//!    result's size in bytes fits in an `i64` (so element and byte counts never overflow);
//! 6. every `Op::Input` node is listed among the graph inputs exactly once, and only those are;
//! 7. result types equal what [`crate::infer::infer`] computes from the operand types;
//! 8. the graph has at least one output.

use std::collections::HashSet;

use crate::graph::Graph;
use crate::infer::infer;
use crate::op::Op;
use crate::{Error, Result};

/// Checks every invariant listed in the module doc; returns the first violation.
pub fn verify(graph: &Graph) -> Result<()> {
    let err = |node: &str, message: String| Error::Verify { node: node.to_string(), message };
    let mut names = HashSet::new();
    let inputs: HashSet<_> = graph.inputs().iter().copied().collect();
    if inputs.len() != graph.inputs().len() {
        return Err(err(&graph.name, "a node is listed twice among the graph inputs".into()));
    }
    for id in graph.topo_order()? {
        let node = graph.node(id);
        if !names.insert(node.name.as_str()) {
            return Err(err(&node.name, "duplicate node name".into()));
        }
        let slots = graph.operand_slots(id);
        if slots.iter().enumerate().any(|(i, &s)| s as usize != i) {
            return Err(err(&node.name, format!("operand slots {slots:?} are not 0..{}", slots.len())));
        }
        if let Some(n) = node.op.arity() {
            if slots.len() != n {
                return Err(err(&node.name, format!("{} takes {n} operand(s), has {}", node.op.name(), slots.len())));
            }
        }
        if node.results.is_empty() {
            return Err(err(&node.name, "node has no result".into()));
        }
        if let Some(t) = node.results.iter().find(|t| t.shape.iter().any(|&d| d < 0)) {
            return Err(err(&node.name, format!("result type {t} has a negative dimension")));
        }
        if let Some(t) = node.results.iter().find(|t| t.checked_size_bytes().is_none()) {
            return Err(err(&node.name, format!("result type {t} is too large: its size in bytes overflows a 64-bit integer")));
        }
        let is_input = matches!(node.op, Op::Input { .. });
        if is_input != inputs.contains(&id) {
            return Err(err(&node.name, "input nodes and the graph's input list disagree".into()));
        }
        let operands = graph.operands(id);
        let mut types = Vec::with_capacity(operands.len());
        for v in &operands {
            match graph.value_type(*v) {
                Some(t) => types.push(t),
                None => return Err(err(&node.name, "operand refers to a missing result".into())),
            }
        }
        match infer(&node.op, &types) {
            Ok(Some(expected)) if expected != node.results => {
                let fmt = |v: &[crate::TensorType]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
                return Err(err(
                    &node.name,
                    format!("result types ({}) differ from inferred ({})", fmt(&node.results), fmt(&expected)),
                ));
            }
            Ok(_) => {}
            Err(message) => return Err(err(&node.name, message)),
        }
    }
    if graph.outputs().is_empty() {
        return Err(err(&graph.name, "the graph has no outputs".into()));
    }
    Ok(())
}

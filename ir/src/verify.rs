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
//! 7. result types equal what [`crate::infer::infer`] computes from the operand types, but for
//!    the device-dependent auxiliary results [`crate::infer::agrees`] accepts;
//! 8. the graph has at least one output;
//! 9. the bytes of a constant or of an input's bound value (when present: text-parsed data
//!    has none) are exactly its type's size;
//! 10. a control-flow node's regions exist and their signatures fit its operands and results
//!     (see [`Op::Cond`], [`Op::While`]), and every region verifies in turn;
//! 11. an input's `layout`, when it has one, is a permutation of its type's dims.

use std::collections::HashSet;

use crate::graph::{Graph, Node};
use crate::infer::{agrees, infer};
use crate::op::Op;
use crate::types::{DType, TensorType};
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
        let data = match &node.op {
            Op::Constant { data } => Some(data),
            _ => graph.input_value(id),
        };
        if let Some(bytes) = data.and_then(|d| d.bytes()) {
            let want = node.results[0].size_bytes();
            if bytes.len() != want {
                return Err(err(&node.name, format!("holds {} bytes of data; {} needs {want}", bytes.len(), node.results[0])));
            }
        }
        if let Op::Input { layout: Some(perm), .. } = &node.op {
            if perm.len() != node.results[0].rank() || !crate::layout::is_permutation(perm) {
                return Err(err(&node.name, format!("layout {perm:?} is not a permutation of the dims of {}", node.results[0])));
            }
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
            Ok(Some(expected)) if !agrees(&node.op, &types, &expected, &node.results) => {
                let fmt = |v: &[crate::TensorType]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
                return Err(err(
                    &node.name,
                    format!("result types ({}) differ from inferred ({})", fmt(&node.results), fmt(&expected)),
                ));
            }
            Ok(_) => {}
            Err(message) => return Err(err(&node.name, message)),
        }
        regions_fit(graph, node, &types).map_err(|message| err(&node.name, message))?;
    }
    if graph.outputs().is_empty() {
        return Err(err(&graph.name, "the graph has no outputs".into()));
    }
    for region in graph.regions() {
        verify(region)?;
    }
    Ok(())
}

/// The inputs and outputs of a region as types.
fn signature(region: &Graph) -> (Vec<&TensorType>, Vec<&TensorType>) {
    let inputs = region.inputs().iter().map(|&id| &region.node(id).results[0]).collect();
    let outputs = region.outputs().iter().filter_map(|v| region.value_type(*v)).collect();
    (inputs, outputs)
}

/// Invariant 9 for node `id` of `graph`: its regions exist and fit its operands and results
/// (the message says how they do not). An importer checks each control-flow node with it.
pub fn check_regions(graph: &Graph, id: crate::NodeId) -> std::result::Result<(), String> {
    let operands = graph.operands(id);
    let types: Vec<&TensorType> = operands.iter().filter_map(|v| graph.value_type(*v)).collect();
    regions_fit(graph, graph.node(id), &types)
}

/// Invariant 9 for one node (`operands`: its operand types).
fn regions_fit(graph: &Graph, node: &Node, operands: &[&TensorType]) -> std::result::Result<(), String> {
    let region = |i: u32| graph.regions().get(i as usize).ok_or_else(|| format!("region {i} does not exist"));
    let results: Vec<&TensorType> = node.results.iter().collect();
    let scalar_bool = TensorType::new(DType::Bool, vec![]);
    let show = |v: &[&TensorType]| format!("({})", v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "));
    match node.op {
        Op::Cond { then_region, else_region } => {
            if operands.first() != Some(&&scalar_bool) {
                return Err("the predicate (operand 0) must be bool[]".into());
            }
            for i in [then_region, else_region] {
                let (ins, outs) = signature(region(i)?);
                if ins != operands[1..] || outs != results {
                    return Err(format!(
                        "region {i} is {} -> {}, the node {} -> {}",
                        show(&ins), show(&outs), show(&operands[1..]), show(&results)
                    ));
                }
            }
        }
        Op::While { cond, body } => {
            let n = results.len();
            if n > operands.len() || results[..] != operands[..n] {
                return Err(format!("the results {} must be the first operands' types {}", show(&results), show(operands)));
            }
            let (ins, outs) = signature(region(cond)?);
            if ins != operands || outs != [&scalar_bool] {
                return Err(format!("the condition region {cond} is {} -> {}, not {} -> (bool[])", show(&ins), show(&outs), show(operands)));
            }
            let (ins, outs) = signature(region(body)?);
            if ins != operands || outs != results {
                return Err(format!(
                    "the body region {body} is {} -> {}, not {} -> {}",
                    show(&ins), show(&outs), show(operands), show(&results)
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

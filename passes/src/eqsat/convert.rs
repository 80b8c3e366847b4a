//! IR → e-graph: one e-node per original value of the top-level graph, in topological order.
//!
//! Structured ops (see `lang`) become their e-node over their operands' classes; every other
//! value becomes an `orig` node naming it, over the classes of its node's operands. Regions
//! (the bodies of `cond` and `while`) stay out of the e-graph: their nodes are opaque and
//! rebuilt as they are.

use std::collections::HashMap;

use egg::Id;
use fxhlo_ir::{Graph, InputKind, Op, ValueRef};

use super::analysis::{OrigInfo, TensorAnalysis, TensorGraph};
use super::lang::{structured, ENode, ValueKey};

/// The e-graph of a graph and how its original values map into it.
pub struct Converted {
    pub egraph: TensorGraph,
    /// The class of every original value.
    pub class_of: HashMap<ValueRef, Id>,
    /// The e-node each original value was added as (children as they were then; compare after
    /// canonicalizing with `find`).
    pub enode_of: HashMap<ValueRef, ENode>,
    /// The original values, in the topological order they were added.
    pub order: Vec<ValueRef>,
}

/// The key of an original value.
pub fn key(v: ValueRef) -> ValueKey {
    ValueKey { node: v.node.index() as u32, result: v.result }
}

/// Whether a leaf's value is known before any call (weights, buffers, constants), or a
/// non-leaf op is a pure function of its operands (not a random number generator).
fn weight_or_pure(op: &Op) -> bool {
    match op {
        Op::Input { kind, .. } => *kind != InputKind::UserInput,
        Op::Constant { .. } | Op::Full { .. } | Op::Arange { .. } => true,
        Op::RngBitGenerator { .. } | Op::Unknown { .. } => false,
        _ => true,
    }
}

/// Whether a leaf's value is in the graph (a constant node, as frozen weights are), or a
/// non-leaf op is pure.
fn constant_or_pure(op: &Op) -> bool {
    match op {
        Op::Input { .. } => false,
        Op::Constant { .. } | Op::Full { .. } | Op::Arange { .. } => true,
        _ => weight_or_pure(op),
    }
}

/// Whether inference gives `id` the type it has. Only then may the e-graph model it: the
/// analysis types structured nodes by inference, and the rebuilt node must keep its type.
fn infers_as_declared(graph: &Graph, id: fxhlo_ir::NodeId) -> bool {
    let operands = graph.operands(id);
    let types: Option<Vec<_>> = operands.iter().map(|v| graph.value_type(*v)).collect();
    let Some(types) = types else { return false };
    matches!(fxhlo_ir::infer::infer(&graph.node(id).op, &types), Ok(Some(r)) if r[..] == graph.node(id).results[..])
}

/// Builds the e-graph of `graph`'s top level; errors only on an invalid graph (a cycle).
pub fn to_egraph(graph: &Graph) -> fxhlo_ir::Result<Converted> {
    let mut egraph = TensorGraph::new(TensorAnalysis::default());
    let mut class_of: HashMap<ValueRef, Id> = HashMap::new();
    let mut enode_of = HashMap::new();
    let mut order = Vec::new();
    for id in graph.topo_order()? {
        let node = graph.node(id);
        let operands: Vec<Id> = graph.operands(id).iter().filter_map(|v| class_of.get(v).copied()).collect();
        if operands.len() != graph.operands(id).len() {
            // An operand outside the top level would be a verifier error; leave it alone.
            continue;
        }
        let shaped = match structured(&node.op) {
            Some((kind, attr)) if node.results.len() == 1 && infers_as_declared(graph, id) => {
                let mut children = Vec::with_capacity(operands.len() + 1);
                if let Some(a) = attr {
                    children.push(egraph.add(ENode::Ints(a)));
                }
                children.extend(&operands);
                kind.enode(&children)
            }
            _ => None,
        };
        for (r, ty) in node.results.iter().enumerate() {
            let v = ValueRef { node: id, result: r as u32 };
            let enode = match &shaped {
                Some(e) => e.clone(),
                None => {
                    let info = OrigInfo { ty: ty.clone(), weight_or_pure: weight_or_pure(&node.op), constant_or_pure: constant_or_pure(&node.op), op: node.op.clone() };
                    egraph.analysis.values.insert(key(v), info);
                    ENode::Orig(key(v), operands.clone())
                }
            };
            let class = egraph.add(enode.clone());
            class_of.insert(v, class);
            enode_of.insert(v, enode);
            order.push(v);
        }
    }
    egraph.rebuild();
    Ok(Converted { egraph, class_of, enode_of, order })
}

//! Cost model and a DAG-aware greedy extractor.
//!
//! The cost of a node is a rough time proxy in one unit: FLOPs for matrix products (2·m·k·n
//! per product), bytes written for other ops, and near zero for `permute` and `view` (XLA
//! folds most of them into their users' layouts, so layout is chosen by what it enables).
//! Leaves (inputs, constants) cost nothing.
//!
//! The extractor is TENSAT's lesson: a greedy tree extractor counts a shared subgraph once per
//! user and picks worse graphs. Here each class's candidate cost is the sum over the *set* of
//! classes its chosen sub-DAG reaches (a shared class once), computed bottom-up to a fixpoint
//! (extraction-gym's "faster greedy DAG"). A node whose children's sub-DAGs already contain
//! its own class would close a cycle and is skipped.

use std::collections::{BTreeMap, HashMap};

use egg::{Id, Language};
use fxhlo_ir::{Graph, Op, TensorType, ValueRef};

use super::convert::Converted;

use super::analysis::{Data, TensorGraph};
use super::lang::ENode;

/// The cost of `permute` and `view`: not zero, so that of two equal graphs the one with fewer
/// layout ops wins.
const LAYOUT_COST: f64 = 1.0;

/// The cost of one op with these operand types and result types, in the unit above.
pub fn op_cost(op: &Op, operands: &[&TensorType], results: &[TensorType]) -> f64 {
    let bytes = || results.iter().map(|t| t.checked_size_bytes().unwrap_or(usize::MAX) as f64).sum::<f64>();
    match op {
        Op::Input { .. } | Op::Constant { .. } => 0.0,
        Op::Permute { .. } | Op::View { .. } => LAYOUT_COST,
        Op::Mm | Op::Bmm | Op::Addmm => {
            // The contracted size is the left factor's last dim; FLOPs = 2·(result elements)·k.
            let a = if matches!(op, Op::Addmm) { operands.get(1) } else { operands.first() };
            let k = a.and_then(|t| t.shape.last().copied()).unwrap_or(1).max(1) as f64;
            let out = results.first().and_then(|t| t.checked_num_elements()).unwrap_or(usize::MAX) as f64;
            2.0 * out * k + if matches!(op, Op::Addmm) { bytes() } else { 0.0 }
        }
        _ => bytes(),
    }
}

/// The cost of the original graph measured as the extractor measures a choice: each class an
/// output reads, once, at the cost of the e-node its original value was added as (so the
/// guard compares like with like: results nothing reads, such as unused indices, count in
/// neither).
pub fn original_cost(graph: &Graph, conv: &Converted) -> f64 {
    let eg = &conv.egraph;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0.0;
    let mut stack: Vec<ValueRef> = graph.outputs().to_vec();
    while let Some(v) = stack.pop() {
        let (Some(&class), Some(node)) = (conv.class_of.get(&v), conv.enode_of.get(&v)) else { continue };
        if seen.insert(eg.find(class)) {
            total += enode_cost(eg, eg.find(class), node).unwrap_or(0.0);
            stack.extend(graph.operands(v.node));
        }
    }
    total
}

/// The cost of one e-node in `egraph`; `None` for a node that must not be extracted (its
/// class's data is invalid, or an operand is not a tensor).
fn enode_cost(egraph: &TensorGraph, class: Id, node: &ENode) -> Option<f64> {
    let ty = |id: Id| egraph[id].data.ty();
    match node {
        ENode::Ints(_) => Some(0.0),
        ENode::Orig(key, children) => {
            let info = egraph.analysis.values.get(key)?;
            // Leaves cost nothing; other ops their bytes (they are the same in every choice).
            Some(if children.is_empty() { 0.0 } else { info.ty.checked_size_bytes().unwrap_or(usize::MAX) as f64 })
        }
        _ => {
            let out = ty(class)?.clone();
            let attr = super::lang::attr_child(node).and_then(|a| egraph[a].data.ints());
            let (op, operands) = super::lang::to_op(node, attr)?;
            let types: Option<Vec<&TensorType>> = operands.iter().map(|&o| ty(o)).collect();
            Some(op_cost(&op, &types?, &[out]))
        }
    }
}

/// A class's best known choice: the node and the cost of every class its sub-DAG reaches.
struct Choice {
    node: ENode,
    total: f64,
    reaches: BTreeMap<Id, f64>,
}

/// The extraction: a chosen e-node per class reachable from the roots, and its cost.
pub struct Extraction {
    pub choice: HashMap<Id, ENode>,
    /// The cost of the chosen DAG under the roots, each class counted once.
    pub cost: f64,
}

/// Extracts a DAG for `roots` (canonical ids); `None` if some root has no acyclic choice.
pub fn extract(egraph: &TensorGraph, roots: &[Id]) -> Option<Extraction> {
    let mut best: HashMap<Id, Choice> = HashMap::new();
    let classes: Vec<Id> = {
        let mut c: Vec<Id> = egraph.classes().map(|c| c.id).collect();
        c.sort();
        c
    };
    loop {
        let mut changed = false;
        for &class in &classes {
            if matches!(egraph[class].data, Data::Invalid(_)) {
                continue;
            }
            for node in egraph[class].nodes.iter() {
                let children: Vec<Id> = node.children().iter().map(|&c| egraph.find(c)).collect();
                if children.iter().any(|c| !best.contains_key(c)) {
                    continue;
                }
                let Some(own) = enode_cost(egraph, class, node) else { continue };
                let mut reaches = BTreeMap::new();
                for c in &children {
                    // A child's set holds its own class too: shared classes land once.
                    reaches.extend(best[c].reaches.iter().map(|(k, v)| (*k, *v)));
                }
                if reaches.contains_key(&class) {
                    continue; // a cycle through this class
                }
                reaches.insert(class, own);
                let total: f64 = reaches.values().sum();
                let better = best.get(&class).is_none_or(|b| total < b.total * (1.0 - 1e-9) - 1e-9);
                if better {
                    best.insert(class, Choice { node: node.clone().map_children(|c| egraph.find(c)), total, reaches });
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut total = BTreeMap::new();
    for r in roots {
        let choice = best.get(&egraph.find(*r))?;
        total.extend(choice.reaches.iter().map(|(k, v)| (*k, *v)));
    }
    Some(Extraction { choice: best.into_iter().map(|(k, v)| (k, v.node)).collect(), cost: total.values().sum() })
}

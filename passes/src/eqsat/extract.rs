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

use std::collections::HashMap;

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

/// A class's best known choice: the node, its own cost, and the set of classes its sub-DAG
/// reaches (its own included) as a bitset over the classes' dense indices.
struct Choice {
    node: ENode,
    own: f64,
    reaches: Vec<u64>,
    total: f64,
}

/// The extraction: a chosen e-node per class reachable from the roots, and its cost.
pub struct Extraction {
    pub choice: HashMap<Id, ENode>,
    /// The cost of the chosen DAG under the roots, each class counted once.
    pub cost: f64,
}

/// The sum of the chosen own costs of the classes in `set`.
fn set_cost(set: &[u64], best: &[Option<Choice>]) -> f64 {
    let mut total = 0.0;
    for (w, &word) in set.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            total += best[i].as_ref().map_or(0.0, |c| c.own);
            bits &= bits - 1;
        }
    }
    total
}

/// Extracts a DAG for `roots` (canonical ids); `None` if some root has no acyclic choice.
///
/// A worklist over the classes: a class is evaluated again only when a child's choice
/// changed. The reached sets are bitsets (one bit per class), so a union is a few hundred
/// word ORs even on graphs of ten thousand classes; a set's cost is summed from the classes'
/// current own costs.
pub fn extract(egraph: &TensorGraph, roots: &[Id]) -> Option<Extraction> {
    let classes: Vec<Id> = {
        let mut c: Vec<Id> = egraph.classes().map(|c| c.id).collect();
        c.sort();
        c
    };
    let index: HashMap<Id, usize> = classes.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let words = classes.len().div_ceil(64);
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); classes.len()];
    for (i, &class) in classes.iter().enumerate() {
        for node in egraph[class].nodes.iter() {
            for &c in node.children() {
                let p = &mut parents[index[&egraph.find(c)]];
                if p.last() != Some(&i) {
                    p.push(i);
                }
            }
        }
    }
    let mut best: Vec<Option<Choice>> = (0..classes.len()).map(|_| None).collect();
    // Ids grow as nodes are added, so children mostly come before their users: one pass in id
    // order settles most classes.
    let mut queue: std::collections::VecDeque<usize> = (0..classes.len()).collect();
    let mut queued = vec![true; classes.len()];
    while let Some(i) = queue.pop_front() {
        queued[i] = false;
        let class = classes[i];
        if matches!(egraph[class].data, Data::Invalid(_)) {
            continue;
        }
        let mut improved = false;
        for node in egraph[class].nodes.iter() {
            let children: Vec<usize> = node.children().iter().map(|&c| index[&egraph.find(c)]).collect();
            if children.iter().any(|&c| best[c].is_none()) {
                continue;
            }
            let Some(own) = enode_cost(egraph, class, node) else { continue };
            let mut reaches = vec![0u64; words];
            for &c in &children {
                // A child's set holds its own class too: shared classes land once.
                for (r, w) in reaches.iter_mut().zip(&best[c].as_ref()?.reaches) {
                    *r |= w;
                }
            }
            if reaches[i / 64] & (1 << (i % 64)) != 0 {
                continue; // a cycle through this class
            }
            reaches[i / 64] |= 1 << (i % 64);
            // This class counts at the candidate's own cost, not at its current choice's.
            let total = set_cost(&reaches, &best) - best[i].as_ref().map_or(0.0, |c| c.own) + own;
            let better = best[i].as_ref().is_none_or(|b| total < b.total * (1.0 - 1e-9) - 1e-9);
            if better {
                best[i] = Some(Choice { node: node.clone().map_children(|c| egraph.find(c)), own, reaches, total });
                improved = true;
            }
        }
        if improved {
            for &p in &parents[i] {
                if !queued[p] {
                    queued[p] = true;
                    queue.push_back(p);
                }
            }
        }
    }
    // The cost of what is extracted: the DAG the final choices form under the roots, walked
    // again (a set computed before a descendant's choice changed may be stale), each class
    // once; a cycle among the final choices means no extraction.
    let mut state = vec![0u8; classes.len()]; // 0 unseen, 1 on the path, 2 done
    let mut cost = 0.0;
    for r in roots {
        let root = *index.get(&egraph.find(*r))?;
        let mut stack = vec![(root, false)];
        while let Some((i, leaving)) = stack.pop() {
            if leaving {
                state[i] = 2;
                continue;
            }
            match state[i] {
                2 => continue,
                1 => return None,
                _ => {}
            }
            let choice = best[i].as_ref()?;
            state[i] = 1;
            cost += choice.own;
            stack.push((i, true));
            for &c in choice.node.children() {
                let c = index[&egraph.find(c)];
                match state[c] {
                    1 => return None,
                    0 => stack.push((c, false)),
                    _ => {}
                }
            }
        }
    }
    let choice = classes.iter().zip(best).filter_map(|(&c, b)| Some((c, b?.node))).collect();
    Some(Extraction { choice, cost })
}

//! A DAG-aware greedy extractor under the cost model of `cost` (a roofline per target).
//!
//! The extractor is TENSAT's lesson: a greedy tree extractor counts a shared subgraph once per
//! user and picks worse graphs. Here each class's candidate cost is the sum over the *set* of
//! classes its chosen sub-DAG reaches (a shared class once), computed bottom-up to a fixpoint
//! (extraction-gym's "faster greedy DAG"). A node whose children's sub-DAGs already contain
//! its own class would close a cycle and is skipped.

use std::collections::HashMap;

use egg::{Id, Language};
use fxhlo_ir::{Graph, Op, TensorType, ValueRef};

use super::cost::{bytes, op_cost, Roofline};

use super::convert::Converted;

use super::analysis::{Data, TensorGraph};
use super::lang::ENode;

/// The cost of the original graph measured as the extractor measures a choice: each class an
/// output reads, once, at the cost of the e-node its original value was added as (so the
/// guard compares like with like: results nothing reads, such as unused indices, count in
/// neither).
pub fn original_cost(graph: &Graph, conv: &Converted, target: &Roofline) -> f64 {
    let eg = &conv.egraph;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0.0;
    let mut stack: Vec<ValueRef> = graph.outputs().to_vec();
    while let Some(v) = stack.pop() {
        let (Some(&class), Some(node)) = (conv.class_of.get(&v), conv.enode_of.get(&v)) else { continue };
        if seen.insert(eg.find(class)) {
            total += enode_cost(eg, eg.find(class), node, target).unwrap_or(0.0);
            stack.extend(graph.operands(v.node));
        }
    }
    total
}

/// The cost of one e-node in `egraph` on `target` (seconds); `None` for a node that must not be
/// extracted (its class's data is invalid, or an operand is not a tensor). A value that reads
/// only constants is computed at compile time and costs nothing, except a matrix product or
/// a convolution (XLA's constant folding evaluates it element by element: a slow compile, not
/// a free op).
fn enode_cost(egraph: &TensorGraph, class: Id, node: &ENode, target: &Roofline) -> Option<f64> {
    let ty = |id: Id| egraph[id].data.ty();
    let consts_only = matches!(egraph[class].data, Data::Tensor { consts_only: true, .. });
    match node {
        ENode::Ints(_) => Some(0.0),
        ENode::Orig(key, children) => {
            let info = egraph.analysis.values.get(key)?;
            // Leaves cost nothing; other ops their writes (they are the same in every choice).
            let free = children.is_empty() || consts_only;
            Some(if free { 0.0 } else { target.seconds(0.0, bytes(&[&info.ty])) })
        }
        _ => {
            let out = ty(class)?;
            let (op, operands) = super::analysis::node_op(egraph, node)?;
            let types: Option<Vec<&TensorType>> = operands.iter().map(|&o| ty(o)).collect();
            let types = types?;
            if consts_only && !matches!(op, Op::Mm | Op::Bmm | Op::Addmm | Op::Convolution { .. }) {
                return Some(0.0);
            }
            Some(op_cost(&op, &types, &[out], target))
        }
    }
}

/// One candidate node of a class for [`dag_greedy`]: its own cost and its children's classes
/// (indices into the class list).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub cost: f64,
    pub children: Vec<usize>,
}

/// A class's best known choice: the candidate's index, its own cost, and the set of classes its
/// sub-DAG reaches (its own included) as a bitset over the class indices.
struct Choice {
    node: usize,
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

/// The DAG-aware greedy extraction over any e-graph given as candidates per class: the
/// chosen candidate per class (`None` for a class with no acyclic choice) and the cost of the
/// DAG those choices form under `roots` (each class once), or `None` when a root has no
/// acyclic choice; where the bottom-up tree extraction scores better as a DAG (or the greedy
/// choices close a cycle), that one. Language-independent, so it runs on fxhlo's e-graphs and
/// on the published ones of extraction-gym alike (`passes/examples/extraction_gym.rs`).
///
/// A worklist over the classes: a class is evaluated again only when a child's choice
/// changed. The reached sets are bitsets (one bit per class), so a union is a few hundred
/// word ORs even on graphs of ten thousand classes; a set's cost is summed from the classes'
/// current own costs.
pub fn dag_greedy(classes: &[Vec<Candidate>], roots: &[usize]) -> (Vec<Option<usize>>, Option<f64>) {
    let n = classes.len();
    let words = n.div_ceil(64);
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, candidates) in classes.iter().enumerate() {
        for c in candidates.iter().flat_map(|c| &c.children) {
            if parents[*c].last() != Some(&i) {
                parents[*c].push(i);
            }
        }
    }
    let mut best: Vec<Option<Choice>> = (0..n).map(|_| None).collect();
    // Children mostly come before their users in id order: one pass settles most classes.
    let mut queue: std::collections::VecDeque<usize> = (0..n).collect();
    let mut queued = vec![true; n];
    while let Some(i) = queue.pop_front() {
        queued[i] = false;
        let mut improved = false;
        for (k, cand) in classes[i].iter().enumerate() {
            let mut reaches = vec![0u64; words];
            let mut ready = true;
            for &c in &cand.children {
                let Some(child) = &best[c] else {
                    ready = false;
                    break;
                };
                // A child's set holds its own class too: shared classes land once.
                for (r, w) in reaches.iter_mut().zip(&child.reaches) {
                    *r |= w;
                }
            }
            if !ready || reaches[i / 64] & (1 << (i % 64)) != 0 {
                continue; // a child without a choice yet, or a cycle through this class
            }
            reaches[i / 64] |= 1 << (i % 64);
            // This class counts at the candidate's own cost, not at its current choice's.
            let total = set_cost(&reaches, &best) - best[i].as_ref().map_or(0.0, |c| c.own) + cand.cost;
            if best[i].as_ref().is_none_or(|b| total < b.total * (1.0 - 1e-9) - 1e-9) {
                best[i] = Some(Choice { node: k, own: cand.cost, reaches, total });
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
    let greedy: Vec<Option<usize>> = best.iter().map(|b| b.as_ref().map(|c| c.node)).collect();
    // A class keeps a choice made before a descendant changed, so the final choices can close
    // a cycle (extraction-gym's VGG e-graph does) or cost more than their sets said. The
    // bottom-up tree extraction never closes a cycle: the better of the two, scored as DAGs.
    let tree = tree_bottom_up(classes);
    let (mut choice, cost) = match (dag_cost(classes, &greedy, roots), dag_cost(classes, &tree, roots)) {
        (Some(g), Some(t)) if t < g => (tree, t),
        (None, Some(t)) => (tree, t),
        (Some(g), _) => (greedy, g),
        (None, None) => return (greedy, None),
    };
    let cost = share(classes, &mut choice, roots, cost);
    (choice, Some(cost))
}

/// What a per-class choice cannot see: a class several classes could read at once, whose cost
/// no single one of them would pay alone (two products merged into one, each reading its
/// slice of the result; TENSAT's ResNet-50 convolutions that share an input). For each class
/// read by candidates of two or more classes, the candidates through it are taken in all
/// those classes together, and kept when the whole DAG is cheaper; a few rounds. Returns the
/// cost of the final choice (never more than `cost`).
fn share(classes: &[Vec<Candidate>], choice: &mut [Option<usize>], roots: &[usize], mut cost: f64) -> f64 {
    const ROUNDS: usize = 3;
    // Per class, the (class, candidate) pairs whose candidate reads it.
    let mut via: Vec<Vec<(usize, usize)>> = vec![Vec::new(); classes.len()];
    for (p, candidates) in classes.iter().enumerate() {
        for (k, cand) in candidates.iter().enumerate() {
            for &c in &cand.children {
                via[c].push((p, k));
            }
        }
    }
    for _ in 0..ROUNDS {
        let mut improved = false;
        for readers in &via {
            let mut switch: Vec<(usize, usize)> = Vec::new();
            for &(p, k) in readers {
                match switch.iter_mut().find(|(q, _)| *q == p) {
                    Some(entry) if classes[p][k].cost < classes[p][entry.1].cost => entry.1 = k,
                    Some(_) => {}
                    None => switch.push((p, k)),
                }
            }
            if switch.len() < 2 || switch.iter().all(|&(p, k)| choice[p] == Some(k)) {
                continue;
            }
            let old: Vec<Option<usize>> = switch.iter().map(|&(p, _)| choice[p]).collect();
            for &(p, k) in &switch {
                choice[p] = Some(k);
            }
            match dag_cost(classes, choice, roots) {
                Some(c) if c < cost * (1.0 - 1e-9) => {
                    cost = c;
                    improved = true;
                }
                _ => {
                    for (&(p, _), o) in switch.iter().zip(old) {
                        choice[p] = o;
                    }
                }
            }
        }
        if !improved {
            break;
        }
    }
    cost
}

/// Bottom-up tree extraction (egg's default): each class's cheapest candidate counting its
/// children's costs once per use, to a fixpoint. Strictly cheaper updates only, so a cycle is
/// never chosen.
pub fn tree_bottom_up(classes: &[Vec<Candidate>]) -> Vec<Option<usize>> {
    let mut cost = vec![f64::INFINITY; classes.len()];
    let mut choice = vec![None; classes.len()];
    loop {
        let mut changed = false;
        for (i, candidates) in classes.iter().enumerate() {
            for (k, c) in candidates.iter().enumerate() {
                let total = c.cost + c.children.iter().map(|&ch| cost[ch]).sum::<f64>();
                if total < cost[i] {
                    (cost[i], choice[i]) = (total, Some(k));
                    changed = true;
                }
            }
        }
        if !changed {
            return choice;
        }
    }
}

/// The cost of the DAG `choice` forms under `roots`, each class once; `None` when a root (or a
/// class it reaches) has no choice, or the choices form a cycle.
pub fn dag_cost(classes: &[Vec<Candidate>], choice: &[Option<usize>], roots: &[usize]) -> Option<f64> {
    let mut state = vec![0u8; classes.len()]; // 0 unseen, 1 on the path, 2 done
    let mut cost = 0.0;
    for &root in roots {
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
            let cand = &classes[i][choice[i]?];
            state[i] = 1;
            cost += cand.cost;
            stack.push((i, true));
            for &c in &cand.children {
                match state[c] {
                    1 => return None,
                    0 => stack.push((c, false)),
                    _ => {}
                }
            }
        }
    }
    Some(cost)
}

/// Extracts a DAG for `roots` (canonical ids) from fxhlo's e-graph with [`dag_greedy`]; `None`
/// if some root has no acyclic choice. Nodes the cost model refuses ([`enode_cost`] `None`)
/// and classes of invalid data are not candidates.
pub fn extract(egraph: &TensorGraph, roots: &[Id], target: &Roofline) -> Option<Extraction> {
    let ids: Vec<Id> = {
        let mut c: Vec<Id> = egraph.classes().map(|c| c.id).collect();
        c.sort();
        c
    };
    let index: HashMap<Id, usize> = ids.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    // Per class, the e-nodes that are candidates and their candidates, in the same order.
    let (nodes, classes): (Vec<Vec<&ENode>>, Vec<Vec<Candidate>>) = ids
        .iter()
        .map(|&class| {
            if matches!(egraph[class].data, Data::Invalid(_)) {
                return (Vec::new(), Vec::new());
            }
            egraph[class]
                .nodes
                .iter()
                .filter_map(|node| {
                    let cost = enode_cost(egraph, class, node, target)?;
                    let children = node.children().iter().map(|&c| index[&egraph.find(c)]).collect();
                    Some((node, Candidate { cost, children }))
                })
                .unzip()
        })
        .unzip();
    let roots: Vec<usize> = roots.iter().map(|r| index.get(&egraph.find(*r)).copied()).collect::<Option<_>>()?;
    let (choice, cost) = dag_greedy(&classes, &roots);
    let choice = ids
        .iter()
        .zip(&choice)
        .enumerate()
        .filter_map(|(i, (&id, k))| Some((id, nodes[i][(*k)?].clone().map_children(|c| egraph.find(c)))))
        .collect();
    Some(Extraction { choice, cost: cost? })
}

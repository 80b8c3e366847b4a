//! E-graph → IR: applies an extraction to the original graph, keeping every original node
//! whose chosen e-node is its own (with operands that stayed the same) and adding a node only
//! for an e-node no original value had.
//!
//! Working from the original values rather than from the classes keeps the graph exactly as
//! it was when extraction chose nothing new (duplicates stay duplicates, names and source
//! lines stay), so a run that finds nothing reports no change. Nodes the rewritten outputs no
//! longer read are removed; dead code that was there before is `dce`'s business, not ours.

use std::collections::{HashMap, HashSet};

use egg::{Id, Language};
use fxhlo_ir::{Graph, NodeId, Op, SourceLoc, ValueRef};

use super::convert::Converted;
use super::extract::Extraction;
use super::analysis::node_op;
use super::lang::{attr_child, ENode};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Task {
    Value(ValueRef),
    Class(Id),
}

/// Rewrites `graph` to the extraction; whether anything changed. An error means the
/// extraction could not be applied (a cycle, a missing choice): the caller keeps the graph,
/// which is untouched when the error comes before the first edit.
pub fn apply(graph: &mut Graph, conv: &Converted, ex: &Extraction) -> Result<bool, String> {
    let eg = &conv.egraph;
    let canon = |n: &ENode| n.clone().map_children(|c| eg.find(c));
    let mut original_of: HashMap<ENode, ValueRef> = HashMap::new();
    let mut first_in_class: HashMap<Id, ValueRef> = HashMap::new();
    for v in &conv.order {
        original_of.entry(canon(&conv.enode_of[v])).or_insert(*v);
        first_in_class.entry(eg.find(conv.class_of[v])).or_insert(*v);
    }
    let chosen = |c: Id| ex.choice.get(&eg.find(c)).ok_or_else(|| format!("no choice for class {c}"));
    let own_chosen = |v: ValueRef| -> Result<bool, String> { Ok(*chosen(conv.class_of[&v])? == canon(&conv.enode_of[&v])) };

    // Plan first (no edits), so that an error leaves the graph as it was.
    let mut plan: Vec<Task> = Vec::new();
    let mut state: HashMap<Task, bool> = HashMap::new(); // false: on the stack, true: done
    let mut stack: Vec<(Task, bool)> = graph.outputs().iter().map(|v| (Task::Value(*v), false)).collect();
    while let Some((task, expanded)) = stack.pop() {
        if expanded {
            state.insert(task, true);
            plan.push(task);
            continue;
        }
        match state.get(&task) {
            Some(true) => continue,
            Some(false) => return Err("the extraction has a cycle".to_string()),
            None => {}
        }
        state.insert(task, false);
        stack.push((task, true));
        let deps: Vec<Task> = match task {
            Task::Value(v) if !conv.class_of.contains_key(&v) => Vec::new(),
            Task::Value(v) if own_chosen(v)? => graph.operands(v.node).into_iter().map(Task::Value).collect(),
            Task::Value(v) => vec![Task::Class(eg.find(conv.class_of[&v]))],
            Task::Class(c) => {
                let node = chosen(c)?;
                match original_of.get(node) {
                    Some(v) => vec![Task::Value(*v)],
                    None => {
                        let attr = attr_child(node);
                        node.children().iter().filter(|&&ch| Some(ch) != attr).map(|&ch| Task::Class(eg.find(ch))).collect()
                    }
                }
            }
        };
        for d in deps {
            match state.get(&d) {
                Some(true) => {}
                Some(false) => return Err("the extraction has a cycle".to_string()),
                None => stack.push((d, false)),
            }
        }
    }

    // Then edit, in dependency order.
    let live_before = live_nodes(graph);
    let mut names: HashSet<String> = graph.node_ids().map(|id| graph.node(id).name.to_string()).collect();
    let mut value: HashMap<Task, ValueRef> = HashMap::new();
    let mut copies: HashMap<NodeId, NodeId> = HashMap::new();
    let mut added = 0usize;
    let fail = |e: fxhlo_ir::Error| e.to_string();
    for task in plan {
        let got = match task {
            Task::Value(v) if !conv.class_of.contains_key(&v) => v,
            Task::Value(v) if own_chosen(v)? => {
                let old = graph.operands(v.node);
                let new: Vec<ValueRef> = old.iter().map(|o| value[&Task::Value(*o)]).collect();
                if new == old {
                    v
                } else {
                    let copy = match copies.get(&v.node) {
                        Some(c) => *c,
                        None => {
                            let n = graph.node(v.node).clone();
                            let name = fresh(&mut names, n.name.as_ref());
                            let c = graph.add_node(name, n.op, &new, n.results, n.source).map_err(fail)?;
                            copies.insert(v.node, c);
                            c
                        }
                    };
                    ValueRef { node: copy, result: v.result }
                }
            }
            Task::Value(v) => value[&Task::Class(eg.find(conv.class_of[&v]))],
            Task::Class(c) => {
                let node = chosen(c)?;
                if let Some(v) = original_of.get(node) {
                    value[&Task::Value(*v)]
                } else {
                    let ty = eg[c].data.ty().ok_or("an extracted class without a type")?.clone();
                    let (mut op, operands) = node_op(eg, node).ok_or("an extracted node the IR cannot express")?;
                    if let Op::View { shape } = &mut op {
                        // The class's shape has no `-1` left to resolve.
                        *shape = ty.shape.clone();
                    }
                    let operands: Vec<ValueRef> = operands.iter().map(|o| value[&Task::Class(eg.find(*o))]).collect();
                    let (base, source): (String, Option<SourceLoc>) = match first_in_class.get(&c) {
                        Some(v) => (graph.node(v.node).name.to_string(), graph.node(v.node).source.clone()),
                        None => (String::new(), None),
                    };
                    let name = fresh(&mut names, &base);
                    added += 1;
                    ValueRef::first(graph.add_node(name, op, &operands, vec![ty], source).map_err(fail)?)
                }
            }
        };
        value.insert(task, got);
    }
    let outputs: Vec<ValueRef> = graph.outputs().iter().map(|v| value[&Task::Value(*v)]).collect();
    if added == 0 && copies.is_empty() && outputs == graph.outputs() {
        return Ok(false);
    }
    graph.set_outputs(outputs).map_err(fail)?;
    for id in graph.topo_order().map_err(fail)?.into_iter().rev() {
        if live_before.contains(&id) && !matches!(graph.node(id).op, Op::Input { .. }) && !graph.has_uses(id) {
            graph.remove_node(id).map_err(fail)?;
        }
    }
    Ok(true)
}

/// The nodes an output reads, directly or not.
fn live_nodes(graph: &Graph) -> HashSet<NodeId> {
    let mut live = HashSet::new();
    let mut stack: Vec<NodeId> = graph.outputs().iter().map(|v| v.node).collect();
    while let Some(id) = stack.pop() {
        if live.insert(id) {
            stack.extend(graph.operands(id).iter().map(|v| v.node));
        }
    }
    live
}

/// `<base>.eqsat.<n>` (`eqsat.<n>` without a base), the first `n` not taken.
fn fresh(names: &mut HashSet<String>, base: &str) -> String {
    let mut n = 1;
    loop {
        let name = if base.is_empty() { format!("eqsat.{n}") } else { format!("{base}.eqsat.{n}") };
        if names.insert(name.clone()) {
            return name;
        }
        n += 1;
    }
}

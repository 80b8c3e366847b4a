//! The graph: nodes (one op each, one or more typed results) on a petgraph `StableDiGraph`,
//! edges from producer to consumer carrying which result feeds which operand.

use std::collections::BTreeSet;
use std::sync::Arc;

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeRef, NodeIndexable};
use petgraph::Direction;

use crate::name::Name;
use crate::op::{InputKind, Op};
use crate::data::TensorData;
use crate::types::TensorType;
use crate::{Error, Result};

/// The result types of a node: inline for one result (almost every node), on the heap for
/// more. Derefs to `[TensorType]`; build one from a `Vec` or with `smallvec![...]`.
pub type Results = smallvec::SmallVec<[TensorType; 1]>;

/// Identifies a node of one [`Graph`]. Stable across removals of other nodes.
pub type NodeId = NodeIndex<u32>;

/// One result of one node: the SSA value the text format prints as `%name` or `%name#1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueRef {
    pub node: NodeId,
    pub result: u32,
}

impl ValueRef {
    /// The first (often only) result of `node`.
    pub fn first(node: NodeId) -> Self {
        ValueRef { node, result: 0 }
    }
}

/// Where a node came from in the user's model (FX `stack_trace`), for errors and MLIR locations.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLoc {
    /// Shared by every node from the same file (an importer makes one per file), so a location
    /// costs no allocation per node. `Arc::from("model.py")` makes one.
    pub file: Arc<str>,
    pub line: u32,
}

/// A node: its FX name (unique in the graph), op, result types and source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Inline up to 22 bytes (see [`Name`]).
    pub name: Name,
    pub op: Op,
    /// At least one (the verifier checks); inline for a single result (see [`Results`]).
    pub results: Results,
    pub source: Option<SourceLoc>,
}

/// An edge: result `result` of the source node is operand `operand` of the target node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Use {
    pub operand: u32,
    pub result: u32,
}

/// A typed dataflow graph: ordered inputs, nodes, ordered outputs, and the regions its
/// control-flow nodes run (each a graph of its own whose inputs are the region's arguments).
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// The graph's name (the model's, from the trace; `region<N>` for a region).
    pub name: String,
    g: StableDiGraph<Node, Use, u32>,
    inputs: Vec<NodeId>,
    outputs: Vec<ValueRef>,
    regions: Vec<Graph>,
    /// Inputs whose values are known when compiling (frozen weights): the `freeze` pass turns
    /// each into an [`Op::Constant`].
    values: std::collections::BTreeMap<NodeId, TensorData>,
}

impl Graph {
    /// An empty graph.
    pub fn new(name: impl Into<String>) -> Self {
        Graph { name: name.into(), ..Default::default() }
    }

    /// An empty graph with room for `nodes` nodes and `edges` edges (an importer knows them
    /// roughly in advance).
    pub fn with_capacity(name: impl Into<String>, nodes: usize, edges: usize) -> Self {
        Graph { name: name.into(), g: StableDiGraph::with_capacity(nodes, edges), ..Default::default() }
    }

    /// Appends a graph input. Inputs are passed to the compiled executable in this order.
    pub fn add_input(
        &mut self,
        name: impl Into<Name>,
        kind: InputKind,
        weight: Option<String>,
        ty: TensorType,
        source: Option<SourceLoc>,
    ) -> NodeId {
        let node = Node { name: name.into(), op: Op::Input { kind, weight, layout: None }, results: smallvec::smallvec![ty], source };
        let id = self.g.add_node(node);
        self.inputs.push(id);
        id
    }

    /// Adds a node whose operands are existing values. Types are not checked here: the
    /// verifier and [`crate::infer`] do that.
    pub fn add_node(
        &mut self,
        name: impl Into<Name>,
        op: Op,
        operands: &[ValueRef],
        results: impl Into<Results>,
        source: Option<SourceLoc>,
    ) -> Result<NodeId> {
        let (name, results) = (name.into(), results.into());
        for v in operands {
            self.check_value(*v).map_err(|_| Error::DanglingOperand { node: name.to_string() })?;
        }
        let id = self.g.add_node(Node { name, op, results, source });
        for (i, v) in operands.iter().enumerate() {
            self.g.add_edge(v.node, id, Use { operand: i as u32, result: v.result });
        }
        Ok(id)
    }

    /// Sets the graph's outputs (the values returned, in order).
    pub fn set_outputs(&mut self, outputs: Vec<ValueRef>) -> Result<()> {
        for v in &outputs {
            self.check_value(*v).map_err(|_| Error::DanglingOutput)?;
        }
        self.outputs = outputs;
        Ok(())
    }

    fn check_value(&self, v: ValueRef) -> Result<()> {
        match self.g.node_weight(v.node) {
            Some(n) if (v.result as usize) < n.results.len() => Ok(()),
            _ => Err(Error::DanglingOutput),
        }
    }

    /// The node with this id. Panics only on an id from another graph (a bug in fxhlo).
    pub fn node(&self, id: NodeId) -> &Node {
        &self.g[id]
    }

    /// Mutable access to a node (passes rewrite ops and types in place).
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.g[id]
    }

    /// The type of a value, if it exists.
    pub fn value_type(&self, v: ValueRef) -> Option<&TensorType> {
        self.g.node_weight(v.node).and_then(|n| n.results.get(v.result as usize))
    }

    /// The operands of a node, in operand order.
    pub fn operands(&self, id: NodeId) -> Vec<ValueRef> {
        // Incoming edges come newest first; `add_node` adds them in operand order, so they
        // usually arrive as slots n-1, ..., 0 and reversing them is all the sorting needed.
        let mut out = Vec::new();
        // The slot the next edge must have: any for the first, none after slot 0.
        let mut want: Option<Option<u32>> = None;
        for e in self.g.edges_directed(id, Direction::Incoming) {
            let slot = e.weight().operand;
            if want.is_some_and(|w| w != Some(slot)) {
                return self.operands_sorted(id);
            }
            want = Some(slot.checked_sub(1));
            out.push(ValueRef { node: e.source(), result: e.weight().result });
        }
        if want.is_some_and(|w| w.is_some()) {
            return self.operands_sorted(id);
        }
        out.reverse();
        out
    }

    /// [`Graph::operands`] for edges in any order (a pass rewired them).
    fn operands_sorted(&self, id: NodeId) -> Vec<ValueRef> {
        let mut uses: Vec<(u32, ValueRef)> = self
            .g
            .edges_directed(id, Direction::Incoming)
            .map(|e| (e.weight().operand, ValueRef { node: e.source(), result: e.weight().result }))
            .collect();
        uses.sort_by_key(|(i, _)| *i);
        uses.into_iter().map(|(_, v)| v).collect()
    }

    /// The operand indices recorded on a node's incoming edges, sorted (the verifier checks
    /// that they are exactly `0..n`).
    pub fn operand_slots(&self, id: NodeId) -> Vec<u32> {
        let mut slots: Vec<u32> =
            self.g.edges_directed(id, Direction::Incoming).map(|e| e.weight().operand).collect();
        slots.sort_unstable();
        slots
    }

    /// The uses of `v`: each consumer node and the operand slot `v` fills there (a node that
    /// uses `v` twice appears twice). Graph outputs are not uses; see [`Graph::outputs`].
    pub fn users(&self, v: ValueRef) -> Vec<(NodeId, u32)> {
        let mut uses: Vec<(NodeId, u32)> = self
            .g
            .edges_directed(v.node, Direction::Outgoing)
            .filter(|e| e.weight().result == v.result)
            .map(|e| (e.target(), e.weight().operand))
            .collect();
        uses.sort_unstable();
        uses
    }

    /// Whether any node or graph output reads a result of `id`.
    pub fn has_uses(&self, id: NodeId) -> bool {
        self.g.edges_directed(id, Direction::Outgoing).next().is_some() || self.outputs.iter().any(|v| v.node == id)
    }

    /// Makes every use of `old` (operands and graph outputs) read `new` instead. `new` must
    /// exist and must not depend on a user of `old` (that would make a cycle, which the
    /// verifier reports).
    pub fn replace_all_uses(&mut self, old: ValueRef, new: ValueRef) -> Result<()> {
        self.replace_uses_where(old, new, |_| true)
    }

    /// [`Graph::replace_all_uses`] but for the uses by node `except`: inserts a node after
    /// `old` that reads it (`new` is computed from `old` by `except`), as MLIR's
    /// `replaceAllUsesExcept` does.
    pub fn replace_all_uses_except(&mut self, old: ValueRef, new: ValueRef, except: NodeId) -> Result<()> {
        self.replace_uses_where(old, new, |user| user != except)
    }

    /// Rewires the uses of `old` by the nodes for which `rewire` holds, and the graph outputs.
    fn replace_uses_where(&mut self, old: ValueRef, new: ValueRef, rewire: impl Fn(NodeId) -> bool) -> Result<()> {
        self.check_value(new)?;
        let edges: Vec<_> = self
            .g
            .edges_directed(old.node, Direction::Outgoing)
            .filter(|e| e.weight().result == old.result && rewire(e.target()))
            .map(|e| (e.id(), e.target(), e.weight().operand))
            .collect();
        for (edge, target, operand) in edges {
            self.g.remove_edge(edge);
            self.g.add_edge(new.node, target, Use { operand, result: new.result });
        }
        for out in self.outputs.iter_mut().filter(|v| **v == old) {
            *out = new;
        }
        Ok(())
    }

    /// Removes node `id`, which nothing may use any more (inputs are never removed: they are
    /// the executable's signature). Returns the removed node.
    pub fn remove_node(&mut self, id: NodeId) -> Result<Node> {
        let node = self.g.node_weight(id).ok_or(Error::DanglingOutput)?;
        if self.has_uses(id) || self.inputs.contains(&id) {
            return Err(Error::Verify { node: node.name.to_string(), message: "removed while still used (or an input)".into() });
        }
        self.g.remove_node(id).ok_or(Error::DanglingOutput)
    }

    /// Removes every operand edge of node `id` (a pass that turned it into an op without
    /// operands, such as a folded constant).
    pub fn disconnect_operands(&mut self, id: NodeId) {
        let edges: Vec<_> = self.g.edges_directed(id, Direction::Incoming).map(|e| e.id()).collect();
        for edge in edges {
            self.g.remove_edge(edge);
        }
    }

    /// Removes input `id`, which nothing may use any more, from the graph and its signature
    /// (the `freeze` pass, once the input's uses read a constant instead). Returns the node.
    pub fn remove_input(&mut self, id: NodeId) -> Result<Node> {
        let node = self.g.node_weight(id).ok_or(Error::DanglingOutput)?;
        if self.has_uses(id) || !self.inputs.contains(&id) {
            return Err(Error::Verify { node: node.name.to_string(), message: "removed as an input while still used (or not an input)".into() });
        }
        self.inputs.retain(|&i| i != id);
        self.values.remove(&id);
        self.g.remove_node(id).ok_or(Error::DanglingOutput)
    }

    /// Records that input `id` holds `data` in every run (a frozen weight): the `freeze` pass
    /// compiles it in as a constant. The bytes are checked against the input's type there.
    pub fn bind_input(&mut self, id: NodeId, data: TensorData) {
        self.values.insert(id, data);
    }

    /// The value bound to input `id` by [`Graph::bind_input`], if any.
    pub fn input_value(&self, id: NodeId) -> Option<&TensorData> {
        self.values.get(&id)
    }

    /// Adds a region (the branch of an `Op::Cond`, the condition or body of an `Op::While`)
    /// and returns its index, which the op names.
    pub fn add_region(&mut self, region: Graph) -> u32 {
        self.regions.push(region);
        (self.regions.len() - 1) as u32
    }

    /// The graph's regions, by index.
    pub fn regions(&self) -> &[Graph] {
        &self.regions
    }

    /// Mutable access to the regions (a pass that rewrites a region's nodes).
    pub fn regions_mut(&mut self) -> &mut [Graph] {
        &mut self.regions
    }

    /// Graph inputs, in calling order.
    pub fn inputs(&self) -> &[NodeId] {
        &self.inputs
    }

    /// Graph outputs, in order.
    pub fn outputs(&self) -> &[ValueRef] {
        &self.outputs
    }

    /// Number of nodes (inputs included).
    pub fn node_count(&self) -> usize {
        self.g.node_count()
    }

    /// All node ids in index order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.g.node_indices()
    }

    /// Nodes in a deterministic topological order (Kahn's algorithm, lowest id first), or an
    /// error naming a node on a cycle.
    pub fn topo_order(&self) -> Result<Vec<NodeId>> {
        let mut indegree: Vec<usize> = vec![0; self.g.node_bound()];
        for id in self.g.node_indices() {
            indegree[id.index()] = self.g.edges_directed(id, Direction::Incoming).count();
        }
        let mut ready: BTreeSet<NodeId> =
            self.g.node_indices().filter(|id| indegree[id.index()] == 0).collect();
        let mut order = Vec::with_capacity(self.g.node_count());
        while let Some(id) = ready.pop_first() {
            order.push(id);
            for e in self.g.edges_directed(id, Direction::Outgoing) {
                let t = e.target();
                indegree[t.index()] -= 1;
                if indegree[t.index()] == 0 {
                    ready.insert(t);
                }
            }
        }
        if order.len() != self.g.node_count() {
            let stuck = self
                .g
                .node_indices()
                .find(|id| indegree[id.index()] > 0)
                .map(|id| self.g[id].name.to_string())
                .unwrap_or_default();
            return Err(Error::Cycle { node: stuck });
        }
        Ok(order)
    }
}

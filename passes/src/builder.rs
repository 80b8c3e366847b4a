//! Helpers for passes that replace nodes: a builder of new nodes named after the one replaced,
//! and the loop that rewrites every matching node, regions included.

use fxhlo_ir::{DType, Graph, NodeId, Op, SourceLoc, TensorType, ValueRef};

/// Adds nodes named `<base>.<what>.<n>` (`n` counting up from 1) with one source location:
/// the node being rewritten's, so that dumps and errors point at the model's line.
pub(crate) struct Builder<'g> {
    pub graph: &'g mut Graph,
    pub base: String,
    pub source: Option<SourceLoc>,
    pub count: usize,
}

impl<'g> Builder<'g> {
    /// A builder naming its nodes `<base>.<what>.<n>`.
    pub fn new(graph: &'g mut Graph, base: String, source: Option<SourceLoc>) -> Builder<'g> {
        Builder { graph, base, source, count: 0 }
    }

    /// Adds a one-result node and returns its value.
    pub fn add(&mut self, what: &str, op: Op, operands: &[ValueRef], ty: TensorType) -> fxhlo_ir::Result<ValueRef> {
        self.add_node(what, op, operands, vec![ty]).map(ValueRef::first)
    }

    /// Adds a node with the result types `types` and returns it.
    pub fn add_node(&mut self, what: &str, op: Op, operands: &[ValueRef], types: Vec<TensorType>) -> fxhlo_ir::Result<NodeId> {
        self.count += 1;
        let name = format!("{}.{what}.{}", self.base, self.count);
        self.graph.add_node(name.as_str(), op, operands, types, self.source.clone())
    }
}

/// Rewrites every node of `graph` that `matches`, then the same in each region, in order;
/// returns whether any node was rewritten. A failed rewrite is `pass`'s error.
pub(crate) fn rewrite_matching(
    graph: &mut Graph,
    pass: &'static str,
    matches: fn(&Graph, NodeId) -> bool,
    rewrite: fn(&mut Graph, NodeId) -> fxhlo_ir::Result<()>,
) -> crate::Result<bool> {
    let found: Vec<NodeId> = graph.node_ids().filter(|&id| matches(graph, id)).collect();
    for &id in &found {
        rewrite(graph, id).map_err(|e| crate::Error::Failed { pass, message: e.to_string() })?;
    }
    let mut changed = !found.is_empty();
    for region in graph.regions_mut() {
        changed |= rewrite_matching(region, pass, matches, rewrite)?;
    }
    Ok(changed)
}

/// The dtype a rewrite computes a `dtype` value in: float32 for 16-bit floats (rounded once at
/// the end, as codegen computes convolutions and normalizations), else `dtype` itself.
pub(crate) fn work_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

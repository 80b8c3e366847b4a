//! A helper for passes that replace one node by several: new nodes named after it.

use fxhlo_ir::{Graph, Op, SourceLoc, TensorType, ValueRef};

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
        self.count += 1;
        let name = format!("{}.{what}.{}", self.base, self.count);
        let id = self.graph.add_node(name.as_str(), op, operands, vec![ty], self.source.clone())?;
        Ok(ValueRef::first(id))
    }
}

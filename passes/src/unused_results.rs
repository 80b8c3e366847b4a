//! `unused-results`: drops the results of a multi-result node that nothing reads, where its
//! op has a form without them, so that codegen never computes them. Today that is
//! `aten.max_pool`'s indices: in inference nothing reads them, and without them the pool is a
//! plain max window instead of a (value, index) reduction several times as costly. Regions
//! are rewritten too.
//!
//! Relies on: `dce` having run first where dead readers of a result should not count (a use by
//! a dead node is still a use here). Preserves: every node, input and output; only the
//! dropped results go (no remaining value is renumbered: they are the last results).
//!
//! ```text
//! before:  %p = aten.max_pool %x {kernel = [2, 2], ...} : (f32[1,2,2,2], i64[1,2,2,2])
//!          %r = aten.relu %p#0 : f32[1,2,2,2]                   (%p#1 read by nothing)
//! after:   %p = aten.max_pool %x {kernel = [2, 2], ..., indices = false} : f32[1,2,2,2]
//!          %r = aten.relu %p : f32[1,2,2,2]
//! ```

use fxhlo_ir::{Graph, NodeId, Op, ValueRef};

use crate::{Pass, Result};

/// The pass; see the module doc.
pub struct UnusedResults;

impl Pass for UnusedResults {
    fn name(&self) -> &'static str {
        "unused-results"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        Ok(drop_unused(graph))
    }
}

/// Drops the unread results of `graph`'s nodes and of its regions'; whether any went.
fn drop_unused(graph: &mut Graph) -> bool {
    let pools: Vec<NodeId> = graph
        .node_ids()
        .filter(|&id| matches!(graph.node(id).op, Op::MaxPool { indices: true, .. }) && !is_read(graph, ValueRef { node: id, result: 1 }))
        .collect();
    for &id in &pools {
        let node = graph.node_mut(id);
        if let Op::MaxPool { indices, .. } = &mut node.op {
            *indices = false;
            node.results.truncate(1);
        }
    }
    let mut changed = !pools.is_empty();
    for region in graph.regions_mut() {
        changed |= drop_unused(region);
    }
    changed
}

/// Whether a node or a graph output reads `v`.
fn is_read(graph: &Graph, v: ValueRef) -> bool {
    !graph.users(v).is_empty() || graph.outputs().contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOLS: &str = "graph @pools {
  %x = input {kind = user_input} : f32[1,2,4,4]
  %p = aten.max_pool %x {kernel = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : (f32[1,2,2,2], i64[1,2,2,2])
  %q = aten.max_pool %x {kernel = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : (f32[1,2,2,2], i64[1,2,2,2])
  %r = aten.relu %p#0 : f32[1,2,2,2]
  return %r, %q#1
}
";

    #[test]
    fn only_indices_nothing_reads_go() {
        let mut g = fxhlo_ir::parse(POOLS).unwrap();
        assert!(UnusedResults.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        let text = fxhlo_ir::print(&g);
        assert!(text.contains("ceil_mode = false, indices = false} : f32[1,2,2,2]\n"), "{text}");
        // `q`'s indices are an output: kept.
        assert!(text.contains("%q = aten.max_pool %x {kernel = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : (f32"), "{text}");
        assert!(!UnusedResults.run(&mut g).unwrap());
    }
}

//! `dce`: dead-code elimination. Removes every node whose results nothing reads (no operand
//! use, not a graph output), in reverse topological order so that a chain of dead nodes goes
//! in one run; inputs stay (they are the executable's signature). Regions are cleaned too.
//!
//! Relies on: nothing. Preserves: every output and every input.
//!
//! ```text
//! before:  %a = aten.sin %x : f32[4]
//!          %b = aten.cos %a : f32[4]          (read by nothing)
//!          return %a
//! after:   %a = aten.sin %x : f32[4]
//!          return %a
//! ```

use fxhlo_ir::{Graph, Op};

use crate::{Error, Pass, Result};

/// The pass; see the module doc.
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        eliminate(graph)
    }
}

/// Removes the dead nodes of `graph` and of its regions; whether any went.
pub fn eliminate(graph: &mut Graph) -> Result<bool> {
    let fail = |e: fxhlo_ir::Error| Error::Failed { pass: "dce", message: e.to_string() };
    let mut changed = false;
    for id in graph.topo_order().map_err(fail)?.into_iter().rev() {
        if !matches!(graph.node(id).op, Op::Input { .. }) && !graph.has_uses(id) {
            graph.remove_node(id).map_err(fail)?;
            changed = true;
        }
    }
    for region in graph.regions_mut() {
        changed |= eliminate(region)?;
    }
    Ok(changed)
}

//! `hoist-large-constants`: turns each constant of more than [`LARGE_CONSTANT_ELEMENTS`]
//! elements (frozen weights, after `fold-constant-layouts` has put them in the layout their
//! users read) back into an input of the executable whose value is bound to the same bytes
//! ([`Graph::bind_input`]). The session uploads a bound input once, when it compiles, and the
//! caller never passes it; XLA compiles the weights as parameters.
//!
//! Why: XLA copies every constant into its own literal, element by element, and the executable
//! carries (and serializes) them all: 50M frozen parameters took 4.95 s to compile against 0.96
//! s unfrozen, and twice the memory (session 8). Small constants stay: XLA folds them into
//! their users. JAX hoists large closed-over constants out of its modules for the same reason.
//! Constants inside regions (branches, loop bodies) stay, since a region's inputs are its
//! operands.
//!
//! Relies on: the passes that fold constants (`fold-constant-layouts`) running before it,
//! since XLA cannot fold what is no longer a constant; `device-layout` running after it, to
//! give the new inputs the layout the device's kernels take (as it does resident weights: a
//! convolution's weight left in PyTorch's layout made frozen ResNet-18 three times slower).
//! Preserves: every other node and input; the new inputs come after the graph's own (kind
//! `constant`, the constant's name).
//!
//! ```text
//! before:  %x = input {kind = user_input} : f32[1,2048]
//!          %w = constant {data = "9f3c..."} : f32[2048,4096]
//!          %y = aten.mm %x, %w : f32[1,4096]
//! after:   %x = input {kind = user_input} : f32[1,2048]
//!          %w = input {kind = constant, value = "9f3c..."} : f32[2048,4096]
//!          %y = aten.mm %x, %w : f32[1,4096]
//! ```

use fxhlo_ir::{Graph, InputKind, Op, ValueRef};

use crate::{Error, Pass, Result};

/// Constants with more elements than this become bound inputs (the size at which codegen
/// elides a constant from the module text, too: `fxhlo_codegen::ELIDE_ELEMENTS`).
pub const LARGE_CONSTANT_ELEMENTS: usize = 1024;

/// The pass; see the module doc.
pub struct HoistLargeConstants;

impl Pass for HoistLargeConstants {
    fn name(&self) -> &'static str {
        "hoist-large-constants"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let fail = |e: fxhlo_ir::Error| Error::Failed { pass: "hoist-large-constants", message: e.to_string() };
        let large: Vec<_> = graph
            .node_ids()
            .filter(|&id| {
                let n = graph.node(id);
                matches!(n.op, Op::Constant { .. }) && n.results[0].num_elements() > LARGE_CONSTANT_ELEMENTS
            })
            .collect();
        for &id in &large {
            let node = graph.node(id).clone();
            let Op::Constant { data } = &node.op else { continue };
            // A free name for the moment both exist; the input takes the constant's after.
            let temporary = format!("{}.hoisted", node.name);
            let input = graph.add_input(temporary.as_str(), InputKind::Constant, None, node.results[0].clone(), node.source.clone());
            graph.bind_input(input, data.clone());
            graph.replace_all_uses(ValueRef::first(id), ValueRef::first(input)).map_err(fail)?;
            graph.remove_node(id).map_err(fail)?;
            graph.node_mut(input).name = node.name.clone();
        }
        Ok(!large.is_empty())
    }
}

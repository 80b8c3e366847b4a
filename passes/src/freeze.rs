//! `freeze`: compiles the inputs whose values are known (frozen weights, bound with
//! [`Graph::bind_input`]) into the graph as constants, so that later passes and XLA may fold
//! them. Each such input becomes an `Op::Constant` holding the same bytes (shared, not
//! copied) under the same name, and leaves the graph's inputs: the executable no longer takes
//! it. Inputs without a bound value stay.
//!
//! Runs first whenever values are bound (`options={"freeze": True}`, `fxhlo run --freeze`),
//! at every optimization level: it changes the executable's signature, which the caller
//! asked for.
//!
//! ```text
//! before:  %w = input {kind = parameter, weight = "fc.weight", value = "9f3c..."} : f32[16,8]
//!          %t = aten.permute %w {dims = [1, 0]} : f32[8,16]
//! after:   %w = constant {data = "9f3c..."} : f32[16,8]
//!          %t = aten.permute %w {dims = [1, 0]} : f32[8,16]
//! ```

use fxhlo_ir::{Graph, Op, ValueRef};

use crate::{Error, Pass, Result};

/// The pass; see the module doc.
pub struct Freeze;

impl Pass for Freeze {
    fn name(&self) -> &'static str {
        "freeze"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let fail = |e: fxhlo_ir::Error| Error::Failed { pass: "freeze", message: e.to_string() };
        let bound: Vec<_> =
            graph.inputs().iter().filter_map(|&id| Some((id, graph.input_value(id)?.clone()))).collect();
        for (input, data) in &bound {
            let node = graph.node(*input).clone();
            if let Some(bytes) = data.bytes() {
                if bytes.len() != node.results[0].size_bytes() {
                    return Err(Error::Failed {
                        pass: "freeze",
                        message: format!("input `{}` is {} but its value has {} bytes", node.name, node.results[0], bytes.len()),
                    });
                }
            }
            // A free name for the moment both exist; the constant takes the input's after.
            let temporary = format!("{}.frozen", node.name);
            let constant = graph
                .add_node(temporary.as_str(), Op::Constant { data: data.clone() }, &[], node.results.clone(), node.source.clone())
                .map_err(fail)?;
            graph.replace_all_uses(ValueRef::first(*input), ValueRef::first(constant)).map_err(fail)?;
            graph.remove_input(*input).map_err(fail)?;
            graph.node_mut(constant).name = node.name.clone();
        }
        Ok(!bound.is_empty())
    }
}

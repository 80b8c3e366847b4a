//! `device-layout`: stores resident weights in the layout the device's kernels want.
//!
//! PyTorch keeps a convolution kernel as `[out, in, k...]` and a linear weight as `[out, in]`
//! read through `permute([1, 0])`; XLA's CPU (Eigen) kernels want `[k..., in, out]` and
//! `[in, out]`. For a graph input the device keeps between calls (a parameter, buffer or
//! constant), XLA would transpose it on every call. Instead this pass declares such an input
//! permuted: the input node records the permutation (`layout`, so the caller uploads the
//! tensor permuted once: the facade's `InputSignature::layout` is read from it) and takes the
//! permuted type, and a new `aten.permute` right after it restores the logical tensor for every
//! former user. XLA folds that permute into the convolution's dimension numbers, or cancels it
//! against the graph's own `permute`, so no data moves per call. This ran inside codegen for
//! every target before it was a pass; the pipeline keeps it on every target (elsewhere XLA
//! picks its own layouts and folds the permute just the same).
//!
//! An input is permuted when every use of it agrees on one permutation: the kernel operand of
//! a (non-transposed) convolution wants `[2, .., rank-1, 1, 0]`; a `permute` wants its own
//! dims. Any other use, or a graph output, leaves the input as it is; so do user inputs
//! (permuting a per-call input would cost what it saves), inputs that already have a layout,
//! and the inputs named in [`DeviceLayout::keep`] (the facade names there the weights a
//! tensor-parallel plan splits, so that a shard stays a plain slice of the host tensor, and
//! frozen inputs, compiled in as constants in their logical layout). Regions are left alone:
//! their inputs are region arguments, not resident weights.
//!
//! Relies on: running last (a use added by a later pass would not have been seen). Preserves:
//! every input (same order, name, kind and weight; only its type and layout change) and every
//! output.
//!
//! ```text
//! before:  %w = input {kind = parameter, weight = "conv.weight"} : f32[8,3,3,3]
//!          %c = aten.convolution %x, %w {...} : f32[1,8,6,6]
//! after:   %w = input {kind = parameter, weight = "conv.weight", layout = [2, 3, 1, 0]} : f32[3,3,3,8]
//!          %w.logical = aten.permute %w {dims = [3, 2, 0, 1]} : f32[8,3,3,3]
//!          %c = aten.convolution %x, %w.logical {...} : f32[1,8,6,6]
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use fxhlo_ir::layout::{inverse, is_identity, is_permutation, logical, permuted};
use fxhlo_ir::{Graph, InputKind, NodeId, Op, Shape, ValueRef};

use crate::{Error, Pass, Result};

/// The pass; see the module doc. The registry's instance is [`DEVICE_LAYOUT`], which keeps no
/// input as it is beyond the rules above.
pub struct DeviceLayout {
    /// Names of inputs to leave in their logical layout whatever their uses.
    pub keep: BTreeSet<String>,
}

/// The pass as the registry and the pipelines hold it.
pub static DEVICE_LAYOUT: DeviceLayout = DeviceLayout::new();

impl DeviceLayout {
    /// The pass, keeping no input as it is beyond the rules of the module doc.
    pub const fn new() -> DeviceLayout {
        DeviceLayout { keep: BTreeSet::new() }
    }
}

impl Default for DeviceLayout {
    fn default() -> DeviceLayout {
        DeviceLayout::new()
    }
}

impl Pass for DeviceLayout {
    fn name(&self) -> &'static str {
        "device-layout"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let layouts = self.layouts(graph);
        for (&id, perm) in &layouts {
            apply(graph, id, perm).map_err(|e| Error::Failed { pass: "device-layout", message: e.to_string() })?;
        }
        Ok(!layouts.is_empty())
    }
}

impl DeviceLayout {
    /// The layout each eligible input's uses agree on, by input (in input order).
    pub fn layouts(&self, graph: &Graph) -> BTreeMap<NodeId, Vec<usize>> {
        let candidates: Vec<NodeId> = graph
            .inputs()
            .iter()
            .copied()
            .filter(|&id| {
                let node = graph.node(id);
                matches!(&node.op, Op::Input { kind, layout: None, .. } if *kind != InputKind::UserInput)
                    && !self.keep.contains(node.name.as_str())
            })
            .collect();
        // None: no use seen yet; Some(None): uses disagree (or one cannot take a permuted input).
        let mut wanted: HashMap<NodeId, Option<Option<Vec<usize>>>> = candidates.iter().map(|&id| (id, None)).collect();
        for id in graph.node_ids() {
            for (k, v) in graph.operands(id).iter().enumerate() {
                let Some(slot) = wanted.get_mut(&v.node) else { continue };
                let rank = graph.node(v.node).results[0].rank();
                let want = match &graph.node(id).op {
                    Op::Convolution { transposed: false, .. } if k == 1 && rank >= 3 => {
                        Some((2..rank).chain([1, 0]).collect::<Vec<_>>())
                    }
                    Op::Permute { dims } => dims.iter().map(|&d| usize::try_from(d).ok()).collect(),
                    _ => None,
                };
                *slot = match (slot.take(), want) {
                    (None, w) => Some(w),
                    (Some(Some(a)), Some(b)) if a == b => Some(Some(a)),
                    _ => Some(None),
                };
            }
        }
        let outputs: HashSet<NodeId> = graph.outputs().iter().map(|v| v.node).collect();
        candidates
            .into_iter()
            .filter(|id| !outputs.contains(id))
            .filter_map(|id| {
                let perm = wanted.get(&id).cloned().flatten().flatten()?;
                let rank = graph.node(id).results[0].rank();
                (perm.len() == rank && !is_identity(&perm) && is_permutation(&perm)).then_some((id, perm))
            })
            .collect()
    }
}

/// Declares input `id` in layout `perm` and puts a permute back to its logical type between it
/// and its users.
fn apply(graph: &mut Graph, id: NodeId, perm: &[usize]) -> fxhlo_ir::Result<()> {
    let node = graph.node(id);
    let (name, source, logical_type) = (node.name.to_string(), node.source.clone(), node.results[0].clone());
    let names: HashSet<String> = graph.node_ids().map(|n| graph.node(n).name.to_string()).collect();
    let mut back_name = format!("{name}.logical");
    let mut k = 1;
    while names.contains(&back_name) {
        back_name = format!("{name}.logical.{k}");
        k += 1;
    }
    let node = graph.node_mut(id);
    node.results[0] = permuted(&logical_type, perm);
    if let Op::Input { layout, .. } = &mut node.op {
        *layout = Some(perm.to_vec());
    }
    debug_assert_eq!(logical(&node.results[0], perm), logical_type);
    let dims: Shape = inverse(perm).iter().map(|&p| p as i64).collect();
    let back = graph.add_node(back_name, Op::Permute { dims }, &[ValueRef::first(id)], vec![logical_type], source)?;
    graph.replace_all_uses_except(ValueRef::first(id), ValueRef::first(back), back)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CNN: &str = r#"graph @cnn {
  %x = input {kind = user_input} : f32[1,3,8,8]
  %w = input {kind = parameter, weight = "conv.weight"} : f32[4,3,3,3]
  %fc = input {kind = parameter, weight = "fc.weight"} : f32[10,4]
  %b = input {kind = parameter, weight = "fc.bias"} : f32[10]
  %c = aten.convolution %x, %w {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1, has_bias = false} : f32[1,4,8,8]
  %s = aten.mean %c {dims = [2, 3], keepdim = false} : f32[1,4]
  %t = aten.permute %fc {dims = [1, 0]} : f32[4,10]
  %y = aten.addmm %b, %s, %t : f32[1,10]
  return %y
}
"#;

    fn layout_of(g: &Graph, name: &str) -> Option<Vec<usize>> {
        let id = g.inputs().iter().copied().find(|&id| g.node(id).name == name)?;
        match &g.node(id).op {
            Op::Input { layout, .. } => layout.clone(),
            _ => None,
        }
    }

    #[test]
    fn kernels_and_linear_weights_take_the_kernel_layouts() {
        let mut g = fxhlo_ir::parse(CNN).unwrap();
        assert!(DEVICE_LAYOUT.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        assert_eq!(layout_of(&g, "w"), Some(vec![2, 3, 1, 0]));
        assert_eq!(layout_of(&g, "fc"), Some(vec![1, 0]));
        // The image is a user input, the bias is read by addmm itself.
        assert_eq!((layout_of(&g, "x"), layout_of(&g, "b")), (None, None));
        let text = fxhlo_ir::print(&g);
        assert!(text.contains("layout = [2, 3, 1, 0]} : f32[3,3,3,4]"), "{text}");
        assert!(text.contains("%w.logical = aten.permute %w {dims = [3, 2, 0, 1]} : f32[4,3,3,3]"), "{text}");
        assert!(!DEVICE_LAYOUT.run(&mut g).unwrap(), "a second run changes nothing");
    }

    #[test]
    fn kept_inputs_and_outputs_stay_as_they_are() {
        let mut g = fxhlo_ir::parse(CNN).unwrap();
        let pass = DeviceLayout { keep: ["fc".to_string()].into() };
        assert!(pass.run(&mut g).unwrap());
        assert_eq!((layout_of(&g, "w"), layout_of(&g, "fc")), (Some(vec![2, 3, 1, 0]), None));
        let returned = CNN.replace("return %y", "return %y, %w");
        let mut g = fxhlo_ir::parse(&returned).unwrap();
        DEVICE_LAYOUT.run(&mut g).unwrap();
        assert_eq!(layout_of(&g, "w"), None);
    }
}

//! `channels-last-pooling`: a max pool over `[N, C, spatial...]` computed channels-last:
//! permuted to `[N, spatial..., C]`, pooled over the middle dims, permuted back.
//!
//! Why: XLA's CPU convolutions run channels-last and XLA cancels a transpose pair around them,
//! but a `reduce_window` over the trailing dims pins its neighbours to channels-first, so the
//! stem's batch norm, the pooling and the first stage's residual adds were computed
//! channels-first with a transpose before every convolution (ResNet-18: six 56x56x64 and one
//! 112x112x64 transpose per call). Pooled channels-last, the transposes cancel instead. This
//! ran inside codegen for every target before it was a pass, and the pipeline keeps it there
//! (on other targets XLA assigns its own layouts and cancels the pair just the same).
//!
//! Only a pool without indices is rewritten (run `unused-results` first: the indices of a
//! channels-last window would be positions in the permuted tensor), and only one with a batch
//! and a channel dim (rank = spatial dims + 2) and a non-empty result.
//!
//! Relies on: verified input. Preserves: every output's type; the pool keeps its name on the
//! permute that gives its value, so later nodes and dumps still say `%p`.
//!
//! ```text
//! before:  %p = aten.max_pool %x {kernel = [3, 3], stride = [2, 2], ..., indices = false} : f32[1,64,56,56]
//!                                                                   (%x : f32[1,64,112,112])
//! after:   %p.to_channels_last = aten.permute %x {dims = [0, 2, 3, 1]} : f32[1,112,112,64]
//!          %p.channels_last = aten.max_pool %p.to_channels_last {kernel = [3, 3], ..., indices = false, channels_last = true} : f32[1,56,56,64]
//!          %p = aten.permute %p.channels_last {dims = [0, 3, 1, 2]} : f32[1,64,56,56]
//! ```

use std::collections::HashSet;

use fxhlo_ir::layout::{inverse, permuted};
use fxhlo_ir::{Graph, NodeId, Op, Shape, ValueRef};

use crate::builder::rewrite_matching;
use crate::{Pass, Result};

/// The pass; see the module doc.
pub struct ChannelsLastPooling;

impl Pass for ChannelsLastPooling {
    fn name(&self) -> &'static str {
        "channels-last-pooling"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        rewrite_matching(graph, self.name(), is_candidate, rewrite)
    }
}

/// A channels-first max pool without indices over `[N, C, spatial...]`.
fn is_candidate(graph: &Graph, id: NodeId) -> bool {
    let node = graph.node(id);
    let Op::MaxPool { kernel, indices: false, channels_last: false, .. } = &node.op else { return false };
    let x = graph.operands(id).first().and_then(|v| graph.value_type(*v)).map(|t| t.rank());
    x == Some(kernel.len() + 2) && node.results[0].num_elements() > 0
}

/// Replaces pool `id` by permute -> channels-last pool -> permute back.
fn rewrite(graph: &mut Graph, id: NodeId) -> fxhlo_ir::Result<()> {
    let node = graph.node(id).clone();
    let Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, .. } = node.op else { return Ok(()) };
    let x = graph.operands(id)[0];
    let x_t = graph.value_type(x).cloned().ok_or(fxhlo_ir::Error::DanglingOutput)?;
    let out = node.results[0].clone();
    // [0, 2, 3, ..., 1]: the channel dim moves last.
    let to_last: Vec<usize> = std::iter::once(0).chain(2..x_t.rank()).chain(std::iter::once(1)).collect();
    let dims = |perm: &[usize]| Op::Permute { dims: perm.iter().map(|&p| p as i64).collect::<Shape>() };
    let names: HashSet<String> = graph.node_ids().map(|n| graph.node(n).name.to_string()).collect();
    let fresh = |suffix: &str| {
        let base = format!("{}.{suffix}", node.name);
        let mut name = base.clone();
        let mut k = 1;
        while names.contains(&name) {
            name = format!("{base}.{k}");
            k += 1;
        }
        name
    };
    let source = node.source.clone();
    let xl = graph.add_node(fresh("to_channels_last"), dims(&to_last), &[x], vec![permuted(&x_t, &to_last)], source.clone())?;
    let pool = Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices: false, channels_last: true };
    let yl = graph.add_node(fresh("channels_last"), pool, &[ValueRef::first(xl)], vec![permuted(&out, &to_last)], source.clone())?;
    let back = graph.add_node(fresh("from_channels_last"), dims(&inverse(&to_last)), &[ValueRef::first(yl)], vec![out], source)?;
    graph.replace_all_uses(ValueRef::first(id), ValueRef::first(back))?;
    graph.remove_node(id)?;
    graph.node_mut(back).name = node.name;
    Ok(())
}

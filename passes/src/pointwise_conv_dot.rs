//! `pointwise-conv-dot`: a 1x1 2-D convolution (stride 1, no padding, one group) over
//! `[N, C_in, H, W]` written as a matrix product in the same channels-first layout:
//! `W[C_out, C_in] x X[C_in, H*W]` (for a batch, a `bmm` of the weight expanded over it).
//!
//! Why: XLA's CPU backend runs convolutions channels-last (`b01f`), so every convolution of a
//! channels-first graph gets a transpose in front of and behind it, and the elementwise ops
//! between two convolutions (batch norm, activations, squeeze-excite scaling, residual adds)
//! are computed in transposing loops or split between the two layouts. In EfficientNet and
//! MobileNet every depthwise layer (a sum of taps, see `depthwise-conv-taps`, fastest
//! channels-first) sits between two 1x1 convolutions, so the network switched layout twice
//! per block. As `dot`s over channels-first views the 1x1 layers need no transpose: the whole
//! chain stays channels-first and XLA's layout assignment has nothing to undo (EfficientNet-B0
//! at batch 1, same process, loaded machine: 105 -> 77 ms median, MobileNetV3-small 13.0 ->
//! 12.2 ms; docs/benchmarks.md). Other targets assign layouts
//! and pick kernels their own way, so the pipeline runs this pass only for the CPU plugin, and
//! `-O0` never.
//!
//! A channels-last convolution (`channels_last`, from the `channels-last` pass) becomes
//! `X[N*H*W, C_in] x W^T[C_in, C_out]`, channels-last as well, whatever the batch.
//!
//! Left alone: strided or padded 1x1 convolutions (a strided one reads a subsampled input),
//! grouped and transposed ones, 1-D and 3-D ones, integer ones and empty results.
//!
//! Relies on: verified input. Preserves: every output's type; the convolution node is removed
//! (its name goes to the view that gives its value).
//!
//! ```text
//! before:  %c = aten.convolution %x, %w, %b {stride = [1, 1], padding = [0, 0], ..., groups = 1} : f32[1,8,5,5]
//!                                              (%x : f32[1,4,5,5], %w : f32[8,4,1,1], %b : f32[8])
//! after:   %c.dot.w.1 = aten.view %w {shape = [8, 4]} : f32[8,4]
//!          %c.dot.x.2 = aten.view %x {shape = [4, 25]} : f32[4,25]
//!          %c.dot.mm.3 = aten.mm %c.dot.w.1, %c.dot.x.2 : f32[8,25]
//!          %c.dot.b.4 = aten.view %b {shape = [8, 1]} : f32[8,1]
//!          %c.dot.bias.5 = aten.add %c.dot.mm.3, %c.dot.b.4 : f32[8,25]
//!          %c = aten.view %c.dot.bias.5 {shape = [1, 8, 5, 5]} : f32[1,8,5,5]
//! ```

use fxhlo_ir::{BinaryOp, DType, Graph, NodeId, Op, Shape, TensorType, ValueRef};

use crate::builder::{rewrite_matching, Builder};
use crate::{Pass, Result};

/// The pass; see the module doc.
pub struct PointwiseConvDot;

impl Pass for PointwiseConvDot {
    fn name(&self) -> &'static str {
        "pointwise-conv-dot"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        rewrite_matching(graph, self.name(), is_pointwise, rewrite)
    }
}

/// A 2-D, not transposed, ungrouped float convolution with a 1x1 kernel, stride 1 and no
/// padding (dilation does not matter for a 1x1 kernel).
fn is_pointwise(graph: &Graph, id: NodeId) -> bool {
    let node = graph.node(id);
    let Op::Convolution { transposed: false, groups: 1, stride, padding, channels_last, .. } = &node.op else { return false };
    let operands = graph.operands(id);
    let (Some(x), Some(w)) = (graph.value_type(operands[0]), operands.get(1).and_then(|v| graph.value_type(*v))) else {
        return false;
    };
    let all = |v: &[i64], want: i64| v.iter().all(|&s| s == want);
    x.rank() == 4
        && w.rank() == 4
        && matches!(x.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
        && w.dtype == x.dtype
        && w.shape[1] == x.shape[if *channels_last { 3 } else { 1 }]
        && w.shape[2] == 1
        && w.shape[3] == 1
        && stride.len() <= 2
        && padding.len() <= 2
        && all(stride, 1)
        && all(padding, 0)
        && node.results[0].num_elements() > 0
}

/// Replaces convolution `id` by views around `mm` (batch 1 or channels-last) or `bmm`.
fn rewrite(graph: &mut Graph, id: NodeId) -> fxhlo_ir::Result<()> {
    let node = graph.node(id).clone();
    let Op::Convolution { has_bias, channels_last, .. } = node.op else { return Ok(()) };
    let operands = graph.operands(id);
    let out = node.results[0].clone();
    let channels = if channels_last { 3 } else { 1 };
    let c_in = graph.value_type(operands[0]).map(|t| t.shape[channels]).ok_or(fxhlo_ir::Error::DanglingOutput)?;
    let bias = has_bias.then(|| operands[2]);
    let mut b = Builder::new(graph, format!("{}.dot", node.name), node.source.clone());
    let product = if channels_last { channels_last_product } else { channels_first_product };
    let result = product(&mut b, operands[0], operands[1], bias, c_in, &out)?;
    let result = b.add("out", view(&out.shape), &[result], out)?;
    b.graph.replace_all_uses(ValueRef::first(id), result)?;
    b.graph.remove_node(id)?;
    // The last view takes the convolution's name: later nodes and dumps still say `%c`.
    b.graph.node_mut(result.node).name = node.name;
    Ok(())
}

/// A `view` to `shape`.
fn view(shape: &[i64]) -> Op {
    Op::View { shape: Shape::from(shape.to_vec()) }
}

/// `W[C_out, C_in] x X[C_in, H*W]` (a `bmm` with the weight expanded over a batch), plus the
/// bias: the channels-first result `out` viewed as `[N, C_out, H*W]` (or without `N` for 1).
fn channels_first_product(
    b: &mut Builder<'_>,
    x: ValueRef,
    w: ValueRef,
    bias: Option<ValueRef>,
    c_in: i64,
    out: &TensorType,
) -> fxhlo_ir::Result<ValueRef> {
    let (n, c_out, hw) = (out.shape[0], out.shape[1], out.shape[2] * out.shape[3]);
    let ty = |shape: Vec<i64>| TensorType::new(out.dtype, shape);
    let weight = b.add("w", view(&[c_out, c_in]), &[w], ty(vec![c_out, c_in]))?;
    let product = if n == 1 {
        let x = b.add("x", view(&[c_in, hw]), &[x], ty(vec![c_in, hw]))?;
        b.add("mm", Op::Mm, &[weight, x], ty(vec![c_out, hw]))?
    } else {
        let x = b.add("x", view(&[n, c_in, hw]), &[x], ty(vec![n, c_in, hw]))?;
        let sizes = Shape::from(vec![n, c_out, c_in]);
        let weights = b.add("wn", Op::Expand { sizes }, &[weight], ty(vec![n, c_out, c_in]))?;
        b.add("bmm", Op::Bmm, &[weights, x], ty(vec![n, c_out, hw]))?
    };
    let Some(bias) = bias else { return Ok(product) };
    let product_t = b.graph.value_type(product).cloned().ok_or(fxhlo_ir::Error::DanglingOutput)?;
    let bias = b.add("b", view(&[c_out, 1]), &[bias], ty(vec![c_out, 1]))?;
    b.add("bias", Op::Binary(BinaryOp::Add), &[product, bias], product_t)
}

/// `X[N*H*W, C_in] x W^T[C_in, C_out]` plus the bias: the channels-last result `out` viewed
/// as `[N*H*W, C_out]`.
fn channels_last_product(
    b: &mut Builder<'_>,
    x: ValueRef,
    w: ValueRef,
    bias: Option<ValueRef>,
    c_in: i64,
    out: &TensorType,
) -> fxhlo_ir::Result<ValueRef> {
    let (rows, c_out) = (out.shape[0] * out.shape[1] * out.shape[2], out.shape[3]);
    let ty = |shape: Vec<i64>| TensorType::new(out.dtype, shape);
    // `[out, in, 1, 1]` to `[1, 1, in, out]` first, the layout `device-layout` gives a
    // convolution's kernel: a resident weight is then uploaded that way once, not transposed
    // on every call.
    let kernel = Op::Permute { dims: Shape::from(vec![2, 3, 1, 0]) };
    let weight = b.add("wt", kernel, &[w], ty(vec![1, 1, c_in, c_out]))?;
    let weight = b.add("w", view(&[c_in, c_out]), &[weight], ty(vec![c_in, c_out]))?;
    let x = b.add("x", view(&[rows, c_in]), &[x], ty(vec![rows, c_in]))?;
    let product = b.add("mm", Op::Mm, &[x, weight], ty(vec![rows, c_out]))?;
    match bias {
        // A `[C_out]` bias broadcasts along the rows as it is.
        Some(bias) => b.add("bias", Op::Binary(BinaryOp::Add), &[product, bias], ty(vec![rows, c_out])),
        None => Ok(product),
    }
}

//! `depthwise-conv-taps`: a depthwise 2-D convolution (one filter per channel, `groups` equal
//! to the channel count) written as a sum over the kernel's taps of a strided slice of the
//! padded input times that tap's per-channel weight.
//!
//! Why: XLA's CPU backend lowers a grouped convolution to a slow generic loop (a 3x3
//! depthwise layer over 96 channels at 56x56 took 8 ms against eager PyTorch's 0.2 ms), while
//! the sum of slices fuses into one elementwise loop (0.3 ms), which is what makes MobileNet,
//! EfficientNet and ConvNeXt as fast as eager. Other targets have fast grouped convolutions,
//! so the pipeline runs this pass only for the CPU plugin, and `-O0` never.
//!
//! A tap that reads no padding (the centre of a `same` convolution) slices the unpadded input.
//! Then the input has a reader besides the pad, and XLA computes the layer before (a batch
//! norm and an activation with `exp`, which it will not duplicate) in a loop of its own, which
//! it vectorizes, instead of inside the pad's loop, which it does not: EfficientNet's
//! activation-and-pad loops took 28% of its time; a 1x1, batch norm, SiLU and 3x3 stride-2
//! depthwise block over 96x112x112 went from 9.4 to 3.8 ms.
//!
//! The sum is divided by a per-channel one that XLA cannot fold (`w * 0 + 1`, `w` the first
//! tap's weights). Without it, XLA fuses the sum of cheap adds and multiplies into every
//! consumer and computes it once per consumer: ConvNeXt's layer norm after each 7x7 layer
//! (a mean, a variance and the normalization, three fusions) computed all 49 taps three
//! times. A divide is one of the ops XLA calls expensive and never duplicates, so the sum is
//! computed once, in one loop, and its readers load it. XLA's CPU pipeline drops
//! `optimization_barrier`s before fusion, so a barrier does not do this. Dividing by one is
//! exact; only a weight that is inf or NaN gives NaN (where the convolution gives inf or NaN).
//! With frozen weights XLA folds the one and the sum may be duplicated again.
//!
//! A channels-last convolution (`channels_last`, from the `channels-last` pass) is written the
//! same way over `[N, H, W, C]`: its taps slice dims 1 and 2, and each tap's `[C]` weights
//! broadcast along the last dim as they are. There XLA's loops run along the channels, which
//! it vectorizes at any image size (channels-first, a 7x7 image gives rows of 7).
//!
//! float16/bfloat16 convolutions are computed in float32 and rounded once, as a convolution
//! accumulates. Transposed, 1-D/3-D, channel-multiplier (`C_out != C_in`) and very large
//! (over 11x11) convolutions are left as they are.
//!
//! Relies on: verified input. Preserves: every output's type; the convolution node is removed.
//!
//! ```text
//! before:  %c = aten.convolution %x, %w, %b {stride = [1, 1], padding = [1, 1], ..., groups = 4} : f32[1,4,8,8]
//!                                              (%x : f32[1,4,8,8], %w : f32[4,1,3,3])
//! after:   %c.taps.pad.1 = aten.pad %x {pad = [1, 1, 1, 1], mode = constant(0)} : f32[1,4,10,10]
//!          %c.taps.w.3 = ... %w permuted and viewed as f32[9,4] ...
//!          %c.taps.x.5 = aten.slice ... : f32[1,4,8,8]     (one per tap, rows then columns)
//!          %c.taps.m.9 = aten.mul %c.taps.x.5, %c.taps.wt.8 : f32[1,4,8,8]
//!          %c.taps.s.14 = aten.add %c.taps.m.9, %c.taps.m.13 ...
//!          %c.taps.bias.56 = aten.add %c.taps.s.53, %c.taps.b.55 : f32[1,4,8,8]
//!          %c.taps.one.60 = ... %c.taps.w.3's first row * 0 + 1, viewed as f32[4,1,1] ...
//!          %c = aten.div %c.taps.bias.56, %c.taps.one.60 : f32[1,4,8,8]   (keeps the name)
//! ```

use fxhlo_ir::{BinaryOp, DType, Graph, NodeId, Op, PadMode, Scalar, Shape, TensorType, ValueRef};

use crate::builder::{rewrite_matching, work_dtype, Builder};
use crate::{Pass, Result};

/// The pass; see the module doc.
pub struct DepthwiseConvTaps;

impl Pass for DepthwiseConvTaps {
    fn name(&self) -> &'static str {
        "depthwise-conv-taps"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        rewrite_matching(graph, self.name(), is_depthwise, rewrite)
    }
}

/// The most taps (kernel positions) rewritten: a larger kernel (RepLKNet's 31x31) would add
/// thousands of nodes per layer, and compile time with them.
const MAX_TAPS: i64 = 121;

/// A 2-D, not transposed convolution with one filter per input channel and as many outputs,
/// of at most [`MAX_TAPS`] taps.
fn is_depthwise(graph: &Graph, id: NodeId) -> bool {
    let node = graph.node(id);
    let Op::Convolution { transposed: false, groups, stride, padding, dilation, channels_last, .. } = &node.op else { return false };
    let operands = graph.operands(id);
    let (Some(x), Some(w)) = (graph.value_type(operands[0]), operands.get(1).and_then(|v| graph.value_type(*v))) else {
        return false;
    };
    let out = &node.results[0];
    let c = if *channels_last { 3 } else { 1 };
    x.rank() == 4
        && w.rank() == 4
        && matches!(x.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
        && *groups == x.shape[c]
        && *groups > 1
        && w.shape[0] == x.shape[c]
        && w.shape[1] == 1
        && w.shape[2] * w.shape[3] <= MAX_TAPS
        && out.shape[c] == x.shape[c]
        && stride.len() == 2
        && padding.len() == 2
        && dilation.len() == 2
        && out.num_elements() > 0
}

/// The tap's start in the unpadded input (`start`, per spatial dim) when every one of its
/// `out` positions, `stride` apart, lies inside `x` (whose spatial dims are `spatial`).
fn inside(x: &TensorType, spatial: [usize; 2], start: [i64; 2], out: [i64; 2], stride: &[i64]) -> Option<[i64; 2]> {
    let fits = |d: usize| start[d] >= 0 && start[d] + (out[d] - 1) * stride[d] < x.shape[spatial[d]];
    (fits(0) && fits(1)).then_some(start)
}

/// Builds the sum of taps for convolution `id` and makes its users read it.
fn rewrite(graph: &mut Graph, id: NodeId) -> fxhlo_ir::Result<()> {
    let node = graph.node(id).clone();
    let Op::Convolution { stride, padding, dilation, has_bias, channels_last, .. } = &node.op else { return Ok(()) };
    let operands = graph.operands(id);
    let x_t = graph.value_type(operands[0]).cloned().unwrap_or_else(|| node.results[0].clone());
    let w_t = graph.value_type(operands[1]).cloned().unwrap_or_else(|| node.results[0].clone());
    let out = node.results[0].clone();
    // The dims of the rows, the columns and the channels.
    let (sh, sw, ch) = if *channels_last { (1, 2, 3) } else { (2, 3, 1) };
    let (c, kh, kw) = (x_t.shape[ch], w_t.shape[2], w_t.shape[3]);
    let (ho, wo) = (out.shape[sh], out.shape[sw]);
    // What a tap's `[C]` weights are viewed as to broadcast along the channels.
    let per_channel = if *channels_last { vec![c] } else { vec![c, 1, 1] };
    let with = |shape: &[i64], dim: usize, size: i64| -> Vec<i64> {
        let mut shape = shape.to_vec();
        shape[dim] = size;
        shape
    };
    let work = work_dtype(x_t.dtype);
    let base = node.name.to_string();
    let mut b = Builder::new(graph, format!("{base}.taps"), node.source.clone());

    let mut x = operands[0];
    let mut w = operands[1];
    if work != x_t.dtype {
        x = b.add("x32", Op::Convert { dtype: work }, &[x], TensorType::new(work, x_t.shape.clone()))?;
        w = b.add("w32", Op::Convert { dtype: work }, &[w], TensorType::new(work, w_t.shape.clone()))?;
    }
    let (ph, pw) = (padding[0], padding[1]);
    let padded = TensorType::new(work, with(&with(&x_t.shape, sh, x_t.shape[sh] + 2 * ph), sw, x_t.shape[sw] + 2 * pw));
    let unpadded = x;
    if ph != 0 || pw != 0 {
        // Pairs from the last dim on: channels-last pads no channel.
        let pad = if *channels_last { vec![0, 0, pw, pw, ph, ph] } else { vec![pw, pw, ph, ph] };
        let pad = Op::Pad { pad, mode: PadMode::Constant(Scalar::Int(0)) };
        x = b.add("pad", pad, &[x], padded.clone())?;
    }
    // The weights as [kh * kw, C]: tap t's per-channel weights are row t.
    let wt = b.add("wperm", Op::Permute { dims: Shape::from(vec![2, 3, 0, 1]) }, &[w], TensorType::new(work, vec![kh, kw, c, 1]))?;
    let taps = TensorType::new(work, vec![kh * kw, c]);
    let wt = b.add("w", Op::View { shape: taps.shape.clone() }, &[wt], taps)?;
    let mut acc: Option<ValueRef> = None;
    let out_w = TensorType::new(work, out.shape.clone());
    for i in 0..kh {
        let rows_t = TensorType::new(work, with(&padded.shape, sh, ho));
        let r0 = i * dilation[0];
        let rows = b.add("rows", Op::Slice { dim: sh as i64, start: r0, end: r0 + (ho - 1) * stride[0] + 1, step: stride[0] }, &[x], rows_t)?;
        for j in 0..kw {
            let c0 = j * dilation[1];
            let (source, c0) = match inside(&x_t, [sh, sw], [r0 - ph, c0 - pw], [ho, wo], stride) {
                // A tap that reads no padding reads the unpadded input (see the module doc).
                Some([ri, ci]) if unpadded != x => {
                    let rows_t = TensorType::new(work, with(&x_t.shape, sh, ho));
                    let rows = Op::Slice { dim: sh as i64, start: ri, end: ri + (ho - 1) * stride[0] + 1, step: stride[0] };
                    (b.add("rows", rows, &[unpadded], rows_t)?, ci)
                }
                _ => (rows, c0),
            };
            let cols = Op::Slice { dim: sw as i64, start: c0, end: c0 + (wo - 1) * stride[1] + 1, step: stride[1] };
            let tap = b.add("x", cols, &[source], out_w.clone())?;
            let row = b.add("wrow", Op::Select { dim: 0, index: i * kw + j }, &[wt], TensorType::new(work, vec![c]))?;
            let weight = per_channel_view(&mut b, "wt", row, &per_channel, work)?;
            let prod = b.add("m", Op::Binary(BinaryOp::Mul), &[tap, weight], out_w.clone())?;
            acc = Some(match acc {
                None => prod,
                Some(sum) => b.add("s", Op::Binary(BinaryOp::Add), &[sum, prod], out_w.clone())?,
            });
        }
    }
    let mut result = acc.unwrap_or(x);
    if *has_bias {
        let mut bias = operands[2];
        let bias_t = b.graph.value_type(bias).cloned().unwrap_or_else(|| TensorType::new(work, vec![c]));
        if bias_t.dtype != work {
            bias = b.add("b32", Op::Convert { dtype: work }, &[bias], TensorType::new(work, vec![c]))?;
        }
        let bias = per_channel_view(&mut b, "b", bias, &per_channel, work)?;
        result = b.add("bias", Op::Binary(BinaryOp::Add), &[result, bias], out_w.clone())?;
    }
    // Computed once, whatever reads it (see the module doc).
    let vec_c = TensorType::new(work, vec![c]);
    let first = b.add("w0", Op::Select { dim: 0, index: 0 }, &[wt], vec_c.clone())?;
    let zero = b.add("zero", Op::Full { value: Scalar::Int(0) }, &[], vec_c.clone())?;
    let one = b.add("unit", Op::Full { value: Scalar::Int(1) }, &[], vec_c.clone())?;
    let zeros = b.add("w0x0", Op::Binary(BinaryOp::Mul), &[first, zero], vec_c.clone())?;
    let ones = b.add("ones", Op::Binary(BinaryOp::Add), &[zeros, one], vec_c)?;
    let ones = per_channel_view(&mut b, "one", ones, &per_channel, work)?;
    result = b.add("once", Op::Binary(BinaryOp::Div), &[result, ones], out_w.clone())?;
    if work != out.dtype {
        result = b.add("out", Op::Convert { dtype: out.dtype }, &[result], out.clone())?;
    }
    b.graph.replace_all_uses(ValueRef::first(id), result)?;
    b.graph.remove_node(id)?;
    // The result takes the convolution's name: the graph's later nodes and dumps still say `%c`.
    b.graph.node_mut(result.node).name = node.name;
    Ok(())
}

/// `v` (a `[C]` vector) viewed as `shape` to broadcast along the channels (itself when that is
/// `[C]`).
fn per_channel_view(b: &mut Builder<'_>, what: &str, v: ValueRef, shape: &[i64], dtype: DType) -> fxhlo_ir::Result<ValueRef> {
    if shape.len() == 1 {
        return Ok(v);
    }
    b.add(what, Op::View { shape: Shape::from(shape.to_vec()) }, &[v], TensorType::new(dtype, shape.to_vec()))
}

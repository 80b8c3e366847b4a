//! The cost model: a roofline per target, with a discount for what fusion hides.
//!
//! An op's time is the larger of its FLOPs over the target's peak and its bytes over the
//! target's memory bandwidth ([`Roofline::seconds`]). What the bytes are is where fusion
//! enters, since XLA fuses elementwise chains and layout ops into their neighbours on every
//! backend:
//! - a matrix product or a convolution reads its operands and writes its result;
//! - an elementwise op writes its result only, its operands being read inside the fusion that
//!   produced them, and pays half of that write ([`FUSED_WRITE`]): a chain of them is one
//!   loop that writes once, so two in a row cost what one opaque op (batch norm) does;
//! - `permute`, `view` and `slice` cost a nanosecond ([`LAYOUT_SECONDS`]): XLA folds them into
//!   their users' layouts or fusions, so layout is chosen by what it enables, and of two equal
//!   graphs the one with fewer layout ops wins; except on the CPU plugin
//!   ([`Roofline::layout_copies`]), where a permute of rank 4 or more is a copy (read and
//!   written) and a channels-first 2-D convolution pays two (its input and result transposed
//!   around XLA's channels-last kernel);
//! - `cat` writes its result;
//! - any node whose value reads only constants costs nothing: frozen weights' subgraphs are
//!   computed once at compile time (`fold-constant-layouts`, XLA's constant folding);
//! - every op the e-graph does not model (an `orig` node) writes its result: those are the
//!   same in every choice, so their cost only scales the 1% guard.
//!
//! The figures: the TPU chips' published peaks ([`TPU_CHIPS`], also `fxhlo cost`'s roofline),
//! and for the CPU plugin figures measured on this project's 2-vCPU machines ([`CPU`]).

use fxhlo_ir::{Op, TensorType};

/// A target's peaks: dense matrix throughput and memory bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roofline {
    /// Generation prefix of topology names (`v6e` in `v6e:2x2`), or the target's name.
    pub prefix: &'static str,
    pub name: &'static str,
    /// Peak dense matrix throughput (bf16 on the TPUs), FLOP/s.
    pub peak_flops: f64,
    /// Memory bandwidth (HBM on the TPUs, DRAM on the CPU), bytes/s.
    pub bytes_per_s: f64,
    /// Whether layouts are the graph's own (XLA's CPU backend: a permute of rank 4 or more
    /// is a copy, and a channels-first 2-D convolution is computed channels-last between two
    /// such copies), rather than chosen by the compiler (the TPUs).
    pub layout_copies: bool,
}

impl Roofline {
    /// The roofline time of `flops` and `bytes`: whichever of compute and memory is longer.
    pub fn seconds(&self, flops: f64, bytes: f64) -> f64 {
        (flops / self.peak_flops).max(bytes / self.bytes_per_s)
    }
}

/// Per-chip peaks from Google Cloud's TPU system architecture pages ("TPU v6e", "TPU v5e",
/// "TPU v5p", "TPU v4"), bf16 dense matmul and HBM bandwidth.
pub const TPU_CHIPS: &[Roofline] = &[
    Roofline { prefix: "v6e", name: "TPU v6e", peak_flops: 918e12, bytes_per_s: 1640e9, layout_copies: false },
    Roofline { prefix: "v5e", name: "TPU v5e", peak_flops: 197e12, bytes_per_s: 819e9, layout_copies: false },
    Roofline { prefix: "v5p", name: "TPU v5p", peak_flops: 459e12, bytes_per_s: 2765e9, layout_copies: false },
    Roofline { prefix: "v4", name: "TPU v4", peak_flops: 275e12, bytes_per_s: 1200e9, layout_copies: false },
];

/// The PJRT CPU plugin on a 2-vCPU AVX-512 machine (2026-12-05): an f32 1024² matmul
/// compiled by fxhlo ran at 430-450 GFLOP/s, and `x*2+1` over 4-64 MB moved 60 GB/s from
/// cache and 9 GB/s from fresh pages; 20 GB/s is taken for memory-resident operands.
pub const CPU: Roofline = Roofline { prefix: "cpu", name: "PJRT CPU plugin", peak_flops: 400e9, bytes_per_s: 20e9, layout_copies: true };

/// The roofline the e-graph uses off the CPU when the chip is not known: TPU v6e's.
pub const ACCELERATOR: Roofline = TPU_CHIPS[0];

/// The TPU chip of a topology name (`v6e:2x2` → v6e).
pub fn tpu_chip(topology: &str) -> Option<&'static Roofline> {
    let generation = topology.split(':').next()?;
    TPU_CHIPS.iter().find(|c| c.prefix.eq_ignore_ascii_case(generation))
}

/// The share of an elementwise op's writes it pays: the fusion discount (see the module doc).
pub const FUSED_WRITE: f64 = 0.5;

/// What layout ops cost, in seconds: near zero (see the module doc).
pub const LAYOUT_SECONDS: f64 = 1e-9;

/// The bytes of `types` (saturating: an overflowing size is an enormous cost, not a panic).
pub(crate) fn bytes(types: &[&TensorType]) -> f64 {
    types.iter().map(|t| t.checked_size_bytes().unwrap_or(usize::MAX) as f64).sum()
}

/// The FLOPs of a matrix product (2·m·k·n per product: 2 × result elements × the contracted
/// size, the left factor's last dim) or a convolution; 0 for other ops.
pub fn flops(op: &Op, operands: &[&TensorType], results: &[&TensorType]) -> f64 {
    let elements = |t: Option<&&TensorType>| t.and_then(|t| t.checked_num_elements()).unwrap_or(usize::MAX) as f64;
    if let Op::Convolution { transposed, .. } = op {
        // 2 × (output elements, or input elements when transposed) × what each one sums:
        // the weight's dims after the first (`[out, in/groups, k...]`, transposed
        // `[in, out/groups, k...]`).
        let per = operands.get(1).and_then(|w| w.shape.get(1..)).map_or(1.0, |dims| dims.iter().product::<i64>().max(1) as f64);
        let base = if *transposed { elements(operands.first()) } else { elements(results.first()) };
        return 2.0 * base * per;
    }
    let a = match op {
        Op::Mm | Op::Bmm => operands.first(),
        Op::Addmm => operands.get(1),
        _ => return 0.0,
    };
    let k = a.and_then(|t| t.shape.last().copied()).unwrap_or(1).max(1) as f64;
    2.0 * elements(results.first()) * k
}

/// The time of one op with these operand and result types on `target`, in seconds (see the
/// module doc for what counts).
pub fn op_cost(op: &Op, operands: &[&TensorType], results: &[&TensorType], target: &Roofline) -> f64 {
    // A copy of these values: read once, written once.
    let copy = |types: &[&TensorType]| target.seconds(0.0, 2.0 * bytes(types));
    match op {
        Op::Input { .. } | Op::Constant { .. } => 0.0,
        Op::Permute { dims } if target.layout_copies && dims.len() >= 4 && dims.iter().enumerate().any(|(i, &d)| d != i as i64) => copy(results),
        Op::Permute { .. } | Op::View { .. } | Op::Slice { .. } => LAYOUT_SECONDS,
        Op::Convolution { channels_last: false, stride, .. } if target.layout_copies && stride.len() == 2 => {
            let own = target.seconds(flops(op, operands, results), bytes(operands) + bytes(results));
            own + operands.first().map_or(0.0, |x| copy(&[x])) + copy(results)
        }
        Op::Mm | Op::Bmm | Op::Addmm | Op::Convolution { .. } => target.seconds(flops(op, operands, results), bytes(operands) + bytes(results)),
        // Elementwise ops: half their writes (chains of them fuse into one loop, which writes
        // once: two ops in a row cost what one opaque op does).
        Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Where | Op::Clamp { .. } | Op::Convert { .. } | Op::Copy => {
            FUSED_WRITE * target.seconds(0.0, bytes(results))
        }
        // `cat` and every other op: their writes.
        _ => target.seconds(0.0, bytes(results)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxhlo_ir::{DType, Shape};

    fn t(shape: &[i64]) -> TensorType {
        TensorType::new(DType::F32, Shape::from(shape))
    }

    #[test]
    fn a_large_product_is_compute_bound_on_the_cpu_and_memory_bound_at_batch_one_on_the_tpu() {
        // BERT-base's projection at 128 tokens: 2*128*768*768 FLOPs, 3.1 MB moved.
        let (x, w, y) = (t(&[128, 768]), t(&[768, 768]), t(&[128, 768]));
        let flops = 2.0 * 128.0 * 768.0 * 768.0;
        let bytes = 4.0 * (2.0 * 128.0 * 768.0 + 768.0 * 768.0);
        let cpu = op_cost(&Op::Mm, &[&x, &w], &[&y], &CPU);
        assert_eq!(cpu, flops / CPU.peak_flops);
        let tpu = op_cost(&Op::Mm, &[&x, &w], &[&y], &ACCELERATOR);
        assert_eq!(tpu, bytes / ACCELERATOR.bytes_per_s);
    }

    #[test]
    fn elementwise_ops_pay_half_their_writes_and_layout_ops_almost_nothing() {
        let x = t(&[1000]);
        let add = op_cost(&Op::Binary(fxhlo_ir::BinaryOp::Add), &[&x, &x], &[&x], &CPU);
        assert_eq!(add, FUSED_WRITE * 4000.0 / CPU.bytes_per_s);
        let view = op_cost(&Op::View { shape: Shape::from(&[10i64, 100][..]) }, &[&x], &[&t(&[10, 100])], &CPU);
        assert_eq!(view, LAYOUT_SECONDS);
    }

    #[test]
    fn topologies_name_their_chip() {
        assert_eq!(tpu_chip("v6e:2x2").map(|c| c.name), Some("TPU v6e"));
        assert_eq!(tpu_chip("V5P:2x2x1").map(|c| c.name), Some("TPU v5p"));
        assert!(tpu_chip("v9:1").is_none());
    }
}

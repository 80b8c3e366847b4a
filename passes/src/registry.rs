//! The `Pass` trait and the registry of every pass, by name.

use fxhlo_ir::Graph;

use crate::{Error, Result};

/// A graph-to-graph transformation. Implementations are unit structs, one per file, and never
/// print or write files (the pass manager does that).
pub trait Pass: Sync {
    /// The pass's name: the same in code, on the command line and in test file names.
    fn name(&self) -> &'static str;
    /// Rewrites `graph` in place; returns whether anything changed.
    fn run(&self, graph: &mut Graph) -> Result<bool>;

    /// [`Pass::run`], with a one-line account of what the pass did beyond "changed" (the
    /// e-graph's size, why it stopped, which rules fired) for the dump report and the
    /// timings callers read. Passes with nothing more to say keep the default: `None`.
    fn run_summarized(&self, graph: &mut Graph) -> Result<(bool, Option<String>)> {
        Ok((self.run(graph)?, None))
    }
}

/// Every registered pass.
pub static PASSES: &[&dyn Pass] = &[
    &crate::AttentionRecompute,
    &crate::BatchBlocks,
    &crate::ChannelsLast,
    &crate::ChannelsLastPooling,
    &crate::CheckIndices,
    &crate::Dce,
    &crate::DepthwiseConvTaps,
    &crate::DEVICE_LAYOUT,
    &crate::EQSAT,
    &crate::EQSAT_LAYOUT,
    &crate::FoldConstantLayouts,
    &crate::Freeze,
    &crate::HoistLargeConstants,
    &crate::PointwiseConvDot,
    &crate::UnusedResults,
];

/// The highest optimization level (`-O2`: `-O1` and the e-graph optimizer).
pub const MAX_OPT_LEVEL: u8 = 2;

/// The default optimization level (`-O2`): the ablation (`scripts/bench_optimizer.py`,
/// docs/optimizer.md) showed it helps or is neutral on every model measured (issue 27), and
/// the OpInfo sweep at `-O2` found no op it breaks.
pub const DEFAULT_OPT_LEVEL: u8 = 2;

/// The kind of device a pipeline compiles for: passes that pay on one compiler's choices run
/// only there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The PJRT CPU plugin.
    Cpu,
    /// A TPU (or a TPU topology compiled for ahead of time).
    Tpu,
    /// Any other device (CUDA).
    Other,
}

impl Target {
    /// Whether this is the CPU plugin.
    pub fn is_cpu(self) -> bool {
        self == Target::Cpu
    }
}

/// The pipeline at `opt_level` for `target`, in order. `-O0` runs none of fxhlo's passes
/// (XLA alone optimizes, on the graph as imported: no device layouts, max pools with their
/// indices), so an ablation shows what each is worth.
pub fn pipeline(opt_level: u8, target: Target) -> Vec<&'static dyn Pass> {
    let cpu = target.is_cpu();
    let mut passes: Vec<&'static dyn Pass> = Vec::new();
    if opt_level == 0 {
        return passes;
    }
    // First: nothing later should rewrite or count what no output reads.
    passes.push(&crate::Dce);
    // After dce, which removes dead readers: the results nothing reads any more (max pool's
    // indices in inference) are dropped, so that no later pass or codegen computes them.
    passes.push(&crate::UnusedResults);
    if opt_level >= 2 {
        // `-O2`: the e-graph sees the model's own ops in their logical layout, after dead code
        // is gone (the cost model counts only what outputs read). On the CPU plugin with the
        // channels-last rules (`eqsat-layout`), which take the `channels-last` pass's place:
        // measured as fast on the convnets and UNets (docs/optimizer.md).
        passes.push(if cpu { &crate::EQSAT_LAYOUT } else { &crate::EQSAT_ACCELERATOR });
        if cpu {
            // After the e-graph (which moves attention's scale off the scores it splits):
            // large batched products and what follows them in blocks whose temporaries glibc
            // reuses (see the pass's doc).
            passes.push(&crate::BatchBlocks);
        }
        if target == Target::Tpu {
            // After the e-graph (which may move the scale between the product and the
            // softmax): attention's scores computed twice so that none reaches memory (see
            // the pass's doc; XLA's CPU and GPU backends fuse no product with another).
            passes.push(&crate::AttentionRecompute);
        }
    }
    if cpu && opt_level < 2 {
        // XLA's CPU backend runs convolutions channels-last and every other op along its
        // last dim: the convolutions and the ops between them on channels-last tensors (see
        // the pass's doc; at `-O2` the e-graph's rules do it). Before the passes that rewrite
        // convolutions, which keep the layout.
        passes.push(&crate::ChannelsLast);
        // 1x1 convolutions as matrix products in their own layout (see the pass's doc).
        // Before fold-constant-layouts, which folds the views of frozen weights it adds.
        passes.push(&crate::PointwiseConvDot);
    }
    // Constants (frozen weights) in the layout their users read, before XLA's slow folding.
    passes.push(&crate::FoldConstantLayouts);
    if cpu {
        // XLA's CPU backend runs grouped convolutions as a slow generic loop; other targets
        // have fast ones (see the pass's doc).
        passes.push(&crate::DepthwiseConvTaps);
    }
    // After unused-results (it rewrites only pools without indices); on every target, as
    // codegen did before it was a pass (see the pass's doc).
    passes.push(&crate::ChannelsLastPooling);
    // After every pass that folds constants (XLA cannot fold an input): large frozen weights
    // go to XLA as parameters the session uploads once, not as constants it copies. Before
    // device-layout, which gives them the layout the device's kernels take, as it does
    // resident weights (a convolution's weight in PyTorch's layout costs a transpose per call).
    passes.push(&crate::HoistLargeConstants);
    // Last: a weight's layout is chosen from its final uses, and every other pass sees the
    // logical types. On every target, as codegen did before it was a pass.
    passes.push(&crate::DEVICE_LAYOUT);
    passes
}

/// The default pipeline: `-O2` for the CPU plugin.
pub fn default_pipeline() -> Vec<&'static dyn Pass> {
    pipeline(DEFAULT_OPT_LEVEL, Target::Cpu)
}

/// The instance of `pass` for the target (`cpu`: the PJRT CPU plugin): passes that price
/// their choices on a target's figures (`eqsat`) have one instance per target, under one name.
pub fn for_target(pass: &'static dyn Pass, cpu: bool) -> &'static dyn Pass {
    if pass.name() == crate::EQSAT.name() && !cpu {
        &crate::EQSAT_ACCELERATOR
    } else {
        pass
    }
}

/// The pass named `name`, or an error listing the valid names.
pub fn lookup(name: &str) -> Result<&'static dyn Pass> {
    PASSES.iter().copied().find(|p| p.name() == name).ok_or_else(|| Error::UnknownPass {
        name: name.to_string(),
        valid: if PASSES.is_empty() {
            "(none registered yet)".to_string()
        } else {
            PASSES.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        },
    })
}

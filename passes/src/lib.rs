//! fxhlo's passes: the [`Pass`] trait, the registry of passes, and the [`PassManager`] that
//! runs a pipeline over an [`fxhlo_ir::Graph`].
//!
//! Cross-cutting work belongs to the pass manager, never to a pass: verifying after each pass,
//! timing, node counts, logging, and a hook after each pass through which the facade writes
//! dumps (this crate writes no files); bisection is `Options::max_passes` cutting the list.

mod attention_recompute;
mod batch_blocks;
mod builder;
mod channels_last;
mod channels_last_pooling;
mod check_indices;
mod dce;
pub mod eqsat;
mod depthwise_conv_taps;
mod device_layout;
mod fold_constant_layouts;
mod freeze;
mod hoist_large_constants;
mod manager;
mod pointwise_conv_dot;
mod registry;
mod unused_results;

pub use attention_recompute::{AttentionRecompute, MAX_CHAIN};
pub use batch_blocks::{BatchBlocks, BLOCK_BYTES};
pub use channels_last::ChannelsLast;
pub use channels_last_pooling::ChannelsLastPooling;
pub use check_indices::{check_name, checked_node, CheckIndices};
pub use dce::Dce;
pub use depthwise_conv_taps::DepthwiseConvTaps;
pub use eqsat::{Eqsat, EQSAT, EQSAT_ACCELERATOR, EQSAT_LAYOUT};
pub use device_layout::{DeviceLayout, DEVICE_LAYOUT};
pub use fold_constant_layouts::FoldConstantLayouts;
pub use freeze::Freeze;
pub use hoist_large_constants::{HoistLargeConstants, LARGE_CONSTANT_ELEMENTS};
pub use pointwise_conv_dot::PointwiseConvDot;
pub use unused_results::UnusedResults;
pub use manager::{PassManager, PassRun};
pub use registry::{default_pipeline, for_target, lookup, pipeline, Pass, Target, DEFAULT_OPT_LEVEL, MAX_OPT_LEVEL, PASSES};

/// A pass error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A pass name that is not in the registry; lists the valid ones.
    #[error("unknown pass `{name}`; valid passes: {valid}")]
    UnknownPass { name: String, valid: String },
    /// A pass failed on this graph.
    #[error("pass `{pass}` failed: {message}")]
    Failed { pass: &'static str, message: String },
    /// A pass left the graph invalid: a bug in that pass.
    #[error("the graph is invalid after pass `{pass}`: {source}")]
    Verify { pass: &'static str, source: fxhlo_ir::Error },
}

/// Result alias of the passes crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

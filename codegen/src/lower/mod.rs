//! Lowerings, one file per op family. Each takes the node's lowered operands with their IR
//! types and returns the MLIR values of the node's results, in order. [`lower`] is the only
//! `match` on [`Op`]: it hands each variant's fields to one function of its family, so the
//! families never match on `Op` again and a forgotten variant is a compile error.
//!
//! PyTorch's semantics win wherever StableHLO's defaults differ; each family's doc says how.

pub mod control;
pub mod creation;
pub mod distance;
pub mod elementwise;
pub mod indexing;
pub mod linalg;
pub mod normalization;
pub mod pooling;
pub mod random;
pub mod reduction;
pub mod sampling;
pub mod shape;
pub mod spectral;

use fxhlo_ir::{Graph, Op, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::{Error, Result};

/// A lowered operand: its MLIR value and IR type.
pub type Operand<'c, 'a, 't> = (Value<'c, 'a>, &'t TensorType);

/// Lowers one node of `graph` (whose regions control flow lowers) with operation `op`.
/// `results` are the node's IR result types.
///
/// The one `match` on [`Op`] in codegen: every variant is named and its fields handed to its
/// family's function, so a new variant does not compile until it is lowered here.
pub fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    graph: &Graph,
    op: &Op,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<Value<'c, 'a>>> {
    let one = |v: Result<Value<'c, 'a>>| v.map(|v| vec![v]);
    let out = results.first().ok_or_else(|| e.internal("node has no result"));
    let norm = |&eps, &has_weight, &has_bias| normalization::Norm { eps, has_weight, has_bias };
    match op {
        Op::Input { .. } | Op::Unknown { .. } => Err(e.internal(format!("{} reached lowering", op.name()))),
        // Creation.
        Op::Full { value } => one(creation::full(e, *value, out?, loc)),
        Op::Constant { data } => {
            let bytes = data.bytes().ok_or_else(|| Error::MissingData { node: e.node.clone() })?;
            one(e.dense(bytes, out?, loc))
        }
        Op::Arange { start, end: _, step } => one(creation::arange(e, *start, *step, out?, loc)),
        // Elementwise.
        Op::Unary(u) => one(elementwise::unary(e, *u, operands, out?, loc)),
        Op::Binary(b) => one(elementwise::binary(e, *b, operands, out?, loc)),
        Op::Compare(c) => one(elementwise::compare(e, *c, operands, out?, loc)),
        Op::Where => one(elementwise::select(e, operands, out?, loc)),
        Op::Clamp { min, max } => one(elementwise::clamp(e, *min, *max, operands, out?, loc)),
        Op::ClampTensor { has_min, has_max } => one(elementwise::clamp_tensor(e, *has_min, *has_max, operands, out?, loc)),
        Op::Convert { dtype: _ } | Op::Copy => one(elementwise::convert(e, operands, out?, loc)),
        Op::CopyInto => one(elementwise::copy_into(e, operands, out?, loc)),
        Op::Elu { alpha, scale, input_scale } => one(elementwise::elu(e, *alpha, *scale, *input_scale, operands, out?, loc)),
        Op::LeakyRelu { slope } => one(elementwise::leaky_relu(e, *slope, operands, out?, loc)),
        // Reductions.
        Op::Reduce { op, dims, keepdim, dtype: _ } => one(reduction::reduce(e, *op, dims, *keepdim, operands, out?, loc)),
        Op::Softmax { dim, log } => one(reduction::softmax(e, *dim, *log, operands, out?, loc)),
        Op::ArgReduce { max, dim, keepdim: _ } => reduction::arg_reduce(e, *max, *dim, operands, results, loc),
        Op::MaxMin { max, dim, keepdim: _ } => reduction::max_min(e, *max, *dim, operands, results, loc),
        Op::SoftmaxStats { dim } => reduction::softmax_stats(e, *dim, operands, results, loc),
        Op::Var { dims, correction, keepdim } => one(reduction::var(e, dims, *correction, *keepdim, operands, out?, loc)),
        Op::Cumsum { dim, dtype: _ } => one(reduction::cumsum(e, *dim, operands, out?, loc)),
        // Normalization.
        Op::LayerNorm { normalized_shape, eps, has_weight, has_bias } => {
            normalization::layer_norm(e, normalized_shape.len(), norm(eps, has_weight, has_bias), operands, results, loc)
        }
        Op::GroupNorm { groups, eps, has_weight, has_bias } => {
            normalization::group_norm(e, *groups, norm(eps, has_weight, has_bias), operands, results, loc)
        }
        Op::BatchNorm { eps, has_weight, has_bias } => normalization::batch_norm(e, norm(eps, has_weight, has_bias), operands, results, loc),
        Op::BatchNormBatchStats { eps, has_weight, has_bias } => {
            normalization::batch_norm_batch_stats(e, norm(eps, has_weight, has_bias), operands, results, loc)
        }
        // Distances.
        Op::Cdist { p } => one(distance::cdist(e, *p, operands, out?, loc)),
        Op::Pdist { p } => one(distance::pdist(e, *p, operands, out?, loc)),
        // Linear algebra.
        Op::Mm => one(linalg::mm(e, operands, out?, loc)),
        Op::Bmm => one(linalg::bmm(e, operands, out?, loc)),
        Op::Addmm => one(linalg::addmm(e, operands, out?, loc)),
        Op::Convolution { stride, padding, dilation, transposed, output_padding, groups, has_bias, channels_last } => {
            let conv = linalg::Conv {
                stride,
                padding,
                dilation,
                transposed: *transposed,
                output_padding,
                groups: *groups,
                has_bias: *has_bias,
                channels_last: *channels_last,
            };
            one(linalg::convolution(e, &conv, operands, out?, loc))
        }
        Op::Cholesky { upper } => linalg::cholesky(e, *upper, operands, results, loc),
        Op::TriangularSolve { upper, left, unit_diagonal } => {
            one(linalg::triangular_solve(e, *upper, *left, *unit_diagonal, operands, out?, loc))
        }
        Op::Fft { kind, length } => one(spectral::fft(e, *kind, length, operands, out?, loc)),
        Op::RngBitGenerator { shape: _, dtype: _ } => random::rng_bit_generator(e, operands, results, loc),
        // Pooling and resampling.
        Op::MaxPool { kernel, stride, padding, dilation, ceil_mode: _, indices, channels_last } => {
            let window = pooling::Window { kernel, stride, padding, dilation };
            pooling::max_pool(e, &window, *indices, *channels_last, operands, out?, loc)
        }
        Op::AvgPool { kernel, stride, padding, ceil_mode: _, count_include_pad, divisor_override, channels_last } => {
            let window = pooling::Window { kernel, stride, padding, dilation: &[] };
            let count = pooling::Count { include_pad: *count_include_pad, divisor_override: *divisor_override };
            one(pooling::avg_pool(e, &window, count, *channels_last, operands, out?, loc))
        }
        Op::AdaptiveAvgPool { output_size } => one(pooling::adaptive_avg_pool(e, output_size, operands, out?, loc)),
        Op::UpsampleNearest { output_size } => one(pooling::upsample_nearest(e, output_size, operands, loc)),
        Op::UpsampleBilinear { output_size, align_corners } => {
            one(pooling::upsample_bilinear(e, output_size, *align_corners, operands, out?, loc))
        }
        Op::GridSample { mode, padding, align_corners } => {
            one(sampling::grid_sample(e, *mode, *padding, *align_corners, operands, out?, loc))
        }
        // Shapes.
        Op::View { shape: _ } | Op::Unsqueeze { dim: _ } | Op::Squeeze { dims: _ } => one(shape::reshape(e, operands, out?, loc)),
        Op::Permute { dims } => one(shape::permute(e, dims, operands, out?, loc)),
        Op::Expand { sizes: _ } => one(shape::expand(e, operands, out?, loc)),
        Op::BroadcastInDim { shape: _, dims } => one(shape::broadcast_in_dim(e, dims, operands, out?, loc)),
        Op::Slice { dim, start, end, step } => one(shape::slice(e, *dim, *start, *end, *step, operands, out?, loc)),
        Op::Select { dim, index } => one(shape::select(e, *dim, *index, operands, out?, loc)),
        Op::DynamicSlice { dim, size: _ } => one(shape::dynamic_slice(e, *dim, operands, out?, loc)),
        Op::DynamicUpdateSlice { dim } => one(shape::dynamic_update_slice(e, *dim, operands, out?, loc)),
        Op::Cat { dim } => one(shape::cat(e, *dim, operands, out?, loc)),
        Op::Split { sizes: _, dim } => shape::split(e, *dim, operands, results, loc),
        Op::Pad { pad, mode } => one(shape::pad(e, pad, *mode, operands, out?, loc)),
        Op::Repeat { repeats } => one(shape::repeat(e, repeats, operands, out?, loc)),
        Op::Flip { dims } => one(shape::flip(e, dims, operands, out?, loc)),
        Op::Diagonal { offset, dim1, dim2 } => one(shape::diagonal(e, *offset, *dim1, *dim2, operands, out?, loc)),
        Op::AsStrided { size, stride, offset } => one(shape::as_strided(e, size, stride, *offset, operands, out?, loc)),
        // Indexing.
        Op::Embedding => one(indexing::embedding(e, operands, out?, loc)),
        Op::Index { present } => one(indexing::index(e, present, operands, out?, loc)),
        Op::Gather { dim } => one(indexing::gather_along(e, *dim, operands, out?, loc)),
        Op::IndexSelect { dim } => one(indexing::index_select_along(e, *dim, operands, out?, loc)),
        Op::Scatter { dim, reduce, include_self } => one(indexing::scatter_along(e, *dim, *reduce, *include_self, operands, out?, loc)),
        Op::IndexPut { present, accumulate } => one(indexing::index_put(e, present, *accumulate, operands, out?, loc)),
        Op::SelectScatter { dim, index } => one(indexing::select_scatter(e, *dim, *index, operands, out?, loc)),
        Op::SliceScatter { dim, start, end, step } => one(indexing::slice_scatter(e, *dim, *start, *end, *step, operands, out?, loc)),
        Op::MaskedScatter => one(indexing::masked_scatter(e, operands, out?, loc)),
        Op::EmbeddingBag { mode, include_last_offset, padding_idx, has_weights } => {
            let bag = indexing::Bag { mode: *mode, include_last_offset: *include_last_offset, padding_idx: *padding_idx, has_weights: *has_weights };
            indexing::embedding_bag(e, &bag, operands, results, loc)
        }
        Op::Sort { dim, descending } => indexing::sort(e, *dim, *descending, operands, results, loc),
        Op::Topk { k, dim, largest } => indexing::topk(e, *k, *dim, *largest, operands, results, loc),
        // Control flow.
        Op::Cond { then_region, else_region } => control::cond(e, graph, *then_region, *else_region, operands, results, loc),
        Op::While { cond, body } => control::while_loop(e, graph, *cond, *body, operands, results, loc),
    }
}

/// Operand `i`, or an internal error (the verifier guarantees arity, so this is a bug).
pub fn arg<'c, 'a, 't>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, 't>], i: usize) -> Result<Operand<'c, 'a, 't>> {
    operands.get(i).copied().ok_or_else(|| e.internal(format!("missing operand {i}")))
}

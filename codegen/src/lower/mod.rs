//! Lowerings, one file per op family. Each takes the node's lowered operands with their IR
//! types and returns the MLIR values of the node's results, in order.
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

use fxhlo_ir::{Op, TensorType};
use melior::ir::{Location, Value};

use crate::emit::Emitter;
use crate::{Error, Result};

/// A lowered operand: its MLIR value and IR type.
pub type Operand<'c, 'a, 't> = (Value<'c, 'a>, &'t TensorType);

/// Lowers one node. `results` are the node's IR result types.
pub fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: &Op,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<Value<'c, 'a>>> {
    let one = |v: Result<Value<'c, 'a>>| v.map(|v| vec![v]);
    let first = || results.first().ok_or_else(|| e.internal("node has no result"));
    match op {
        Op::Full { value } => one(creation::full(e, *value, first()?, loc)),
        Op::Constant { data } => {
            let bytes = data.bytes().ok_or_else(|| Error::MissingData { node: e.node.clone() })?;
            one(e.dense(bytes, first()?, loc))
        }
        Op::Arange { start, step, .. } => one(creation::arange(e, *start, *step, first()?, loc)),
        Op::Unary(u) => one(elementwise::unary(e, *u, operands, first()?, loc)),
        Op::Binary(b) => one(elementwise::binary(e, *b, operands, first()?, loc)),
        Op::Compare(c) => one(elementwise::compare(e, *c, operands, first()?, loc)),
        Op::Where => one(elementwise::select(e, operands, first()?, loc)),
        Op::Clamp { min, max } => one(elementwise::clamp(e, *min, *max, operands, first()?, loc)),
        Op::Convert { .. } | Op::Copy => one(elementwise::convert(e, operands, first()?, loc)),
        Op::Reduce { op, dims, keepdim, .. } => one(reduction::reduce(e, *op, dims, *keepdim, operands, first()?, loc)),
        Op::Softmax { dim, log } => one(reduction::softmax(e, *dim, *log, operands, first()?, loc)),
        Op::Cdist { .. } | Op::Pdist { .. } => one(distance::lower(e, op, operands, first()?, loc)),
        Op::EmbeddingBag { .. } => indexing::embedding_bag(e, op, operands, results, loc),
        Op::MaskedScatter => one(indexing::masked_scatter(e, operands, first()?, loc)),
        Op::LayerNorm { .. } | Op::GroupNorm { .. } | Op::BatchNorm { .. } | Op::BatchNormBatchStats { .. } => {
            normalization::lower(e, op, operands, results, loc)
        }
        Op::Mm | Op::Bmm | Op::Addmm => one(linalg::matmul(e, op, operands, first()?, loc)),
        Op::Convolution { .. } => one(linalg::convolution(e, op, operands, first()?, loc)),
        Op::Cholesky { upper } => linalg::cholesky(e, *upper, operands, results, loc),
        Op::Fft { kind, length } => one(spectral::fft(e, *kind, length, operands, first()?, loc)),
        Op::RngBitGenerator { .. } => random::rng_bit_generator(e, operands, results, loc),
        Op::Cond { .. } | Op::While { .. } => Err(e.internal("control flow is lowered with its regions (lower::control)")),
        Op::TriangularSolve { upper, left, unit_diagonal } => {
            one(linalg::triangular_solve(e, *upper, *left, *unit_diagonal, operands, first()?, loc))
        }
        Op::MaxPool { .. } | Op::AvgPool { .. } | Op::AdaptiveAvgPool { .. } | Op::UpsampleNearest { .. } => {
            pooling::lower(e, op, operands, results, loc)
        }
        Op::View { .. }
        | Op::Permute { .. }
        | Op::Expand { .. }
        | Op::BroadcastInDim { .. }
        | Op::Slice { .. }
        | Op::Select { .. }
        | Op::Unsqueeze { .. }
        | Op::Squeeze { .. }
        | Op::Cat { .. }
        | Op::Split { .. } => shape::lower(e, op, operands, results, loc),
        Op::Embedding | Op::Index { .. } | Op::Gather { .. } | Op::IndexSelect { .. } | Op::Scatter { .. } | Op::IndexPut { .. } => {
            one(indexing::lower(e, op, operands, first()?, loc))
        }
        Op::SelectScatter { .. } | Op::SliceScatter { .. } => one(indexing::embed(e, op, operands, first()?, loc)),
        Op::Sort { .. } | Op::Topk { .. } => indexing::sort(e, op, operands, results, loc),
        Op::Elu { .. } | Op::LeakyRelu { .. } => one(elementwise::elu_like(e, op, operands, first()?, loc)),
        Op::ClampTensor { has_min, has_max } => one(elementwise::clamp_tensor(e, *has_min, *has_max, operands, first()?, loc)),
        Op::CopyInto => one(elementwise::copy_into(e, operands, first()?, loc)),
        Op::ArgReduce { .. } | Op::MaxMin { .. } => reduction::arg_reduce(e, op, operands, results, loc),
        Op::Var { dims, correction, keepdim } => one(reduction::var(e, dims, *correction, *keepdim, operands, first()?, loc)),
        Op::Cumsum { dim, .. } => one(reduction::cumsum(e, *dim, operands, first()?, loc)),
        Op::Pad { .. } | Op::Repeat { .. } | Op::Flip { .. } | Op::Diagonal { .. } | Op::AsStrided { .. } => {
            shape::lower(e, op, operands, results, loc)
        }
        Op::UpsampleBilinear { .. } => pooling::lower(e, op, operands, results, loc),
        Op::GridSample { mode, padding, align_corners } => {
            one(sampling::grid_sample(e, *mode, *padding, *align_corners, operands, first()?, loc))
        }
        Op::Input { .. } | Op::Unknown { .. } => Err(e.internal(format!("{} reached lowering", op.name()))),
    }
}

/// Operand `i`, or an internal error (the verifier guarantees arity, so this is a bug).
pub fn arg<'c, 'a, 't>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, 't>], i: usize) -> Result<Operand<'c, 'a, 't>> {
    operands.get(i).copied().ok_or_else(|| e.internal(format!("missing operand {i}")))
}

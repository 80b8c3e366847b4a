//! The operations of the IR: a Rust enum with derived `Eq`/`Hash`, never compared as strings.
//!
//! Each variant models one ATen op or one family of them (elementwise ops share a variant and
//! differ by a small enum). `Op::Unknown` keeps any other ATen target (and any call whose
//! arguments the IR cannot express, with the reason), so import never fails because an op is
//! unknown; lowering reports those all at once, each with why. Attributes are converted to
//! and from a generic [`Attr`] list ([`Op::to_parts`], [`Op::from_parts`]) so that the printer
//! and the parser share one description of every op.

use serde::{Deserialize, Serialize};

use crate::data::TensorData;

pub use crate::attr::Scalar;
pub use crate::families::{BinaryOp, CompareOp, FftKind, ReduceOp, UnaryOp};
use crate::types::{DType, Shape};

/// How a graph input is fed, following `torch.export`'s input kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// An argument the caller passes on every call.
    UserInput,
    /// A module parameter (`nn.Parameter`), uploaded once and kept resident.
    Parameter,
    /// A module buffer (e.g. batch-norm running stats).
    Buffer,
    /// A lifted tensor constant.
    Constant,
}

impl InputKind {
    /// Every kind, in a fixed order.
    pub const ALL: [InputKind; 4] = [InputKind::UserInput, InputKind::Parameter, InputKind::Buffer, InputKind::Constant];

    /// The name used in the IR text and the trace (`user_input`, `parameter`, ...).
    pub fn name(self) -> &'static str {
        match self {
            InputKind::UserInput => "user_input",
            InputKind::Parameter => "parameter",
            InputKind::Buffer => "buffer",
            InputKind::Constant => "constant",
        }
    }
}

/// The padding mode of `Op::Pad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PadMode {
    /// `constant_pad_nd` with this fill value.
    Constant(Scalar),
    /// `reflection_pad*`: mirror without repeating the edge.
    Reflect,
    /// `replication_pad*`: repeat the edge.
    Replicate,
}

/// How `Op::Scatter` combines with the existing values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScatterReduce {
    /// Plain `scatter`: the source replaces.
    Replace,
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl ScatterReduce {
    /// Every mode, in a fixed order.
    pub const ALL: [ScatterReduce; 6] =
        [ScatterReduce::Replace, ScatterReduce::Sum, ScatterReduce::Prod, ScatterReduce::Mean, ScatterReduce::Amax, ScatterReduce::Amin];

    /// The text name (as `scatter_reduce`'s `reduce` argument; `replace` for plain scatter).
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduce::Replace => "replace",
            ScatterReduce::Sum => "sum",
            ScatterReduce::Prod => "prod",
            ScatterReduce::Mean => "mean",
            ScatterReduce::Amax => "amax",
            ScatterReduce::Amin => "amin",
        }
    }
}

// A variant that makes every node larger should be a conscious choice (box its lists).
const _: () = assert!(std::mem::size_of::<Op>() <= 120);

/// One IR operation. Result types live on the node; attributes that change semantics live
/// here. The single int list of a shape op or a reduction (`View`'s shape, `Permute`'s dims,
/// ...) is a [`Shape`], inline up to 6 values, so that importing one allocates nothing; the
/// ops with several lists (convolution, pooling) keep them as `Box<[i64]>` (two words each),
/// which keeps `Op`, and with it every node, small (120 bytes, the size of `BroadcastInDim`'s
/// two inline lists; checked below). Optional tensor operands (a norm's weight, a
/// convolution's bias) are flagged with `has_*` fields and, when present, follow the required
/// operands in the order listed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// A graph input (FX placeholder); `weight` names its tensor in the bundle's weights.
    /// `layout`, when set (the `device-layout` pass), says the executable takes the tensor
    /// permuted: the node's type is the declared one, `declared[i] = logical[layout[i]]`, and
    /// the caller uploads `permute(layout)` of the tensor (see [`crate::layout`]).
    Input { kind: InputKind, weight: Option<String>, layout: Option<Vec<usize>> },
    /// A tensor of the node's type with every element `value` (`aten.full`, scalar arguments,
    /// `aten.scalar_tensor`).
    Full { value: Scalar },
    /// A tensor of the node's type holding `data` (a frozen weight; the `freeze` pass makes
    /// them). The bytes are shared with whoever gave them (see [`TensorData`]).
    Constant { data: TensorData },
    /// `aten.arange`: `start, start + step, ...` below `end`; dtype from the result type.
    Arange { start: Scalar, end: Scalar, step: Scalar },
    /// Elementwise unary math.
    Unary(UnaryOp),
    /// Elementwise binary math with broadcasting and PyTorch type promotion.
    Binary(BinaryOp),
    /// Elementwise comparison with broadcasting; the result is bool.
    Compare(CompareOp),
    /// `aten.where.self(cond, a, b)`.
    Where,
    /// `aten.clamp` / `aten.hardtanh`: bounds are optional.
    Clamp { min: Option<Scalar>, max: Option<Scalar> },
    /// Element type conversion (`aten._to_copy` with a dtype, `prims.convert_element_type`).
    Convert { dtype: DType },
    /// A copy with no change of value (`aten.clone`, `aten._to_copy` without a dtype,
    /// `aten.alias`, contiguous layouts).
    Copy,
    /// A reduction over `dims` (all dims when empty); `dtype` is the `dtype=` argument (the
    /// input is converted to it before accumulating).
    Reduce { op: ReduceOp, dims: Shape, keepdim: bool, dtype: Option<DType> },
    /// `aten._softmax` (`log` = false) and `aten._log_softmax` (`log` = true) over `dim`.
    Softmax { dim: i64, log: bool },
    /// `aten.native_layer_norm(x, [weight], [bias])`; results: out, mean, rstd.
    LayerNorm { normalized_shape: Vec<i64>, eps: Scalar, has_weight: bool, has_bias: bool },
    /// `aten.native_group_norm(x, [weight], [bias])`; results: out, mean `[N,G]`, rstd `[N,G]`.
    GroupNorm { groups: i64, eps: Scalar, has_weight: bool, has_bias: bool },
    /// `aten._native_batch_norm_legit_no_training(x, [weight], [bias], mean, var)`;
    /// results: out and two empty tensors.
    BatchNorm { eps: Scalar, has_weight: bool, has_bias: bool },
    /// `aten._native_batch_norm_legit.no_stats(x, [weight], [bias])`: normalizes with the
    /// batch's own statistics; results: out, mean `[C]`, rstd `[C]`.
    BatchNormBatchStats { eps: Scalar, has_weight: bool, has_bias: bool },
    /// `aten.masked_scatter(x, mask, source)`: the masked positions of `x`, in row-major
    /// order, take consecutive elements of `source`.
    MaskedScatter,
    /// `aten._cdist_forward(x1, x2, p)`: p-norm distances between the rows of `[.., P, M]`
    /// and `[.., R, M]`, giving `[.., P, R]`.
    Cdist { p: Scalar },
    /// `aten._pdist_forward(x, p)`: p-norm distances between all pairs `i < j` of the rows
    /// of `[N, M]`, giving `[N (N - 1) / 2]`.
    Pdist { p: Scalar },
    /// `aten._embedding_bag(weight, indices, offsets, [per_sample_weights])`: sums (mode 0),
    /// means (1) or maxima (2) of the weight rows of each bag. Results: the bags and three
    /// bookkeeping tensors whose types come from the trace (only the first is lowered).
    EmbeddingBag { mode: i64, include_last_offset: bool, padding_idx: Option<i64>, has_weights: bool },
    /// `aten.mm`: `[m,k] x [k,n] -> [m,n]`.
    Mm,
    /// `aten.bmm`: `[b,m,k] x [b,k,n] -> [b,m,n]`.
    Bmm,
    /// `aten.addmm(bias, a, b)` with beta = alpha = 1.
    Addmm,
    /// `aten.convolution(x, w, [bias])` for 1d/2d/3d, plain or transposed. The input and
    /// result are `[N, C, spatial...]`, or with `channels_last` (the `channels-last` pass)
    /// `[N, spatial..., C]`; the weight is PyTorch's `[out, in/groups, k...]` either way.
    Convolution {
        stride: Box<[i64]>,
        padding: Box<[i64]>,
        dilation: Box<[i64]>,
        transposed: bool,
        output_padding: Box<[i64]>,
        groups: i64,
        has_bias: bool,
        channels_last: bool,
    },
    /// `aten.max_pool{1,2,3}d_with_indices`; results: values and, with `indices`, i64 indices
    /// (as imported; the `unused-results` pass drops them where nothing reads them). The window
    /// runs over the trailing dims (`[.., C, spatial...]`), or with `channels_last` (the
    /// `channels-last-pooling` pass; no indices) over the middle ones of `[N, spatial..., C]`.
    MaxPool {
        kernel: Box<[i64]>,
        stride: Box<[i64]>,
        padding: Box<[i64]>,
        dilation: Box<[i64]>,
        ceil_mode: bool,
        indices: bool,
        channels_last: bool,
    },
    /// `aten.avg_pool{1,2,3}d`, over the trailing dims, or with `channels_last` (the
    /// `channels-last` pass) over the middle ones of `[N, spatial..., C]`.
    AvgPool {
        kernel: Box<[i64]>,
        stride: Box<[i64]>,
        padding: Box<[i64]>,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
        channels_last: bool,
    },
    /// `aten._adaptive_avg_pool{1,2,3}d`.
    AdaptiveAvgPool { output_size: Vec<i64> },
    /// `aten.upsample_nearest{1,2,3}d` to `output_size`.
    UpsampleNearest { output_size: Vec<i64> },
    /// `aten.view` / `aten._unsafe_view` / `aten.reshape` to `shape` (one `-1` allowed).
    View { shape: Shape },
    /// `aten.permute`: result dim `i` is operand dim `dims[i]`.
    Permute { dims: Shape },
    /// `aten.expand`: broadcast to `sizes` (numpy rules, `-1` keeps a dim).
    Expand { sizes: Shape },
    /// `prims.broadcast_in_dim`: operand dim `i` becomes result dim `dims[i]` of `shape` (the
    /// operand's dims are 1 or equal to theirs), as `stablehlo.broadcast_in_dim`.
    BroadcastInDim { shape: Shape, dims: Shape },
    /// `aten.slice.Tensor`; `end` is clamped to the dim size like Python slicing.
    Slice { dim: i64, start: i64, end: i64, step: i64 },
    /// `aten.select.int`: index `index` of `dim`, which disappears.
    Select { dim: i64, index: i64 },
    /// `size` elements of `dim` from a start known only at run time (operand 1, an integer
    /// scalar), as `stablehlo.dynamic_slice`: the start is clamped to `[0, dim size - size]`.
    /// No ATen op maps here; passes make it (loops over blocks, `batch-blocks`).
    DynamicSlice { dim: i64, size: i64 },
    /// Operand 0 with operand 1 written over it along `dim` from a start known only at run
    /// time (operand 2, an integer scalar, clamped like [`Op::DynamicSlice`]'s), as
    /// `stablehlo.dynamic_update_slice`. Made by passes, like `DynamicSlice`.
    DynamicUpdateSlice { dim: i64 },
    /// `aten.unsqueeze`.
    Unsqueeze { dim: i64 },
    /// `aten.squeeze.dims` (all size-1 dims when `dims` is empty).
    Squeeze { dims: Shape },
    /// `aten.cat` along `dim`.
    Cat { dim: i64 },
    /// `aten.split_with_sizes` / `aten.split.Tensor`: one result per size along `dim`.
    Split { sizes: Vec<i64>, dim: i64 },
    /// `aten.embedding(weight, indices)`.
    Embedding,
    /// `aten.index.Tensor` / `aten._unsafe_index.Tensor`: `present[i]` says whether dim `i`
    /// has an index tensor (operands after the first, in order).
    Index { present: Vec<bool> },
    /// `aten.elu(x, alpha, scale, input_scale)`.
    Elu { alpha: Scalar, scale: Scalar, input_scale: Scalar },
    /// `aten.leaky_relu(x, negative_slope)`.
    LeakyRelu { slope: Scalar },
    /// `aten.clamp.Tensor(x, [min], [max])` with tensor bounds.
    ClampTensor { has_min: bool, has_max: bool },
    /// `aten.copy(self, src)`: `src` converted to `self`'s dtype and broadcast to its shape.
    CopyInto,
    /// `aten.argmax` / `aten.argmin` over `dim` (the flattened tensor when `None`); i64 result.
    ArgReduce { max: bool, dim: Option<i64>, keepdim: bool },
    /// `aten.max.dim` / `aten.min.dim`: values and i64 indices.
    MaxMin { max: bool, dim: i64, keepdim: bool },
    /// A softmax's statistics over `dim` in one pass (the `attention-recompute` pass makes
    /// it): results `max` and `sum(exp(x - max))`, `dim` dropped; the sum is 0 where the max
    /// is -inf. NaN in a row makes its sum NaN.
    SoftmaxStats { dim: i64 },
    /// `aten.var.correction`: variance over `dims` (all when empty) with `correction`.
    Var { dims: Vec<i64>, correction: Scalar, keepdim: bool },
    /// `aten.cumsum` along `dim`, in `dtype` when given.
    Cumsum { dim: i64, dtype: Option<DType> },
    /// Padding: `pad` lists (low, high) pairs from the last dim backwards, as `F.pad`.
    Pad { pad: Vec<i64>, mode: PadMode },
    /// `aten.repeat`: tile by `repeats` (may add leading dims).
    Repeat { repeats: Shape },
    /// `aten.flip` over `dims`.
    Flip { dims: Shape },
    /// `aten.diagonal(x, offset, dim1, dim2)`: the diagonal becomes the last dim.
    Diagonal { offset: i64, dim1: i64, dim2: i64 },
    /// `aten.as_strided` of a contiguous value: element `i` reads flat index
    /// `offset + sum(i_k * stride_k)`.
    AsStrided { size: Vec<i64>, stride: Vec<i64>, offset: i64 },
    /// `aten.gather(x, dim, index)`.
    Gather { dim: i64 },
    /// `aten.index_select(x, dim, index)`.
    IndexSelect { dim: i64 },
    /// `aten.scatter*` (x, index, src) along `dim`: replace, or combine with `reduce`.
    Scatter { dim: i64, reduce: ScatterReduce, include_self: bool },
    /// `aten.index_put(x, indices..., values)`; `present` as for `Index`.
    IndexPut { present: Vec<bool>, accumulate: bool },
    /// `aten.select_scatter(x, src, dim, index)`.
    SelectScatter { dim: i64, index: i64 },
    /// `aten.slice_scatter(x, src, dim, start, end, step)`.
    SliceScatter { dim: i64, start: i64, end: i64, step: i64 },
    /// `aten.sort(x, dim, descending)`: values and i64 indices (stable).
    Sort { dim: i64, descending: bool },
    /// `aten.topk(x, k, dim, largest, sorted)`: values and i64 indices.
    Topk { k: i64, dim: i64, largest: bool },
    /// `aten.upsample_bilinear2d` to `output_size`.
    UpsampleBilinear { output_size: Vec<i64>, align_corners: bool },
    /// `aten.grid_sampler_2d(input, grid)`: `mode` 0 bilinear, 1 nearest, 2 bicubic; `padding`
    /// 0 zeros, 1 border, 2 reflection.
    GridSample { mode: i64, padding: i64, align_corners: bool },
    /// `aten.linalg_cholesky_ex(A, upper)` over `[.., n, n]`: the lower (or upper) Cholesky
    /// factor, the other triangle zero, and an i32 `info` per matrix: 0 when it factored, else
    /// 1 + the first column whose diagonal came out NaN (eager gives the failing minor's order;
    /// XLA's CPU factorization fills a failed factor with NaN, so there it is 1).
    Cholesky { upper: bool },
    /// `aten.linalg_solve_triangular(A, B, upper, left, unitriangular)`: `X` with `A X = B`
    /// (`left`) or `X A = B`, reading one triangle of `A` (its diagonal taken as ones when
    /// `unit_diagonal`); batch dims broadcast.
    TriangularSolve { upper: bool, left: bool, unit_diagonal: bool },
    /// `stablehlo.fft` of kind `kind` over the innermost `length.len()` dims (1 to 3), `length`
    /// the signal sizes (`irfft`'s last is the real output's). The importer maps ATen's
    /// `_fft_c2c`/`_fft_r2c`/`_fft_c2r` here when they already have this form; the capture's
    /// decompositions bring the others to it.
    Fft { kind: FftKind, length: Vec<i64> },
    /// `stablehlo.rng_bit_generator` (three-fry): from a generator state (`i64[2]`, the bits of
    /// XLA's `ui64[2]`) the next state and a tensor of `shape` of uniformly random bits, `dtype`
    /// `i32` or `i64` (the bits of `ui32`/`ui64`). The capture's decompositions
    /// (python/fxhlo/decompositions/random.py) build every random op from these bits, and the
    /// backend threads one state through them from a per-call seed.
    RngBitGenerator { shape: Vec<i64>, dtype: DType },
    /// `torch.cond(pred, true_fn, false_fn, operands)`: operand 0 is the `bool[]` predicate,
    /// the others the branches' inputs. `then_region` and `else_region` index the graph's
    /// [regions](crate::Graph::regions); each takes the operands after the predicate and returns
    /// the node's results.
    Cond { then_region: u32, else_region: u32 },
    /// `torch.while_loop(cond_fn, body_fn, carried, additional)`: the operands are the carried
    /// values, then the additional (loop-invariant) ones. Region `cond` takes every operand and
    /// returns a `bool[]`; region `body` takes every operand and returns the next carried
    /// values; the results are the carried values once `cond` is false.
    While { cond: u32, body: u32 },
    /// A call fxhlo does not model; its result types come from the trace's meta. `reason` is
    /// `None` when fxhlo has no op for `target` at all, else why this call of a known target
    /// could not be mapped (an argument the IR cannot express), as the importer worded it;
    /// lowering reports it with the node.
    Unknown { target: String, reason: Option<String> },
}

impl Op {
    /// The op's name in the IR text (`aten.add`, `input`, `full`, or the unknown target).
    pub fn name(&self) -> &str {
        match self {
            Op::Input { .. } => "input",
            Op::Full { .. } => "full",
            Op::Constant { .. } => "constant",
            Op::Arange { .. } => "aten.arange",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Where => "aten.where",
            Op::Clamp { .. } => "aten.clamp",
            Op::Convert { .. } => "convert",
            Op::Copy => "copy",
            Op::Reduce { op, .. } => op.name(),
            Op::Softmax { log: false, .. } => "aten.softmax",
            Op::Softmax { log: true, .. } => "aten.log_softmax",
            Op::LayerNorm { .. } => "aten.layer_norm",
            Op::GroupNorm { .. } => "aten.group_norm",
            Op::BatchNorm { .. } => "aten.batch_norm",
            Op::BatchNormBatchStats { .. } => "aten.batch_norm_batch_stats",
            Op::MaskedScatter => "aten.masked_scatter",
            Op::Cdist { .. } => "aten.cdist",
            Op::Pdist { .. } => "aten.pdist",
            Op::EmbeddingBag { .. } => "aten.embedding_bag",
            Op::Mm => "aten.mm",
            Op::Bmm => "aten.bmm",
            Op::Addmm => "aten.addmm",
            Op::Convolution { .. } => "aten.convolution",
            Op::MaxPool { .. } => "aten.max_pool",
            Op::AvgPool { .. } => "aten.avg_pool",
            Op::AdaptiveAvgPool { .. } => "aten.adaptive_avg_pool",
            Op::UpsampleNearest { .. } => "aten.upsample_nearest",
            Op::View { .. } => "aten.view",
            Op::Permute { .. } => "aten.permute",
            Op::Expand { .. } => "aten.expand",
            Op::BroadcastInDim { .. } => "aten.broadcast_in_dim",
            Op::Slice { .. } => "aten.slice",
            Op::DynamicSlice { .. } => "dynamic_slice",
            Op::DynamicUpdateSlice { .. } => "dynamic_update_slice",
            Op::Select { .. } => "aten.select",
            Op::Unsqueeze { .. } => "aten.unsqueeze",
            Op::Squeeze { .. } => "aten.squeeze",
            Op::Cat { .. } => "aten.cat",
            Op::Split { .. } => "aten.split",
            Op::Embedding => "aten.embedding",
            Op::Index { .. } => "aten.index",
            Op::Elu { .. } => "aten.elu",
            Op::LeakyRelu { .. } => "aten.leaky_relu",
            Op::ClampTensor { .. } => "aten.clamp_tensor",
            Op::CopyInto => "aten.copy",
            Op::ArgReduce { max: true, .. } => "aten.argmax",
            Op::ArgReduce { max: false, .. } => "aten.argmin",
            Op::MaxMin { max: true, .. } => "aten.max",
            Op::MaxMin { max: false, .. } => "aten.min",
            Op::Var { .. } => "aten.var",
            Op::SoftmaxStats { .. } => "fxhlo.softmax_stats",
            Op::Cumsum { .. } => "aten.cumsum",
            Op::Pad { .. } => "aten.pad",
            Op::Repeat { .. } => "aten.repeat",
            Op::Flip { .. } => "aten.flip",
            Op::Diagonal { .. } => "aten.diagonal",
            Op::AsStrided { .. } => "aten.as_strided",
            Op::Gather { .. } => "aten.gather",
            Op::IndexSelect { .. } => "aten.index_select",
            Op::Scatter { .. } => "aten.scatter",
            Op::IndexPut { .. } => "aten.index_put",
            Op::SelectScatter { .. } => "aten.select_scatter",
            Op::SliceScatter { .. } => "aten.slice_scatter",
            Op::Sort { .. } => "aten.sort",
            Op::Topk { .. } => "aten.topk",
            Op::UpsampleBilinear { .. } => "aten.upsample_bilinear",
            Op::GridSample { .. } => "aten.grid_sample",
            Op::Cholesky { .. } => "aten.linalg_cholesky",
            Op::TriangularSolve { .. } => "aten.linalg_solve_triangular",
            Op::Fft { .. } => "aten.fft",
            Op::RngBitGenerator { .. } => "fxhlo.rng_bit_generator",
            Op::Cond { .. } => "higher_order.cond",
            Op::While { .. } => "higher_order.while_loop",
            Op::Unknown { target, .. } => target,
        }
    }

    /// The indices of the graph regions the op runs (empty for ops without regions).
    pub fn regions(&self) -> Vec<u32> {
        match self {
            Op::Cond { then_region, else_region } => vec![*then_region, *else_region],
            Op::While { cond, body } => vec![*cond, *body],
            _ => Vec::new(),
        }
    }

    /// How many operands the op takes, or `None` where any number is valid.
    pub fn arity(&self) -> Option<usize> {
        let opt = |b: &bool| *b as usize;
        Some(match self {
            Op::Input { .. } | Op::Full { .. } | Op::Constant { .. } | Op::Arange { .. } => 0,
            Op::Unary(_) | Op::Clamp { .. } | Op::Convert { .. } | Op::Copy | Op::Reduce { .. } => 1,
            Op::Softmax { .. } | Op::MaxPool { .. } | Op::AvgPool { .. } | Op::AdaptiveAvgPool { .. } => 1,
            Op::UpsampleNearest { .. } | Op::View { .. } | Op::Permute { .. } | Op::Expand { .. } => 1,
            Op::BroadcastInDim { .. } => 1,
            Op::Slice { .. } | Op::Select { .. } | Op::Unsqueeze { .. } | Op::Squeeze { .. } | Op::Split { .. } => 1,
            Op::Binary(_) | Op::Compare(_) | Op::Mm | Op::Bmm | Op::Embedding | Op::DynamicSlice { .. } => 2,
            Op::Where | Op::Addmm | Op::DynamicUpdateSlice { .. } => 3,
            Op::LayerNorm { has_weight, has_bias, .. } | Op::GroupNorm { has_weight, has_bias, .. } => {
                1 + opt(has_weight) + opt(has_bias)
            }
            Op::BatchNorm { has_weight, has_bias, .. } => 3 + opt(has_weight) + opt(has_bias),
            Op::Convolution { has_bias, .. } => 2 + opt(has_bias),
            Op::Index { present } => 1 + present.iter().filter(|p| **p).count(),
            Op::IndexPut { present, .. } => 2 + present.iter().filter(|p| **p).count(),
            Op::Elu { .. } | Op::LeakyRelu { .. } | Op::ArgReduce { .. } | Op::MaxMin { .. } | Op::Var { .. } => 1,
            Op::SoftmaxStats { .. } => 1,
            Op::Cumsum { .. } | Op::Pad { .. } | Op::Repeat { .. } | Op::Flip { .. } | Op::Diagonal { .. } => 1,
            Op::AsStrided { .. } | Op::Sort { .. } | Op::Topk { .. } | Op::UpsampleBilinear { .. } => 1,
            Op::ClampTensor { has_min, has_max } => 1 + opt(has_min) + opt(has_max),
            Op::CopyInto | Op::Gather { .. } | Op::IndexSelect { .. } | Op::SelectScatter { .. } | Op::SliceScatter { .. } => 2,
            Op::Scatter { .. } | Op::MaskedScatter => 3,
            Op::Cdist { .. } | Op::GridSample { .. } => 2,
            Op::Pdist { .. } | Op::Cholesky { .. } | Op::Fft { .. } | Op::RngBitGenerator { .. } => 1,
            Op::TriangularSolve { .. } => 2,
            Op::EmbeddingBag { has_weights, .. } => 3 + opt(has_weights),
            Op::BatchNormBatchStats { has_weight, has_bias, .. } => 1 + opt(has_weight) + opt(has_bias),
            Op::Cat { .. } | Op::Unknown { .. } | Op::Cond { .. } | Op::While { .. } => return None,
        })
    }
}

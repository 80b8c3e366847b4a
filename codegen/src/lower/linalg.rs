//! Matrix products (`mm`, `bmm`, `addmm`) as `stablehlo.dot_general`, and `convolution`
//! (1d/2d/3d, strided, padded, dilated, grouped, transposed) as `stablehlo.convolution`.
//!
//! f32/f64 products ask for HIGHEST precision: PyTorch computes them in full precision, while
//! XLA's default on TPU (bf16 passes) and GPU (TF32) would round the operands. A transposed
//! convolution is the gradient of a convolution: the input is dilated by the stride, padded by
//! `dilation * (k - 1) - padding` (plus `output_padding` at the end), and convolved with the
//! spatially reversed kernel whose in/out features are swapped.

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::{Attribute, Location, Value};

use super::reduction::iota_i64;
use super::{arg, Operand};
use crate::attr::{self, ComparisonDirection as Dir, ConvDimensions, DotDimensions, Precision, Transpose};
use crate::emit::Emitter;
use crate::region::Combiner;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// `precision_config` of an f32/f64 product: HIGHEST for both operands.
fn precision<'c>(e: &Emitter<'c, '_>, dtype: DType) -> Option<(&'static str, Attribute<'c>)> {
    matches!(dtype, DType::F32 | DType::F64).then(|| ("precision_config", attr::precision_config(e.ctx, &[Precision::Highest; 2])))
}

/// `dot_general(a, b)` with `dims`, of type `out`.
fn dot<'c, 'a>(e: &Emitter<'c, 'a>, a: V<'c, 'a>, b: V<'c, 'a>, dims: &DotDimensions, out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let mut attrs = vec![("dot_dimension_numbers", dims.attr(e.ctx))];
    attrs.extend(precision(e, out.dtype));
    e.op("stablehlo.dot_general", loc, &[a, b], out, &attrs)
}

/// `[m, k] x [k, n]`.
fn matrix_product() -> DotDimensions {
    DotDimensions { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDimensions::default() }
}

/// `mm(a, b)`.
pub fn mm<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (a, b) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    dot(e, a.0, b.0, &matrix_product(), out, loc)
}

/// `bmm(a, b)`: `[B, m, k] x [B, k, n]`.
pub fn bmm<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (a, b) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let dims = DotDimensions { lhs_batching: vec![0], rhs_batching: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1] };
    dot(e, a.0, b.0, &dims, out, loc)
}

/// `addmm(bias, a, b)`: the bias broadcast and added to the product.
pub fn addmm<'c, 'a>(e: &Emitter<'c, 'a>, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let (a, b) = (arg(e, operands, 1)?, arg(e, operands, 2)?);
    let product = dot(e, a.0, b.0, &matrix_product(), out, loc)?;
    let bias = arg(e, operands, 0)?;
    let bias = e.broadcast(bias.0, bias.1, out, loc)?;
    e.op("stablehlo.add", loc, &[bias, product], out, &[])
}

/// The parameters of `aten.convolution` (see [`fxhlo_ir::Op::Convolution`]).
#[derive(Clone, Copy, Debug)]
pub struct Conv<'o> {
    pub stride: &'o [i64],
    pub padding: &'o [i64],
    pub dilation: &'o [i64],
    pub transposed: bool,
    pub output_padding: &'o [i64],
    pub groups: i64,
    pub has_bias: bool,
    pub channels_last: bool,
}

/// `aten.convolution`.
pub fn convolution<'c, 'a>(e: &Emitter<'c, 'a>, conv: &Conv, operands: &[Operand<'c, 'a, '_>], out: &TensorType, loc: Location<'c>) -> Result<V<'c, 'a>> {
    let Conv { stride, padding, dilation, transposed, output_padding, groups, has_bias, channels_last } = *conv;
    let (x, w) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let n = w.1.rank() - 2;
    let per_dim = |v: &[i64], default, what| fxhlo_ir::infer::per_dim(v, n, default, what).map_err(|m| e.internal(m));
    let (stride, padding, dilation) = (per_dim(stride, 1, "stride")?, per_dim(padding, 0, "padding")?, per_dim(dilation, 1, "dilation")?);
    // The kernel is PyTorch's [out, in, k...]; the activations are NCHW-style (batch and
    // feature first, the spatial dims after them in order) or NHWC-style (feature last).
    let spatial: Vec<i64> = (2..2 + n as i64).collect();
    let (feature, act_spatial): (i64, Vec<i64>) = if channels_last { (1 + n as i64, (1..1 + n as i64).collect()) } else { (1, spatial.clone()) };
    let (weight, pads, lhs_dilation, strides, kernel_input_feature);
    if transposed {
        let out_pad = per_dim(output_padding, 0, "output_padding")?;
        // Reverse the kernel spatially; its dims are [in, out/groups, k...].
        let reversed = e.reverse(w.0, &spatial, w.1, loc)?;
        weight = if groups == 1 {
            reversed
        } else {
            // [G*Cin/G, Cout/G, k] -> [G, Cin/G, Cout/G, k] -> [Cin/G, G, Cout/G, k] -> [Cin/G, Cout, k]
            let g = groups;
            let (cin, cout_g) = (w.1.shape[0], w.1.shape[1]);
            let ks = &w.1.shape[2..];
            let t1 = TensorType::new(w.1.dtype, [vec![g, cin / g, cout_g], ks.to_vec()].concat());
            let r1 = e.reshape(reversed, w.1, &t1, loc)?;
            let mut perm = vec![1, 0, 2];
            perm.extend(3..3 + n as i64);
            let t2 = TensorType::new(w.1.dtype, [vec![cin / g, g, cout_g], ks.to_vec()].concat());
            let r2 = e.op("stablehlo.transpose", loc, &[r1], &t2, &[("permutation", attr::i64s(e.ctx, &perm))])?;
            let t3 = TensorType::new(w.1.dtype, [vec![cin / g, g * cout_g], ks.to_vec()].concat());
            e.reshape(r2, &t2, &t3, loc)?
        };
        kernel_input_feature = 0;
        pads = (0..n)
            .map(|i| {
                let k = dilation[i] * (w.1.shape[i + 2] - 1);
                (k - padding[i], k - padding[i] + out_pad[i])
            })
            .collect::<Vec<_>>();
        lhs_dilation = stride.clone();
        strides = vec![1; n];
    } else {
        weight = w.0;
        kernel_input_feature = 1;
        pads = padding.iter().map(|&p| (p, p)).collect();
        lhs_dilation = vec![1; n];
        strides = stride.clone();
    }
    let dims = ConvDimensions {
        input_batch: 0,
        input_feature: feature,
        input_spatial: act_spatial.clone(),
        kernel_input_feature,
        kernel_output_feature: 1 - kernel_input_feature,
        kernel_spatial: spatial,
        output_batch: 0,
        output_feature: feature,
        output_spatial: act_spatial,
    };
    let ctx = e.ctx;
    let mut attrs = vec![
        ("batch_group_count", attr::i64_attr(ctx, 1)),
        ("dimension_numbers", dims.attr(ctx)),
        ("feature_group_count", attr::i64_attr(ctx, groups)),
        ("window_strides", attr::i64s(ctx, &strides)),
        ("padding", attr::padding(ctx, &pads)),
        ("lhs_dilation", attr::i64s(ctx, &lhs_dilation)),
        ("rhs_dilation", attr::i64s(ctx, &dilation)),
    ];
    attrs.extend(precision(e, out.dtype));
    let y = e.op("stablehlo.convolution", loc, &[x.0, weight], out, &attrs)?;
    if !has_bias {
        return Ok(y);
    }
    let b = arg(e, operands, 2)?;
    let bb = e.broadcast_in_dim(b.0, &[feature], out, loc)?;
    e.op("stablehlo.add", loc, &[y, bb], out, &[])
}

/// `linalg_cholesky_ex` as `stablehlo.cholesky`. StableHLO leaves the other triangle and a
/// matrix that is not positive definite to the implementation: the other triangle is zeroed,
/// as PyTorch returns it, and `info` is 1 + the first column whose diagonal came out NaN (the
/// square root of a non-positive pivot): eager's failing minor where the plugin's NaN starts
/// there, 1 where it fills the whole factor with NaN (XLA's CPU plugin does).
pub fn cholesky<'c, 'a>(e: &Emitter<'c, 'a>, upper: bool, operands: &[Operand<'c, 'a, '_>], results: &[TensorType], loc: Location<'c>) -> Result<Vec<V<'c, 'a>>> {
    let a = arg(e, operands, 0)?;
    let (lt, info_t) = (&results[0], &results[1]);
    let r = a.1.rank();
    let n = a.1.shape[r - 1];
    if a.1.num_elements() == 0 {
        return Ok(vec![e.splat(Scalar::Int(0), lt, loc)?, e.splat(Scalar::Int(0), info_t, loc)?]);
    }
    let factor = e.op("stablehlo.cholesky", loc, &[a.0], lt, &[("lower", attr::bool_attr(e.ctx, !upper))])?;
    let shape = &lt.shape;
    let (row, col) = (iota_i64(e, shape, r - 2, loc)?, iota_i64(e, shape, r - 1, loc)?);
    let keep = e.compare(if upper { Dir::Le } else { Dir::Ge }, row, col, shape, loc)?;
    let zero = e.splat(Scalar::Int(0), lt, loc)?;
    let factor = e.op("stablehlo.select", loc, &[keep, factor, zero], lt, &[])?;
    // info: per matrix, the first diagonal position holding NaN, plus one; 0 when none.
    let bool_t = TensorType::new(DType::Bool, shape.to_vec());
    let nan = e.compare(Dir::Ne, factor, factor, shape, loc)?;
    let diagonal = e.compare(Dir::Eq, row, col, shape, loc)?;
    let nan_diag = e.op("stablehlo.and", loc, &[nan, diagonal], &bool_t, &[])?;
    let row_nan = e.reduce(nan_diag, &bool_t, &[r - 1], Combiner::Or, loc)?;
    let rows_t = TensorType::new(DType::I64, shape[..r - 1].to_vec());
    let rows = iota_i64(e, &rows_t.shape, r - 2, loc)?;
    let past = e.splat(Scalar::Int(n), &rows_t, loc)?;
    let at = e.op("stablehlo.select", loc, &[row_nan, rows, past], &rows_t, &[])?;
    let first_t = TensorType::new(DType::I64, shape[..r - 2].to_vec());
    let first = e.reduce(at, &rows_t, &[r - 2], Combiner::Min, loc)?;
    let failed = e.compare(Dir::Lt, first, e.splat(Scalar::Int(n), &first_t, loc)?, &first_t.shape, loc)?;
    let order = e.op("stablehlo.add", loc, &[first, e.splat(Scalar::Int(1), &first_t, loc)?], &first_t, &[])?;
    let info = e.op("stablehlo.select", loc, &[failed, order, e.splat(Scalar::Int(0), &first_t, loc)?], &first_t, &[])?;
    Ok(vec![factor, e.convert(info, &first_t, info_t.dtype, loc)?])
}

/// `linalg_solve_triangular` as `stablehlo.triangular_solve`, both operands broadcast to the
/// result's batch dims first (StableHLO wants them equal).
pub fn triangular_solve<'c, 'a>(
    e: &Emitter<'c, 'a>,
    upper: bool,
    left: bool,
    unit_diagonal: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let (a, b) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    if out.num_elements() == 0 {
        return e.splat(Scalar::Int(0), out, loc);
    }
    let r = out.rank();
    let n = a.1.shape[a.1.rank() - 1];
    let mut a_shape = out.shape[..r - 2].to_vec();
    a_shape.extend([n, n]);
    let at = TensorType::new(a.1.dtype, a_shape);
    let av = e.broadcast(a.0, a.1, &at, loc)?;
    let bv = e.broadcast(b.0, b.1, out, loc)?;
    let ctx = e.ctx;
    let attrs = [
        ("left_side", attr::bool_attr(ctx, left)),
        ("lower", attr::bool_attr(ctx, !upper)),
        ("unit_diagonal", attr::bool_attr(ctx, unit_diagonal)),
        ("transpose_a", Transpose::NoTranspose.attr(ctx)),
    ];
    e.op("stablehlo.triangular_solve", loc, &[av, bv], out, &attrs)
}

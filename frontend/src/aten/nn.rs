//! Neural-network layers: normalizations (layer, group, batch in each device's form), convolution, pooling,
//! upsampling, grid sampling and embedding bags.

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::Op;

use super::args::Got;
use super::{Call, Mapping, Operands, Unsupported};

/// Maps a layer target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    let name = c.name;
    match name {
        "native_layer_norm" => {
            let (ops, has_weight, has_bias) = affine(c, 2, 3)?;
            let op = Op::LayerNorm { normalized_shape: a.ints(1, "normalized_shape", &[])?, eps: a.scalar(4, "eps")?, has_weight, has_bias };
            c.op(op, ops)
        }
        "native_group_norm" => {
            let (ops, has_weight, has_bias) = affine(c, 1, 2)?;
            c.op(Op::GroupNorm { groups: a.int(6, "group", 0)?, eps: a.scalar(7, "eps")?, has_weight, has_bias }, ops)
        }
        "_native_batch_norm_legit_no_training" => {
            let (mut ops, has_weight, has_bias) = affine(c, 1, 2)?;
            ops.push(a.tensor(3, "running_mean")?);
            ops.push(a.tensor(4, "running_var")?);
            c.op(Op::BatchNorm { eps: a.scalar(6, "eps")?, has_weight, has_bias }, ops)
        }
        // The same evaluation-mode batch norm under its other names: PyTorch's generic op with
        // `training=False`, and the cuDNN and MIOpen kernels CUDA and ROCm pick (whose saved
        // statistics and reserve space are empty in evaluation; see `infer::agrees`).
        "native_batch_norm" | "cudnn_batch_norm" | "miopen_batch_norm" | "_native_batch_norm_legit" if c.overload == "default" => {
            if a.bool(5, "training", true)? {
                return Err(Unsupported::value("training", "true", "false (fxhlo lowers evaluation-mode batch norm; training graphs use `_native_batch_norm_legit_functional`)"));
            }
            let (mut ops, has_weight, has_bias) = affine(c, 1, 2)?;
            ops.push(a.tensor(3, "running_mean")?);
            ops.push(a.tensor(4, "running_var")?);
            let eps = if name == "cudnn_batch_norm" || name == "miopen_batch_norm" { a.scalar(7, "epsilon")? } else { a.scalar(7, "eps")? };
            c.op(Op::BatchNorm { eps, has_weight, has_bias }, ops)
        }
        "_native_batch_norm_legit" if c.overload == "no_stats" => {
            let (ops, has_weight, has_bias) = affine(c, 1, 2)?;
            if !a.bool(3, "training", true)? {
                return Err(Unsupported::value("training", "false", "true here (evaluation-mode batch norm is `_native_batch_norm_legit_no_training`)"));
            }
            c.op(Op::BatchNormBatchStats { eps: a.scalar(5, "eps")?, has_weight, has_bias }, ops)
        }
        "_embedding_bag" => {
            let has_weights = a.has(6, "per_sample_weights");
            let mut ops = smallvec![a.tensor(0, "weight")?, a.tensor(1, "indices")?, a.tensor(2, "offsets")?];
            if has_weights {
                ops.push(a.tensor(6, "per_sample_weights")?);
            }
            let padding_idx = a.opt_int(8, "padding_idx")?.filter(|&p| p >= 0);
            let op = Op::EmbeddingBag {
                mode: a.int(4, "mode", 0)?,
                include_last_offset: a.bool(7, "include_last_offset", false)?,
                padding_idx,
                has_weights,
            };
            c.op(op, ops)
        }
        "convolution" => {
            let has_bias = a.has(2, "bias");
            let mut ops = smallvec![c.x_as("input")?, a.tensor(1, "weight")?];
            if has_bias {
                ops.push(a.tensor(2, "bias")?);
            }
            let op = Op::Convolution {
                stride: a.ints(3, "stride", &[1])?,
                padding: a.ints(4, "padding", &[0])?,
                dilation: a.ints(5, "dilation", &[1])?,
                transposed: a.bool(6, "transposed", false)?,
                output_padding: a.ints(7, "output_padding", &[0])?,
                groups: a.int(8, "groups", 1)?,
                has_bias,
                channels_last: false,
            };
            c.op(op, ops)
        }
        "max_pool2d_with_indices" | "max_pool3d_with_indices" => c.op1(Op::MaxPool {
            kernel: per_dim(a.ints(1, "kernel_size", &[])?, name),
            stride: per_dim(a.ints(2, "stride", &[])?, name),
            padding: per_dim(a.ints(3, "padding", &[0])?, name),
            dilation: per_dim(a.ints(4, "dilation", &[1])?, name),
            ceil_mode: a.bool(5, "ceil_mode", false)?,
            indices: true,
            channels_last: false,
        }),
        "avg_pool1d" | "avg_pool2d" | "avg_pool3d" => c.op1(Op::AvgPool {
            kernel: per_dim(a.ints(1, "kernel_size", &[])?, name),
            stride: per_dim(a.ints(2, "stride", &[])?, name),
            padding: per_dim(a.ints(3, "padding", &[0])?, name),
            ceil_mode: a.bool(4, "ceil_mode", false)?,
            count_include_pad: a.bool(5, "count_include_pad", true)?,
            divisor_override: if name == "avg_pool1d" { None } else { a.opt_int(6, "divisor_override")? },
            channels_last: false,
        }),
        "_adaptive_avg_pool1d" | "_adaptive_avg_pool2d" | "_adaptive_avg_pool3d" | "adaptive_avg_pool1d" => {
            c.op1(Op::AdaptiveAvgPool { output_size: a.ints(1, "output_size", &[])? })
        }
        "upsample_nearest1d" | "upsample_nearest2d" | "upsample_nearest3d" => {
            // The output size is in the meta whichever overload (sizes or scale factors) was used.
            let spatial = usize::from(name.as_bytes()[name.len() - 2] - b'0');
            c.op1(Op::UpsampleNearest { output_size: spatial_dims(c, spatial)? })
        }
        "upsample_bilinear2d" => {
            c.op1(Op::UpsampleBilinear { output_size: spatial_dims(c, 2)?, align_corners: a.bool(2, "align_corners", false)? })
        }
        "grid_sampler_2d" => c.op(
            Op::GridSample {
                mode: a.int(2, "interpolation_mode", 0)?,
                padding: a.int(3, "padding_mode", 0)?,
                align_corners: a.bool(4, "align_corners", false)?,
            },
            smallvec![c.x_as("input")?, a.tensor(1, "grid")?],
        ),
        _ => Err(Unsupported::NoLowering),
    }
}

/// A normalization's operands `input, [weight], [bias]` with the weight and bias at the given
/// positions, and whether each is there.
fn affine<'a>(c: &Call<'a, '_>, weight: usize, bias: usize) -> Got<(Operands<'a>, bool, bool)> {
    let (w, b) = (c.a.has(weight, "weight"), c.a.has(bias, "bias"));
    let mut ops = smallvec![c.x_as("input")?];
    if w {
        ops.push(c.a.tensor(weight, "weight")?);
    }
    if b {
        ops.push(c.a.tensor(bias, "bias")?);
    }
    Ok((ops, w, b))
}

/// The sizes of the result's last `spatial` dims (an upsample's output size).
fn spatial_dims(c: &Call<'_, '_>, spatial: usize) -> Got<Vec<i64>> {
    let out = c.result()?;
    let k = out.rank().checked_sub(spatial).ok_or_else(|| {
        Unsupported::results(format!("the result {out} has fewer dims than the {spatial} spatial ones of the op"))
    })?;
    Ok(out.shape[k..].to_vec())
}

/// A pooling parameter with one value per spatial dim: PyTorch takes a single value (`3` or
/// `(3,)`) for all of them; `name` (`max_pool2d_with_indices`, `avg_pool3d`) says how many.
/// An empty list (a stride left to default to the kernel) stays empty.
fn per_dim<T: From<Vec<i64>> + AsRef<[i64]>>(v: T, name: &str) -> T {
    let dims = ["1d", "2d", "3d"].iter().position(|s| name.contains(s)).map_or(0, |i| i + 1);
    match v.as_ref() {
        [one] if dims > 1 => T::from(vec![*one; dims]),
        _ => v,
    }
}

//! Inference for the neural-network ops: norms, matrix products, convolution, pooling and
//! upsampling.

use smallvec::smallvec;

use super::{broadcast_shapes, result_type, InferResult};
use crate::op::{FftKind, Op};
use crate::types::{DType, Shape, TensorType};

fn one(t: TensorType) -> InferResult {
    Ok(Some(smallvec![t]))
}

/// Layer, group and batch norm: the normalized tensor plus the saved statistics.
pub fn norm(op: &Op, operands: &[&TensorType]) -> InferResult {
    let x = operands[0];
    match op {
        Op::LayerNorm { normalized_shape, .. } => {
            let k = normalized_shape.len();
            if k > x.rank() || x.shape[x.rank() - k..] != normalized_shape[..] {
                return Err(format!("layer norm over {normalized_shape:?} does not match input {x}"));
            }
            for w in &operands[1..] {
                if w.shape != *normalized_shape {
                    return Err(format!("layer norm weight/bias {w} must have shape {normalized_shape:?}"));
                }
            }
            let mut stat = Shape::from(&x.shape[..x.rank() - k]);
            stat.extend(std::iter::repeat_n(1, k));
            Ok(Some(smallvec![x.clone(), TensorType::new(x.dtype, stat.clone()), TensorType::new(x.dtype, stat)]))
        }
        Op::GroupNorm { groups, .. } => {
            if x.rank() < 2 || *groups <= 0 || x.shape[1] % groups != 0 {
                return Err(format!("group norm with {groups} groups does not fit input {x}"));
            }
            let stat = TensorType::new(x.dtype, vec![x.shape[0], *groups]);
            Ok(Some(smallvec![x.clone(), stat.clone(), stat]))
        }
        Op::BatchNormBatchStats { .. } => {
            if x.rank() < 2 || !x.dtype.is_float() {
                return Err(format!("batch norm needs a floating-point [N, C, ...] input, found {x}"));
            }
            let stat = TensorType::new(x.dtype, vec![x.shape[1]]);
            Ok(Some(smallvec![x.clone(), stat.clone(), stat]))
        }
        Op::BatchNorm { .. } => {
            if x.rank() < 2 {
                return Err(format!("batch norm needs a [N, C, ...] input, found {x}"));
            }
            for p in &operands[1..] {
                if p.shape != [x.shape[1]] {
                    return Err(format!("batch norm parameter {p} must have shape [{}]", x.shape[1]));
                }
            }
            // The saved statistics are empty in inference; their dtype follows the input (as
            // PyTorch's meta functions say; eager may differ for mixed dtypes, which does not
            // matter for an empty tensor).
            let empty = TensorType::new(x.dtype, vec![0]);
            Ok(Some(smallvec![x.clone(), empty.clone(), empty]))
        }
        _ => Err(format!("{} is not a norm", op.name())),
    }
}

/// `mm`, `bmm` and `addmm`.
pub fn matmul(op: &Op, operands: &[&TensorType]) -> InferResult {
    let dtype = result_type(operands);
    if operands.iter().any(|t| t.dtype != dtype) {
        return Err(format!("{} needs operands of one dtype", op.name()));
    }
    let (a, b) = match op {
        Op::Addmm => (operands[1], operands[2]),
        _ => (operands[0], operands[1]),
    };
    let batched = matches!(op, Op::Bmm);
    let want = if batched { 3 } else { 2 };
    let r = want - 2;
    if a.rank() != want || b.rank() != want || a.shape[r + 1] != b.shape[r] || (batched && a.shape[0] != b.shape[0]) {
        return Err(format!("{} of {a} and {b} has mismatched shapes", op.name()));
    }
    let mut shape = Shape::from(&a.shape[..r + 1]);
    shape.push(b.shape[r + 1]);
    if let Op::Addmm = op {
        if broadcast_shapes(&operands[0].shape, &shape)? != shape {
            return Err(format!("addmm bias {} does not broadcast to {shape:?}", operands[0]));
        }
    }
    one(TensorType::new(dtype, shape))
}

/// `[.., n, n]` with float elements, or an error naming `what`.
fn square_float(x: &TensorType, what: &str) -> Result<(), String> {
    if x.rank() < 2 || x.shape[x.rank() - 1] != x.shape[x.rank() - 2] || !x.dtype.is_float() {
        return Err(format!("{what} needs float square matrices [.., n, n], found {x}"));
    }
    Ok(())
}

/// `linalg_cholesky` (factor and i32 info per matrix) and `linalg_solve_triangular` (the
/// right-hand side with the batch dims of both broadcast).
pub fn factorization(op: &Op, operands: &[&TensorType]) -> InferResult {
    let a = operands[0];
    square_float(a, op.name())?;
    let r = a.rank();
    match op {
        Op::Cholesky { .. } => Ok(Some(smallvec![a.clone(), TensorType::new(DType::I32, Shape::from(&a.shape[..r - 2]))])),
        Op::TriangularSolve { left, .. } => {
            let b = operands[1];
            let n = a.shape[r - 1];
            let k = b.rank();
            let fits = k >= 2 && if *left { b.shape[k - 2] == n } else { b.shape[k - 1] == n };
            if !fits || b.dtype != a.dtype {
                return Err(format!("{} of {a} and {b}: the right-hand side must be [.., {n}, k] ([.., k, {n}] when not left) of {}", op.name(), a.dtype));
            }
            let mut shape = broadcast_shapes(&a.shape[..r - 2], &b.shape[..k - 2])?;
            shape.extend_from_slice(&b.shape[k - 2..]);
            one(TensorType::new(a.dtype, shape))
        }
        _ => Err(format!("{} is not a factorization", op.name())),
    }
}

/// `stablehlo.fft`: the signal is the innermost `length.len()` (1 to 3) dims; `rfft` takes a
/// real operand and halves the last (`n / 2 + 1`), `irfft` takes that one-sided half and
/// gives `length`'s last, real.
pub fn fft(kind: FftKind, length: &[i64], x: &TensorType) -> InferResult {
    let (r, k) = (x.rank(), length.len());
    let bad = |why: &str| Err(format!("aten.fft {} over {length:?} of {x}: {why}", kind.name()));
    if !(1..=3).contains(&k) || k > r || length.iter().any(|&n| n < 0) {
        return bad("the signal is 1 to 3 innermost dims of non-negative sizes");
    }
    let inner = &x.shape[r - k..];
    let mut shape = x.shape.clone();
    let dtype = match kind {
        FftKind::Fft | FftKind::Ifft => {
            if !x.dtype.is_complex() || inner != length {
                return bad("takes a complex operand whose innermost dims are `length`");
            }
            x.dtype
        }
        FftKind::Rfft => {
            let Some(c) = x.dtype.complex_of() else { return bad("takes an f32 or f64 operand") };
            if inner != length {
                return bad("the innermost dims must be `length`");
            }
            shape[r - 1] = length[k - 1] / 2 + 1;
            c
        }
        FftKind::Irfft => {
            let half_fits = inner[..k - 1] == length[..k - 1] && inner[k - 1] == length[k - 1] / 2 + 1;
            if !x.dtype.is_complex() || !half_fits {
                return bad("takes a complex operand whose last dim is `length[-1] / 2 + 1`");
            }
            shape[r - 1] = length[k - 1];
            x.dtype.real_part()
        }
    };
    one(TensorType::new(dtype, shape))
}

/// Output size of one spatial dim of a convolution or pooling window; `None` for a stride that
/// is not positive or sizes whose arithmetic overflows.
fn window_out(input: i64, kernel: i64, stride: i64, pad: i64, dilation: i64, ceil: bool) -> Option<i64> {
    if stride <= 0 {
        return None;
    }
    let span = input.checked_add(pad.checked_mul(2)?)?.checked_sub(dilation.checked_mul(kernel.checked_sub(1)?)?)?.checked_sub(1)?;
    let mut out = if ceil { span.checked_add(stride - 1)? } else { span }.div_euclid(stride).checked_add(1)?;
    // PyTorch: with ceil_mode the last window must start inside the input or left padding.
    if ceil && (out - 1).checked_mul(stride)? >= input.checked_add(pad)? {
        out -= 1;
    }
    Some(out)
}

/// A window parameter (stride, padding, dilation, ...) for `n` spatial dims: empty means
/// `default` everywhere, one value applies to every dim, otherwise one value per dim.
pub fn per_dim(v: &[i64], n: usize, default: i64, what: &str) -> Result<Vec<i64>, String> {
    match v.len() {
        0 => Ok(vec![default; n]),
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v.to_vec()),
        k => Err(format!("{what} has {k} values for {n} spatial dims")),
    }
}

/// `aten.convolution`, plain or transposed, channels-first or (`channels_last`) channels-last.
pub fn convolution(op: &Op, operands: &[&TensorType]) -> InferResult {
    let Op::Convolution { stride, padding, dilation, transposed, output_padding, groups, channels_last, .. } = op else {
        return Err("not a convolution".into());
    };
    if *channels_last {
        // Infer as the channels-first convolution of the same tensor, then move the channels last.
        let x = operands[0];
        if x.rank() < 3 {
            return Err(format!("channels-last convolution needs an [N, spatial..., C] input, found {x}"));
        }
        let to_first: Vec<usize> = [0, x.rank() - 1].into_iter().chain(1..x.rank() - 1).collect();
        let first = crate::layout::permuted(x, &to_first);
        let mut rest: Vec<&TensorType> = operands.to_vec();
        rest[0] = &first;
        let mut cf = op.clone();
        if let Op::Convolution { channels_last, .. } = &mut cf {
            *channels_last = false;
        }
        let out = convolution(&cf, &rest)?;
        let to_last: Vec<usize> = [0].into_iter().chain(2..x.rank()).chain([1]).collect();
        return Ok(out.map(|ts| ts.iter().map(|t| crate::layout::permuted(t, &to_last)).collect()));
    }
    let (x, w) = (operands[0], operands[1]);
    let n = w.rank().saturating_sub(2);
    if n == 0 || x.rank() != n + 2 || *groups <= 0 {
        return Err(format!("convolution of {x} with weight {w} needs [N, C, ...] input and weight of the same rank"));
    }
    let stride = per_dim(stride, n, 1, "stride")?;
    let padding = per_dim(padding, n, 0, "padding")?;
    let dilation = per_dim(dilation, n, 1, "dilation")?;
    let out_pad = per_dim(output_padding, n, 0, "output_padding")?;
    let grouped = w.shape[1].checked_mul(*groups).ok_or_else(|| format!("convolution with {groups} groups overflows"))?;
    let (in_ch, out_ch) = if *transposed { (w.shape[0], grouped) } else { (grouped, w.shape[0]) };
    if x.shape[1] != in_ch {
        return Err(format!("convolution input has {} channels, weight {w} expects {in_ch}", x.shape[1]));
    }
    if let Some(b) = operands.get(2) {
        if b.shape != [out_ch] {
            return Err(format!("convolution bias {b} must have shape [{out_ch}]"));
        }
    }
    let mut shape = Shape::from([x.shape[0], out_ch]);
    for i in 0..n {
        let (inp, k) = (x.shape[i + 2], w.shape[i + 2]);
        let o = if *transposed {
            let span = || {
                (inp - 1)
                    .checked_mul(stride[i])?
                    .checked_sub(padding[i].checked_mul(2)?)?
                    .checked_add(dilation[i].checked_mul(k - 1)?)?
                    .checked_add(out_pad[i])?
                    .checked_add(1)
            };
            span()
        } else {
            window_out(inp, k, stride[i], padding[i], dilation[i], false)
        };
        let o = o.ok_or_else(|| format!("convolution output dim {i} is not computable (stride {}, padding {}, dilation {})", stride[i], padding[i], dilation[i]))?;
        if o <= 0 {
            return Err(format!("convolution output dim {i} would be {o}"));
        }
        shape.push(o);
    }
    one(TensorType::new(result_type(&operands[..2]), shape))
}

/// Pooling and upsampling over the trailing spatial dims.
pub fn pool(op: &Op, operands: &[&TensorType]) -> InferResult {
    let x = operands[0];
    let replace_tail = |sizes: &[i64]| -> Result<Shape, String> {
        if sizes.len() > x.rank() {
            return Err(format!("{} to {sizes:?} does not fit input {x}", op.name()));
        }
        let mut shape = Shape::from(&x.shape[..x.rank() - sizes.len()]);
        shape.extend_from_slice(sizes);
        Ok(shape)
    };
    match op {
        Op::UpsampleBilinear { output_size, .. } if !x.dtype.is_float() => {
            Err(format!("bilinear upsampling of {x} needs a floating-point input (output {output_size:?})"))
        }
        Op::AdaptiveAvgPool { output_size } | Op::UpsampleNearest { output_size } | Op::UpsampleBilinear { output_size, .. } => {
            one(TensorType::new(x.dtype, replace_tail(output_size)?))
        }
        Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices, channels_last } => {
            let n = kernel.len();
            let (s, p, d) = (per_dim(stride, n, 0, "stride")?, per_dim(padding, n, 0, "padding")?, per_dim(dilation, n, 1, "dilation")?);
            let shape = if *channels_last {
                if *indices {
                    return Err(format!("a channels-last max pool takes [N, spatial..., C] ({n} spatial dims) and gives no indices, found {x} with indices"));
                }
                channels_last_pool(x, kernel, &s, &p, &d, *ceil_mode)?
            } else {
                replace_tail(&spatial(x, kernel, &s, &p, &d, *ceil_mode)?)?
            };
            match indices {
                true => Ok(Some(smallvec![TensorType::new(x.dtype, shape.clone()), TensorType::new(DType::I64, shape)])),
                false => one(TensorType::new(x.dtype, shape)),
            }
        }
        Op::AvgPool { kernel, stride, padding, ceil_mode, channels_last, .. } => {
            let n = kernel.len();
            let (s, p) = (per_dim(stride, n, 0, "stride")?, per_dim(padding, n, 0, "padding")?);
            let shape = if *channels_last {
                channels_last_pool(x, kernel, &s, &p, &vec![1; n], *ceil_mode)?
            } else {
                replace_tail(&spatial(x, kernel, &s, &p, &vec![1; n], *ceil_mode)?)?
            };
            one(TensorType::new(x.dtype, shape))
        }
        _ => Err(format!("{} is not a pooling op", op.name())),
    }
}

/// The result shape of a pool over the middle dims of a channels-last `[N, spatial..., C]`.
fn channels_last_pool(x: &TensorType, kernel: &[i64], s: &[i64], p: &[i64], d: &[i64], ceil: bool) -> Result<Shape, String> {
    let n = kernel.len();
    if x.rank() != n + 2 {
        return Err(format!("a channels-last pool takes [N, spatial..., C] ({n} spatial dims), found {x}"));
    }
    // [N, spatial...] has the spatial dims trailing, as `spatial` reads them.
    let out = spatial(&TensorType::new(x.dtype, x.shape[..n + 1].to_vec()), kernel, s, p, d, ceil)?;
    let mut shape = Shape::from(&x.shape[..1]);
    shape.extend_from_slice(&out);
    shape.push(x.shape[n + 1]);
    Ok(shape)
}

fn spatial(x: &TensorType, kernel: &[i64], stride: &[i64], pad: &[i64], dil: &[i64], ceil: bool) -> Result<Vec<i64>, String> {
    let n = kernel.len();
    if n == 0 || x.rank() < n + 1 {
        return Err(format!("pooling window {kernel:?} does not fit input {x}"));
    }
    (0..n)
        .map(|i| {
            // An empty stride means stride = kernel (PyTorch's default).
            let s = if stride[i] == 0 { kernel[i] } else { stride[i] };
            let o = window_out(x.shape[x.rank() - n + i], kernel[i], s, pad[i], dil[i], ceil)
                .ok_or_else(|| format!("pooling window {kernel:?} with stride {stride:?} and padding {pad:?} is invalid"))?;
            if o <= 0 { Err(format!("pooling output dim {i} would be {o}")) } else { Ok(o) }
        })
        .collect()
}

/// `grid_sampler_2d`: a floating-point `[N, C, H, W]` input sampled at a `[N, Ho, Wo, 2]` grid
/// of its dtype gives `[N, C, Ho, Wo]`.
pub fn grid_sample(op: &Op, operands: &[&TensorType]) -> InferResult {
    let (x, g) = (operands[0], operands[1]);
    let Op::GridSample { mode, padding, .. } = op else { return Err(format!("{} is not a grid sample", op.name())) };
    if !(0..=2).contains(mode) || !(0..=2).contains(padding) {
        return Err(format!("grid sample: unknown interpolation mode {mode} or padding mode {padding}"));
    }
    if !x.dtype.is_float() || g.dtype != x.dtype || x.rank() != 4 || g.rank() != 4 || g.shape[0] != x.shape[0] || g.shape[3] != 2 {
        return Err(format!("grid sample needs a floating-point [N, C, H, W] input and a [N, Ho, Wo, 2] grid of its dtype, found {x} and {g}"));
    }
    one(TensorType::new(x.dtype, vec![x.shape[0], x.shape[1], g.shape[1], g.shape[2]]))
}

/// `cdist` and `pdist`.
pub fn distance(op: &Op, operands: &[&TensorType]) -> InferResult {
    let x = operands[0];
    if !x.dtype.is_float() {
        return Err(format!("{} needs floating-point inputs, found {x}", op.name()));
    }
    match op {
        Op::Cdist { .. } => {
            let y = operands[1];
            let (rx, ry) = (x.rank(), y.rank());
            if rx < 2 || ry < 2 || x.shape[rx - 1] != y.shape[ry - 1] || y.dtype != x.dtype {
                return Err(format!("cdist of {x} and {y} needs [.., P, M] and [.., R, M]"));
            }
            let mut shape = broadcast_shapes(&x.shape[..rx - 2], &y.shape[..ry - 2])?;
            shape.push(x.shape[rx - 2]);
            shape.push(y.shape[ry - 2]);
            one(TensorType::new(x.dtype, shape))
        }
        Op::Pdist { .. } => {
            if x.rank() != 2 {
                return Err(format!("pdist needs a [N, M] input, found {x}"));
            }
            let n = x.shape[0];
            one(TensorType::new(x.dtype, vec![n * (n - 1).max(0) / 2]))
        }
        _ => Err(format!("{} is not a distance", op.name())),
    }
}

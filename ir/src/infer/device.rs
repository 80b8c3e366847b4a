//! Results whose form depends on the device PyTorch traced an op for: the saved statistics of
//! the normalizations. The main result of such an op is fixed by its operands; the auxiliary
//! ones (which an inference graph never reads, but which a trace records) are what the
//! device's kernel returns:
//!
//! | op | CPU | CUDA |
//! |---|---|---|
//! | `_native_batch_norm_legit_no_training`, `native_batch_norm` (eval) | `x.dtype[0]` (`f32[0]` for 16-bit `x` with f32 running stats) | `f32[C]` (the running mean, `rsqrt(var + eps)`), `f64[C]` for f64 |
//! | `cudnn_batch_norm`, `miopen_batch_norm` (eval) | | `x.dtype[0]` twice, then a `u8[0]` reserve |
//! | `native_layer_norm` | mean and rstd in `x.dtype` | in `f32` for 16-bit `x` |
//! | `native_group_norm`, training batch norm | statistics in `x.dtype` | the same, or `f32` for 16-bit `x` (kernels that accumulate) |
//!
//! [`agrees`] accepts each of these forms, validated (shapes, dtypes, the two statistics alike)
//! and nothing else, so that one graph imports whichever device traced it; the main result is
//! always compared exactly. Codegen computes the statistics in the form the node's types say.

use crate::op::Op;
use crate::types::{DType, TensorType};

/// Whether `actual` are acceptable result types of `op` over `operands`, whose inferred result
/// types are `inferred`: equal, or equal but for auxiliary results in one of the device forms
/// of the module doc.
pub fn agrees(op: &Op, operands: &[&TensorType], inferred: &[TensorType], actual: &[TensorType]) -> bool {
    if inferred == actual {
        return true;
    }
    let Some(&x) = operands.first() else { return false };
    // The main result is never device-dependent.
    if inferred.first() != actual.first() {
        return false;
    }
    let stats_dtype_ok = |d: DType, extra: Option<DType>| d == x.dtype || d == accumulate(x.dtype) || Some(d) == extra;
    match op {
        Op::LayerNorm { .. } | Op::GroupNorm { .. } | Op::BatchNormBatchStats { .. } => {
            let [_, mean, rstd] = actual else { return false };
            mean == rstd && mean.shape == inferred[1].shape && stats_dtype_ok(mean.dtype, None)
        }
        Op::BatchNorm { has_weight, has_bias, .. } => {
            let (mean, rstd, reserve) = match actual {
                [_, mean, rstd] => (mean, rstd, None),
                [_, mean, rstd, reserve] => (mean, rstd, Some(reserve)),
                _ => return false,
            };
            // The running mean's dtype (operand after the input, weight and bias).
            let running = operands.get(1 + usize::from(*has_weight) + usize::from(*has_bias)).map(|t| t.dtype);
            let channels = x.shape.get(1).copied().unwrap_or(-1);
            let shape_ok = mean.shape.as_slice() == [0] || mean.shape.as_slice() == [channels];
            let reserve_ok = reserve.is_none_or(|r| r.dtype == DType::U8 && r.shape.as_slice() == [0]);
            mean == rstd && shape_ok && stats_dtype_ok(mean.dtype, running) && reserve_ok
        }
        _ => false,
    }
}

/// The dtype PyTorch's kernels accumulate statistics in: f32 for 16-bit floats.
pub fn accumulate(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::infer;
    use crate::Scalar;
    use DType::{BF16, F32, F64, I64, U8};

    fn t(d: DType, s: &[i64]) -> TensorType {
        TensorType::new(d, s.to_vec())
    }

    fn check(op: &Op, operands: &[&TensorType], actual: &[TensorType]) -> bool {
        let inferred = infer(op, operands).unwrap().unwrap();
        agrees(op, operands, &inferred, actual)
    }

    #[test]
    fn batch_norm_accepts_the_cpu_cuda_and_cudnn_forms_only() {
        let op = Op::BatchNorm { eps: Scalar::float(1e-5), has_weight: true, has_bias: false };
        let (x, c) = (t(BF16, &[2, 3, 4, 4]), t(BF16, &[3]));
        let ops = [&x, &c, &c, &c];
        let out = x.clone();
        assert!(check(&op, &ops, &[out.clone(), t(BF16, &[0]), t(BF16, &[0])]), "CPU");
        assert!(check(&op, &ops, &[out.clone(), t(F32, &[3]), t(F32, &[3])]), "CUDA");
        assert!(check(&op, &ops, &[out.clone(), t(BF16, &[0]), t(BF16, &[0]), t(U8, &[0])]), "cuDNN");
        assert!(!check(&op, &ops, &[t(F32, &[2, 3, 4, 4]), t(F32, &[3]), t(F32, &[3])]), "main result");
        assert!(!check(&op, &ops, &[out.clone(), t(F32, &[4]), t(F32, &[4])]), "not the channels");
        assert!(!check(&op, &ops, &[out.clone(), t(F64, &[3]), t(F64, &[3])]), "no such dtype");
        assert!(!check(&op, &ops, &[out.clone(), t(F32, &[3]), t(F32, &[0])]), "unlike statistics");
        assert!(!check(&op, &ops, &[out.clone(), t(F32, &[3]), t(F32, &[3]), t(I64, &[0])]), "reserve");
        // A 16-bit input with f32 running statistics: the statistics' dtype is accepted.
        let f = t(F32, &[3]);
        assert!(check(&op, &[&x, &c, &f, &f], &[out, t(F32, &[0]), t(F32, &[0])]));
    }

    #[test]
    fn layer_norm_accepts_f32_statistics_for_16_bit_inputs() {
        let op = Op::LayerNorm { normalized_shape: vec![4], eps: Scalar::float(1e-5), has_weight: false, has_bias: false };
        let x = t(BF16, &[2, 4]);
        assert!(check(&op, &[&x], &[x.clone(), t(F32, &[2, 1]), t(F32, &[2, 1])]));
        assert!(check(&op, &[&x], &[x.clone(), t(BF16, &[2, 1]), t(BF16, &[2, 1])]));
        assert!(!check(&op, &[&x], &[x.clone(), t(F32, &[2]), t(F32, &[2])]));
        let x32 = t(F32, &[2, 4]);
        assert!(!check(&op, &[&x32], &[x32.clone(), t(F64, &[2, 1]), t(F64, &[2, 1])]));
    }
}

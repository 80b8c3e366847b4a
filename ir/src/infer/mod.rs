//! Shape and dtype inference: the result types each op must have, given its operand types.
//! The importer checks a trace's meta against it and the verifier re-checks it after every
//! pass. Rules follow PyTorch (broadcasting, type promotion, Python slicing).

mod device;
mod index;
mod nn;
mod promote;
mod shape;

pub use device::{accumulate, agrees};
pub use nn::per_dim;
pub use promote::{promote_types, result_type};
pub use shape::{is_legacy_empty, slice_bounds};

use smallvec::smallvec;

use crate::graph::Results;
use crate::op::{BinaryOp, Op, ReduceOp};
use crate::types::{DType, Shape, TensorType};

/// Inference outcome: the result types (inline for one result: inferring a node's type
/// allocates nothing up to rank 6), `None` for ops whose types come from the trace (inputs,
/// `full`, `arange`, unknown ops), or a message for the user (the caller adds the node's name).
pub type InferResult = Result<Option<Results>, String>;

/// The result types of `op` applied to `operands`.
pub fn infer(op: &Op, operands: &[&TensorType]) -> InferResult {
    if let Some(n) = op.arity() {
        if operands.len() != n {
            return Err(format!("{} takes {n} operand(s), got {}", op.name(), operands.len()));
        }
    }
    let t = |dtype: DType, shape: Shape| Ok(Some(smallvec![TensorType::new(dtype, shape)]));
    let x = operands.first().copied();
    match op {
        // Embedding bag's bookkeeping results depend on the CPU code path; the trace says.
        Op::Input { .. } | Op::Full { .. } | Op::Constant { .. } | Op::Arange { .. } | Op::Unknown { .. } | Op::EmbeddingBag { .. } => Ok(None),
        // Their types are their regions' (the verifier checks them against the regions).
        Op::Cond { .. } | Op::While { .. } => Ok(None),
        Op::Unary(u) => {
            let x = x.ok_or("missing operand")?;
            let dtype = match u {
                u if u.returns_bool() => DType::Bool,
                u if u.returns_real_part() => x.dtype.real_part(),
                u if u.is_float_math() => promote::float_result(x.dtype),
                _ => x.dtype,
            };
            t(dtype, x.shape.clone())
        }
        Op::Binary(b) => {
            let shape = broadcast_all(operands)?;
            let promoted = result_type(operands);
            let dtype = match b {
                b if b.returns_bool() => DType::Bool,
                BinaryOp::Div | BinaryOp::Atan2 | BinaryOp::Copysign | BinaryOp::Hypot | BinaryOp::Zeta | BinaryOp::Polygamma
                | BinaryOp::Nextafter => promote::float_result(promoted),
                BinaryOp::Complex => {
                    if operands.iter().any(|o| o.dtype.is_complex()) {
                        return Err(format!("aten.complex takes real parts, found {} and {}", operands[0], operands[1]));
                    }
                    // f16 parts would give PyTorch's complex32, which XLA has no type for.
                    promoted.complex_of().ok_or_else(|| {
                        format!("aten.complex of {promoted} parts: fxhlo supports complex64 and complex128 (f32 or f64 parts)")
                    })?
                }
                _ => promoted,
            };
            t(dtype, shape)
        }
        Op::Compare(_) => t(DType::Bool, broadcast_all(operands)?),
        Op::Where => {
            if operands[0].dtype != DType::Bool {
                return Err(format!("aten.where condition must be bool, found {}", operands[0].dtype));
            }
            t(result_type(&operands[1..]), broadcast_all(operands)?)
        }
        Op::Clamp { min, max } => {
            // Scalar bounds promote like wrapped numbers: a float bound on an integer tensor
            // gives the default float.
            let x = x.ok_or("missing operand")?;
            let float_bound = [min, max].iter().any(|b| matches!(b, Some(crate::Scalar::Float(_))));
            let dtype = if float_bound && !x.dtype.is_float() { DType::F32 } else { x.dtype };
            t(dtype, x.shape.clone())
        }
        Op::Copy | Op::Softmax { .. } => {
            let x = x.ok_or("missing operand")?;
            t(x.dtype, x.shape.clone())
        }
        Op::Convert { dtype } => t(*dtype, x.ok_or("missing operand")?.shape.clone()),
        Op::Reduce { op, dims, keepdim, dtype: out_dtype } => {
            let x = x.ok_or("missing operand")?;
            let dtype = match op {
                _ if out_dtype.is_some() => out_dtype.unwrap_or(x.dtype), // the dtype= argument wins
                ReduceOp::Sum | ReduceOp::Prod if !x.dtype.is_float() => DType::I64,
                ReduceOp::Any | ReduceOp::All => DType::Bool,
                ReduceOp::Mean if !x.dtype.is_float() => {
                    return Err(format!("aten.mean needs a floating-point input, found {}", x.dtype))
                }
                _ => x.dtype,
            };
            t(dtype, shape::reduce(&x.shape, dims, *keepdim)?)
        }
        Op::LayerNorm { .. } | Op::GroupNorm { .. } | Op::BatchNorm { .. } | Op::BatchNormBatchStats { .. } => nn::norm(op, operands),
        Op::Cdist { .. } | Op::Pdist { .. } => nn::distance(op, operands),
        Op::MaskedScatter => {
            let (x, mask, src) = (operands[0], operands[1], operands[2]);
            if mask.dtype != DType::Bool || broadcast_shapes(&mask.shape, &x.shape)? != x.shape || src.dtype != x.dtype {
                return Err(format!("aten.masked_scatter needs a bool mask broadcasting to {x} and a source of its dtype, found {mask} and {src}"));
            }
            t(x.dtype, x.shape.clone())
        }
        Op::Mm | Op::Bmm | Op::Addmm => nn::matmul(op, operands),
        Op::Cholesky { .. } | Op::TriangularSolve { .. } => nn::factorization(op, operands),
        Op::Fft { kind, length } => nn::fft(*kind, length, x.ok_or("missing operand")?),
        Op::RngBitGenerator { shape, dtype } => {
            let state = x.ok_or("missing operand")?;
            if state.dtype != DType::I64 || state.shape.as_slice() != [2] {
                return Err(format!("fxhlo.rng_bit_generator takes an i64[2] generator state, found {state}"));
            }
            if !matches!(dtype, DType::I32 | DType::I64) || shape.iter().any(|&d| d < 0) {
                return Err(format!("fxhlo.rng_bit_generator gives i32 or i64 bits of a non-negative shape, not {dtype}{shape:?}"));
            }
            Ok(Some(smallvec![state.clone(), TensorType::new(*dtype, Shape::from(shape.clone()))]))
        }
        Op::Convolution { .. } => nn::convolution(op, operands),
        Op::MaxPool { .. } | Op::AvgPool { .. } | Op::AdaptiveAvgPool { .. } | Op::UpsampleNearest { .. } => {
            nn::pool(op, operands)
        }
        Op::View { .. }
        | Op::Permute { .. }
        | Op::Expand { .. }
        | Op::BroadcastInDim { .. }
        | Op::Slice { .. }
        | Op::DynamicSlice { .. }
        | Op::DynamicUpdateSlice { .. }
        | Op::Select { .. }
        | Op::Unsqueeze { .. }
        | Op::Squeeze { .. }
        | Op::Cat { .. }
        | Op::Split { .. }
        | Op::Embedding
        | Op::Index { .. }
        | Op::Pad { .. }
        | Op::Repeat { .. }
        | Op::Flip { .. }
        | Op::Diagonal { .. }
        | Op::AsStrided { .. } => shape::infer(op, operands),
        Op::Elu { .. } | Op::LeakyRelu { .. } => {
            let x = x.ok_or("missing operand")?;
            if !x.dtype.is_float() {
                return Err(format!("{} needs a floating-point input, found {}", op.name(), x.dtype));
            }
            t(x.dtype, x.shape.clone())
        }
        Op::ClampTensor { .. } => t(result_type(operands), broadcast_all(operands)?),
        Op::CopyInto => {
            let (dst, src) = (operands[0], operands[1]);
            if broadcast_shapes(&src.shape, &dst.shape)? != dst.shape {
                return Err(format!("aten.copy: source {src} does not broadcast to {dst}"));
            }
            t(dst.dtype, dst.shape.clone())
        }
        Op::ArgReduce { dim, keepdim, .. } => {
            let x = x.ok_or("missing operand")?;
            let shape = match dim {
                Some(d) => shape::reduce(&x.shape, &[*d], *keepdim)?,
                None if *keepdim => Shape::from_elem(1, x.rank()),
                None => Shape::new(),
            };
            t(DType::I64, shape)
        }
        Op::MaxMin { dim, keepdim, .. } => {
            let x = x.ok_or("missing operand")?;
            let shape = shape::reduce(&x.shape, &[*dim], *keepdim)?;
            Ok(Some(smallvec![TensorType::new(x.dtype, shape.clone()), TensorType::new(DType::I64, shape)]))
        }
        Op::SoftmaxStats { dim } => {
            let x = x.ok_or("missing operand")?;
            if !x.dtype.is_float() {
                return Err(format!("fxhlo.softmax_stats needs a floating-point input, found {}", x.dtype));
            }
            let shape = shape::reduce(&x.shape, &[*dim], false)?;
            Ok(Some(smallvec![TensorType::new(x.dtype, shape.clone()), TensorType::new(x.dtype, shape)]))
        }
        Op::Var { dims, keepdim, .. } => {
            let x = x.ok_or("missing operand")?;
            if !x.dtype.is_float() {
                return Err(format!("aten.var needs a floating-point input, found {}", x.dtype));
            }
            t(x.dtype, shape::reduce(&x.shape, dims, *keepdim)?)
        }
        Op::Cumsum { dim, dtype: out_dtype } => {
            let x = x.ok_or("missing operand")?;
            normalize_dim(*dim, x.rank())?;
            let dtype = match out_dtype {
                Some(d) => *d,
                None if x.dtype.is_float() => x.dtype,
                None => DType::I64,
            };
            t(dtype, x.shape.clone())
        }
        Op::Gather { .. }
        | Op::IndexSelect { .. }
        | Op::Scatter { .. }
        | Op::IndexPut { .. }
        | Op::SelectScatter { .. }
        | Op::SliceScatter { .. }
        | Op::Sort { .. }
        | Op::Topk { .. } => index::infer(op, operands),
        Op::UpsampleBilinear { .. } => nn::pool(op, operands),
        Op::GridSample { .. } => nn::grid_sample(op, operands),
    }
}

/// Numpy-style broadcast of two shapes.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Shape, String> {
    if a == b {
        return Ok(Shape::from(a));
    }
    let rank = a.len().max(b.len());
    let mut out = Shape::from_elem(0, rank);
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        *o = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        };
    }
    Ok(out)
}

fn broadcast_all(operands: &[&TensorType]) -> Result<Shape, String> {
    let Some((first, rest)) = operands.split_first() else { return Ok(Shape::new()) };
    rest.iter().try_fold(first.shape.clone(), |acc, t| broadcast_shapes(&acc, &t.shape))
}

/// `d` as an index into a tensor of rank `rank` (negative counts from the end).
pub fn normalize_dim(d: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    // A scalar accepts dim 0 and -1, as in PyTorch.
    let r_eff = r.max(1);
    if d < -r_eff || d >= r_eff {
        return Err(format!("dimension {d} out of range for rank {rank}"));
    }
    Ok(if d < 0 { (d + r_eff) as usize } else { d as usize })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::UnaryOp;
    use crate::DType::{Bool, F32, I64};

    fn t(s: &[i64]) -> TensorType {
        TensorType::new(F32, s.to_vec())
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
        assert!(broadcast_shapes(&[2, 3], &[4]).unwrap_err().contains("do not broadcast"));
    }

    #[test]
    fn elementwise_dtypes() {
        let i = TensorType::new(I64, vec![3]);
        let r = infer(&Op::Binary(BinaryOp::Div), &[&i, &i]).unwrap().unwrap();
        assert_eq!(r[0].dtype, F32, "integer true division gives the default float");
        let r = infer(&Op::Unary(UnaryOp::IsNan), &[&t(&[2])]).unwrap().unwrap();
        assert_eq!(r[0].dtype, Bool);
        let r = infer(&Op::Reduce { op: ReduceOp::Sum, dims: vec![0].into(), keepdim: false, dtype: None }, &[&i]).unwrap().unwrap();
        assert_eq!(r[0], TensorType::new(I64, vec![]));
    }

    #[test]
    fn complex_values_and_transforms() {
        use crate::op::FftKind;
        use crate::DType::{C128, C64, F16, F64};
        let c = TensorType::new(C64, vec![2, 8]);
        // |z| and the parts are real; conj and exp stay complex.
        for (u, want) in [(UnaryOp::Abs, F32), (UnaryOp::Real, F32), (UnaryOp::Imag, F32), (UnaryOp::Conj, C64), (UnaryOp::Exp, C64)] {
            assert_eq!(infer(&Op::Unary(u), &[&c]).unwrap().unwrap()[0].dtype, want, "{u:?}");
        }
        let parts = |d| TensorType::new(d, vec![3]);
        let complex = |a: &TensorType, b: &TensorType| infer(&Op::Binary(BinaryOp::Complex), &[a, b]);
        assert_eq!(complex(&parts(F32), &parts(F32)).unwrap().unwrap()[0].dtype, C64);
        assert_eq!(complex(&parts(F64), &parts(F32)).unwrap().unwrap()[0].dtype, C128);
        assert!(complex(&parts(F16), &parts(F16)).unwrap_err().contains("complex64 and complex128"));
        let fft = |kind, length: &[i64], x: &TensorType| infer(&Op::Fft { kind, length: length.to_vec() }, &[x]);
        assert_eq!(fft(FftKind::Fft, &[8], &c).unwrap().unwrap()[0], c);
        // A real signal of 8 has 8 / 2 + 1 = 5 one-sided bins; 9 also has 5, so irfft names it.
        let r = fft(FftKind::Rfft, &[8], &t(&[2, 8])).unwrap().unwrap();
        assert_eq!(r[0], TensorType::new(C64, vec![2, 5]));
        let back = fft(FftKind::Irfft, &[9], &r[0]).unwrap().unwrap();
        assert_eq!(back[0], t(&[2, 9]));
        assert!(fft(FftKind::Fft, &[4], &c).unwrap_err().contains("innermost dims are `length`"));
        assert!(fft(FftKind::Fft, &[2, 2, 2, 1], &TensorType::new(C64, vec![2, 2, 2, 1])).is_err());
    }

    #[test]
    fn random_bits_come_with_the_next_state() {
        let state = TensorType::new(DType::I64, vec![2]);
        let rng = |shape: &[i64], dtype| infer(&Op::RngBitGenerator { shape: shape.to_vec(), dtype }, &[&state]);
        let out = rng(&[3, 5], DType::I32).unwrap().unwrap();
        assert_eq!(out.as_slice(), [state.clone(), TensorType::new(DType::I32, vec![3, 5])]);
        assert!(rng(&[3], DType::F32).unwrap_err().contains("i32 or i64 bits"));
        let bad_state = TensorType::new(DType::I32, vec![2]);
        let err = infer(&Op::RngBitGenerator { shape: vec![3], dtype: DType::I64 }, &[&bad_state]).unwrap_err();
        assert!(err.contains("i64[2] generator state"), "{err}");
    }
}

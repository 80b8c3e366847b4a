//! Shape and dtype inference: the result types each op must have, given its operand types.
//!
//! PyTorch semantics: elementwise ops broadcast numpy-style (align trailing dims; a dim of 1
//! stretches). Type promotion between different dtypes is not modelled yet, so mixed-dtype
//! operands are rejected as unsupported rather than guessed.

use crate::op::Op;
use crate::types::TensorType;

/// Why inference failed: a message for the user (the caller adds the node's name).
pub type InferResult = std::result::Result<Option<Vec<TensorType>>, String>;

/// The result types of `op` applied to `operands`; `Ok(None)` for ops without inference
/// (inputs, constants and unknown ops, whose types come from the trace).
pub fn infer(op: &Op, operands: &[&TensorType]) -> InferResult {
    if let Some(n) = op.arity() {
        if operands.len() != n {
            return Err(format!("{} takes {n} operand(s), got {}", op.name(), operands.len()));
        }
    }
    let one = |t: TensorType| Ok(Some(vec![t]));
    match op {
        Op::Input { .. } | Op::Full { .. } | Op::Unknown { .. } => Ok(None),
        Op::Add | Op::Mul => {
            let dtype = same_dtype(op, operands)?;
            one(TensorType::new(dtype, broadcast_shapes(&operands[0].shape, &operands[1].shape)?))
        }
        Op::Relu => one(operands[0].clone()),
        Op::Mm => one(TensorType::new(same_dtype(op, operands)?, matmul_shape(operands[0], operands[1])?)),
        Op::Addmm => {
            let dtype = same_dtype(op, operands)?;
            let mm = matmul_shape(operands[1], operands[2])?;
            let out = broadcast_shapes(&operands[0].shape, &mm)?;
            if out != mm {
                return Err(format!(
                    "aten.addmm bias of shape {:?} does not broadcast to {:?}",
                    operands[0].shape, mm
                ));
            }
            one(TensorType::new(dtype, mm))
        }
        Op::Permute { dims } => {
            let x = operands[0];
            let mut seen = vec![false; x.rank()];
            let mut shape = Vec::with_capacity(dims.len());
            for &d in dims {
                let d = normalize_dim(d, x.rank())?;
                if std::mem::replace(&mut seen[d], true) {
                    return Err(format!("aten.permute dims {dims:?} repeat dimension {d}"));
                }
                shape.push(x.shape[d]);
            }
            if dims.len() != x.rank() {
                return Err(format!("aten.permute dims {dims:?} do not match rank {}", x.rank()));
            }
            one(TensorType::new(x.dtype, shape))
        }
        Op::Expand { sizes } => {
            let x = operands[0];
            if sizes.len() < x.rank() {
                return Err(format!("aten.expand to {sizes:?} has fewer dims than {:?}", x.shape));
            }
            let lead = sizes.len() - x.rank();
            let mut shape = Vec::with_capacity(sizes.len());
            for (i, &s) in sizes.iter().enumerate() {
                let src = if i >= lead { Some(x.shape[i - lead]) } else { None };
                let d = match (s, src) {
                    (-1, Some(d)) => d,
                    (s, _) if s < 0 => return Err(format!("aten.expand size {s} at dim {i} is invalid")),
                    (s, Some(d)) if d != s && d != 1 => {
                        return Err(format!("aten.expand cannot expand dim {} of size {d} to {s}", i - lead))
                    }
                    (s, _) => s,
                };
                shape.push(d);
            }
            one(TensorType::new(x.dtype, shape))
        }
    }
}

/// Numpy-style broadcast of two shapes.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> std::result::Result<Vec<i64>, String> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        };
    }
    Ok(out)
}

fn same_dtype(op: &Op, operands: &[&TensorType]) -> std::result::Result<crate::DType, String> {
    let d = operands[0].dtype;
    if let Some(o) = operands.iter().find(|t| t.dtype != d) {
        return Err(format!(
            "{} mixes dtypes {d} and {} (type promotion is not supported yet)",
            op.name(),
            o.dtype
        ));
    }
    Ok(d)
}

fn matmul_shape(a: &TensorType, b: &TensorType) -> std::result::Result<Vec<i64>, String> {
    if a.rank() != 2 || b.rank() != 2 || a.shape[1] != b.shape[0] {
        return Err(format!("matrix product of {a} and {b} needs [m,k] x [k,n]"));
    }
    Ok(vec![a.shape[0], b.shape[1]])
}

fn normalize_dim(d: i64, rank: usize) -> std::result::Result<usize, String> {
    let r = rank as i64;
    if d < -r || d >= r.max(1) {
        return Err(format!("dimension {d} out of range for rank {rank}"));
    }
    Ok(if d < 0 { (d + r) as usize } else { d as usize })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType::F32;

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
    fn addmm_and_permute_shapes() {
        let r = infer(&Op::Addmm, &[&t(&[16]), &t(&[2, 8]), &t(&[8, 16])]).unwrap().unwrap();
        assert_eq!(r, vec![t(&[2, 16])]);
        let r = infer(&Op::Permute { dims: vec![1, 0] }, &[&t(&[3, 5])]).unwrap().unwrap();
        assert_eq!(r, vec![t(&[5, 3])]);
        assert!(infer(&Op::Mm, &[&t(&[2, 3]), &t(&[4, 5])]).is_err());
    }

    #[test]
    fn expand_keeps_minus_one_and_rejects_bad_sizes() {
        let r = infer(&Op::Expand { sizes: vec![4, -1, 3] }, &[&t(&[2, 1])]).unwrap().unwrap();
        assert_eq!(r, vec![t(&[4, 2, 3])]);
        assert!(infer(&Op::Expand { sizes: vec![3, 3] }, &[&t(&[2, 1])]).is_err());
    }
}

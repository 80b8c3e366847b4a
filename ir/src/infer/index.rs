//! Inference for gather/scatter-style indexing and sorting: `gather`, `index_select`,
//! `scatter*`, `index_put`, `select_scatter`, `slice_scatter`, `sort`, `topk`.

use super::{broadcast_shapes, normalize_dim, InferResult};
use crate::op::Op;
use crate::types::{DType, TensorType};

fn int_index(t: &TensorType, what: &str) -> Result<(), String> {
    if t.dtype.is_float() || t.dtype == DType::Bool {
        return Err(format!("{what} index must be an integer tensor, found {t}"));
    }
    Ok(())
}

/// Indexing and sorting ops.
pub fn infer(op: &Op, operands: &[&TensorType]) -> InferResult {
    let x = operands[0];
    let rank = x.rank();
    let one = |t: TensorType| Ok(Some(smallvec::smallvec![t]));
    match op {
        Op::Gather { dim } => {
            let idx = operands[1];
            normalize_dim(*dim, rank)?;
            int_index(idx, "aten.gather")?;
            if idx.rank() != rank.max(1) && !(rank == 0 && idx.rank() <= 1) {
                return Err(format!("aten.gather index {idx} must have the rank of {x}"));
            }
            one(TensorType::new(x.dtype, idx.shape.clone()))
        }
        Op::IndexSelect { dim } => {
            let idx = operands[1];
            let d = normalize_dim(*dim, rank)?;
            int_index(idx, "aten.index_select")?;
            if idx.rank() > 1 {
                return Err(format!("aten.index_select index {idx} must be 1-d"));
            }
            let mut shape = x.shape.clone();
            if rank > 0 {
                shape[d] = idx.shape.first().copied().unwrap_or(1);
            }
            one(TensorType::new(x.dtype, shape))
        }
        Op::Scatter { dim, .. } => {
            let (idx, src) = (operands[1], operands[2]);
            normalize_dim(*dim, rank)?;
            int_index(idx, "aten.scatter")?;
            if idx.rank() != rank || (src.rank() != 0 && src.rank() != rank) {
                return Err(format!("aten.scatter needs index {idx} and source {src} of the rank of {x}"));
            }
            one(x.clone())
        }
        Op::IndexPut { present, .. } => {
            let idx = &operands[1..operands.len() - 1];
            let values = operands[operands.len() - 1];
            for t in idx {
                int_index(t, "aten.index_put")?;
            }
            if present.len() > rank {
                return Err(format!("aten.index_put with {} index positions on {x}", present.len()));
            }
            // The values broadcast to the shape `x[indices]` has.
            let mut gather_operands = vec![x];
            gather_operands.extend_from_slice(idx);
            let gathered = super::shape::infer(&Op::Index { present: present.clone() }, &gather_operands)?
                .and_then(|v| v.into_iter().next())
                .ok_or("aten.index_put: no indexed shape")?;
            if broadcast_shapes(&values.shape, &gathered.shape)? != gathered.shape {
                return Err(format!("aten.index_put values {values} do not broadcast to the indexed shape {:?}", gathered.shape));
            }
            one(x.clone())
        }
        Op::SelectScatter { dim, index } => {
            let src = operands[1];
            let d = super::shape::sized_dim(op, *dim, rank)?;
            let mut want = x.shape.clone();
            want.remove(d);
            if src.shape != want || *index < -x.shape[d] || *index >= x.shape[d] {
                return Err(format!("aten.select_scatter of {src} into {x} at dim {d} index {index} does not fit"));
            }
            one(x.clone())
        }
        Op::SliceScatter { dim, start, end, step } => {
            let d = super::shape::sized_dim(op, *dim, rank)?;
            let (lo, hi) = super::shape::slice_bounds(*start, *end, x.shape[d]);
            let mut want = x.shape.clone();
            // ceil((hi - lo) / step), written so that a huge step cannot overflow.
            want[d] = if hi > lo && *step > 0 { (hi - lo - 1) / step + 1 } else { 0 };
            if operands[1].shape != want {
                return Err(format!("aten.slice_scatter source {} must have shape {want:?}", operands[1]));
            }
            one(x.clone())
        }
        Op::Sort { dim, .. } => {
            normalize_dim(*dim, rank)?;
            Ok(Some(smallvec::smallvec![x.clone(), TensorType::new(DType::I64, x.shape.clone())]))
        }
        Op::Topk { k, dim, .. } => {
            let d = normalize_dim(*dim, rank)?;
            let size = if rank == 0 { 1 } else { x.shape[d] };
            if *k < 0 || *k > size {
                return Err(format!("aten.topk k = {k} out of range for size {size}"));
            }
            let mut shape = x.shape.clone();
            if rank > 0 {
                shape[d] = *k;
            }
            Ok(Some(smallvec::smallvec![TensorType::new(x.dtype, shape.clone()), TensorType::new(DType::I64, shape)]))
        }
        _ => Err(format!("{} is not an indexing op", op.name())),
    }
}

//! Inference for the shape and indexing ops: view, permute, expand, slice, select, squeeze,
//! unsqueeze, cat, embedding, index, and the result shape of reductions.

use smallvec::{smallvec, SmallVec};

use super::{broadcast_shapes, normalize_dim, result_type, InferResult};
use crate::op::Op;
use crate::types::{DType, Shape, TensorType};

fn one(t: TensorType) -> InferResult {
    Ok(Some(smallvec![t]))
}

/// Per-dim flags, inline for the usual ranks.
type DimFlags = SmallVec<[bool; 8]>;

/// Shape of a reduction over `dims` (all dims when empty).
pub fn reduce(shape: &[i64], dims: &[i64], keepdim: bool) -> Result<Shape, String> {
    let mut reduced: DimFlags = smallvec![dims.is_empty(); shape.len()];
    for &d in dims {
        // A scalar accepts dim 0 and -1 and has nothing to mark.
        if let Some(r) = reduced.get_mut(normalize_dim(d, shape.len())?) {
            *r = true;
        }
    }
    Ok(shape
        .iter()
        .zip(&reduced)
        .filter_map(|(&s, &r)| match (r, keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect())
}

/// A dim of a tensor that must have dims: PyTorch refuses to slice, select, split or
/// concatenate a 0-d tensor, whose dims 0 and -1 [`normalize_dim`] accepts (reductions need it).
pub fn sized_dim(op: &Op, d: i64, rank: usize) -> Result<usize, String> {
    if rank == 0 {
        return Err(format!("{} cannot be applied to a 0-d tensor", op.name()));
    }
    normalize_dim(d, rank)
}

/// A dynamic slice's start: an integer scalar.
fn start_index(op: &Op, t: &TensorType) -> Result<(), String> {
    if t.rank() != 0 || !matches!(t.dtype, DType::I64 | DType::I32) {
        return Err(format!("{}'s start must be an i32 or i64 scalar, not {t}", op.name()));
    }
    Ok(())
}

/// Shape ops.
pub fn infer(op: &Op, operands: &[&TensorType]) -> InferResult {
    let x = operands.first().copied().ok_or("missing operand")?;
    let rank = x.rank();
    let with = |shape: Shape| one(TensorType::new(x.dtype, shape));
    match op {
        Op::View { shape } => {
            let total = x.shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d));
            let known = shape.iter().filter(|&&d| d != -1).try_fold(1i64, |acc, &d| acc.checked_mul(d));
            let (Some(total), Some(known)) = (total, known) else {
                return Err(format!("view of {x} as {shape:?}: the element count overflows"));
            };
            let holes = shape.iter().filter(|&&d| d == -1).count();
            let mut out = Shape::from(&shape[..]);
            match holes {
                0 if known == total => {}
                1 if known > 0 && total % known == 0 => {
                    out.iter_mut().filter(|d| **d == -1).for_each(|d| *d = total / known);
                }
                1 if known == 0 && total == 0 => return Err(format!("view {shape:?} of an empty tensor is ambiguous")),
                _ => return Err(format!("view of {x} as {shape:?}: element counts differ")),
            }
            if out.iter().any(|&d| d < 0) {
                return Err(format!("view to {shape:?} has a negative size"));
            }
            with(out)
        }
        Op::Permute { dims } => {
            if dims.len() != rank {
                return Err(format!("aten.permute dims {dims:?} do not match rank {rank}"));
            }
            let mut seen: DimFlags = smallvec![false; rank];
            let mut shape = Shape::new();
            for &d in dims {
                let d = normalize_dim(d, rank)?;
                if std::mem::replace(&mut seen[d], true) {
                    return Err(format!("aten.permute dims {dims:?} repeat dimension {d}"));
                }
                shape.push(x.shape[d]);
            }
            with(shape)
        }
        Op::BroadcastInDim { shape, dims } => {
            if dims.len() != rank || shape.iter().any(|&s| s < 0) {
                return Err(format!("broadcast_in_dim of {:?} to {shape:?} along {dims:?} is invalid", x.shape));
            }
            let mut last = None;
            for (i, &d) in dims.iter().enumerate() {
                let ok = usize::try_from(d).ok().filter(|&d| d < shape.len() && last.is_none_or(|l| d > l));
                let Some(d) = ok else {
                    return Err(format!("broadcast_in_dim dims {dims:?} must increase within rank {}", shape.len()));
                };
                last = Some(d);
                if x.shape[i] != 1 && x.shape[i] != shape[d] {
                    return Err(format!("broadcast_in_dim cannot put dim {i} of {:?} at dim {d} of {shape:?}", x.shape));
                }
            }
            with(shape.clone())
        }
        Op::Expand { sizes } => {
            if sizes.len() < rank {
                return Err(format!("aten.expand to {sizes:?} has fewer dims than {:?}", x.shape));
            }
            let lead = sizes.len() - rank;
            let mut shape = Shape::new();
            for (i, &s) in sizes.iter().enumerate() {
                let src = if i >= lead { Some(x.shape[i - lead]) } else { None };
                shape.push(match (s, src) {
                    (-1, Some(d)) => d,
                    (s, _) if s < 0 => return Err(format!("aten.expand size {s} at dim {i} is invalid")),
                    (s, Some(d)) if d != s && d != 1 => {
                        return Err(format!("aten.expand cannot expand dim {} of size {d} to {s}", i - lead))
                    }
                    (s, _) => s,
                });
            }
            with(shape)
        }
        Op::Slice { dim, start, end, step } => {
            let d = sized_dim(op, *dim, rank)?;
            if *step <= 0 {
                return Err(format!("aten.slice step must be positive, found {step}"));
            }
            let (lo, hi) = slice_bounds(*start, *end, x.shape[d]);
            let mut shape = x.shape.clone();
            // ceil((hi - lo) / step), written so that a huge step cannot overflow.
            shape[d] = if hi > lo { (hi - lo - 1) / step + 1 } else { 0 };
            with(shape)
        }
        Op::DynamicSlice { dim, size } => {
            let d = sized_dim(op, *dim, rank)?;
            start_index(op, operands[1])?;
            if *size < 0 || *size > x.shape[d] {
                return Err(format!("dynamic_slice of {size} elements from dim {d} of {x}"));
            }
            let mut shape = x.shape.clone();
            shape[d] = *size;
            with(shape)
        }
        Op::DynamicUpdateSlice { dim } => {
            let d = sized_dim(op, *dim, rank)?;
            let update = operands[1];
            start_index(op, operands[2])?;
            let fits = update.dtype == x.dtype
                && update.rank() == rank
                && update.shape.iter().zip(&x.shape).enumerate().all(|(i, (&u, &s))| if i == d { u <= s } else { u == s });
            if !fits {
                return Err(format!("dynamic_update_slice of {update} into {x} along dim {d}"));
            }
            one(x.clone())
        }
        Op::Select { dim, index } => {
            let d = sized_dim(op, *dim, rank)?;
            let size = x.shape[d];
            if *index < -size || *index >= size {
                return Err(format!("aten.select index {index} out of range for size {size}"));
            }
            let mut shape = x.shape.clone();
            shape.remove(d);
            with(shape)
        }
        Op::Unsqueeze { dim } => {
            let d = normalize_dim(*dim, rank + 1)?;
            let mut shape = x.shape.clone();
            shape.insert(d, 1);
            with(shape)
        }
        Op::Squeeze { dims } => {
            let mut drop: DimFlags = smallvec![dims.is_empty(); rank];
            for &d in dims {
                if rank > 0 {
                    drop[normalize_dim(d, rank)?] = true;
                }
            }
            with(x.shape.iter().zip(&drop).filter(|(&s, &dr)| !(dr && s == 1)).map(|(&s, _)| s).collect())
        }
        Op::Cat { dim } => {
            // PyTorch skips legacy empty 1-d tensors (shape [0]) whatever the other ranks are.
            let real: Vec<&TensorType> = operands.iter().copied().filter(|t| !is_legacy_empty(t)).collect();
            let Some(&x) = real.first() else {
                return one(TensorType::new(result_type(operands), vec![0]));
            };
            let rank = x.rank();
            let d = sized_dim(op, *dim, rank)?;
            let mut shape = x.shape.clone();
            for t in &real[1..] {
                if t.rank() != rank || (0..rank).any(|i| i != d && t.shape[i] != x.shape[i]) {
                    return Err(format!("aten.cat along dim {d}: {t} does not match {x}"));
                }
                shape[d] = shape[d].checked_add(t.shape[d]).ok_or_else(|| format!("aten.cat along dim {d}: the size overflows"))?;
            }
            one(TensorType::new(result_type(operands), shape))
        }
        Op::Split { sizes, dim } => {
            let d = sized_dim(op, *dim, rank)?;
            let total = sizes.iter().try_fold(0i64, |acc, &s| if s < 0 { None } else { acc.checked_add(s) });
            if total != Some(x.shape[d]) {
                return Err(format!("aten.split sizes {sizes:?} do not add up to dim {d} of {x}"));
            }
            Ok(Some(
                sizes
                    .iter()
                    .map(|&s| {
                        let mut shape = x.shape.clone();
                        shape[d] = s;
                        TensorType::new(x.dtype, shape)
                    })
                    .collect(),
            ))
        }
        Op::Embedding => {
            let (w, idx) = (operands[0], operands[1]);
            if w.rank() != 2 || idx.dtype.is_float() || idx.dtype == crate::DType::Bool {
                return Err(format!("aten.embedding needs a [V, D] weight and integer indices, found {w} and {idx}"));
            }
            let mut shape = idx.shape.clone();
            shape.push(w.shape[1]);
            one(TensorType::new(w.dtype, shape))
        }
        Op::Index { present } => index(x, present, &operands[1..]),
        Op::Pad { pad, mode } => {
            if pad.len() % 2 != 0 || pad.len() / 2 > rank {
                return Err(format!("padding {pad:?} must be (low, high) pairs for at most {rank} dims"));
            }
            let mut shape = x.shape.clone();
            for (i, pair) in pad.chunks(2).enumerate() {
                let d = rank - 1 - i;
                let size = shape[d].checked_add(pair[0]).and_then(|s| s.checked_add(pair[1]));
                let size = size.ok_or_else(|| format!("padding {pair:?} of dim {d} overflows"))?;
                let limit = match mode {
                    crate::PadMode::Reflect => shape[d] - 1,
                    _ => i64::MAX,
                };
                if size < 0 || pair[0].max(pair[1]) > limit {
                    return Err(format!("padding {pair:?} of dim {d} (size {}) is invalid for {mode:?}", shape[d]));
                }
                shape[d] = size;
            }
            with(shape)
        }
        Op::Repeat { repeats } => {
            if repeats.len() < rank || repeats.iter().any(|&r| r < 0) {
                return Err(format!("aten.repeat {repeats:?} needs at least {rank} non-negative counts"));
            }
            let lead = repeats.len() - rank;
            let shape: Option<Shape> =
                repeats.iter().enumerate().map(|(i, &r)| if i < lead { Some(r) } else { r.checked_mul(x.shape[i - lead]) }).collect();
            with(shape.ok_or_else(|| format!("aten.repeat {repeats:?} of {x} overflows"))?)
        }
        Op::Flip { dims } => {
            for &d in dims {
                normalize_dim(d, rank)?;
            }
            with(x.shape.clone())
        }
        Op::Diagonal { offset, dim1, dim2 } => {
            let (a, b) = (normalize_dim(*dim1, rank)?, normalize_dim(*dim2, rank)?);
            if a == b {
                return Err(format!("aten.diagonal dims {dim1} and {dim2} are the same"));
            }
            let len = if *offset >= 0 { x.shape[a].min(x.shape[b] - offset) } else { (x.shape[a] + offset).min(x.shape[b]) };
            let mut shape: Shape = (0..rank).filter(|&i| i != a && i != b).map(|i| x.shape[i]).collect();
            shape.push(len.max(0));
            with(shape)
        }
        Op::AsStrided { size, stride, offset } => {
            if size.len() != stride.len() || size.iter().chain(stride).any(|&v| v < 0) || *offset < 0 {
                return Err(format!("aten.as_strided size {size:?} and stride {stride:?} are invalid"));
            }
            let total = x.shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d));
            let last = size.iter().zip(stride).try_fold(*offset, |acc, (&n, &s)| acc.checked_add((n - 1).max(0).checked_mul(s)?));
            let (Some(total), Some(last)) = (total, last) else {
                return Err(format!("aten.as_strided size {size:?} and stride {stride:?} overflow"));
            };
            if size.iter().all(|&n| n > 0) && last >= total {
                return Err(format!("aten.as_strided reads element {last} of a tensor of {total}"));
            }
            with(Shape::from(&size[..]))
        }
        _ => Err(format!("{} is not a shape op", op.name())),
    }
}

/// A 1-d tensor of size 0, which `aten.cat` ignores (legacy behaviour kept by PyTorch).
pub fn is_legacy_empty(t: &TensorType) -> bool {
    t.shape == [0]
}

/// Python slicing bounds of `[start, end)` on a dim of `size`: negatives count from the end,
/// both clamp to `[0, size]`.
pub fn slice_bounds(start: i64, end: i64, size: i64) -> (i64, i64) {
    let norm = |v: i64| if v < 0 { (v.saturating_add(size)).max(0) } else { v.min(size) };
    (norm(start), norm(end))
}

/// Advanced indexing: index tensors broadcast together; their shape replaces the indexed dims
/// in place when those are adjacent, and goes first otherwise (NumPy's rule).
fn index(x: &TensorType, present: &[bool], indices: &[&TensorType]) -> InferResult {
    if present.len() > x.rank() || indices.is_empty() {
        return Err(format!("aten.index with {} index positions on {x}", present.len()));
    }
    if let Some(b) = indices.iter().find(|t| t.dtype == crate::DType::Bool || t.dtype.is_float()) {
        return Err(format!("aten.index with a {} index: only integer indices are supported (boolean masks have data-dependent shapes)", b.dtype));
    }
    let bshape = indices.iter().try_fold(Shape::new(), |acc, t| broadcast_shapes(&acc, &t.shape))?;
    let positions: Vec<usize> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| i).collect();
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    let rest = |from: usize| x.shape[from..].iter().copied();
    let mut shape = Shape::new();
    if adjacent {
        shape.extend_from_slice(&x.shape[..positions[0]]);
        shape.extend_from_slice(&bshape);
        shape.extend(rest(positions[positions.len() - 1] + 1));
    } else {
        shape.extend_from_slice(&bshape);
        shape.extend((0..x.rank()).filter(|i| !positions.contains(i)).map(|i| x.shape[i]));
    }
    one(TensorType::new(x.dtype, shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType::{F32, I64};

    fn t(s: &[i64]) -> TensorType {
        TensorType::new(F32, s.to_vec())
    }

    #[test]
    fn dynamic_slices_take_an_integer_scalar_start_and_keep_other_dims() {
        let start = TensorType::new(I64, vec![]);
        let r = infer(&Op::DynamicSlice { dim: 1, size: 4 }, &[&t(&[2, 16, 3]), &start]).unwrap().unwrap();
        assert_eq!(r[0], t(&[2, 4, 3]));
        // A float start, a vector start, and more elements than the dim has are refused.
        assert!(infer(&Op::DynamicSlice { dim: 1, size: 4 }, &[&t(&[2, 16, 3]), &t(&[])]).is_err());
        assert!(infer(&Op::DynamicSlice { dim: 1, size: 4 }, &[&t(&[2, 16, 3]), &TensorType::new(I64, vec![1])]).is_err());
        assert!(infer(&Op::DynamicSlice { dim: 1, size: 17 }, &[&t(&[2, 16, 3]), &start]).is_err());
        // An update is the target's type but along `dim`, where it may be shorter.
        let op = Op::DynamicUpdateSlice { dim: 1 };
        assert_eq!(infer(&op, &[&t(&[2, 16, 3]), &t(&[2, 4, 3]), &start]).unwrap().unwrap()[0], t(&[2, 16, 3]));
        assert!(infer(&op, &[&t(&[2, 16, 3]), &t(&[1, 4, 3]), &start]).is_err());
        assert!(infer(&op, &[&t(&[2, 16, 3]), &TensorType::new(I64, vec![2, 4, 3]), &start]).is_err());
    }

    #[test]
    fn slicing_follows_python() {
        // x[1:] on size 5 (FX passes end = i64::MAX), x[-2:], x[::2]: hand-computed lengths.
        assert_eq!(slice_bounds(1, i64::MAX, 5), (1, 5));
        assert_eq!(slice_bounds(-2, i64::MAX, 5), (3, 5));
        let r = infer(&Op::Slice { dim: 0, start: 0, end: 5, step: 2 }, &[&t(&[5, 3])]).unwrap().unwrap();
        assert_eq!(r[0].shape, vec![3, 3]);
    }

    #[test]
    fn view_infers_the_hole() {
        let r = infer(&Op::View { shape: vec![-1, 4].into() }, &[&t(&[2, 3, 4])]).unwrap().unwrap();
        assert_eq!(r[0].shape, vec![6, 4]);
        assert!(infer(&Op::View { shape: vec![5, -1].into() }, &[&t(&[2, 3])]).is_err());
    }

    #[test]
    fn index_places_broadcast_indices() {
        let i = TensorType::new(I64, vec![4, 1]);
        let j = TensorType::new(I64, vec![8]);
        // x[:, :, i, j] on [2, 3, 16, 16]: adjacent indices broadcast to [4, 8] in place.
        let r = infer(&Op::Index { present: vec![false, false, true, true] }, &[&t(&[2, 3, 16, 16]), &i, &j]).unwrap().unwrap();
        assert_eq!(r[0].shape, vec![2, 3, 4, 8]);
        // x[i, :, j]: separated indices go first.
        let r = infer(&Op::Index { present: vec![true, false, true] }, &[&t(&[5, 6, 7]), &i, &j]).unwrap().unwrap();
        assert_eq!(r[0].shape, vec![4, 8, 6]);
    }
}

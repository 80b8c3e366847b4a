//! Permutations of a tensor's dims: the device layout of an input (`Op::Input`'s `layout`,
//! chosen by the `device-layout` pass) and the layout changes passes write as `aten.permute`.
//!
//! A layout `perm` stores a logical tensor permuted: `declared[i] = logical[perm[i]]`, which is
//! what `aten.permute` with dims `perm` computes; `aten.permute` with dims `inverse(perm)`
//! brings it back.

use crate::types::TensorType;

/// `ty` with its dims permuted by `perm` (`result[i] = ty[perm[i]]`; `perm` must be a
/// permutation of `ty`'s dims).
pub fn permuted(ty: &TensorType, perm: &[usize]) -> TensorType {
    TensorType::new(ty.dtype, perm.iter().map(|&p| ty.shape[p]).collect::<Vec<_>>())
}

/// The inverse permutation: `inverse(p)[p[i]] = i`.
pub fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        if let Some(slot) = inv.get_mut(p) {
            *slot = i;
        }
    }
    inv
}

/// Whether `perm` holds each of `0..perm.len()` exactly once.
pub fn is_permutation(perm: &[usize]) -> bool {
    let mut seen = vec![false; perm.len()];
    perm.iter().all(|&p| p < perm.len() && !std::mem::replace(&mut seen[p], true))
}

/// Whether `perm` keeps every dim in place.
pub fn is_identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

/// The logical type of an input declared as `declared` in layout `perm` (the inverse of
/// [`permuted`]).
pub fn logical(declared: &TensorType, perm: &[usize]) -> TensorType {
    permuted(declared, &inverse(perm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn permuting_and_back_is_the_identity() {
        let t = TensorType::new(DType::F32, vec![4, 3, 5, 7]);
        let perm = [2, 3, 1, 0];
        let declared = permuted(&t, &perm);
        assert_eq!(declared.shape.as_slice(), [5, 7, 3, 4]);
        assert_eq!(logical(&declared, &perm), t);
        assert_eq!(inverse(&perm), vec![3, 2, 0, 1]);
        assert!(is_permutation(&perm) && !is_identity(&perm) && is_identity(&[0, 1]));
        assert!(!is_permutation(&[0, 0]) && !is_permutation(&[2, 0]));
    }
}

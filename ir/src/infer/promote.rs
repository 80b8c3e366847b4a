//! PyTorch's type promotion for elementwise ops (`torch.result_type`).
//!
//! Categories are ordered bool < integer < float. Tensors with dimensions decide the result
//! unless a zero-dimensional operand is of a higher category, in which case it does. (Python
//! scalars reach the IR as 0-d `full` nodes whose dtype the importer already set from the
//! node's meta, which gives PyTorch's answer for wrapped numbers too.)

use crate::types::{DType, TensorType};

fn category(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        d if d.is_float() => 2,
        d if d.is_complex() => 3,
        _ => 1,
    }
}

/// The promoted type of two dtypes (`torch.promote_types`).
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (category(a), category(b)) {
        // Complex with complex or with a float: parts wide enough for both (c64 with f64 is c128).
        (3, _) | (_, 3) => {
            if matches!(a, C128 | F64) || matches!(b, C128 | F64) {
                C128
            } else {
                C64
            }
        }
        (x, y) if x != y => {
            if x > y {
                a
            } else {
                b
            }
        }
        (2, 2) => match (a, b) {
            (F64, _) | (_, F64) => F64,
            (F32, _) | (_, F32) => F32,
            // f16 with bf16: neither holds the other.
            _ => F32,
        },
        _ => {
            // Integers: the wider wins; u8 with a signed type needs the next signed width.
            let rank = |d: DType| match d {
                I8 | U8 => 1,
                I16 => 2,
                I32 => 3,
                _ => 4,
            };
            match (a, b) {
                (U8, I8) | (I8, U8) => I16,
                _ if rank(a) >= rank(b) => a,
                _ => b,
            }
        }
    }
}

/// The result dtype of an elementwise op over `operands`.
pub fn result_type(operands: &[&TensorType]) -> DType {
    let fold = |it: &mut dyn Iterator<Item = DType>| it.reduce(promote_types);
    let dimensioned = fold(&mut operands.iter().filter(|t| t.rank() > 0).map(|t| t.dtype));
    let zero_dim = fold(&mut operands.iter().filter(|t| t.rank() == 0).map(|t| t.dtype));
    match (dimensioned, zero_dim) {
        (Some(d), Some(z)) if category(z) > category(d) => z,
        (Some(d), _) => d,
        (None, Some(z)) => z,
        (None, None) => DType::F32,
    }
}

/// The dtype float math gives on `d`: integers and bool give the default float (f32); float
/// and complex types keep theirs.
pub fn float_result(d: DType) -> DType {
    if d.is_float() || d.is_complex() {
        d
    } else {
        DType::F32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promotion_matches_torch() {
        // Each expected value is what torch.promote_types / torch.result_type give.
        assert_eq!(promote_types(F16, BF16), F32);
        assert_eq!(promote_types(U8, I8), I16);
        assert_eq!(promote_types(Bool, I32), I32);
        assert_eq!(promote_types(I64, F16), F16);
        assert_eq!(promote_types(C64, F64), C128);
        assert_eq!(promote_types(I64, C64), C64);
        assert_eq!(promote_types(F16, C64), C64);
        let t = |d, s: &[i64]| TensorType::new(d, s.to_vec());
        // f16 tensor + f32 0-d tensor: same category, the dimensioned tensor wins.
        assert_eq!(result_type(&[&t(F16, &[2]), &t(F32, &[])]), F16);
        // i64 tensor + f32 0-d tensor: higher category, the 0-d tensor wins.
        assert_eq!(result_type(&[&t(I64, &[2]), &t(F32, &[])]), F32);
        assert_eq!(result_type(&[&t(I32, &[2]), &t(I64, &[3])]), I64);
    }
}

//! Element types and static tensor types: the type of every value in the IR.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

/// Element type of a tensor. Names follow the IR text format (`f32`, `bf16`, `i1` is `bool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
    /// Complex of two `f32` (real, imaginary), PyTorch's `complex64`.
    C64,
    /// Complex of two `f64`, PyTorch's `complex128`.
    C128,
}

impl DType {
    /// Every dtype, in a fixed order (used for error messages and exhaustive tests).
    pub const ALL: [DType; 12] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::Bool,
        DType::C64,
        DType::C128,
    ];

    /// The IR text name (`f32`, `bf16`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }

    /// Size of one element in bytes (bool is stored as one byte, as in PyTorch).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::C128 => 16,
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// Floating-point types (the ones PyTorch calls `is_floating_point`).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32 | DType::F16 | DType::BF16)
    }

    /// Complex types (`c64`, `c128`).
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The real type of a complex type's parts (`c64` → `f32`); a real type is its own.
    pub fn real_part(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The complex type whose parts are this float type (`f32` → `c64`, `f64` → `c128`).
    pub fn complex_of(self) -> Option<DType> {
        match self {
            DType::F32 => Some(DType::C64),
            DType::F64 => Some(DType::C128),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for a dtype name that is not one of [`DType::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}`; fxhlo supports: f64, f32, f16, bf16, i64, i32, i16, i8, u8, bool, c64, c128")]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // A match, not a search of `ALL`: every meta of a trace is parsed (the round-trip test
        // below checks that the two agree).
        Ok(match s {
            "f64" => DType::F64,
            "f32" => DType::F32,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "i64" => DType::I64,
            "i32" => DType::I32,
            "i16" => DType::I16,
            "i8" => DType::I8,
            "u8" => DType::U8,
            "bool" => DType::Bool,
            "c64" => DType::C64,
            "c128" => DType::C128,
            _ => return Err(UnknownDType(s.to_string())),
        })
    }
}

/// A statically shaped tensor type: `f32[4,8]`; a scalar (rank 0) prints as `f32[]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorType {
    pub dtype: DType,
    /// Inline up to rank 6 (see [`Shape`]).
    pub shape: Shape,
}

impl TensorType {
    /// A tensor type of the given dtype and shape (a [`Shape`], a `Vec<i64>` or a `&[i64]`).
    pub fn new(dtype: DType, shape: impl Into<Shape>) -> Self {
        TensorType { dtype, shape: shape.into() }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (1 for a scalar), or `None` when it does not fit in an `i64` (and so
    /// in any index or buffer size a device takes). Negative dims count as 0 (the verifier
    /// rejects them).
    pub fn checked_num_elements(&self) -> Option<usize> {
        let n = self.shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d.max(0)))?;
        usize::try_from(n).ok()
    }

    /// Size of the tensor's data in bytes, or `None` when it does not fit in an `i64`.
    pub fn checked_size_bytes(&self) -> Option<usize> {
        let bytes = i64::try_from(self.checked_num_elements()?).ok()?.checked_mul(self.dtype.size_bytes() as i64)?;
        usize::try_from(bytes).ok()
    }

    /// Number of elements (1 for a scalar). Importer and verifier refuse a type whose byte size
    /// overflows an `i64` ([`TensorType::checked_size_bytes`]), so on a verified graph this is
    /// exact; on anything else it saturates at `usize::MAX` instead of wrapping or panicking.
    pub fn num_elements(&self) -> usize {
        self.checked_num_elements().unwrap_or(usize::MAX)
    }

    /// Size of the tensor's data in bytes; saturates like [`TensorType::num_elements`].
    pub fn size_bytes(&self) -> usize {
        self.checked_size_bytes().unwrap_or(usize::MAX)
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// The dimensions of a tensor type, outermost first. Stored inline up to rank 6 (almost every
/// tensor of a model), so that a type costs no allocation; a higher rank spills to the heap.
///
/// Reads like a `Vec<i64>`: it derefs to a `SmallVec` (`push`, `insert`, `remove`, slicing,
/// `&shape[..]` as `&[i64]`), compares with vectors, slices and arrays (`shape == [2, 3]`),
/// prints with `{:?}` as a list, and is built from a `Vec`, a slice, an array or an iterator.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Shape(SmallVec<[i64; 6]>);

impl Shape {
    /// An empty shape (a scalar's).
    pub fn new() -> Self {
        Shape(SmallVec::new())
    }

    /// `n` dims of size `v` (`vec![v; n]`).
    pub fn from_elem(v: i64, n: usize) -> Self {
        Shape(SmallVec::from_elem(v, n))
    }

    /// The dims as a `Vec` (for an API that wants one).
    pub fn into_vec(self) -> Vec<i64> {
        self.0.into_vec()
    }
}

impl Deref for Shape {
    type Target = SmallVec<[i64; 6]>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Shape {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0[..], f)
    }
}

impl From<Vec<i64>> for Shape {
    fn from(v: Vec<i64>) -> Self {
        // `SmallVec::from_vec` keeps a vector's heap buffer even when it would fit inline.
        if v.len() <= 6 { Shape(SmallVec::from_slice(&v)) } else { Shape(SmallVec::from_vec(v)) }
    }
}

impl From<&[i64]> for Shape {
    fn from(v: &[i64]) -> Self {
        Shape(SmallVec::from_slice(v))
    }
}

impl From<&Vec<i64>> for Shape {
    fn from(v: &Vec<i64>) -> Self {
        Shape(SmallVec::from_slice(v))
    }
}

impl<const N: usize> From<[i64; N]> for Shape {
    fn from(v: [i64; N]) -> Self {
        Shape(SmallVec::from_slice(&v))
    }
}

impl From<Shape> for Vec<i64> {
    fn from(s: Shape) -> Self {
        s.into_vec()
    }
}

impl FromIterator<i64> for Shape {
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> Self {
        Shape(iter.into_iter().collect())
    }
}

impl Extend<i64> for Shape {
    fn extend<I: IntoIterator<Item = i64>>(&mut self, iter: I) {
        self.0.extend(iter)
    }
}

impl<'a> IntoIterator for &'a Shape {
    type Item = &'a i64;
    type IntoIter = std::slice::Iter<'a, i64>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Shape {
    type Item = i64;
    type IntoIter = smallvec::IntoIter<[i64; 6]>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl PartialEq<[i64]> for Shape {
    fn eq(&self, other: &[i64]) -> bool {
        self.0[..] == *other
    }
}

impl PartialEq<&[i64]> for Shape {
    fn eq(&self, other: &&[i64]) -> bool {
        self.0[..] == **other
    }
}

impl PartialEq<Vec<i64>> for Shape {
    fn eq(&self, other: &Vec<i64>) -> bool {
        self.0[..] == other[..]
    }
}

impl<const N: usize> PartialEq<[i64; N]> for Shape {
    fn eq(&self, other: &[i64; N]) -> bool {
        self.0[..] == other[..]
    }
}

impl PartialEq<Shape> for Vec<i64> {
    fn eq(&self, other: &Shape) -> bool {
        self[..] == other.0[..]
    }
}

impl PartialEq<Shape> for [i64] {
    fn eq(&self, other: &Shape) -> bool {
        *self == other.0[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
        }
        let err = "f8".parse::<DType>().unwrap_err().to_string();
        assert!(err.contains("unknown dtype `f8`"), "{err}");
    }

    #[test]
    fn tensor_type_prints_like_the_text_format() {
        assert_eq!(TensorType::new(DType::F32, vec![4, 8]).to_string(), "f32[4,8]");
        assert_eq!(TensorType::new(DType::Bool, vec![]).to_string(), "bool[]");
        assert_eq!(TensorType::new(DType::BF16, vec![2, 3]).size_bytes(), 12);
    }
}

//! Host tensors: an element type, dims, and the raw little-endian row-major bytes.

use half::{bf16, f16};

use crate::element::{Element, ElementType};
use crate::error::{Error, Result};

/// A dense tensor in host memory: little-endian raw bytes, row-major (last dim fastest).
///
/// `bool` takes one byte per element (0 or 1). A scalar has empty `dims`. The fields are public
/// for cheap construction and inspection; [`HostTensor::validate`] (called by every transfer)
/// checks that they agree.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// The element type.
    pub element_type: ElementType,
    /// The dimensions, outermost first; all `>= 0`.
    pub dims: Vec<i64>,
    /// `product(dims) * element_type.byte_size()` bytes.
    pub bytes: Vec<u8>,
}

/// The number of elements of `dims`, or an error for negative dims or overflow.
pub fn element_count(dims: &[i64]) -> Result<usize> {
    dims.iter().try_fold(1usize, |acc, &d| {
        let d = usize::try_from(d)
            .map_err(|_| Error::InvalidTensor(format!("negative dimension {d} in {dims:?}")))?;
        acc.checked_mul(d)
            .ok_or_else(|| Error::InvalidTensor(format!("element count of {dims:?} overflows")))
    })
}

/// An error unless `perm` is a permutation of `0..rank`.
pub(crate) fn check_permutation(perm: &[usize], rank: usize) -> Result<()> {
    let mut seen = vec![false; rank];
    if perm.len() != rank || !perm.iter().all(|&p| p < rank && !std::mem::replace(&mut seen[p], true)) {
        return Err(Error::InvalidTensor(format!("{perm:?} is not a permutation of {rank} dims")));
    }
    Ok(())
}

impl HostTensor {
    /// Row-major byte strides of the dense tensor (a dim of size 0 counts as 1, so strides
    /// stay meaningful).
    pub fn byte_strides(&self) -> Vec<i64> {
        row_major_byte_strides(self.element_type, &self.dims)
    }

    /// The tensor with its dims permuted (`out.dims[i] = dims[perm[i]]`), data moved to match:
    /// what `torch.permute(perm).contiguous()` gives.
    pub fn permuted(&self, perm: &[usize]) -> Result<HostTensor> {
        self.validate()?;
        let rank = self.dims.len();
        check_permutation(perm, rank)?;
        let size = self.element_type.byte_size();
        let dims: Vec<i64> = perm.iter().map(|&p| self.dims[p]).collect();
        // Row-major strides (in elements) of the source, read in the output's dim order.
        let mut strides = vec![1usize; rank];
        for i in (0..rank.saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * self.dims[i + 1] as usize;
        }
        let src_strides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
        let count = element_count(&dims)?;
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut index = vec![0i64; rank];
        for _ in 0..count {
            let at: usize = index.iter().zip(&src_strides).map(|(&i, &s)| i as usize * s).sum();
            bytes.extend_from_slice(&self.bytes[at * size..(at + 1) * size]);
            // Odometer over the output's dims, last fastest.
            for d in (0..rank).rev() {
                index[d] += 1;
                if index[d] < dims[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        HostTensor::new(self.element_type, dims, bytes)
    }

    /// A tensor from raw little-endian bytes; errors if the length does not match the dims.
    pub fn new(
        element_type: ElementType,
        dims: impl Into<Vec<i64>>,
        bytes: Vec<u8>,
    ) -> Result<HostTensor> {
        let t = HostTensor {
            element_type,
            dims: dims.into(),
            bytes,
        };
        t.validate()?;
        Ok(t)
    }

    /// A tensor of zeros (`false` for bool).
    pub fn zeros(element_type: ElementType, dims: impl Into<Vec<i64>>) -> Result<HostTensor> {
        let dims = dims.into();
        let len = element_count(&dims)?
            .checked_mul(element_type.byte_size())
            .ok_or_else(|| Error::InvalidTensor(format!("byte size of {dims:?} overflows")))?;
        Ok(HostTensor {
            element_type,
            dims,
            bytes: vec![0; len],
        })
    }

    /// A tensor from typed values; errors if `data.len()` is not the element count of `dims`.
    pub fn from_slice<T: Element>(dims: impl Into<Vec<i64>>, data: &[T]) -> Result<HostTensor> {
        let dims = dims.into();
        let count = element_count(&dims)?;
        if count != data.len() {
            return Err(Error::InvalidTensor(format!(
                "dims {dims:?} hold {count} elements but {} values were given",
                data.len()
            )));
        }
        let mut bytes = Vec::with_capacity(count * T::TYPE.byte_size());
        for v in data {
            v.write_le(&mut bytes);
        }
        Ok(HostTensor {
            element_type: T::TYPE,
            dims,
            bytes,
        })
    }

    /// A scalar (empty dims).
    pub fn scalar<T: Element>(value: T) -> HostTensor {
        let mut bytes = Vec::with_capacity(T::TYPE.byte_size());
        value.write_le(&mut bytes);
        HostTensor {
            element_type: T::TYPE,
            dims: Vec::new(),
            bytes,
        }
    }

    /// [`HostTensor::from_slice`] for f32.
    pub fn from_f32(dims: impl Into<Vec<i64>>, data: &[f32]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for f64.
    pub fn from_f64(dims: impl Into<Vec<i64>>, data: &[f64]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for f16.
    pub fn from_f16(dims: impl Into<Vec<i64>>, data: &[f16]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for bf16.
    pub fn from_bf16(dims: impl Into<Vec<i64>>, data: &[bf16]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for i64.
    pub fn from_i64(dims: impl Into<Vec<i64>>, data: &[i64]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for i32.
    pub fn from_i32(dims: impl Into<Vec<i64>>, data: &[i32]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for i16.
    pub fn from_i16(dims: impl Into<Vec<i64>>, data: &[i16]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for i8.
    pub fn from_i8(dims: impl Into<Vec<i64>>, data: &[i8]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for u8.
    pub fn from_u8(dims: impl Into<Vec<i64>>, data: &[u8]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }
    /// [`HostTensor::from_slice`] for bool (one byte per element).
    pub fn from_bool(dims: impl Into<Vec<i64>>, data: &[bool]) -> Result<HostTensor> {
        HostTensor::from_slice(dims, data)
    }

    /// The number of elements (`product(dims)`; 1 for a scalar).
    pub fn element_count(&self) -> Result<usize> {
        element_count(&self.dims)
    }

    /// Checks that dims are non-negative and the byte length is `count * byte_size`.
    pub fn validate(&self) -> Result<()> {
        let count = element_count(&self.dims)?;
        let want = count
            .checked_mul(self.element_type.byte_size())
            .ok_or_else(|| {
                Error::InvalidTensor(format!("byte size of {:?} overflows", self.dims))
            })?;
        if self.bytes.len() != want {
            return Err(Error::InvalidTensor(format!(
                "{} tensor with dims {:?} needs {want} bytes ({count} x {}), got {}",
                self.element_type,
                self.dims,
                self.element_type.byte_size(),
                self.bytes.len()
            )));
        }
        Ok(())
    }

    /// The values as `T`; errors unless `T` is the tensor's element type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::TYPE != self.element_type {
            return Err(Error::TypeMismatch {
                actual: self.element_type,
                requested: T::TYPE,
            });
        }
        Ok(self.chunks().map(T::read_le).collect())
    }

    /// Every value converted to f32, whatever the element type (for comparisons): f16/bf16
    /// widen exactly, integers and f64 round to nearest, bool is 0.0 / 1.0; a complex value
    /// gives two, its real and imaginary parts. Trailing bytes that do not fill an element are
    /// ignored.
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let chunks = self.chunks();
        match self.element_type {
            ElementType::Bool => chunks.map(|b| bool::read_le(b).to_f32()).collect(),
            ElementType::I8 => chunks.map(|b| i8::read_le(b).to_f32()).collect(),
            ElementType::I16 => chunks.map(|b| i16::read_le(b).to_f32()).collect(),
            ElementType::I32 => chunks.map(|b| i32::read_le(b).to_f32()).collect(),
            ElementType::I64 => chunks.map(|b| i64::read_le(b).to_f32()).collect(),
            ElementType::U8 => chunks.map(|b| u8::read_le(b).to_f32()).collect(),
            ElementType::F16 => chunks.map(|b| f16::read_le(b).to_f32()).collect(),
            ElementType::BF16 => chunks.map(|b| bf16::read_le(b).to_f32()).collect(),
            ElementType::F32 => chunks.map(f32::read_le).collect(),
            ElementType::F64 => chunks.map(|b| f64::read_le(b).to_f32()).collect(),
            ElementType::C64 => chunks.flat_map(|b| b.chunks_exact(4).map(f32::read_le)).collect(),
            ElementType::C128 => chunks.flat_map(|b| b.chunks_exact(8).map(|p| f64::read_le(p).to_f32())).collect(),
        }
    }

    fn chunks(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.element_type.byte_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_slice_checks_length() {
        assert!(HostTensor::from_f32([2, 3], &[0.0; 6]).is_ok());
        let err = HostTensor::from_f32([2, 3], &[0.0; 5])
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("6 elements but 5"));
        assert!(HostTensor::from_f32([-1], &[]).is_err());
        assert!(HostTensor::from_f32([i64::MAX, i64::MAX], &[]).is_err());
    }

    #[test]
    fn new_checks_byte_length() {
        assert!(HostTensor::new(ElementType::I32, [2], vec![0; 8]).is_ok());
        let err = HostTensor::new(ElementType::I32, [2], vec![0; 7])
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("needs 8 bytes"));
    }

    #[test]
    fn typed_round_trip_and_f32_view() {
        let t = HostTensor::from_bf16([2], &[bf16::from_f32(1.5), bf16::from_f32(-2.0)]).ok();
        let t = t.unwrap_or_else(|| HostTensor::scalar(0u8));
        assert_eq!(t.to_f32_vec(), vec![1.5, -2.0]);
        assert!(t.to_vec::<f32>().is_err());
        let b = HostTensor::from_bool([3], &[true, false, true]).ok();
        assert_eq!(b.as_ref().map(|b| b.bytes.clone()), Some(vec![1, 0, 1]));
        assert_eq!(b.map(|b| b.to_f32_vec()), Some(vec![1.0, 0.0, 1.0]));
        let s = HostTensor::scalar(7i64);
        assert_eq!(s.to_vec::<i64>().ok(), Some(vec![7]));
        assert_eq!(s.element_count().ok(), Some(1));
    }
}

/// The byte strides of a dense row-major tensor of `element_type` with `dims`.
pub(crate) fn row_major_byte_strides(element_type: ElementType, dims: &[i64]) -> Vec<i64> {
    let mut strides = vec![element_type.byte_size() as i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1].max(1);
    }
    strides
}

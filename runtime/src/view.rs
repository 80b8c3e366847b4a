//! Views of host memory an upload reads: an element type, dims and byte strides over bytes the
//! caller owns (a [`HostTensor`], a PyTorch tensor's storage). Permuting a view or taking a
//! shard of it only changes dims, strides and the start: the plugin gathers the elements while
//! it copies, so nothing is made dense on the host first.

use std::borrow::Cow;

use crate::buffer::{check_permutation, row_major_byte_strides, HostTensor};
use crate::element::ElementType;
use crate::error::{Error, Result};

/// A strided view of host memory: element `i` of `dims` is at `sum(i[k] * byte_strides[k])` in
/// `bytes` (the runtime checks that every element is inside `bytes` before reading).
#[derive(Debug, Clone)]
pub struct HostView<'a> {
    /// The element type.
    pub element_type: ElementType,
    /// The dims, outermost first.
    pub dims: Vec<i64>,
    /// Byte strides of `dims`; `None`: dense row-major.
    pub byte_strides: Option<Vec<i64>>,
    /// The memory, from the view's first element on.
    pub bytes: Cow<'a, [u8]>,
}

impl<'a> HostView<'a> {
    /// A dense row-major view of `bytes`.
    pub fn dense(element_type: ElementType, dims: Vec<i64>, bytes: impl Into<Cow<'a, [u8]>>) -> HostView<'a> {
        HostView { element_type, dims, byte_strides: None, bytes: bytes.into() }
    }

    /// The byte strides, made explicit.
    pub fn strides(&self) -> Vec<i64> {
        self.byte_strides.clone().unwrap_or_else(|| row_major_byte_strides(self.element_type, &self.dims))
    }

    /// The byte strides of a dense row-major tensor of the view's dims.
    pub fn dense_strides(&self) -> Vec<i64> {
        row_major_byte_strides(self.element_type, &self.dims)
    }

    /// The view with its dims permuted: dim `i` of the result is dim `perm[i]` of this one
    /// (`torch.permute(perm)`).
    pub fn permuted(self, perm: &[usize]) -> Result<HostView<'a>> {
        check_permutation(perm, self.dims.len())?;
        let strides = self.strides();
        Ok(HostView {
            element_type: self.element_type,
            dims: perm.iter().map(|&p| self.dims[p]).collect(),
            byte_strides: Some(perm.iter().map(|&p| strides[p]).collect()),
            bytes: self.bytes,
        })
    }

    /// The view in `layout` ([`HostView::permuted`] by it), or as it is without one: how an
    /// input the device takes permuted (a weight in its kernels' layout) is uploaded.
    pub fn in_layout(self, layout: Option<&[usize]>) -> Result<HostView<'a>> {
        match layout {
            Some(perm) => self.permuted(perm),
            None => Ok(self),
        }
    }

    /// Slice `index` of `parts` equal slices along `dim` (a tensor-parallel shard).
    pub fn shard(self, dim: usize, parts: usize, index: usize) -> Result<HostView<'a>> {
        let size = self.dims.get(dim).copied().unwrap_or(0);
        if parts == 0 || index >= parts || size % parts as i64 != 0 {
            return Err(Error::InvalidTensor(format!(
                "slice {index} of {parts} along dim {dim} of a tensor with dims {:?}: the dim must exist and split evenly",
                self.dims
            )));
        }
        let strides = self.strides();
        let part = size / parts as i64;
        let start = usize::try_from(index as i64 * part * strides[dim])
            .map_err(|_| Error::InvalidTensor(format!("negative stride along dim {dim} of {:?}", self.dims)))?;
        let mut dims = self.dims;
        dims[dim] = part;
        let bytes = match self.bytes {
            Cow::Borrowed(b) => Cow::Borrowed(b.get(start..).unwrap_or_default()),
            Cow::Owned(b) => Cow::Owned(b.get(start..).unwrap_or_default().to_vec()),
        };
        Ok(HostView { element_type: self.element_type, dims, byte_strides: Some(strides), bytes })
    }
}

impl HostTensor {
    /// A dense view of the tensor as the device takes it (checked first): booleans as 0/1
    /// (any non-zero byte means true), the rest as they are.
    pub fn view(&self) -> Result<HostView<'_>> {
        self.validate()?;
        let bytes: Cow<'_, [u8]> = if self.element_type == ElementType::Bool && self.bytes.iter().any(|&b| b > 1) {
            self.bytes.iter().map(|&b| u8::from(b != 0)).collect::<Vec<u8>>().into()
        } else {
            (&self.bytes[..]).into()
        };
        Ok(HostView::dense(self.element_type, self.dims.clone(), bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permuting_and_sharding_change_only_dims_strides_and_start() {
        let t = HostTensor::from_f32([2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap_or_else(|_| HostTensor::scalar(0f32));
        let v = t.view().and_then(|v| v.permuted(&[1, 0])).ok();
        assert_eq!(v.as_ref().map(|v| (v.dims.clone(), v.strides())), Some((vec![3, 2], vec![4, 12])));
        let s = t.view().and_then(|v| v.shard(1, 3, 2)).ok();
        assert_eq!(s.as_ref().map(|s| (s.dims.clone(), s.strides(), s.bytes.len())), Some((vec![2, 1], vec![12, 4], 16)));
        assert!(t.view().and_then(|v| v.shard(1, 2, 0)).is_err(), "3 does not split in 2");
        assert!(t.view().and_then(|v| v.permuted(&[0, 0])).is_err());
        let b = HostTensor { element_type: ElementType::Bool, dims: vec![2], bytes: vec![0, 7] };
        assert_eq!(b.view().map(|v| v.bytes.to_vec()).ok(), Some(vec![0, 1]));
    }
}

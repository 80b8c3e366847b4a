//! Device buffers: what uploads and executions produce, and their download to host memory.

use std::fmt;

use pjrt_sys::PJRT_Buffer;

use crate::buffer::HostTensor;
use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::plugin::{buffer_ptr, RawApi};
use crate::transfer::dense_len;

/// A buffer on a device, owned by the [`crate::Client`] that made it (not `Send`).
///
/// Element type and dims are read once when the buffer is created.
pub struct DeviceBuffer {
    buffer: pjrt::Buffer,
    /// `buffer`'s raw pointer, kept for the C API calls of every run (`pjrt` hands it out
    /// only through a per-call `Vec<Vec<_>>`).
    ptr: *mut PJRT_Buffer,
    element_type: ElementType,
    dims: Vec<i64>,
    raw: RawApi,
    client_id: u64,
    /// Known to hold its value already (an execution's output: [`crate::Executable::run`]
    /// returns once the execution is done), so reading it need not wait.
    ready: bool,
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("element_type", &self.element_type)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

fn no_pointer() -> Error {
    Error::Pjrt {
        operation: "buffer",
        message: "pjrt returned a buffer without a pointer".to_string(),
    }
}

impl DeviceBuffer {
    /// Wraps `buffer`, whose raw pointer is `ptr`.
    pub(crate) fn new(
        buffer: pjrt::Buffer,
        ptr: *mut PJRT_Buffer,
        element_type: ElementType,
        dims: Vec<i64>,
        raw: RawApi,
        client_id: u64,
    ) -> DeviceBuffer {
        DeviceBuffer {
            buffer,
            ptr,
            element_type,
            dims,
            raw,
            client_id,
            ready: false,
        }
    }

    /// Wraps the output buffer of an execution that is done, of `known` element type and dims
    /// when the caller knows them, else reading them from the plugin.
    pub(crate) fn from_output(
        buffer: pjrt::Buffer,
        raw: &RawApi,
        client_id: u64,
        known: Option<&(ElementType, Vec<i64>)>,
    ) -> Result<DeviceBuffer> {
        let ptr = buffer_ptr(&buffer).ok_or_else(no_pointer)?;
        let (element_type, dims) = match known {
            Some((element_type, dims)) => (*element_type, dims.clone()),
            None => (ElementType::from_pjrt(raw.buffer_element_type(ptr)?)?, buffer.dims()),
        };
        Ok(DeviceBuffer { ready: true, ..DeviceBuffer::new(buffer, ptr, element_type, dims, *raw, client_id) })
    }

    /// The dense byte size of the buffer's contents on the host.
    pub fn byte_size(&self) -> Result<usize> {
        dense_len(self.element_type, &self.dims)
    }

    /// Copies the buffer into `dst` (row-major, little-endian), which must be exactly
    /// [`DeviceBuffer::byte_size`] bytes, and waits for the copy. No staging copy: the plugin
    /// writes straight into `dst`.
    pub fn copy_into(&self, dst: &mut [u8]) -> Result<()> {
        let want = self.byte_size()?;
        if dst.len() != want {
            return Err(Error::InvalidTensor(format!(
                "{} buffer with dims {:?} needs a {want}-byte destination, got {}",
                self.element_type,
                self.dims,
                dst.len()
            )));
        }
        self.raw.buffer_to_host(self.ptr, dst)
    }

    /// Copies the buffer to a new host tensor and waits for the copy.
    pub fn to_host(&self) -> Result<HostTensor> {
        let mut bytes = vec![0; self.byte_size()?];
        self.copy_into(&mut bytes)?;
        HostTensor::new(self.element_type, self.dims.clone(), bytes)
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The dimensions (empty for a scalar).
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The raw `PJRT_Buffer`.
    pub(crate) fn raw_ptr(&self) -> *mut PJRT_Buffer {
        self.ptr
    }

    /// The `pjrt` buffer, giving up the rest.
    pub(crate) fn into_pjrt(self) -> pjrt::Buffer {
        self.buffer
    }

    /// The plugin's function table.
    pub(crate) fn raw(&self) -> RawApi {
        self.raw
    }

    /// The id of the client that owns it.
    pub(crate) fn client_id(&self) -> u64 {
        self.client_id
    }

    /// Whether it is known to hold its value already.
    pub(crate) fn ready(&self) -> bool {
        self.ready
    }
}

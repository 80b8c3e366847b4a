//! Device buffers: host-to-device upload and device-to-host download of [`HostTensor`]s.

use std::fmt;

use crate::buffer::{element_count, HostTensor};
use crate::element::{Bf16Bits, Element, ElementType, F16Bits};
use crate::error::{pjrt_message, Error, Result};
use crate::plugin::{buffer_ptr, RawApi};

/// A buffer on a device, owned by the [`crate::Client`] that made it (not `Send`).
///
/// Element type and dims are read once when the buffer is created.
pub struct DeviceBuffer {
    buffer: pjrt::Buffer,
    element_type: ElementType,
    dims: Vec<i64>,
    client_id: u64,
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("element_type", &self.element_type)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

fn upload_error(err: pjrt::Error) -> Error {
    Error::Transfer {
        direction: "host-to-device",
        message: pjrt_message(err),
    }
}

fn download_error(message: String) -> Error {
    Error::Transfer {
        direction: "device-to-host",
        message,
    }
}

/// Copies typed host data to the client's first addressable device and waits for it.
fn typed<E: pjrt::ElemType>(
    client: &pjrt::Client,
    data: Vec<E>,
    dims: Vec<i64>,
) -> Result<pjrt::Buffer> {
    pjrt::TypedHostBuffer::<E::Type>::builder()
        .data::<E>(data)
        .dims(dims)
        .build()
        .copy_to_sync(client)
        .map_err(upload_error)
}

/// Decodes the tensor's bytes as `T` and uploads them.
fn decode_and_upload<T: Element + pjrt::ElemType>(
    client: &pjrt::Client,
    t: &HostTensor,
) -> Result<pjrt::Buffer> {
    typed(client, t.to_vec::<T>()?, t.dims.clone())
}

/// Uploads 16-bit data under the pjrt element wrapper `W`.
fn upload_u16<W: pjrt::ElemType>(
    client: &pjrt::Client,
    t: &HostTensor,
    wrap: fn(u16) -> W,
) -> Result<pjrt::Buffer> {
    let data = t
        .bytes
        .chunks_exact(2)
        .map(|b| wrap(u16::from_le_bytes([b[0], b[1]])))
        .collect();
    typed(client, data, t.dims.clone())
}

impl DeviceBuffer {
    /// Uploads `t` (validated first) to the first addressable device of `client`.
    pub(crate) fn upload(
        client: &pjrt::Client,
        client_id: u64,
        t: &HostTensor,
    ) -> Result<DeviceBuffer> {
        t.validate()?;
        let buffer = match t.element_type {
            // `Vec<bool>` must hold only 0/1 bytes: decode (non-zero = true) instead of casting.
            ElementType::Bool => decode_and_upload::<bool>(client, t)?,
            ElementType::I8 => decode_and_upload::<i8>(client, t)?,
            ElementType::I16 => decode_and_upload::<i16>(client, t)?,
            ElementType::I32 => decode_and_upload::<i32>(client, t)?,
            ElementType::I64 => decode_and_upload::<i64>(client, t)?,
            ElementType::U8 => decode_and_upload::<u8>(client, t)?,
            ElementType::F32 => decode_and_upload::<f32>(client, t)?,
            ElementType::F64 => decode_and_upload::<f64>(client, t)?,
            ElementType::F16 => upload_u16(client, t, F16Bits)?,
            ElementType::BF16 => upload_u16(client, t, Bf16Bits)?,
        };
        Ok(DeviceBuffer {
            buffer,
            element_type: t.element_type,
            dims: t.dims.clone(),
            client_id,
        })
    }

    /// Wraps an executable's output buffer, reading its element type and dims.
    pub(crate) fn from_output(
        buffer: pjrt::Buffer,
        raw: &RawApi,
        client_id: u64,
    ) -> Result<DeviceBuffer> {
        let ptr = buffer_ptr(&buffer).ok_or_else(|| Error::Pjrt {
            operation: "output buffer",
            message: "pjrt returned a buffer without a pointer".to_string(),
        })?;
        let element_type = ElementType::from_pjrt(raw.buffer_element_type(ptr)?)?;
        let dims = buffer.dims();
        Ok(DeviceBuffer {
            buffer,
            element_type,
            dims,
            client_id,
        })
    }

    /// Copies the buffer to host memory (row-major, little-endian) and waits for the copy.
    pub fn to_host(&self) -> Result<HostTensor> {
        let (args, bytes) = self
            .buffer
            .call_copy_to_host()
            .map_err(|e| download_error(pjrt_message(e)))?;
        if args.event.is_null() {
            return Err(download_error(
                "the plugin returned no completion event".to_string(),
            ));
        }
        pjrt::Event::wrap(self.buffer.client().api(), args.event)
            .wait()
            .map_err(|e| download_error(pjrt_message(e)))?;
        let want = element_count(&self.dims)? * self.element_type.byte_size();
        if bytes.len() != want {
            return Err(download_error(format!(
                "the plugin returned {} bytes for a {} buffer of dims {:?} ({want} expected)",
                bytes.len(),
                self.element_type,
                self.dims
            )));
        }
        HostTensor::new(self.element_type, self.dims.clone(), bytes)
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The dimensions (empty for a scalar).
    pub fn dims(&self) -> Vec<i64> {
        self.dims.clone()
    }

    /// The underlying `pjrt` buffer.
    pub(crate) fn pjrt(&self) -> &pjrt::Buffer {
        &self.buffer
    }

    /// The id of the client that owns it.
    pub(crate) fn client_id(&self) -> u64 {
        self.client_id
    }
}

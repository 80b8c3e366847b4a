//! Host transfers straight through the C API, without the intermediate copies of `pjrt` 0.2.0
//! (which decodes into a typed `Vec`, wraps it in an `Rc` and reads back into a fresh `Vec`).
//!
//! An upload reads the caller's bytes once (`kImmutableOnlyDuringCall`: the plugin copies them
//! before the call returns, so the caller may reuse or free them at once); a download writes
//! into the caller's memory (for the Python bridge: the storage of a fresh `torch` tensor).
//! These are the per-call paths of a compiled model, so they do no allocation of their own.

use std::ffi::c_void;

use pjrt_sys::{
    PJRT_Buffer, PJRT_Client, PJRT_Device, PJRT_Event,
    PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
};

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::plugin::RawApi;

/// The byte length of a dense tensor, or an error naming the dims that overflow.
pub(crate) fn dense_len(element_type: ElementType, dims: &[i64]) -> Result<usize> {
    crate::buffer::element_count(dims)?
        .checked_mul(element_type.byte_size())
        .ok_or_else(|| Error::InvalidTensor(format!("byte size of {dims:?} overflows")))
}

fn transfer_error(direction: &'static str, message: String) -> Error {
    Error::Transfer { direction, message }
}

impl RawApi {
    /// Creates a client with no options (what `pjrt::Client::builder(..).build()` does), so the
    /// runtime keeps the raw pointer `pjrt` 0.2.0 does not expose.
    pub(crate) fn create_client(&self) -> std::result::Result<*mut PJRT_Client, String> {
        let api = self.table();
        let f = api.PJRT_Client_Create.ok_or("the plugin does not implement PJRT_Client_Create")?;
        let mut args = pjrt_sys::PJRT_Client_Create_Args::new();
        // SAFETY: args fully initialized with no options and no key-value store.
        let err = unsafe { f(&mut args) };
        if !err.is_null() {
            return Err(self.take_error(err));
        }
        if args.client.is_null() {
            return Err("the plugin returned no client".into());
        }
        Ok(args.client)
    }

    /// The first addressable device of `client` (where uploads go).
    pub(crate) fn first_device(&self, client: *mut PJRT_Client) -> std::result::Result<*mut PJRT_Device, String> {
        let api = self.table();
        let f = api
            .PJRT_Client_AddressableDevices
            .ok_or("the plugin does not implement PJRT_Client_AddressableDevices")?;
        let mut args = pjrt_sys::PJRT_Client_AddressableDevices_Args::new();
        args.client = client;
        // SAFETY: `client` is live; the returned array is owned by the client.
        let err = unsafe { f(&mut args) };
        if !err.is_null() {
            return Err(self.take_error(err));
        }
        if args.num_addressable_devices == 0 || args.addressable_devices.is_null() {
            return Err("the client has no addressable device".into());
        }
        // SAFETY: non-empty array checked above.
        Ok(unsafe { *args.addressable_devices })
    }

    /// Waits for `event` and destroys it; the event's error, if any, becomes the message.
    fn await_event(&self, event: *mut PJRT_Event) -> std::result::Result<(), String> {
        if event.is_null() {
            return Ok(());
        }
        let api = self.table();
        let mut result = Ok(());
        if let Some(f) = api.PJRT_Event_Await {
            let mut args = pjrt_sys::PJRT_Event_Await_Args::new();
            args.event = event;
            // SAFETY: `event` is live until destroyed below.
            let err = unsafe { f(&mut args) };
            if !err.is_null() {
                result = Err(self.take_error(err));
            }
        }
        if let Some(f) = api.PJRT_Event_Destroy {
            let mut args = pjrt_sys::PJRT_Event_Destroy_Args::new();
            args.event = event;
            // SAFETY: destroys the event exactly once.
            let err = unsafe { f(&mut args) };
            if !err.is_null() {
                let _ = self.take_error(err);
            }
        }
        result
    }

    /// Copies `bytes` (dense, row-major) to `device`; returns the new buffer.
    pub(crate) fn buffer_from_host(
        &self,
        client: *mut PJRT_Client,
        device: *mut PJRT_Device,
        element_type: ElementType,
        dims: &[i64],
        bytes: &[u8],
    ) -> Result<*mut PJRT_Buffer> {
        let want = dense_len(element_type, dims)?;
        if bytes.len() != want {
            return Err(Error::InvalidTensor(format!(
                "{element_type} tensor with dims {dims:?} needs {want} bytes, got {}",
                bytes.len()
            )));
        }
        let up = |m: String| transfer_error("host-to-device", m);
        let f = self.table().PJRT_Client_BufferFromHostBuffer.ok_or_else(|| {
            up("the plugin does not implement PJRT_Client_BufferFromHostBuffer".into())
        })?;
        let mut args = pjrt_sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = client;
        args.data = bytes.as_ptr() as *const c_void;
        args.type_ = element_type.to_pjrt();
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        args.host_buffer_semantics =
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
        args.device = device;
        // SAFETY: `bytes` holds exactly the dense tensor and outlives the call; with
        // kImmutableOnlyDuringCall the plugin does not keep the pointer after returning.
        let err = unsafe { f(&mut args) };
        if !err.is_null() {
            return Err(up(self.take_error(err)));
        }
        self.await_event(args.done_with_host_buffer).map_err(up)?;
        if args.buffer.is_null() {
            return Err(up("the plugin returned no buffer".into()));
        }
        Ok(args.buffer)
    }

    /// Copies `buffer` into `dst`, which must be exactly its dense size, and waits.
    pub(crate) fn buffer_to_host(&self, buffer: *mut PJRT_Buffer, dst: &mut [u8]) -> Result<()> {
        let down = |m: String| transfer_error("device-to-host", m);
        let f = self
            .table()
            .PJRT_Buffer_ToHostBuffer
            .ok_or_else(|| down("the plugin does not implement PJRT_Buffer_ToHostBuffer".into()))?;
        let mut args = pjrt_sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = buffer;
        args.dst = dst.as_mut_ptr() as *mut c_void;
        args.dst_size = dst.len();
        // SAFETY: `dst` is writable for `dst_size` bytes and outlives the wait below.
        let err = unsafe { f(&mut args) };
        if !err.is_null() {
            return Err(down(self.take_error(err)));
        }
        self.await_event(args.event).map_err(down)
    }
}

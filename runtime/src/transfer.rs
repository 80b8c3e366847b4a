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
use crate::share::MemoryKind;

/// The byte length of a dense tensor, or an error naming the dims that overflow.
pub(crate) fn dense_len(element_type: ElementType, dims: &[i64]) -> Result<usize> {
    crate::buffer::element_count(dims)?
        .checked_mul(element_type.byte_size())
        .ok_or_else(|| Error::InvalidTensor(format!("byte size of {dims:?} overflows")))
}

/// Checks that a strided view of `dims` with `byte_strides` (non-negative) stays inside `len`
/// bytes, with checked arithmetic.
pub(crate) fn check_strided(
    element_type: ElementType,
    dims: &[i64],
    byte_strides: &[i64],
    len: usize,
) -> Result<()> {
    let bad = |why: String| {
        Error::InvalidTensor(format!(
            "strided {element_type} view {dims:?} with byte strides {byte_strides:?}: {why}"
        ))
    };
    if byte_strides.len() != dims.len() {
        return Err(bad(format!("{} strides for {} dims", byte_strides.len(), dims.len())));
    }
    if dims.contains(&0) {
        return Ok(());
    }
    let mut last: i64 = 0;
    for (&d, &s) in dims.iter().zip(byte_strides) {
        if d < 0 || s < 0 {
            return Err(bad("negative dimension or stride".into()));
        }
        last = (d - 1).checked_mul(s).and_then(|x| last.checked_add(x)).ok_or_else(|| bad("offset overflows".into()))?;
    }
    let end = last.checked_add(element_type.byte_size() as i64).ok_or_else(|| bad("offset overflows".into()))?;
    if end as u64 > len as u64 {
        return Err(bad(format!("reaches byte {end} of {len}")));
    }
    Ok(())
}

fn transfer_error(direction: &'static str, message: String) -> Error {
    Error::Transfer { direction, message }
}

impl RawApi {
    /// `Ok` for a null error, else the error's message (the error is freed).
    pub(crate) fn check(&self, err: *mut pjrt_sys::PJRT_Error) -> std::result::Result<(), String> {
        if err.is_null() {
            Ok(())
        } else {
            Err(self.take_error(err))
        }
    }

    /// Creates a client with the plugin-specific integer `options` (name, value), and keeps the
    /// raw pointer `pjrt` 0.2.0 does not expose.
    pub(crate) fn create_client(&self, options: &[(&str, i64)]) -> std::result::Result<*mut PJRT_Client, String> {
        let api = self.table();
        let f = api.PJRT_Client_Create.ok_or("the plugin does not implement PJRT_Client_Create")?;
        let named: Vec<pjrt_sys::PJRT_NamedValue> = options
            .iter()
            .map(|&(name, value)| {
                let mut v = pjrt_sys::PJRT_NamedValue::new();
                v.name = name.as_ptr().cast();
                v.name_size = name.len();
                v.type_ = pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64;
                v.__bindgen_anon_1.int64_value = value;
                v.value_size = 1;
                v
            })
            .collect();
        let mut args = pjrt_sys::PJRT_Client_Create_Args::new();
        if !named.is_empty() {
            args.create_options = named.as_ptr();
            args.num_options = named.len();
        }
        // SAFETY: args fully initialized; `named` and the names it points into outlive the call
        // (the plugin copies the options), no key-value store.
        self.check(unsafe { f(&mut args) })?;
        if args.client.is_null() {
            return Err("the plugin returned no client".into());
        }
        Ok(args.client)
    }

    /// Every addressable device of `client`, in the plugin's order (never empty).
    pub(crate) fn devices(
        &self,
        client: *mut PJRT_Client,
    ) -> std::result::Result<Vec<*mut PJRT_Device>, String> {
        let api = self.table();
        let f = api
            .PJRT_Client_AddressableDevices
            .ok_or("the plugin does not implement PJRT_Client_AddressableDevices")?;
        let mut args = pjrt_sys::PJRT_Client_AddressableDevices_Args::new();
        args.client = client;
        // SAFETY: `client` is live; the returned array is owned by the client.
        self.check(unsafe { f(&mut args) })?;
        if args.num_addressable_devices == 0 || args.addressable_devices.is_null() {
            return Err("the client has no addressable device".into());
        }
        // SAFETY: a non-null array of `num_addressable_devices` entries, checked above.
        Ok(unsafe {
            std::slice::from_raw_parts(args.addressable_devices, args.num_addressable_devices)
        }
        .to_vec())
    }

    /// Waits for `event` and destroys it; the event's error, if any, becomes the message.
    pub(crate) fn await_event(&self, event: *mut PJRT_Event) -> std::result::Result<(), String> {
        if event.is_null() {
            return Ok(());
        }
        let api = self.table();
        let mut result = Ok(());
        if let Some(f) = api.PJRT_Event_Await {
            let mut args = pjrt_sys::PJRT_Event_Await_Args::new();
            args.event = event;
            // SAFETY: `event` is live until destroyed below.
            result = self.check(unsafe { f(&mut args) });
        }
        if let Some(f) = api.PJRT_Event_Destroy {
            let mut args = pjrt_sys::PJRT_Event_Destroy_Args::new();
            args.event = event;
            // SAFETY: destroys the event exactly once.
            let _ = self.check(unsafe { f(&mut args) });
        }
        result
    }

    /// Copies `bytes` to `device`; returns the new buffer. Without `byte_strides` the bytes are
    /// the dense row-major tensor; with them, element `i` of the tensor is at
    /// `sum(i[k] * byte_strides[k])` in `bytes` (a permuted view of a dense tensor, say), and the
    /// plugin gathers it into its own layout while copying.
    pub(crate) fn buffer_from_host(
        &self,
        client: *mut PJRT_Client,
        device: *mut PJRT_Device,
        element_type: ElementType,
        dims: &[i64],
        byte_strides: Option<&[i64]>,
        bytes: &[u8],
    ) -> Result<*mut PJRT_Buffer> {
        match byte_strides {
            None => {
                let want = dense_len(element_type, dims)?;
                if bytes.len() != want {
                    return Err(Error::InvalidTensor(format!(
                        "{element_type} tensor with dims {dims:?} needs {want} bytes, got {}",
                        bytes.len()
                    )));
                }
            }
            Some(strides) => check_strided(element_type, dims, strides, bytes.len())?,
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
        if let Some(strides) = byte_strides {
            args.byte_strides = strides.as_ptr();
            args.num_byte_strides = strides.len();
        }
        args.host_buffer_semantics =
            PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
        args.device = device;
        // SAFETY: `bytes` holds exactly the dense tensor and outlives the call; with
        // kImmutableOnlyDuringCall the plugin does not keep the pointer after returning.
        self.check(unsafe { f(&mut args) }).map_err(up)?;
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
        self.check(unsafe { f(&mut args) }).map_err(down)?;
        self.await_event(args.event).map_err(down)
    }
}

impl RawApi {
    /// Waits until `buffer` holds its value.
    pub(crate) fn await_ready(&self, buffer: *mut PJRT_Buffer) -> std::result::Result<(), String> {
        let Some(ready) = self.table().PJRT_Buffer_ReadyEvent else { return Ok(()) };
        let mut args = pjrt_sys::PJRT_Buffer_ReadyEvent_Args::new();
        args.buffer = buffer;
        // SAFETY: `buffer` is a live buffer of this plugin; the event is awaited and destroyed.
        self.check(unsafe { ready(&mut args) })?;
        self.await_event(args.event)
    }

    /// Where the contents of `buffer`, a buffer in host memory (the CPU plugin's), are in this
    /// process's memory, after waiting until the buffer is ready (unless `ready` says it is);
    /// `None` where the plugin does not say.
    pub(crate) fn host_pointer(&self, buffer: *mut PJRT_Buffer, ready: bool) -> Result<Option<*mut u8>> {
        let fail = |m: String| Error::Pjrt { operation: "host pointer", message: m };
        let Some(unsafe_ptr) = self.table().PJRT_Buffer_UnsafePointer else { return Ok(None) };
        if !ready {
            self.await_ready(buffer).map_err(fail)?;
        }
        let mut pointer = pjrt_sys::PJRT_Buffer_UnsafePointer_Args::new();
        pointer.buffer = buffer;
        // SAFETY: `buffer` is a live buffer of this plugin, the args are initialized.
        self.check(unsafe { unsafe_ptr(&mut pointer) }).map_err(fail)?;
        Ok(Some(pointer.buffer_pointer as *mut u8))
    }

    /// Destroys `buffer` (callable from any thread: the C API is thread-safe).
    pub(crate) fn destroy_buffer(&self, buffer: *mut PJRT_Buffer) {
        if let Some(f) = self.table().PJRT_Buffer_Destroy {
            let mut args = pjrt_sys::PJRT_Buffer_Destroy_Args::new();
            args.buffer = buffer;
            // SAFETY: the caller owns `buffer` and destroys it exactly once.
            if let Err(message) = self.check(unsafe { f(&mut args) }) {
                tracing::warn!(%message, "PJRT_Buffer_Destroy failed");
            }
        }
    }
}

/// A device buffer whose memory is lent to another owner (a torch tensor, through DLPack),
/// detached from its client so that it can be dropped on any thread. Dropping it destroys the
/// buffer.
pub struct SharedBuffer {
    buffer: *mut PJRT_Buffer,
    data: *mut u8,
    len: usize,
    memory: MemoryKind,
    raw: RawApi,
}

// SAFETY: the PJRT C API is thread-safe; this holds only the raw buffer and the plugin's
// static function table, never the `Rc`-based client wrapper.
unsafe impl Send for SharedBuffer {}
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    /// The contents' address (dense, row-major) in [`SharedBuffer::memory`]; valid while
    /// `self` lives.
    pub fn data(&self) -> *mut u8 {
        self.data
    }

    /// The contents' length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the contents are.
    pub fn memory(&self) -> MemoryKind {
        self.memory
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        self.raw.destroy_buffer(self.buffer);
    }
}

impl crate::DeviceBuffer {
    /// Hands the buffer over without a copy when its contents are in `memory` that another
    /// library can address (host memory on the CPU plugin, CUDA memory on the CUDA plugin:
    /// what [`crate::Client::memory_kind`] says; every buffer of the CPU plugin is in host
    /// memory): `Ok(Err(self))` gives it back unchanged where they are not (`memory` `None`).
    /// Waits until the buffer is ready (an execution's output already is).
    ///
    /// The client stays alive for as long as the process: the detached buffer keeps no
    /// reference to it, and PJRT requires the client to outlive its buffers.
    pub fn into_shared(self, memory: Option<MemoryKind>) -> Result<std::result::Result<SharedBuffer, Self>> {
        let len = self.byte_size()?;
        let ptr = self.raw_ptr();
        let raw = self.raw();
        let data = match memory {
            Some(MemoryKind::Host) => match raw.host_pointer(ptr, self.ready())? {
                Some(data) => data,
                None => return Ok(Err(self)),
            },
            Some(MemoryKind::Cuda(_)) => raw.device_pointer(ptr, self.ready())?,
            None => return Ok(Err(self)),
        };
        // The wrapper would destroy the buffer and release its client reference on drop: keep
        // both (the client reference is what keeps the client alive, see above).
        std::mem::forget(self.into_pjrt());
        Ok(Ok(SharedBuffer { buffer: ptr, data, len, memory: memory.unwrap_or(MemoryKind::Host), raw }))
    }
}

//! Memory shared with another library instead of copied: a PyTorch tensor's storage becomes a
//! device buffer (`PJRT_Client_CreateViewOfDeviceBuffer`), and an output buffer's memory is
//! lent to PyTorch (DLPack, in the Python bridge) through [`crate::DeviceBuffer::into_lent`].
//!
//! The same code serves every plugin: the CPU plugin's device memory is host memory, so a CPU
//! tensor is shared with it exactly as a CUDA tensor is shared with the CUDA plugin. Only the
//! [`MemoryKind`] differs, which is what keeps the path tested on machines without a GPU.
//!
//! Ownership: the caller hands an owner (the tensor object, say) with the memory; the plugin
//! calls back when it is done with the memory (the buffer destroyed and every computation that
//! read it finished), and the callback drops the owner, on whatever thread the plugin uses.

use std::any::Any;
use std::ffi::c_void;

use pjrt_sys::{PJRT_Buffer, PJRT_Client, PJRT_Device};

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::plugin::RawApi;

/// Where a piece of memory lives, as the library that owns it says (DLPack's device types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// This process's host memory (a CPU tensor).
    Host,
    /// The memory of CUDA device `ordinal` (a `cuda:<ordinal>` tensor).
    Cuda(i32),
}

/// The alignment the plugins require of memory they view: the XLA CPU plugin refuses a view of
/// memory less than 64-byte aligned ("Can't create a view of buffer with unaligned data");
/// PyTorch aligns its CPU allocations to 64 bytes and GPU allocations are more aligned still.
/// Memory less aligned (a tensor starting a few elements into its storage, say) is copied.
pub const SHARE_ALIGNMENT: usize = 64;

/// Memory another library owns, lent to a device buffer without a copy: a dense row-major
/// tensor of `element_type` and `dims` at `ptr`.
pub struct Lent {
    /// The element type.
    pub element_type: ElementType,
    /// The dims, outermost first; the memory is dense row-major.
    pub dims: Vec<i64>,
    /// The first element.
    pub ptr: *mut u8,
    /// Where `ptr` points.
    pub memory: MemoryKind,
    /// The handle of a stream (a CUDA stream) whose queued work produces the memory: the plugin
    /// makes its own work on the buffer wait for it, so the caller need not synchronize. 0 for
    /// none (host memory, or memory that is ready).
    pub stream: isize,
    /// Kept alive until the plugin is done with the memory, then dropped (on any thread).
    pub owner: Box<dyn Any + Send>,
}

/// What the plugin's delete callback drops.
type Owner = Box<dyn Any + Send>;

unsafe extern "C" fn release(_device_buffer: *mut c_void, user_arg: *mut c_void) {
    // SAFETY: `user_arg` came from `Box::into_raw` in `view_of_memory`, and the plugin calls
    // this once, when it no longer reads the memory.
    drop(unsafe { Box::from_raw(user_arg as *mut Owner) });
}

impl RawApi {
    /// A buffer on `device` that is a view of `lent`'s memory (no copy); `lent.owner` lives
    /// until the plugin is done with it. An error when the plugin cannot view memory (the owner
    /// is dropped at once then).
    pub(crate) fn view_of_memory(&self, client: *mut PJRT_Client, device: *mut PJRT_Device, lent: Lent) -> Result<*mut PJRT_Buffer> {
        let fail = |message: String| Error::Pjrt { operation: "view of device memory", message };
        let f = self
            .table()
            .PJRT_Client_CreateViewOfDeviceBuffer
            .ok_or_else(|| fail("the plugin does not implement PJRT_Client_CreateViewOfDeviceBuffer".into()))?;
        let Lent { element_type, dims, ptr, stream, owner, .. } = lent;
        let user_arg = Box::into_raw(Box::new(owner));
        let mut args = pjrt_sys::PJRT_Client_CreateViewOfDeviceBuffer_Args::new();
        args.client = client;
        args.device_buffer_ptr = ptr as *mut c_void;
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        args.element_type = element_type.to_pjrt();
        args.device = device;
        args.on_delete_callback = Some(release);
        args.on_delete_callback_arg = user_arg as *mut c_void;
        args.stream = stream;
        // SAFETY: args fully initialized; `dims` outlives the call; the memory stays valid
        // until `release` runs (the owner keeps it).
        let result = self.check(unsafe { f(&mut args) });
        if result.is_err() || args.buffer.is_null() {
            // The plugin made no buffer, so it will not call back: drop the owner here.
            // SAFETY: `user_arg` is ours again (see above).
            drop(unsafe { Box::from_raw(user_arg) });
            return Err(fail(result.err().unwrap_or_else(|| "the plugin returned no buffer".into())));
        }
        Ok(args.buffer)
    }

    /// The device's hardware id on its machine (the CUDA ordinal), if the plugin says.
    pub(crate) fn local_hardware_id(&self, device: *mut PJRT_Device) -> Option<i32> {
        let f = self.table().PJRT_Device_LocalHardwareId?;
        let mut args = pjrt_sys::PJRT_Device_LocalHardwareId_Args::new();
        args.device = device;
        // SAFETY: a live device of this plugin.
        self.check(unsafe { f(&mut args) }).ok()?;
        Some(args.local_hardware_id)
    }

    /// The address of `buffer`'s memory on its device (after waiting until it is ready, unless
    /// `ready` says it is), for lending it to another library.
    pub(crate) fn device_pointer(&self, buffer: *mut PJRT_Buffer, ready: bool) -> Result<*mut u8> {
        let fail = |message: String| Error::Pjrt { operation: "device memory pointer", message };
        let api = self.table();
        if !ready {
            self.await_ready(buffer).map_err(fail)?;
        }
        let f = api
            .PJRT_Buffer_OpaqueDeviceMemoryDataPointer
            .ok_or_else(|| fail("the plugin does not implement PJRT_Buffer_OpaqueDeviceMemoryDataPointer".into()))?;
        let mut args = pjrt_sys::PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args::new();
        args.buffer = buffer;
        // SAFETY: a live buffer of this plugin.
        self.check(unsafe { f(&mut args) }).map_err(fail)?;
        Ok(args.device_memory_ptr as *mut u8)
    }
}

/// Whether `ptr` may be viewed by a plugin (see [`SHARE_ALIGNMENT`]).
pub fn shareable(ptr: *const u8) -> bool {
    (ptr as usize).is_multiple_of(SHARE_ALIGNMENT)
}

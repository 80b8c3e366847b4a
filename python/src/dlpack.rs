//! Outputs handed to torch without a copy: a PJRT buffer whose memory torch can address (host
//! memory on the CPU plugin, CUDA memory on the CUDA plugin) wrapped as a DLPack capsule that
//! `torch.from_dlpack` adopts. The tensor owns the buffer; when torch frees the tensor (on
//! whatever thread), the buffer is destroyed. The buffer is ready before the capsule is made
//! (`SharedBuffer` waits), so torch's streams need no event to order after it.
//!
//! Layout of the structs: DLPack's `dlpack.h` (the unversioned `DLManagedTensor`, which every
//! PyTorch release reads from a capsule named `dltensor`).

use std::ffi::{c_void, CStr};

use fxhlo::runtime::{ElementType, MemoryKind, SharedBuffer};
use pyo3::ffi;
use pyo3::prelude::*;
use smallvec::SmallVec;

#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// The capsule's one allocation: the DLPack struct torch reads (first, so that a pointer to
/// this is one to it), and what it keeps alive: the buffer and the shape `dl_tensor.shape`
/// points at (inline for up to 6 dims: the allocation does not move while torch holds it).
#[repr(C)]
struct Managed {
    tensor: DlManagedTensor,
    _buffer: SharedBuffer,
    shape: SmallVec<[i64; 6]>,
}

const NAME: &CStr = c"dltensor";
const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;

/// DLPack's (type code, bits) of an element type.
fn dl_dtype(t: ElementType) -> DlDataType {
    let (code, bits) = match t {
        ElementType::Bool => (6, 8),
        ElementType::I8 => (0, 8),
        ElementType::I16 => (0, 16),
        ElementType::I32 => (0, 32),
        ElementType::I64 => (0, 64),
        ElementType::U8 => (1, 8),
        ElementType::F16 => (2, 16),
        ElementType::F32 => (2, 32),
        ElementType::F64 => (2, 64),
        ElementType::BF16 => (4, 16),
        ElementType::C64 => (5, 64),
        ElementType::C128 => (5, 128),
    };
    DlDataType { code, bits, lanes: 1 }
}

unsafe extern "C" fn delete_managed(m: *mut DlManagedTensor) {
    // SAFETY: `m` is the first field of a `Managed` made by `Box::into_raw` in `capsule`, and
    // DLPack calls the deleter exactly once.
    unsafe { drop(Box::from_raw(m as *mut Managed)) }
}

unsafe extern "C" fn destroy_capsule(capsule: *mut ffi::PyObject) {
    // A capsule torch adopted is renamed `used_dltensor` and torch calls the deleter; one that
    // was never adopted still owns its tensor.
    // SAFETY: called by Python with the capsule being destroyed (the GIL is held).
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DlManagedTensor;
            if let Some(delete) = (*m).deleter {
                delete(m);
            }
        }
    }
}

/// A `dltensor` capsule owning `buffer`, a dense row-major tensor of `element` and `dims` in the
/// buffer's memory.
pub fn capsule<'py>(py: Python<'py>, buffer: SharedBuffer, element: ElementType, dims: &[i64]) -> PyResult<Bound<'py, PyAny>> {
    let dl_tensor = DlTensor {
        data: buffer.data() as *mut c_void,
        device: match buffer.memory() {
            MemoryKind::Host => DlDevice { device_type: DL_CPU, device_id: 0 },
            MemoryKind::Cuda(ordinal) => DlDevice { device_type: DL_CUDA, device_id: ordinal },
        },
        ndim: dims.len() as i32,
        dtype: dl_dtype(element),
        shape: std::ptr::null_mut(),
        // Null strides: dense row-major.
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let tensor = DlManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_managed) };
    let managed = Box::into_raw(Box::new(Managed { tensor, _buffer: buffer, shape: SmallVec::from_slice(dims) }));
    // SAFETY: `managed` is live; the shape it points at lives (and stays put) in the same box.
    unsafe { (*managed).tensor.dl_tensor.shape = (*managed).shape.as_mut_ptr() };
    let managed = managed as *mut DlManagedTensor;
    // SAFETY: `managed` is a valid pointer; the destructor frees it unless torch adopts it.
    let raw = unsafe { ffi::PyCapsule_New(managed as *mut c_void, NAME.as_ptr(), Some(destroy_capsule)) };
    if raw.is_null() {
        // SAFETY: not handed to Python: free it here.
        unsafe { delete_managed(managed) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `raw` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) })
}

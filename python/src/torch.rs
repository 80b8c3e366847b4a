//! Reading torch tensors from Rust: dtypes, the checks and the dense CPU view an upload needs.

use fxhlo::runtime::{ElementType, MemoryKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use fxhlo::InputSignature;

/// The torch dtype objects, by [`ElementType`], looked up once.
pub(crate) struct Dtypes {
    /// `fxhlo._compat.size_stride_check()`: PyTorch's check of a tensor's sizes and strides in
    /// one call, or None.
    pub(crate) size_stride: Option<Py<PyAny>>,
    pub(crate) torch_empty: Py<PyAny>,
    pub(crate) from_dlpack: Py<PyAny>,
    /// `torch.cuda.current_stream`, for the stream a CUDA input is lent on.
    pub(crate) current_stream: Py<PyAny>,
    pub(crate) by_type: Vec<(ElementType, Py<PyAny>)>,
}

pub(crate) static DTYPES: PyOnceLock<Dtypes> = PyOnceLock::new();

pub(crate) fn dtypes(py: Python<'_>) -> PyResult<&'static Dtypes> {
    DTYPES.get_or_try_init(py, || {
        let torch = py.import("torch")?;
        let names = [
            (ElementType::F64, "float64"),
            (ElementType::F32, "float32"),
            (ElementType::F16, "float16"),
            (ElementType::BF16, "bfloat16"),
            (ElementType::I64, "int64"),
            (ElementType::I32, "int32"),
            (ElementType::I16, "int16"),
            (ElementType::I8, "int8"),
            (ElementType::U8, "uint8"),
            (ElementType::Bool, "bool"),
            (ElementType::C64, "complex64"),
            (ElementType::C128, "complex128"),
        ];
        let by_type = names
            .iter()
            .map(|(t, n)| Ok((*t, torch.getattr(*n)?.unbind())))
            .collect::<PyResult<Vec<_>>>()?;
        let size_stride = py.import("fxhlo._compat")?.call_method0("size_stride_check")?;
        Ok(Dtypes {
            size_stride: (!size_stride.is_none()).then(|| size_stride.unbind()),
            torch_empty: torch.getattr("empty")?.unbind(),
            // `torch.from_dlpack` on a capsule only checks its arguments and calls this; calling
            // it directly saves a Python frame per output (~1 µs of a ~10 µs call).
            from_dlpack: torch.getattr("_C").and_then(|c| c.getattr("_from_dlpack")).or_else(|_| torch.getattr("from_dlpack"))?.unbind(),
            current_stream: torch.getattr("cuda")?.getattr("current_stream")?.unbind(),
            by_type,
        })
    })
}

impl Dtypes {
    pub(crate) fn torch(&self, t: ElementType) -> &Py<PyAny> {
        // Every ElementType is in the table (built from the same list as ElementType::ALL).
        &self.by_type.iter().find(|(e, _)| *e == t).unwrap_or(&self.by_type[0]).1
    }
}

/// `t._version`, or `None` for tensors without a version counter (inference tensors).
pub(crate) fn version(t: &Bound<'_, PyAny>) -> Option<i64> {
    t.getattr(pyo3::intern!(t.py(), "_version")).and_then(|v| v.extract()).ok()
}

/// An error unless `t` has the dtype and shape of the graph's input `index` (`sig`).
fn check_signature(sig: &InputSignature, index: usize, t: &Bound<'_, PyAny>, dt: &Dtypes) -> PyResult<()> {
    let py = t.py();
    let dtype = t.getattr(pyo3::intern!(py, "dtype"))?;
    let want = dt.torch(fxhlo::element_type(sig.ty.dtype)).bind(py);
    let shape: Vec<i64> = t.getattr(pyo3::intern!(py, "shape"))?.extract()?;
    if !dtype.is(want) || shape != sig.ty.shape.as_slice() {
        return Err(PyValueError::new_err(format!(
            "input {index} (`{}`) is {dtype} {shape:?} but the graph was compiled for {want} {:?}",
            sig.name,
            sig.ty.shape.as_slice()
        )));
    }
    Ok(())
}

/// The tensor as a dense CPU tensor of the input's dtype and shape (a copy only when it is not
/// contiguous, not on the CPU, or a conjugate or negative view), checked against the signature
/// of the graph's input `index`.
/// A device layout is not applied here: the upload reads the tensor through permuted strides.
pub(crate) fn dense_cpu<'py>(sig: &InputSignature, index: usize, t: &Bound<'py, PyAny>, dt: &Dtypes) -> PyResult<Bound<'py, PyAny>> {
    let py = t.py();
    check_signature(sig, index, t, dt)?;
    let mut t = t.clone();
    if !t.getattr(pyo3::intern!(py, "is_cpu"))?.is_truthy()? {
        t = t.call_method0(pyo3::intern!(py, "cpu"))?;
    }
    if !t.call_method0(pyo3::intern!(py, "is_contiguous"))?.is_truthy()? {
        t = t.call_method0(pyo3::intern!(py, "contiguous"))?;
    }
    // The memory a copy reads must hold the values: a conjugate or negative view's does not
    // (each returns the tensor itself when it has no such bit).
    t = t.call_method0(pyo3::intern!(py, "resolve_conj"))?.call_method0(pyo3::intern!(py, "resolve_neg"))?;
    Ok(t)
}

/// An input's sizes and its dense row-major strides as Python tuples, made once per executable
/// for [`lendable`]'s one-call check.
pub(crate) struct DenseLayout {
    sizes: Py<PyTuple>,
    strides: Py<PyTuple>,
}

impl DenseLayout {
    /// `sig`'s sizes and the strides of a dense row-major tensor of them (PyTorch's: a dim of
    /// size 0 strides as if it were 1).
    pub(crate) fn of(py: Python<'_>, sig: &InputSignature) -> PyResult<DenseLayout> {
        let dims = sig.ty.shape.as_slice();
        let mut strides = vec![1i64; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1].max(1);
        }
        Ok(DenseLayout { sizes: PyTuple::new(py, dims)?.unbind(), strides: PyTuple::new(py, strides)?.unbind() })
    }
}

/// Where a dense tensor of the graph's input `index` (`sig`, checked) lives, for lending it to
/// the device: the memory, its first element's address, and for a CUDA tensor the handle of
/// the stream PyTorch queues its work on (the device's work on the tensor waits for it). `None`
/// for a tensor that is not dense (it is copied). With `layout` (`sig`'s), a tensor of the
/// right dtype is checked by one call of PyTorch's size and stride check first; one that fails
/// it goes through the checks one by one (a dense tensor whose size-1 dims have other strides,
/// or the error naming the input).
pub(crate) fn lendable(
    sig: &InputSignature,
    index: usize,
    t: &Bound<'_, PyAny>,
    dt: &Dtypes,
    layout: Option<&DenseLayout>,
) -> PyResult<Option<(MemoryKind, usize, isize)>> {
    let py = t.py();
    let fast = match (&dt.size_stride, layout) {
        (Some(check), Some(l)) => {
            let want = dt.torch(fxhlo::element_type(sig.ty.dtype)).bind(py);
            t.getattr(pyo3::intern!(py, "dtype"))?.is(want) && check.bind(py).call1((t, l.sizes.bind(py), l.strides.bind(py))).is_ok()
        }
        _ => false,
    };
    if !fast {
        check_signature(sig, index, t, dt)?;
        if !t.call_method0(pyo3::intern!(py, "is_contiguous"))?.is_truthy()? {
            return Ok(None);
        }
    }
    // A conjugate view's memory holds the values before conjugation: copied (and resolved)
    // instead. Asked of complex inputs only (Dynamo's graphs get theirs resolved already).
    if sig.ty.dtype.is_complex() && t.call_method0(pyo3::intern!(py, "is_conj"))?.is_truthy()? {
        return Ok(None);
    }
    let (memory, stream) = if t.getattr(pyo3::intern!(py, "is_cpu"))?.is_truthy()? {
        (MemoryKind::Host, 0)
    } else if t.getattr(pyo3::intern!(py, "is_cuda"))?.is_truthy()? {
        let device = t.getattr(pyo3::intern!(py, "device"))?;
        let ordinal: i32 = device.getattr(pyo3::intern!(py, "index"))?.extract::<Option<i32>>()?.unwrap_or(0);
        let stream = dt.current_stream.bind(py).call1((device,))?;
        (MemoryKind::Cuda(ordinal), stream.getattr("cuda_stream")?.extract()?)
    } else {
        return Ok(None);
    };
    Ok(Some((memory, data_ptr(t)?, stream)))
}

pub(crate) fn data_ptr(t: &Bound<'_, PyAny>) -> PyResult<usize> {
    t.call_method0(pyo3::intern!(t.py(), "data_ptr"))?.extract()
}

/// The bytes of a dense CPU tensor of `len` bytes at `ptr`.
///
/// SAFETY: `ptr` must be the data pointer of a live dense CPU tensor of `len` bytes that is
/// not written while the slice is used (the caller holds the tensor and the GIL).
pub(crate) unsafe fn tensor_bytes<'a>(ptr: usize, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(ptr as *const u8, len)
}

/// A dense CPU tensor's bytes lent to a graph without a copy (a frozen weight): the tensor
/// object is kept alive, so its storage is neither freed nor moved while the graph holds it.
pub(crate) struct TensorBytes {
    _tensor: Py<PyAny>,
    ptr: usize,
    len: usize,
}

impl TensorBytes {
    /// The bytes of `dense`, a contiguous CPU tensor.
    pub(crate) fn new(dense: &Bound<'_, PyAny>) -> PyResult<TensorBytes> {
        let len: usize = dense.getattr(pyo3::intern!(dense.py(), "nbytes"))?.extract()?;
        Ok(TensorBytes { ptr: data_ptr(dense)?, len, _tensor: dense.clone().unbind() })
    }
}

impl fxhlo::ir::Bytes for TensorBytes {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `_tensor` keeps the dense storage of `len` bytes at `ptr` alive; fxhlo only
        // reads it while compiling (a tensor written meanwhile is the caller's race, as in
        // eager PyTorch).
        unsafe { tensor_bytes(self.ptr, self.len) }
    }
}

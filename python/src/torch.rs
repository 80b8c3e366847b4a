//! Reading torch tensors from Rust: dtypes, the checks and the dense CPU view an upload needs.

use fxhlo::runtime::ElementType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::state::Arg;

/// The torch dtype objects, by [`ElementType`], looked up once.
pub(crate) struct Dtypes {
    pub(crate) torch_empty: Py<PyAny>,
    pub(crate) from_dlpack: Py<PyAny>,
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
        Ok(Dtypes {
            torch_empty: torch.getattr("empty")?.unbind(),
            // `torch.from_dlpack` on a capsule only checks its arguments and calls this; calling
            // it directly saves a Python frame per output (~1 µs of a ~10 µs call).
            from_dlpack: torch.getattr("_C").and_then(|c| c.getattr("_from_dlpack")).or_else(|_| torch.getattr("from_dlpack"))?.unbind(),
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

/// What an upload reads: a CPU tensor holding the input's bytes and, for an input the device
/// takes permuted, the byte strides under which those bytes are its device layout (`None`:
/// dense row-major in the device layout).
pub(crate) struct HostView<'py> {
    pub(crate) tensor: Bound<'py, PyAny>,
    pub(crate) byte_strides: Option<Vec<i64>>,
}

/// [`dense_cpu`], except that a contiguous CPU tensor the device takes permuted (a resident
/// weight in its kernel layout) is not copied into that layout here: the plugin gathers it
/// with the permuted strides while uploading (one pass instead of two; ResNet-18's weights:
/// 30-45 ms of torch permute-and-copy on the first call).
pub(crate) fn host_view<'py>(arg: &Arg, index: usize, t: &Bound<'py, PyAny>, dt: &Dtypes) -> PyResult<HostView<'py>> {
    let py = t.py();
    if let Some(perm) = &arg.layout {
        check_signature(arg, index, t, dt)?;
        let on_cpu = t.getattr(pyo3::intern!(py, "is_cpu"))?.is_truthy()?;
        if on_cpu && t.call_method0(pyo3::intern!(py, "is_contiguous"))?.is_truthy()? {
            let strides: Vec<i64> = t.call_method0(pyo3::intern!(py, "stride"))?.extract()?;
            let size = arg.element.byte_size() as i64;
            let byte_strides = perm.iter().map(|&p| strides.get(p).copied().unwrap_or(0) * size).collect();
            return Ok(HostView { tensor: t.clone(), byte_strides: Some(byte_strides) });
        }
    }
    Ok(HostView { tensor: dense_cpu(arg, index, t, dt)?, byte_strides: None })
}

/// An error unless `t` has the dtype and shape the graph was compiled for.
fn check_signature(arg: &Arg, index: usize, t: &Bound<'_, PyAny>, dt: &Dtypes) -> PyResult<()> {
    let py = t.py();
    let dtype = t.getattr(pyo3::intern!(py, "dtype"))?;
    let want = dt.torch(arg.element).bind(py);
    let shape: Vec<i64> = t.getattr(pyo3::intern!(py, "shape"))?.extract()?;
    if !dtype.is(want) || shape != arg.dims {
        return Err(PyValueError::new_err(format!(
            "input {index} (`{}`) is {dtype} {shape:?} but the graph was compiled for {want} {:?}",
            arg.name, arg.dims
        )));
    }
    Ok(())
}

/// The tensor as a dense CPU tensor of the input's dtype and shape, in its device layout (a
/// copy only when it is not contiguous, not on the CPU or permuted), checked against the
/// signature.
pub(crate) fn dense_cpu<'py>(arg: &Arg, index: usize, t: &Bound<'py, PyAny>, dt: &Dtypes) -> PyResult<Bound<'py, PyAny>> {
    let py = t.py();
    check_signature(arg, index, t, dt)?;
    let mut t = t.clone();
    if !t.getattr(pyo3::intern!(py, "is_cpu"))?.is_truthy()? {
        t = t.call_method0(pyo3::intern!(py, "cpu"))?;
    }
    if let Some(perm) = &arg.layout {
        t = t.call_method1(pyo3::intern!(py, "permute"), (perm.clone(),))?;
    }
    if !t.call_method0(pyo3::intern!(py, "is_contiguous"))?.is_truthy()? {
        t = t.call_method0(pyo3::intern!(py, "contiguous"))?;
    }
    Ok(t)
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

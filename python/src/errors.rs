//! Rust errors as the exception classes of `fxhlo.errors`, looked up once per interpreter
//! (at the first error) by a typed [`Class`], not by a string at every raise.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// The exception classes of `fxhlo.errors` the bridge raises.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Class {
    Compile,
    UnsupportedOps,
    Device,
    Execution,
}

impl Class {
    /// Every class, in the order of [`CLASSES`]'s table.
    const ALL: [Class; 4] = [Class::Compile, Class::UnsupportedOps, Class::Device, Class::Execution];

    /// The class's name in `fxhlo/errors.py`.
    fn name(self) -> &'static str {
        match self {
            Class::Compile => "CompileError",
            Class::UnsupportedOps => "UnsupportedOpsError",
            Class::Device => "DeviceError",
            Class::Execution => "ExecutionError",
        }
    }
}

/// The class objects, in [`Class::ALL`]'s order.
static CLASSES: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();

/// The class object of `class`.
fn class_object(py: Python<'_>, class: Class) -> PyResult<&Py<PyAny>> {
    let table = CLASSES.get_or_try_init(py, || {
        let module = py.import("fxhlo.errors")?;
        Class::ALL.iter().map(|c| Ok(module.getattr(c.name())?.unbind())).collect::<PyResult<Vec<_>>>()
    })?;
    Ok(&table[class as usize])
}

/// An instance of `class` made with `args`, as a Python exception.
pub(crate) fn error_of<'py>(py: Python<'py>, class: Class, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    match class_object(py, class).and_then(|cls| cls.bind(py).call1(args)) {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// An instance of `class` with `message`, as a Python exception.
pub(crate) fn error(py: Python<'_>, class: Class, message: &str) -> PyErr {
    error_of(py, class, (message,))
}

/// A facade error of a compile as `UnsupportedOpsError` (with the list of ops) or
/// `CompileError`; the message keeps a failure's reproduction command (`reproduce with: fxhlo
/// compile ...`).
pub(crate) fn compile_error(py: Python<'_>, e: &fxhlo::Error) -> PyErr {
    if let fxhlo::Error::Codegen(cg) = e.root() {
        if let fxhlo::codegen::Error::Unsupported { ops, .. } = cg.as_ref() {
            let listed: Vec<(String, String, Option<String>)> =
                ops.iter().map(|o| (o.target.clone(), o.node.clone(), o.source.clone())).collect();
            let reasons: Vec<&str> = ops.iter().map(|o| o.reason.as_str()).collect();
            return error_of(py, Class::UnsupportedOps, (e.to_string(), listed, reasons));
        }
    }
    error(py, Class::Compile, &e.to_string())
}

/// A facade error of a call: `IndexError` for an index out of range (as eager raises), else
/// `ExecutionError`.
pub(crate) fn call_error(py: Python<'_>, e: &fxhlo::Error) -> PyErr {
    match e {
        fxhlo::Error::IndexOutOfRange { .. } => pyo3::exceptions::PyIndexError::new_err(e.to_string()),
        e => error(py, Class::Execution, &e.to_string()),
    }
}

//! Rust errors as the exception classes of `fxhlo.errors`.

use pyo3::prelude::*;

/// An instance of `fxhlo.errors.<class>` made with `args`, as a Python exception.
pub(crate) fn error_of<'py>(py: Python<'py>, class: &str, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    let made = py.import("fxhlo.errors").and_then(|m| m.getattr(class)).and_then(|cls| cls.call1(args));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// An instance of `fxhlo.errors.<class>` with `message`, as a Python exception.
pub(crate) fn error(py: Python<'_>, class: &str, message: &str) -> PyErr {
    error_of(py, class, (message,))
}

/// A facade error as `UnsupportedOpsError` (with the list of ops) or `CompileError`; the
/// message keeps a failure's reproduction command (`reproduce with: fxhlo compile ...`).
pub(crate) fn compile_error(py: Python<'_>, e: &fxhlo::Error) -> PyErr {
    if let fxhlo::Error::Codegen(cg) = e.root() {
        if let fxhlo::codegen::Error::Unsupported { ops, .. } = cg.as_ref() {
            let listed: Vec<(String, String, Option<String>)> =
                ops.iter().map(|o| (o.target.clone(), o.node.clone(), o.source.clone())).collect();
            return error_of(py, "UnsupportedOpsError", (e.to_string(), listed));
        }
    }
    error(py, "CompileError", &e.to_string())
}

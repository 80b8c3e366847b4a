//! Numerical check of a run against PyTorch's stored reference outputs.
//!
//! An element passes when `|got - want| <= atol + rtol * |want|` (the rule of
//! `torch.testing.assert_close`), with tolerances chosen by dtype. NaN matches NaN, and an
//! infinity only itself.

use std::fmt;

use fxhlo_frontend::Bundle;
use fxhlo_ir::DType;
use fxhlo_runtime::HostTensor;

use crate::tensor::{element_type, host_tensor};
use crate::{Error, Result};

/// Absolute and relative tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

impl Tolerance {
    /// The tolerance for comparing a compiled result of `dtype` with PyTorch eager: f32/f64
    /// 1e-5 (XLA may sum in another order), f16/bf16 1e-2, integers and bool exact.
    pub fn for_dtype(dtype: DType) -> Tolerance {
        match dtype {
            DType::F64 | DType::F32 => Tolerance { atol: 1e-5, rtol: 1e-5 },
            DType::F16 | DType::BF16 => Tolerance { atol: 1e-2, rtol: 1e-2 },
            _ => Tolerance { atol: 0.0, rtol: 0.0 },
        }
    }
}

/// The comparison of one output.
#[derive(Debug, Clone)]
pub struct OutputCheck {
    pub index: usize,
    pub max_abs_err: f64,
    /// Max of `|got - want| / |want|` over elements with `want != 0`.
    pub max_rel_err: f64,
    pub tolerance: Tolerance,
    /// Elements outside tolerance.
    pub mismatched: usize,
    pub elements: usize,
}

/// The comparison of every output of a run.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub outputs: Vec<OutputCheck>,
}

impl CheckReport {
    /// Whether every element of every output is within tolerance.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|o| o.mismatched == 0)
    }

    /// Largest absolute error over all outputs.
    pub fn max_abs_err(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_abs_err).fold(0.0, f64::max)
    }

    /// Largest relative error over all outputs.
    pub fn max_rel_err(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_rel_err).fold(0.0, f64::max)
    }

    /// `Ok(self)` when passed, else [`Error::Mismatch`] describing the worst output.
    pub fn into_result(self) -> Result<CheckReport> {
        if self.passed() {
            return Ok(self);
        }
        let bad: Vec<String> = self
            .outputs
            .iter()
            .filter(|o| o.mismatched > 0)
            .map(|o| {
                format!(
                    "output {}: {} of {} elements differ from the PyTorch reference (max abs err {:.3e}, max rel err {:.3e}, atol {:.0e}, rtol {:.0e})",
                    o.index, o.mismatched, o.elements, o.max_abs_err, o.max_rel_err, o.tolerance.atol, o.tolerance.rtol
                )
            })
            .collect();
        Err(Error::Mismatch(bad.join("; ")))
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "check: {} outputs={} max_abs_err={:.3e} max_rel_err={:.3e}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.outputs.len(),
            self.max_abs_err(),
            self.max_rel_err()
        )
    }
}

/// Compares `outputs` with the bundle's `output.<i>` reference tensors.
pub fn check(outputs: &[HostTensor], bundle: &Bundle) -> Result<CheckReport> {
    let reference = bundle.reference.as_ref().ok_or_else(|| {
        Error::Input(format!("{}: no reference.safetensors to check against", bundle.dir.display()))
    })?;
    let mut checks = Vec::with_capacity(outputs.len());
    for (i, got) in outputs.iter().enumerate() {
        let view = reference.get(&format!("output.{i}")).ok_or_else(|| {
            Error::Input(format!("{}: reference has no `output.{i}`", reference.path().display()))
        })?;
        let want = host_tensor(&view)?;
        // An empty tensor has no values to compare; PyTorch's eager and meta dtypes can even
        // disagree for one (mixed-dtype batch norm statistics), so only its shape counts.
        let empty = want.dims.contains(&0);
        if (got.element_type != element_type(view.dtype) && !empty) || got.dims != want.dims {
            return Err(Error::Mismatch(format!(
                "output {i} is {:?}{:?}, the PyTorch reference is {:?}{:?}",
                got.element_type, got.dims, want.element_type, want.dims
            )));
        }
        checks.push(compare(i, &got.to_f32_vec(), &want.to_f32_vec(), Tolerance::for_dtype(view.dtype)));
    }
    Ok(CheckReport { outputs: checks })
}

/// Compares one output elementwise (values widened to f64) under `tol`.
pub fn compare(index: usize, got: &[f32], want: &[f32], tol: Tolerance) -> OutputCheck {
    let (mut max_abs, mut max_rel, mut mismatched) = (0.0f64, 0.0f64, 0);
    for (&g, &w) in got.iter().zip(want) {
        let (g, w) = (g as f64, w as f64);
        if g.is_nan() && w.is_nan() || g == w {
            continue;
        }
        let abs = (g - w).abs();
        let abs = if abs.is_nan() { f64::INFINITY } else { abs };
        max_abs = max_abs.max(abs);
        if w != 0.0 {
            max_rel = max_rel.max(abs / w.abs());
        }
        if abs > tol.atol + tol.rtol * w.abs() {
            mismatched += 1;
        }
    }
    OutputCheck { index, max_abs_err: max_abs, max_rel_err: max_rel, tolerance: tol, mismatched, elements: want.len() }
}

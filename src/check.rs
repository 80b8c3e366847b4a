//! Numerical check of a run against PyTorch's stored reference outputs.
//!
//! Each output is compared in its own type, under one of three rules (the report names the
//! rule it applied to each output):
//! - **exact** (integers and bool): every element equal, compared as `i64`, never as floats;
//! - **float64** (a floating output whose bundle holds a float64 eager reference,
//!   `float64.output.<i>`, written by `fxhlo.export(..., reference_f64=True)`): the method of
//!   PyTorch's accuracy checker for compiled models (`torch._dynamo.utils.same` with
//!   `fp64_ref`): fxhlo's root-mean-square error against the float64 run may be at most
//!   `multiplier` times eager's own error against it (2 for f32/f64, 3 for f16/bf16), plus a
//!   floor of a tenth of the dtype's tolerance for outputs that eager gets exactly;
//! - **scale-aware** (a floating output without a float64 reference):
//!   `|got - want| <= atol * scale + rtol * |want|` with `scale = max(1, max |want|)`, since the
//!   rounding error of a deep network grows with the magnitude of its values, not of each
//!   element.
//!
//! Under every floating rule, NaN must match NaN and an infinity the same infinity, nothing
//! else; the error figures are taken over the elements that are finite in both.

use std::fmt;

use fxhlo_frontend::Bundle;
use fxhlo_runtime::{Element, ElementType, HostTensor};
use half::{bf16, f16};

use crate::tensor::{element_type, host_tensor};
use crate::{Error, Result};

/// The reference key of output `i`'s float64 eager run.
pub fn float64_key(i: usize) -> String {
    format!("float64.output.{i}")
}

/// Absolute and relative tolerance of the scale-aware rule, by dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

impl Tolerance {
    /// f32/f64 1e-5 (XLA may sum in another order), f16/bf16 1e-2, integers and bool exact.
    pub fn for_type(t: ElementType) -> Tolerance {
        match t {
            ElementType::F64 | ElementType::F32 | ElementType::C64 | ElementType::C128 => Tolerance { atol: 1e-5, rtol: 1e-5 },
            ElementType::F16 | ElementType::BF16 => Tolerance { atol: 1e-2, rtol: 1e-2 },
            _ => Tolerance { atol: 0.0, rtol: 0.0 },
        }
    }
}

/// The rule an output was judged by, with the figures it used.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Integers and bool: every element equal.
    Exact,
    /// `got_rmse <= multiplier * eager_rmse + floor`, both errors against the float64 run.
    Float64 { got_rmse: f64, eager_rmse: f64, multiplier: f64, floor: f64 },
    /// `|got - want| <= tolerance.atol * scale + tolerance.rtol * |want|`.
    ScaleAware { tolerance: Tolerance, scale: f64 },
}

impl Rule {
    /// The rule's short name, as printed.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Exact => "exact",
            Rule::Float64 { .. } => "float64",
            Rule::ScaleAware { .. } => "scale-aware",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Exact => f.write_str("exact (integers and bool must be equal)"),
            Rule::Float64 { got_rmse, eager_rmse, multiplier, floor } => {
                let within = *got_rmse <= multiplier * eager_rmse + floor;
                write!(
                    f,
                    "float64 (rmse against float64 eager: fxhlo {got_rmse:.3e} {} {multiplier} x eager {eager_rmse:.3e} + {floor:.0e})",
                    if within { "<=" } else { ">" }
                )
            }
            Rule::ScaleAware { tolerance, scale } => write!(
                f,
                "scale-aware (|err| <= {:.0e} x scale {scale:.3e} + {:.0e} x |want|)",
                tolerance.atol, tolerance.rtol
            ),
        }
    }
}

/// The comparison of one output.
#[derive(Debug, Clone)]
pub struct OutputCheck {
    pub index: usize,
    pub element_type: ElementType,
    pub rule: Rule,
    /// Max `|got - want|` against eager's output (infinite where NaN/Inf positions differ).
    pub max_abs_err: f64,
    /// Max of `|got - want| / |want|` over elements with `want != 0`.
    pub max_rel_err: f64,
    /// Elements that differ: under `exact` and `scale-aware` those outside the rule; under
    /// `float64` those whose NaN/Inf does not match eager's.
    pub mismatched: usize,
    pub elements: usize,
    /// Whether the output passes its rule.
    pub passed: bool,
}

impl fmt::Display for OutputCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Under the float64 rule only NaN/Inf positions are judged element by element.
        let what = if matches!(self.rule, Rule::Float64 { .. }) { "have NaN/Inf where eager does not" } else { "differ" };
        write!(
            f,
            "output {} ({}): {} max_abs_err={:.3e} max_rel_err={:.3e}, {} of {} elements {what}; rule {}",
            self.index,
            self.element_type.name(),
            if self.passed { "PASS" } else { "FAIL" },
            self.max_abs_err,
            self.max_rel_err,
            self.mismatched,
            self.elements,
            self.rule
        )
    }
}

/// The comparison of every output of a run.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub outputs: Vec<OutputCheck>,
}

impl CheckReport {
    /// Whether every output passes its rule.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|o| o.passed)
    }

    /// Largest absolute error over all outputs.
    pub fn max_abs_err(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_abs_err).fold(0.0, f64::max)
    }

    /// Largest relative error over all outputs.
    pub fn max_rel_err(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_rel_err).fold(0.0, f64::max)
    }

    /// The rules applied, without repeats, in output order (`exact,float64`).
    pub fn rules(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for o in &self.outputs {
            if !names.contains(&o.rule.name()) {
                names.push(o.rule.name());
            }
        }
        names.join(",")
    }

    /// `Ok(self)` when passed, else [`Error::Mismatch`] describing every failing output.
    pub fn into_result(self) -> Result<CheckReport> {
        if self.passed() {
            return Ok(self);
        }
        let bad: Vec<String> = self.outputs.iter().filter(|o| !o.passed).map(|o| o.to_string()).collect();
        Err(Error::Mismatch(format!("outputs differ from the PyTorch reference: {}", bad.join("; "))))
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "check: {} outputs={} max_abs_err={:.3e} max_rel_err={:.3e} rule={}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.outputs.len(),
            self.max_abs_err(),
            self.max_rel_err(),
            self.rules()
        )
    }
}

/// A tensor's values in a type that holds each exactly: integers and bool as `i64`, floats as
/// `f64` (every f16, bf16 and f32 widens exactly; a complex value is two floats).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Values {
    /// The values of `t`, each exactly.
    pub fn of(t: &HostTensor) -> Values {
        // The runtime's own element readers; `to_vec` fails only for another type than the
        // tensor's, which the match rules out.
        fn ints<T: Element + Into<i64>>(t: &HostTensor) -> Values {
            Values::Int(t.to_vec::<T>().unwrap_or_default().into_iter().map(Into::into).collect())
        }
        fn floats<T: Element>(t: &HostTensor, widen: impl Fn(T) -> f64) -> Values {
            Values::Float(t.to_vec::<T>().unwrap_or_default().into_iter().map(widen).collect())
        }
        match t.element_type {
            ElementType::Bool => ints::<bool>(t),
            ElementType::U8 => ints::<u8>(t),
            ElementType::I8 => ints::<i8>(t),
            ElementType::I16 => ints::<i16>(t),
            ElementType::I32 => ints::<i32>(t),
            ElementType::I64 => ints::<i64>(t),
            ElementType::F16 => floats(t, |v: f16| v.to_f64()),
            ElementType::BF16 => floats(t, |v: bf16| v.to_f64()),
            ElementType::F32 => floats(t, |v: f32| f64::from(v)),
            ElementType::F64 => floats(t, |v: f64| v),
            // Real and imaginary parts interleaved, each compared as a float (c128's parts
            // through f32: within the f64 tolerance).
            ElementType::C64 | ElementType::C128 => Values::Float(t.to_f32_vec().into_iter().map(f64::from).collect()),
        }
    }

    /// At most `limit` values, each printed in its own type (`[1, 2, ...]`, `[0.5, NaN]`).
    pub fn preview(&self, limit: usize) -> String {
        let (shown, len): (Vec<String>, usize) = match self {
            Values::Int(v) => (v.iter().take(limit).map(i64::to_string).collect(), v.len()),
            Values::Float(v) => (v.iter().take(limit).map(|x| format!("{x:?}")).collect(), v.len()),
        };
        format!("[{}{}]", shown.join(", "), if len > limit { ", ..." } else { "" })
    }
}

/// Compares `outputs` with the bundle's `output.<i>` reference tensors, each under its rule.
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
                "output {i} is {}{:?}, the PyTorch reference is {}{:?}",
                got.element_type.name(),
                got.dims,
                want.element_type.name(),
                want.dims
            )));
        }
        let f64_ref = match reference.get(&float64_key(i)) {
            Some(v) => {
                let t = host_tensor(&v)?;
                if t.element_type != ElementType::F64 || t.dims != want.dims {
                    return Err(Error::Input(format!(
                        "{}: `{}` is {}{:?}, expected f64{:?}",
                        reference.path().display(),
                        float64_key(i),
                        t.element_type.name(),
                        t.dims,
                        want.dims
                    )));
                }
                Some(t)
            }
            None => None,
        };
        checks.push(compare(i, got, &want, f64_ref.as_ref()));
    }
    Ok(CheckReport { outputs: checks })
}

/// Compares one output with eager's `want` (same type and dims), under the float64 rule when
/// `float64` (eager's float64 run) is given and the output is floating.
pub fn compare(index: usize, got: &HostTensor, want: &HostTensor, float64: Option<&HostTensor>) -> OutputCheck {
    let element_type = want.element_type;
    match (Values::of(got), Values::of(want)) {
        (Values::Int(g), Values::Int(w)) => compare_exact(index, element_type, &g, &w),
        (Values::Float(g), Values::Float(w)) => {
            let reference = float64.map(Values::of);
            match reference {
                Some(Values::Float(r)) => compare_float64(index, element_type, &g, &w, &r),
                _ => compare_scale_aware(index, element_type, &g, &w),
            }
        }
        // Types already checked equal by `check`; a caller mixing kinds gets a failure.
        (g, w) => OutputCheck {
            index,
            element_type,
            rule: Rule::Exact,
            max_abs_err: f64::INFINITY,
            max_rel_err: f64::INFINITY,
            mismatched: match (&g, &w) {
                (Values::Int(v), _) | (Values::Float(_), Values::Int(v)) => v.len(),
                _ => 0,
            },
            elements: got.element_count().unwrap_or(0),
            passed: false,
        },
    }
}

fn compare_exact(index: usize, element_type: ElementType, got: &[i64], want: &[i64]) -> OutputCheck {
    let (mut max_abs, mut max_rel, mut mismatched) = (0.0f64, 0.0f64, 0);
    for (&g, &w) in got.iter().zip(want) {
        if g != w {
            mismatched += 1;
            // i128: the difference of two i64 can overflow an i64.
            let abs = (i128::from(g) - i128::from(w)).unsigned_abs() as f64;
            max_abs = max_abs.max(abs);
            if w != 0 {
                max_rel = max_rel.max(abs / (w as f64).abs());
            }
        }
    }
    let passed = mismatched == 0 && got.len() == want.len();
    OutputCheck { index, element_type, rule: Rule::Exact, max_abs_err: max_abs, max_rel_err: max_rel, mismatched, elements: want.len(), passed }
}

/// Whether `g` and `w` agree on being NaN, +Inf or -Inf (two finite values always agree).
fn same_non_finite(g: f64, w: f64) -> bool {
    if g.is_nan() || w.is_nan() {
        return g.is_nan() && w.is_nan();
    }
    if g.is_infinite() || w.is_infinite() {
        return g == w;
    }
    true
}

/// Max abs/rel error over the elements finite in both, and the count whose NaN/Inf differ.
fn errors(got: &[f64], want: &[f64]) -> (f64, f64, usize) {
    let (mut max_abs, mut max_rel, mut non_finite) = (0.0f64, 0.0f64, 0);
    for (&g, &w) in got.iter().zip(want) {
        if !same_non_finite(g, w) {
            non_finite += 1;
            max_abs = f64::INFINITY;
            continue;
        }
        if !(g.is_finite() && w.is_finite()) {
            continue;
        }
        let abs = (g - w).abs();
        max_abs = max_abs.max(abs);
        if w != 0.0 {
            max_rel = max_rel.max(abs / w.abs());
        }
    }
    (max_abs, max_rel, non_finite)
}

fn compare_scale_aware(index: usize, element_type: ElementType, got: &[f64], want: &[f64]) -> OutputCheck {
    let tolerance = Tolerance::for_type(element_type);
    let scale = want.iter().filter(|w| w.is_finite()).fold(1.0f64, |m, w| m.max(w.abs()));
    let (max_abs, max_rel, non_finite) = errors(got, want);
    let outside = got
        .iter()
        .zip(want)
        .filter(|(g, w)| g.is_finite() && w.is_finite() && (*g - *w).abs() > tolerance.atol * scale + tolerance.rtol * w.abs())
        .count();
    let mismatched = non_finite + outside;
    OutputCheck {
        index,
        element_type,
        rule: Rule::ScaleAware { tolerance, scale },
        max_abs_err: max_abs,
        max_rel_err: max_rel,
        mismatched,
        elements: want.len(),
        passed: mismatched == 0 && got.len() == want.len(),
    }
}

/// Root-mean-square of `a - b` over the elements finite in both (0 for none).
fn rmse(a: &[f64], b: &[f64]) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for (&x, &y) in a.iter().zip(b) {
        if x.is_finite() && y.is_finite() {
            sum += (x - y) * (x - y);
            n += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        (sum / n as f64).sqrt()
    }
}

fn compare_float64(index: usize, element_type: ElementType, got: &[f64], want: &[f64], float64: &[f64]) -> OutputCheck {
    let (max_abs, max_rel, non_finite) = errors(got, want);
    // PyTorch's checker: 3x for the half types (AMP-like rounding), 2x otherwise; its floor is a
    // tenth of the dtype's tolerance (1e-4 for f32 inference in its benchmarks).
    let (multiplier, floor) = match element_type {
        ElementType::F16 | ElementType::BF16 => (3.0, 1e-3),
        _ => (2.0, 1e-5),
    };
    let got_rmse = rmse(got, float64);
    let eager_rmse = rmse(want, float64);
    let passed = non_finite == 0 && got.len() == want.len() && got_rmse <= multiplier * eager_rmse + floor;
    OutputCheck {
        index,
        element_type,
        rule: Rule::Float64 { got_rmse, eager_rmse, multiplier, floor },
        max_abs_err: max_abs,
        max_rel_err: max_rel,
        mismatched: non_finite,
        elements: want.len(),
        passed,
    }
}

//! Typed access to one call's arguments, positional or by keyword, under their ATen schema
//! names. Each getter says why an argument cannot be read ([`Unsupported`]): absent where it
//! is required, of another kind, or a dtype fxhlo does not have.

use fxhlo_ir::{DType, Scalar};

use super::{Operand, Unsupported};
use crate::schema::{ArgView as Arg, TraceView};

/// The result of a getter: the value, or why it cannot be read.
pub type Got<T> = Result<T, Unsupported>;

/// Positional-or-keyword argument access by schema position and name. A position of
/// `usize::MAX` reads a keyword-only argument.
pub struct Args<'a> {
    pub view: &'a TraceView<'a>,
    pub args: &'a [Arg<'a>],
    /// Sorted by name, unique.
    pub kwargs: &'a [(&'a str, Arg<'a>)],
}

impl<'a> Args<'a> {
    fn kwarg(&self, name: &str) -> Option<&'a Arg<'a>> {
        let i = self.kwargs.binary_search_by(|(k, _)| (*k).cmp(name)).ok()?;
        Some(&self.kwargs[i].1)
    }

    /// The argument at position `i`, else keyword `name`; absent when missing or `None`.
    pub fn get(&self, i: usize, name: &str) -> Option<&'a Arg<'a>> {
        self.args.get(i).or_else(|| self.kwarg(name)).filter(|a| !matches!(a, Arg::None))
    }

    /// A required argument.
    fn required(&self, i: usize, name: &'static str) -> Got<&'a Arg<'a>> {
        self.get(i, name).ok_or(Unsupported::Missing { arg: name })
    }

    /// Whether the argument is given (and not `None`).
    pub fn has(&self, i: usize, name: &str) -> bool {
        self.get(i, name).is_some()
    }

    /// The tensor names of a required `Tensors` or `OptionalTensors` argument.
    pub fn tensor_list(&self, i: usize, name: &'static str) -> Got<&'a [Option<&'a str>]> {
        match self.required(i, name)? {
            Arg::Tensors(s) | Arg::OptionalTensors(s) => Ok(self.view.names(*s)),
            a => Err(kind(name, "a list of tensors", a)),
        }
    }

    /// A required tensor operand; a number becomes a scalar operand.
    pub fn tensor(&self, i: usize, name: &'static str) -> Got<Operand<'a>> {
        match self.required(i, name)? {
            Arg::Tensor(n) => Ok(Operand::Tensor(n)),
            a => scalar(a).map(Operand::Scalar).ok_or_else(|| kind(name, "a tensor or a number", a)),
        }
    }

    /// An int, `default` when absent.
    pub fn int(&self, i: usize, name: &'static str, default: i64) -> Got<i64> {
        match self.get(i, name) {
            None => Ok(default),
            Some(Arg::Int(v)) => Ok(*v),
            Some(a) => Err(kind(name, "an int", a)),
        }
    }

    /// An optional int.
    pub fn opt_int(&self, i: usize, name: &'static str) -> Got<Option<i64>> {
        match self.get(i, name) {
            None => Ok(None),
            Some(Arg::Int(v)) => Ok(Some(*v)),
            Some(a) => Err(kind(name, "an int or None", a)),
        }
    }

    /// An int list as a `Vec<i64>` or, for the ops that keep one inline, a `Shape`; a single
    /// int is a list of one; `default` when absent.
    pub fn ints<T: for<'s> From<&'s [i64]>>(&self, i: usize, name: &'static str, default: &[i64]) -> Got<T> {
        match self.get(i, name) {
            None => Ok(T::from(default)),
            Some(Arg::Ints(v)) => Ok(T::from(self.view.ints(*v))),
            Some(Arg::Int(v)) => Ok(T::from(std::slice::from_ref(v))),
            Some(a) => Err(kind(name, "a list of ints", a)),
        }
    }

    /// A bool, `default` when absent.
    pub fn bool(&self, i: usize, name: &'static str, default: bool) -> Got<bool> {
        match self.get(i, name) {
            None => Ok(default),
            Some(Arg::Bool(v)) => Ok(*v),
            Some(a) => Err(kind(name, "a bool", a)),
        }
    }

    /// A required number.
    pub fn scalar(&self, i: usize, name: &'static str) -> Got<Scalar> {
        let a = self.required(i, name)?;
        scalar(a).ok_or_else(|| kind(name, "a number", a))
    }

    /// An optional number.
    pub fn opt_scalar(&self, i: usize, name: &'static str) -> Got<Option<Scalar>> {
        match self.get(i, name) {
            None => Ok(None),
            Some(a) => scalar(a).map(Some).ok_or_else(|| kind(name, "a number or None", a)),
        }
    }

    /// A string argument, absent when missing or of another kind (the ops that read one fall
    /// back to a default then).
    pub fn string(&self, i: usize, name: &str) -> Option<&'a str> {
        match self.get(i, name) {
            Some(Arg::String(s)) => Some(s),
            _ => None,
        }
    }

    /// A required string.
    pub fn required_string(&self, i: usize, name: &'static str) -> Got<&'a str> {
        match self.required(i, name)? {
            Arg::String(s) => Ok(s),
            a => Err(kind(name, "a string", a)),
        }
    }

    /// A keyword-only optional dtype (`dtype=` of `_to_copy` and the reductions).
    pub fn kwarg_dtype(&self, name: &'static str) -> Got<Option<DType>> {
        self.dtype_arg(name, self.kwarg(name).filter(|a| !matches!(a, Arg::None)))
    }

    /// An optional dtype.
    pub fn dtype(&self, i: usize, name: &'static str) -> Got<Option<DType>> {
        self.dtype_arg(name, self.get(i, name))
    }

    fn dtype_arg(&self, name: &'static str, arg: Option<&Arg>) -> Got<Option<DType>> {
        match arg {
            None => Ok(None),
            Some(Arg::Dtype(d)) => d.parse().map(Some).map_err(|_| Unsupported::DType { arg: name, found: d.to_string() }),
            Some(a) => Err(kind(name, "a dtype", a)),
        }
    }
}

/// `arg` is of another kind than `expected`.
fn kind(name: &'static str, expected: &'static str, arg: &Arg) -> Unsupported {
    Unsupported::Kind { arg: name, expected, found: arg.kind() }
}

/// Converts a scalar argument.
pub fn scalar(a: &Arg) -> Option<Scalar> {
    match a {
        Arg::Int(v) => Some(Scalar::Int(*v)),
        Arg::Float(v) => Some(Scalar::float(*v)),
        Arg::Bool(v) => Some(Scalar::Bool(*v)),
        _ => None,
    }
}

//! Torch tensors as the facade's [`CallArgs`]: the bridge says where each argument's memory is
//! and how to tell that a weight is unchanged; the facade's call path does the rest.

use std::cell::RefCell;

use fxhlo::ir::InputKind;
use fxhlo::runtime::{HostView, Lent};
use fxhlo::{Arg, CallArgs, InputSignature, WeightStamp};
use pyo3::prelude::*;
use smallvec::SmallVec;

use crate::torch::{data_ptr, dense_cpu, lendable, tensor_bytes, version, DenseLayout, Dtypes};

/// The tensors of one call, in the executable's input order, with the graph position of each
/// (for messages).
pub(crate) struct TorchArgs<'a, 'py> {
    pub(crate) tensors: SmallVec<[(usize, Bound<'py, PyAny>); 8]>,
    pub(crate) dt: &'a Dtypes,
    /// Each executable input's dense layout, for the one-call check (empty: checked one by one).
    pub(crate) layouts: &'a [DenseLayout],
    /// The first Python error met while reading an argument: raised as it is (a `ValueError`
    /// naming the input), rather than as the facade's error that carries its text.
    pub(crate) raised: RefCell<Option<PyErr>>,
}

impl TorchArgs<'_, '_> {
    /// `result`'s error kept for [`TorchArgs::raised`] and handed to the facade as text.
    fn keep<T>(&self, result: PyResult<T>) -> fxhlo::Result<T> {
        result.map_err(|e| {
            let message = e.to_string();
            self.raised.borrow_mut().get_or_insert(e);
            fxhlo::Error::Input(message)
        })
    }
}

impl CallArgs for TorchArgs<'_, '_> {
    fn count(&self) -> usize {
        self.tensors.len()
    }

    fn stamp(&self, i: usize, sig: &InputSignature) -> fxhlo::Result<Option<WeightStamp>> {
        if sig.kind == InputKind::UserInput {
            return Ok(None);
        }
        let Some((_, t)) = self.tensors.get(i) else { return Ok(None) };
        // A tensor without a version counter (an inference tensor) is uploaded every call.
        let Some(version) = version(t) else { return Ok(None) };
        let data_ptr = self.keep(data_ptr(t))?;
        Ok(Some(WeightStamp { identity: t.as_ptr() as usize, data_ptr, version }))
    }

    fn view(&self, i: usize, sig: &InputSignature) -> fxhlo::Result<Arg<'_>> {
        let (position, t) = self.tensors.get(i).ok_or_else(|| fxhlo::Error::Input(format!("no argument for input `{}`", sig.name)))?;
        let dense = self.keep(dense_cpu(sig, *position, t, self.dt))?;
        let ptr = self.keep(data_ptr(&dense))?;
        // SAFETY: `dense` is a live contiguous CPU tensor of the input's dtype and shape
        // (checked), so of `size_bytes` bytes; it is kept in the `Arg` until the upload is done.
        let bytes = unsafe { tensor_bytes(ptr, sig.ty.size_bytes()) };
        let view = HostView::dense(fxhlo::element_type(sig.ty.dtype), sig.ty.shape.to_vec(), bytes);
        Ok(Arg { view, keep: Some(Box::new(dense)) })
    }

    fn lend(&self, i: usize, sig: &InputSignature) -> fxhlo::Result<Option<Lent>> {
        let Some((position, t)) = self.tensors.get(i) else { return Ok(None) };
        let Some((memory, ptr, stream)) = self.keep(lendable(sig, *position, t, self.dt, self.layouts.get(i)))? else { return Ok(None) };
        Ok(Some(Lent {
            element_type: fxhlo::element_type(sig.ty.dtype),
            dims: sig.ty.shape.to_vec(),
            ptr: ptr as *mut u8,
            memory,
            stream,
            // Asked for (`owner`) only where the device may read the memory after the call.
            owner: Box::new(()),
        }))
    }

    fn owner(&self, i: usize) -> Box<dyn std::any::Any + Send> {
        match self.tensors.get(i) {
            // The tensor object: alive as long as a kept buffer (so its identity stays unique)
            // or a view the device may still read.
            Some((_, t)) => Box::new(t.clone().unbind()),
            None => Box::new(()),
        }
    }
}

//! Ops that create a tensor from scalars alone: fills, uninitialized tensors and ranges (the
//! result type, from the meta, gives the shape and dtype).

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::{Op, Scalar};

use super::{Call, Mapping, Unsupported};

/// Maps a creation target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    match c.name {
        "full" => c.op(Op::Full { value: a.scalar(1, "fill_value")? }, smallvec![]),
        "fill" => c.op(Op::Full { value: a.scalar(1, "value")? }, smallvec![]),
        // Uninitialized memory in PyTorch; zeros here (every value is a valid `empty`), so the
        // ops built on it (padding, windows, scatter targets) see defined values.
        "empty" | "empty_permuted" | "empty_strided" | "new_empty" | "new_empty_strided" | "empty_like" => {
            c.op(Op::Full { value: Scalar::Int(0) }, smallvec![])
        }
        // full_like depends only on the shape of `self`, which the result type carries.
        "full_like" => c.op(Op::Full { value: a.scalar(1, "fill_value")? }, smallvec![]),
        "scalar_tensor" => c.op(Op::Full { value: a.scalar(0, "s")? }, smallvec![]),
        "arange" => {
            let (start, end, step) = match c.overload {
                "default" => (Scalar::Int(0), a.scalar(0, "end")?, Scalar::Int(1)),
                "start" => (a.scalar(0, "start")?, a.scalar(1, "end")?, Scalar::Int(1)),
                _ => (a.scalar(0, "start")?, a.scalar(1, "end")?, a.scalar(2, "step").unwrap_or(Scalar::Int(1))),
            };
            c.op(Op::Arange { start, end, step }, smallvec![])
        }
        _ => Err(Unsupported::NoLowering),
    }
}

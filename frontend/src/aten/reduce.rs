//! Reductions over dims: `sum` and its kin, softmax, variance, cumulative sums, arg- and
//! value-reductions (`argmax`, `max.dim`), sorting and `topk`.

use fxhlo_ir::{DType, Op, ReduceOp, Scalar, Shape};

use super::{Call, Mapping, Unsupported};

/// Maps a reduction target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    match c.name {
        "sum" | "mean" | "prod" | "amax" | "amin" | "any" | "all" => reduction(c),
        "_softmax" | "_log_softmax" => c.op1(Op::Softmax { dim: a.int(1, "dim", -1)?, log: c.name == "_log_softmax" }),
        "argmax" | "argmin" => {
            c.op1(Op::ArgReduce { max: c.name == "argmax", dim: a.opt_int(1, "dim")?, keepdim: a.bool(2, "keepdim", false)? })
        }
        // `x.max()` / `x.min()`: the full reduction (an empty dim list reduces every dim).
        "max" | "min" if c.overload == "default" => c.op1(Op::Reduce {
            op: if c.name == "max" { ReduceOp::Amax } else { ReduceOp::Amin },
            dims: Shape::new(),
            keepdim: false,
            dtype: None,
        }),
        "max" | "min" if c.overload == "dim" => {
            c.op1(Op::MaxMin { max: c.name == "max", dim: a.int(1, "dim", 0)?, keepdim: a.bool(2, "keepdim", false)? })
        }
        "var" => {
            // `prims.var(x, dims, correction)` takes the correction positionally, never keepdim.
            let correction = match c.overload {
                "dim" => Scalar::Int(if a.bool(2, "unbiased", true)? { 1 } else { 0 }),
                _ if c.prims() => a.scalar(2, "correction")?,
                _ => a.scalar(usize::MAX, "correction").unwrap_or(Scalar::Int(1)),
            };
            let keepdim = if c.overload == "dim" { a.bool(3, "keepdim", false)? } else { a.bool(usize::MAX, "keepdim", false)? };
            c.op1(Op::Var { dims: a.ints(1, "dim", &[])?, correction, keepdim })
        }
        "cumsum" => c.op1(Op::Cumsum { dim: a.int(1, "dim", 0)?, dtype: a.kwarg_dtype("dtype")? }),
        "sort" => c.op1(Op::Sort { dim: a.int(1, "dim", -1)?, descending: a.bool(2, "descending", false)? }),
        "topk" => c.op1(Op::Topk { k: a.int(1, "k", 1)?, dim: a.int(2, "dim", -1)?, largest: a.bool(3, "largest", true)? }),
        _ => Err(Unsupported::NoLowering),
    }
}

/// `sum`, `mean`, `prod`, `amax`, `amin`, `any`, `all`, in their ATen and prims overloads.
fn reduction<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    let Some(r) = ReduceOp::from_name(&c.aten_name) else { return Err(Unsupported::NoLowering) };
    let cast = a.kwarg_dtype("dtype")?;
    let (any_all, min_max) = (matches!(r, ReduceOp::Any | ReduceOp::All), matches!(r, ReduceOp::Amax | ReduceOp::Amin));
    if c.overload == "dims" && any_all && a.has(1, "dim") && a.ints::<Shape>(1, "dim", &[])?.is_empty() {
        // any/all over an empty dim list reduce nothing: x != 0 elementwise.
        return c.op1(Op::Convert { dtype: DType::Bool });
    }
    // `prims.sum(x, dims)` and `prims.prod(x, dims)` take their dims in the default overload
    // (never keepdim); `aten.sum.default(x)` reduces everything.
    let prims = c.prims();
    let dims = match c.overload {
        "default" if prims => a.ints(1, "dims", &[])?,
        "default" if min_max => a.ints(1, "dim", &[])?,
        "default" => Shape::new(),
        _ => a.ints(1, "dim", &[])?,
    };
    let keepdim = if prims || (c.overload == "default" && !min_max) { false } else { a.bool(2, "keepdim", false)? };
    c.op1(Op::Reduce { op: r, dims, keepdim, dtype: cast })
}

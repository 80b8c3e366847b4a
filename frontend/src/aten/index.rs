//! Indexing ops: embeddings, advanced indexing, gathers and scatters.

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::{Op, ScatterReduce};

use super::{Call, Mapping, Operand, Unsupported};

/// Maps an indexing target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    match c.name {
        "embedding" => c.op(Op::Embedding, smallvec![a.tensor(0, "weight")?, a.tensor(1, "indices")?]),
        "index" | "_unsafe_index" => {
            let idx = a.tensor_list(1, "indices")?;
            let mut ops = smallvec![c.x()?];
            ops.extend(idx.iter().flatten().map(|n| Operand::Tensor(n)));
            c.op(Op::Index { present: idx.iter().map(|i| i.is_some()).collect() }, ops)
        }
        "gather" => c.op(Op::Gather { dim: a.int(1, "dim", 0)? }, smallvec![c.x()?, a.tensor(2, "index")?]),
        "index_select" => c.op(Op::IndexSelect { dim: a.int(1, "dim", 0)? }, smallvec![c.x()?, a.tensor(2, "index")?]),
        "scatter" | "scatter_add" | "scatter_reduce" => scatter(c),
        "index_put" => {
            let idx = a.tensor_list(1, "indices")?;
            let mut ops = smallvec![c.x()?];
            ops.extend(idx.iter().flatten().map(|n| Operand::Tensor(n)));
            ops.push(a.tensor(2, "values")?);
            let present = idx.iter().map(|i| i.is_some()).collect();
            c.op(Op::IndexPut { present, accumulate: a.bool(3, "accumulate", false)? }, ops)
        }
        "select_scatter" => c.op(
            Op::SelectScatter { dim: a.int(2, "dim", 0)?, index: a.int(3, "index", 0)? },
            smallvec![c.x()?, a.tensor(1, "src")?],
        ),
        "slice_scatter" => c.op(
            Op::SliceScatter {
                dim: a.int(2, "dim", 0)?,
                start: a.opt_int(3, "start")?.unwrap_or(0),
                end: a.opt_int(4, "end")?.unwrap_or(i64::MAX),
                step: a.int(5, "step", 1)?,
            },
            smallvec![c.x()?, a.tensor(1, "src")?],
        ),
        "masked_scatter" => c.op(Op::MaskedScatter, smallvec![c.x()?, a.tensor(1, "mask")?, a.tensor(2, "source")?]),
        _ => Err(Unsupported::NoLowering),
    }
}

/// `scatter` (replace), `scatter_add` and `scatter_reduce` along `dim`.
fn scatter<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    let (reduce, include_self) = match c.name {
        "scatter_add" => (ScatterReduce::Sum, true),
        "scatter_reduce" => {
            let r = a.required_string(4, "reduce")?;
            let m = ScatterReduce::ALL.into_iter().find(|m| m.name() == r && *m != ScatterReduce::Replace);
            let m = m.ok_or_else(|| Unsupported::value("reduce", format!("`{r}`"), "`sum`, `prod`, `mean`, `amax` and `amin`"))?;
            (m, a.bool(5, "include_self", true)?)
        }
        // `scatter(..., reduce=)` is deprecated in PyTorch; fxhlo does not model it.
        _ if a.has(4, "reduce") => {
            let found = a.string(4, "reduce").map_or_else(|| "given".to_string(), |r| format!("`{r}`"));
            return Err(Unsupported::value("reduce", found, "scatter without `reduce` (use scatter_reduce, which replaces it in PyTorch)"));
        }
        _ => (ScatterReduce::Replace, true),
    };
    let src = a.tensor(3, if c.overload == "value" { "value" } else { "src" })?;
    c.op(Op::Scatter { dim: a.int(1, "dim", 0)?, reduce, include_self }, smallvec![c.x()?, a.tensor(2, "index")?, src])
}

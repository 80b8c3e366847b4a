//! Shape and layout ops: views, permutations, broadcasts, slicing, concatenation and
//! splitting, padding, repeats, flips, diagonals and strided views.

use fxhlo_ir::infer::normalize_dim;
use fxhlo_ir::{Op, PadMode, Scalar, Shape, TensorType};

use super::{Call, Mapping, Operand, Unsupported};
use crate::schema::ArgView as Arg;

/// Maps a shape target; [`Unsupported::NoLowering`] for any other.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let a = &c.a;
    match c.name {
        "view" | "_unsafe_view" | "reshape" => c.op1(Op::View { shape: a.ints(1, "size", &[])? }),
        "permute" => c.op1(Op::Permute { dims: a.ints(1, "dims", &[])? }),
        "t" => c.op1(Op::Permute { dims: if c.result()?.rank() == 2 { Shape::from([1, 0]) } else { Shape::from([0]) } }),
        "transpose" => transpose(c),
        "expand" => c.op1(Op::Expand { sizes: a.ints(1, "size", &[])? }),
        "broadcast_in_dim" => {
            c.op1(Op::BroadcastInDim { shape: a.ints(1, "shape", &[])?, dims: a.ints(2, "broadcast_dimensions", &[])? })
        }
        "slice" => c.op1(Op::Slice {
            dim: a.int(1, "dim", 0)?,
            start: a.opt_int(2, "start")?.unwrap_or(0),
            end: a.opt_int(3, "end")?.unwrap_or(i64::MAX),
            step: a.int(4, "step", 1)?,
        }),
        "select" => c.op1(Op::Select { dim: a.int(1, "dim", 0)?, index: a.int(2, "index", 0)? }),
        "unsqueeze" => c.op1(Op::Unsqueeze { dim: a.int(1, "dim", 0)? }),
        // `squeeze.dims(x, [])` squeezes nothing (an empty list in the IR means every dim).
        "squeeze" if c.overload == "dims" && a.ints::<Shape>(1, "dim", &[])?.is_empty() => c.op1(Op::Copy),
        "squeeze" => c.op1(Op::Squeeze { dims: a.ints(1, "dim", &[])? }),
        "cat" => {
            let ts = match a.get(0, "tensors") {
                Some(Arg::Tensors(ts)) => ts,
                Some(other) => return Err(Unsupported::Kind { arg: "tensors", expected: "a list of tensors", found: other.kind() }),
                None => return Err(Unsupported::Missing { arg: "tensors" }),
            };
            let ops = a.view.names(*ts).iter().flatten().map(|t| Operand::Tensor(t)).collect();
            c.op(Op::Cat { dim: a.int(1, "dim", 0)? }, ops)
        }
        "split_with_sizes" => c.op1(Op::Split { sizes: a.ints(1, "split_sizes", &[])?, dim: a.int(2, "dim", 0)? }),
        "split" => split(c),
        "constant_pad_nd" => c.op1(Op::Pad { pad: a.ints(1, "pad", &[])?, mode: PadMode::Constant(a.scalar(2, "value").unwrap_or(Scalar::Int(0))) }),
        "reflection_pad1d" | "reflection_pad2d" | "reflection_pad3d" => {
            c.op1(Op::Pad { pad: a.ints(1, "padding", &[])?, mode: PadMode::Reflect })
        }
        "replication_pad1d" | "replication_pad2d" | "replication_pad3d" => {
            c.op1(Op::Pad { pad: a.ints(1, "padding", &[])?, mode: PadMode::Replicate })
        }
        "repeat" => c.op1(Op::Repeat { repeats: a.ints(1, "repeats", &[])? }),
        "flip" => c.op1(Op::Flip { dims: a.ints(1, "dims", &[])? }),
        "diagonal" => c.op1(Op::Diagonal { offset: a.int(1, "offset", 0)?, dim1: a.int(2, "dim1", 0)?, dim2: a.int(3, "dim2", 1)? }),
        "as_strided" => c.op1(Op::AsStrided {
            size: a.ints(1, "size", &[])?,
            stride: a.ints(2, "stride", &[])?,
            offset: a.opt_int(3, "storage_offset")?.unwrap_or(0),
        }),
        _ => Err(Unsupported::NoLowering),
    }
}

/// `transpose(x, dim0, dim1)` as the permutation that swaps the two dims.
fn transpose<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let rank = c.result()?.rank();
    let norm = |arg: &'static str| -> Result<usize, Unsupported> {
        let d = c.a.int(if arg == "dim0" { 1 } else { 2 }, arg, 0)?;
        normalize_dim(d, rank).map_err(|_| Unsupported::value(arg, d, format!("a dim of the rank-{rank} result")))
    };
    let (d0, d1) = (norm("dim0")?, norm("dim1")?);
    let mut dims: Shape = (0..rank as i64).collect();
    // A 0-d tensor accepts dims 0 and -1 and has nothing to swap.
    if rank > 0 {
        dims.swap(d0, d1);
    }
    c.op1(Op::Permute { dims })
}

/// `split.Tensor(self, split_size, dim)`: chunks of `split_size`, the last one smaller.
fn split<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let dim = c.a.int(2, "dim", 0)?;
    let chunk = c.a.int(1, "split_size", 0)?;
    // A 0-d result accepts dims 0 and -1 but has no size along them.
    let size = |t: &TensorType| {
        let d = normalize_dim(dim, t.rank()).ok().and_then(|d| t.shape.get(d).copied());
        d.ok_or_else(|| Unsupported::value("dim", dim, format!("a dim of every result (one is {t})")))
    };
    let mut total = 0i64;
    for t in c.results {
        total = total.checked_add(size(t)?).ok_or_else(|| Unsupported::results("the results' sizes along `dim` overflow"))?;
    }
    if chunk <= 0 {
        return Err(Unsupported::value("split_size", chunk, "a positive chunk size"));
    }
    // One meta per chunk: a trace with more chunks than metas is malformed, and its chunk list
    // must not be allocated (a huge size would exhaust memory).
    let chunks = if total == 0 { 0 } else { (total - 1) / chunk + 1 };
    if chunks > c.results.len() as i64 {
        return Err(Unsupported::results(format!("{} result(s) for {chunks} chunks of {chunk}", c.results.len())));
    }
    let sizes = (0..total).step_by(chunk as usize).map(|s| chunk.min(total - s)).collect();
    c.op1(Op::Split { sizes, dim })
}

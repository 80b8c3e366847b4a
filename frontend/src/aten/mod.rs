//! ATen targets → IR ops: reads each call's positional and keyword arguments by the names of
//! the ATen schema and picks the `ir::Op`. A target not listed here maps to `Op::Unknown`
//! without a reason; a listed one called with arguments the IR cannot express maps to
//! `Op::Unknown` with an [`Unsupported`] reason naming the argument. Both are reported at
//! lowering.
//!
//! One file per op family, each a `map` that claims the targets it knows and answers
//! [`Unsupported::NoLowering`] for the others; [`map`] asks them in turn (the most common
//! families first: most nodes of a trace are elementwise or shape ops).

mod args;
mod attention;
mod creation;
mod elementwise;
mod index;
mod linalg;
mod nn;
mod reduce;
mod shape;
mod unsupported;

use std::borrow::Cow;

use fxhlo_ir::smallvec::{smallvec, SmallVec};
use fxhlo_ir::{BinaryOp, Op, Scalar, TensorType};

use crate::schema::{ArgView as Arg, NodeView, TraceView};
use args::{Args, Got};
pub use attention::{Expansion, Src};
pub use unsupported::Unsupported;

/// An operand of a mapped op: a value by name, or a scalar that becomes a 0-d `full` node.
#[derive(Debug, Clone)]
pub enum Operand<'a> {
    Tensor(&'a str),
    Scalar(Scalar),
    /// `operand * factor` (the `alpha` of `add`/`sub`).
    Scaled(Box<Operand<'a>>, Scalar),
}

/// The operands of one call, inline up to 4 (almost every op).
pub type Operands<'a> = SmallVec<[Operand<'a>; 4]>;

/// The mapping of one call.
#[derive(Debug)]
pub enum Mapped<'a> {
    /// A known op and its operands in the op's operand order.
    Op(Op, Operands<'a>),
    /// `getitem(producer, index)`: an alias for one result of a multi-result node.
    GetItem(&'a str, u32),
    /// A call the IR has no single op for (a device's fused attention kernel), as a few ops.
    Expanded(Expansion<'a>),
    /// Not modelled: keep as `Op::Unknown`, for this reason.
    Unknown(Unsupported),
}

/// A family's answer for one call: the op, or why the call cannot be mapped
/// ([`Unsupported::NoLowering`]: not a target of this family).
type Mapping<'a> = Result<Mapped<'a>, Unsupported>;

/// One call being mapped: its target split into parts, its arguments and its result types.
struct Call<'a, 'r> {
    /// The target without its overload (`aten.sum`, `prims.sum`).
    qualified: &'a str,
    /// The op's name without namespace (`sum`).
    name: &'a str,
    /// The overload (`dim_IntList`, `default`), empty when the target has none.
    overload: &'a str,
    /// `aten.<name>` for `aten.` and `prims.` targets alike: the IR's family names.
    aten_name: Cow<'a, str>,
    a: Args<'a>,
    /// The node's result types, from its meta, when every result is a tensor.
    results: &'r [TensorType],
    /// Every result's type when some result is not a tensor (an int, or `None`: only an
    /// [`Mapped::Expanded`] call takes those), `None` at those; empty otherwise.
    metas: &'r [Option<TensorType>],
    /// The type of an operand already imported, by trace name.
    operand_type: &'r dyn Fn(&str) -> Option<TensorType>,
}

impl<'a, 'r> Call<'a, 'r> {
    /// Whether the target is a `prims.` op (whose schemas differ from ATen's of the same name).
    fn prims(&self) -> bool {
        self.qualified.starts_with("prims.")
    }

    /// The `self` operand.
    fn x(&self) -> Got<Operand<'a>> {
        self.a.tensor(0, "self")
    }

    /// The first tensor argument under its schema name (`input`, ...), or as `self`.
    fn x_as(&self, name: &'static str) -> Got<Operand<'a>> {
        self.a.tensor(0, name).or_else(|e| self.a.tensor(0, "self").map_err(|_| e))
    }

    /// `op` of `self` alone.
    fn op1(&self, op: Op) -> Mapping<'a> {
        Ok(Mapped::Op(op, smallvec![self.x()?]))
    }

    /// `op` of the given operands.
    fn op(&self, op: Op, operands: Operands<'a>) -> Mapping<'a> {
        Ok(Mapped::Op(op, operands))
    }

    /// The elementwise binary op `b` of `self` and `other`.
    fn bin(&self, b: BinaryOp) -> Mapping<'a> {
        Ok(Mapped::Op(Op::Binary(b), smallvec![self.x()?, self.a.tensor(1, "other")?]))
    }

    /// Result `i`'s type; `None` for a result that is not a tensor (or past the last).
    fn meta(&self, i: usize) -> Option<&'r TensorType> {
        if self.metas.is_empty() {
            self.results.get(i)
        } else {
            self.metas.get(i).and_then(Option::as_ref)
        }
    }

    /// How many results the node has, tensors or not.
    fn result_count(&self) -> usize {
        self.results.len().max(self.metas.len())
    }

    /// The node's first result type (the importer refuses a node without one).
    fn result(&self) -> Got<&'r TensorType> {
        self.results.first().ok_or_else(|| Unsupported::results("the node has no result"))
    }
}

/// A family's mapping: claims its targets, [`Unsupported::NoLowering`] for the others.
type Family = for<'a, 'r> fn(&Call<'a, 'r>) -> Mapping<'a>;

/// The families, asked in this order (most frequent first; no two claim one target and
/// overload, so the order changes nothing else).
const FAMILIES: [Family; 8] =
    [elementwise::map, shape::map, reduce::map, nn::map, linalg::map, index::map, creation::map, attention::map];

/// Maps one call. `metas` are the node's result types from its meta (`None` for a result
/// that is not a tensor), `results` the same when every one is a tensor, else empty.
pub fn map<'a>(
    view: &'a TraceView<'a>,
    node: &NodeView<'a>,
    results: &[TensorType],
    metas: &[Option<TensorType>],
    operand_type: &dyn Fn(&str) -> Option<TensorType>,
) -> Mapped<'a> {
    let a = Args { view, args: view.args(node.args), kwargs: view.kwargs(node) };
    map_call(node.target, a, results, metas, operand_type).unwrap_or_else(Mapped::Unknown)
}

/// [`map`], or why the call cannot be mapped.
fn map_call<'a>(
    target: &'a str,
    a: Args<'a>,
    results: &[TensorType],
    metas: &[Option<TensorType>],
    operand_type: &dyn Fn(&str) -> Option<TensorType>,
) -> Mapping<'a> {
    // A byte loop, not `rsplit_once`: memrchr's setup costs more than these short names.
    let (op, overload) = match target.bytes().rposition(|b| b == b'.') {
        Some(i) => (&target[..i], &target[i + 1..]),
        None => (target, ""),
    };
    if target == "getitem" {
        let producer = match a.args.first() {
            Some(Arg::Tensor(p)) => p,
            Some(other) => return Err(Unsupported::Kind { arg: "tuple", expected: "a multi-result node", found: other.kind() }),
            None => return Err(Unsupported::Missing { arg: "tuple" }),
        };
        if !a.has(1, "index") {
            return Err(Unsupported::Missing { arg: "index" });
        }
        let index = a.int(1, "index", -1)?;
        let index = u32::try_from(index).map_err(|_| Unsupported::value("index", index, "a result index (0 or more)"))?;
        return Ok(Mapped::GetItem(producer, index));
    }
    if op == "fxhlo.rng_bit_generator" {
        // fxhlo's own op (python/fxhlo/rng.py): the bits' shape and dtype are its second result's.
        let bits = results.get(1).ok_or_else(|| {
            Unsupported::results(format!("the node has {} result(s), and the random bits are the second", results.len()))
        })?;
        let state = a.tensor(0, "state")?;
        return Ok(Mapped::Op(Op::RngBitGenerator { shape: bits.shape.to_vec(), dtype: bits.dtype }, smallvec![state]));
    }
    let Some(name) = op.strip_prefix("aten.").or_else(|| op.strip_prefix("prims.")) else {
        return Err(Unsupported::NoLowering);
    };
    // The IR's family names are `aten.<name>`; only a `prims.` target needs a new string.
    let aten_name = if op.starts_with("aten.") { Cow::Borrowed(op) } else { Cow::Owned(format!("aten.{name}")) };
    let call = Call { qualified: op, name, overload, aten_name, a, results, metas, operand_type };
    for family in FAMILIES {
        match family(&call) {
            Err(Unsupported::NoLowering) => continue,
            mapped => return mapped,
        }
    }
    Err(Unsupported::NoLowering)
}

//! The e-graph language over fxhlo's IR: the ops rules look into, an attribute leaf, and one
//! opaque node kind for everything else.
//!
//! Only the ops the rules need have structure: `mm`, `bmm`, `addmm`, `conv` (without and with
//! a bias: `convb`), `permute`, `view`, elementwise `add` and `mul`, `slice`, and `cat` of two
//! tensors. An op's integer attribute (a permutation, a view's shape, a slice's
//! `[dim, start, end, step]`, a cat's `[dim]`, a convolution's parameters: [`ConvAttr`]) is a
//! child e-class holding an [`Ints`] leaf, as in TENSAT, so that rules bind it with a pattern
//! variable and appliers compute new ones. Every other value (inputs, constants, any other op,
//! each result of a multi-result op) is an `orig` node: it names the original value
//! ([`ValueKey`]) and has that node's operands as children, so rules can rewrite below it and
//! extraction rebuilds it unchanged. Two `orig` nodes never merge by hash-consing (their keys
//! differ), so the e-graph adds no sharing the IR did not have, except between identical
//! structured nodes (see `convert`).

use std::fmt;
use std::str::FromStr;

use egg::{define_language, Id};
use fxhlo_ir::{BinaryOp, Op, Shape};

/// An integer list attribute: a permutation's dims, a view's target shape (`[1,0,2]`), a
/// slice's `[dim, start, end, step]` or a cat's `[dim]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ints(pub Vec<i64>);

impl fmt::Display for Ints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|v| v.to_string()).collect();
        write!(f, "[{}]", parts.join(","))
    }
}

impl FromStr for Ints {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let inner = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')).ok_or_else(|| format!("not an int list: {s}"))?;
        if inner.is_empty() {
            return Ok(Ints(Vec::new()));
        }
        inner.split(',').map(|p| p.trim().parse::<i64>().map_err(|e| e.to_string())).collect::<Result<_, _>>().map(Ints)
    }
}

/// An op the layout rules built (an elementwise op over new operands, a pool in another
/// layout): an index into the analysis's table of ops ([`super::analysis::TensorAnalysis::ops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpRef(pub u32);

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op#{}", self.0)
    }
}

impl FromStr for OpRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.strip_prefix("op#").and_then(|n| n.parse().ok()).map(OpRef).ok_or_else(|| format!("not an op reference: {s}"))
    }
}

/// One result of one node of the original graph (`NodeId::index()` and result number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueKey {
    pub node: u32,
    pub result: u32,
}

impl fmt::Display for ValueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}#{}", self.node, self.result)
    }
}

impl FromStr for ValueKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // Only printed, never written in a rule: a pattern naming an original value is a bug.
        let (node, result) = s.strip_prefix('%').and_then(|s| s.split_once('#')).ok_or_else(|| format!("not a value key: {s}"))?;
        Ok(ValueKey { node: node.parse().map_err(|_| s.to_string())?, result: result.parse().map_err(|_| s.to_string())? })
    }
}

define_language! {
    /// An e-node. Children of structured ops are in the IR's operand order, the attribute
    /// first where there is one: `(permute dims x)`, `(view shape x)`, `(addmm bias a b)`,
    /// `(slice [dim,start,end,step] x)`, `(cat [dim] a b)`.
    pub enum ENode {
        "mm" = Mm([Id; 2]),
        "bmm" = Bmm([Id; 2]),
        "addmm" = Addmm([Id; 3]),
        "permute" = Permute([Id; 2]),
        "view" = View([Id; 2]),
        "add" = Add([Id; 2]),
        "mul" = Mul([Id; 2]),
        "conv" = Conv([Id; 3]),
        "convb" = ConvBias([Id; 4]),
        "slice" = Slice([Id; 2]),
        "cat" = Cat([Id; 3]),
        Ints(Ints),
        Orig(ValueKey, Vec<Id>),
        Lifted(OpRef, Vec<Id>),
    }
}

/// The structured e-node kind of `op`, if the language models it (with its attribute when it
/// has one); `None` for ops that become `orig` nodes.
pub(crate) fn structured(op: &Op) -> Option<(Kind, Option<Ints>)> {
    Some(match op {
        Op::Mm => (Kind::Mm, None),
        Op::Bmm => (Kind::Bmm, None),
        Op::Addmm => (Kind::Addmm, None),
        Op::Permute { dims } => (Kind::Permute, Some(Ints(dims.to_vec()))),
        Op::View { shape } => (Kind::View, Some(Ints(shape.to_vec()))),
        Op::Binary(BinaryOp::Add) => (Kind::Add, None),
        Op::Binary(BinaryOp::Mul) => (Kind::Mul, None),
        Op::Convolution { .. } => (Kind::Conv, Some(ConvAttr::encode(op)?)),
        Op::Slice { dim, start, end, step } => (Kind::Slice, Some(Ints(vec![*dim, *start, *end, *step]))),
        // A cat of two (`Kind::enode` refuses other counts: those stay opaque).
        Op::Cat { dim } => (Kind::Cat, Some(Ints(vec![*dim]))),
        _ => return None,
    })
}

/// The structured kinds, to build e-nodes from IR ops and IR ops from e-nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Mm,
    Bmm,
    Addmm,
    Permute,
    View,
    Add,
    Mul,
    Conv,
    Slice,
    Cat,
}

impl Kind {
    /// The e-node of this kind over `children` (attribute class first where there is one);
    /// `None` when the count is wrong (an invalid graph the verifier would refuse).
    pub fn enode(self, children: &[Id]) -> Option<ENode> {
        Some(match (self, children) {
            (Kind::Mm, &[a, b]) => ENode::Mm([a, b]),
            (Kind::Bmm, &[a, b]) => ENode::Bmm([a, b]),
            (Kind::Addmm, &[c, a, b]) => ENode::Addmm([c, a, b]),
            (Kind::Permute, &[d, x]) => ENode::Permute([d, x]),
            (Kind::View, &[s, x]) => ENode::View([s, x]),
            (Kind::Add, &[a, b]) => ENode::Add([a, b]),
            (Kind::Mul, &[a, b]) => ENode::Mul([a, b]),
            (Kind::Conv, &[a, x, w]) => ENode::Conv([a, x, w]),
            (Kind::Conv, &[a, x, w, b]) => ENode::ConvBias([a, x, w, b]),
            (Kind::Slice, &[s, x]) => ENode::Slice([s, x]),
            (Kind::Cat, &[d, a, b]) => ENode::Cat([d, a, b]),
            _ => return None,
        })
    }
}

/// The IR op of a structured e-node, given its attribute (`attr`, for `permute`, `view`,
/// `slice` and `cat`), and its tensor operands (children less the attribute). `None` for
/// `ints`, `orig` and `lifted` (whose op is in the analysis's table), and for an attribute of
/// the wrong length.
pub(crate) fn to_op<'n>(node: &'n ENode, attr: Option<&Ints>) -> Option<(Op, &'n [Id])> {
    Some(match node {
        ENode::Mm(c) => (Op::Mm, &c[..]),
        ENode::Bmm(c) => (Op::Bmm, &c[..]),
        ENode::Addmm(c) => (Op::Addmm, &c[..]),
        ENode::Permute(c) => (Op::Permute { dims: Shape::from(attr?.0.as_slice()) }, &c[1..]),
        ENode::View(c) => (Op::View { shape: Shape::from(attr?.0.as_slice()) }, &c[1..]),
        ENode::Add(c) => (Op::Binary(BinaryOp::Add), &c[..]),
        ENode::Mul(c) => (Op::Binary(BinaryOp::Mul), &c[..]),
        ENode::Conv(c) => (ConvAttr::decode(attr?, false)?, &c[1..]),
        ENode::ConvBias(c) => (ConvAttr::decode(attr?, true)?, &c[1..]),
        ENode::Slice(c) => match attr?.0[..] {
            [dim, start, end, step] => (Op::Slice { dim, start, end, step }, &c[1..]),
            _ => return None,
        },
        ENode::Cat(c) => match attr?.0[..] {
            [dim] => (Op::Cat { dim }, &c[1..]),
            _ => return None,
        },
        ENode::Ints(_) | ENode::Orig(..) | ENode::Lifted(..) => return None,
    })
}

/// The attribute child of a structured e-node (`permute`'s dims, `view`'s shape, `slice`'s
/// and `cat`'s integers).
pub(crate) fn attr_child(node: &ENode) -> Option<Id> {
    match node {
        ENode::Permute(c) | ENode::View(c) | ENode::Slice(c) => Some(c[0]),
        ENode::Cat(c) | ENode::Conv(c) => Some(c[0]),
        ENode::ConvBias(c) => Some(c[0]),
        _ => None,
    }
}

/// A convolution's parameters as one integer list, so that two convolutions with the same
/// parameters share an attribute class (the merge rules bind it once):
/// `[n, stride × n, padding × n, dilation × n, transposed, output_padding × n, groups,
/// channels_last]` for `n` spatial dims. Whether it has a bias is the node's kind.
pub struct ConvAttr;

impl ConvAttr {
    /// The attribute of `op` (a convolution), `None` for lists of unequal lengths.
    pub fn encode(op: &Op) -> Option<Ints> {
        let Op::Convolution { stride, padding, dilation, transposed, output_padding, groups, channels_last, .. } = op else { return None };
        let n = stride.len();
        if padding.len() != n || dilation.len() != n || output_padding.len() != n {
            return None;
        }
        let mut v = vec![n as i64];
        v.extend(stride.iter().chain(padding.iter()).chain(dilation.iter()));
        v.push(*transposed as i64);
        v.extend(output_padding.iter());
        v.extend([*groups, *channels_last as i64]);
        Some(Ints(v))
    }

    /// The convolution of `attr`, with or without a bias.
    pub fn decode(attr: &Ints, has_bias: bool) -> Option<Op> {
        let v = &attr.0;
        let n = usize::try_from(*v.first()?).ok()?;
        if v.len() != 4 * n + 4 {
            return None;
        }
        let part = |i: usize| -> Box<[i64]> { v[1 + i * n..1 + (i + 1) * n].into() };
        Some(Op::Convolution {
            stride: part(0),
            padding: part(1),
            dilation: part(2),
            transposed: v[1 + 3 * n] != 0,
            output_padding: v[2 + 3 * n..2 + 4 * n].into(),
            groups: v[2 + 4 * n],
            has_bias,
            channels_last: v[3 + 4 * n] != 0,
        })
    }

    /// `(groups, transposed, channels_last)` of `attr`.
    pub fn flags(attr: &Ints) -> Option<(i64, bool, bool)> {
        match Self::decode(attr, false)? {
            Op::Convolution { groups, transposed, channels_last, .. } => Some((groups, transposed, channels_last)),
            _ => None,
        }
    }
}

//! The e-class analysis: each tensor class's type (dtype and shape) and whether its value
//! reads only weights and constants; each attribute class's integers.
//!
//! Types come from `fxhlo_ir::infer`, the same inference the verifier checks against, so a
//! node a rule adds has exactly the type the rebuilt IR node will need. `orig` nodes take the
//! type the original graph gave them. Merging two classes whose types differ is a bug in a
//! rule: `merge` records it (it cannot return an error) and the pass refuses to extract from
//! an e-graph with a conflict.

use std::collections::HashMap;

use egg::{Analysis, DidMerge, EGraph, Id};
use fxhlo_ir::{Op, TensorType};

use super::lang::{to_op, ENode, Ints, OpRef, ValueKey};

/// What the analysis knows of one original value (an `orig` node's payload points here).
#[derive(Clone, Debug)]
pub struct OrigInfo {
    pub ty: TensorType,
    /// A leaf whose value is known before any call: a parameter, buffer, constant input or
    /// constant node. For a non-leaf: whether the op is pure (its value follows from its
    /// operands), so that "reads only weights" can flow through it.
    pub weight_or_pure: bool,
    /// A leaf whose value is in the graph (a constant node: frozen weights), or a pure
    /// non-leaf op: "reads only constants" flows through it, and such values are computed
    /// once at compile time.
    pub constant_or_pure: bool,
    /// The op that computed it (for the layout rules, which look through `orig` nodes).
    pub op: Op,
}

/// The data of one e-class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Data {
    /// A tensor value: its type, whether it reads only weights and constants (a subgraph
    /// that could be precomputed once), and whether it reads only constants (frozen weights:
    /// it is computed at compile time, so the cost model prices it at zero).
    Tensor { ty: TensorType, weights_only: bool, consts_only: bool },
    /// An attribute leaf.
    Ints(Ints),
    /// A node whose type inference failed (a rule built an invalid node): never extracted.
    Invalid(String),
}

impl Data {
    /// The tensor type, if this is a valid tensor class.
    pub fn ty(&self) -> Option<&TensorType> {
        match self {
            Data::Tensor { ty, .. } => Some(ty),
            _ => None,
        }
    }

    /// The integers, if this is an attribute class.
    pub fn ints(&self) -> Option<&Ints> {
        match self {
            Data::Ints(i) => Some(i),
            _ => None,
        }
    }
}

/// The analysis: the original values' types, and merge conflicts found while saturating.
#[derive(Default)]
pub struct TensorAnalysis {
    /// Every original value's type and purity, by key.
    pub values: HashMap<ValueKey, OrigInfo>,
    /// Classes merged with different data (at most a few kept): a rule bug.
    pub conflicts: Vec<String>,
    /// The ops of `lifted` nodes, each with its result type when inference cannot give it (a
    /// `full` scalar), interned so that equal ops share one reference.
    pub ops: Vec<(Op, Option<TensorType>)>,
    interned: HashMap<(Op, Option<TensorType>), OpRef>,
}

/// The e-graph of this language and analysis.
pub type TensorGraph = EGraph<ENode, TensorAnalysis>;

impl Analysis<ENode> for TensorAnalysis {
    type Data = Data;

    fn make(egraph: &mut TensorGraph, enode: &ENode, _id: Id) -> Data {
        let data = |id: Id| &egraph[id].data;
        match enode {
            ENode::Ints(i) => Data::Ints(i.clone()),
            ENode::Orig(key, children) => match egraph.analysis.values.get(key) {
                Some(info) => {
                    let all = |f: fn(&Data) -> bool| children.iter().all(|&c| f(data(c)));
                    let weights_only = info.weight_or_pure && all(|d| matches!(d, Data::Tensor { weights_only: true, .. }));
                    let consts_only = info.constant_or_pure && all(|d| matches!(d, Data::Tensor { consts_only: true, .. }));
                    Data::Tensor { ty: info.ty.clone(), weights_only, consts_only }
                }
                None => Data::Invalid(format!("no type for original value {key}")),
            },
            _ => {
                let attr = super::lang::attr_child(enode).and_then(|a| data(a).ints());
                let lifted = match enode {
                    ENode::Lifted(r, children) => match egraph.analysis.op(*r) {
                        Some((op, ty)) => Some((op.clone(), ty.clone(), &children[..])),
                        None => return Data::Invalid(format!("no op {r}")),
                    },
                    _ => None,
                };
                let (op, declared, operands) = match lifted {
                    Some(l) => l,
                    None => match to_op(enode, attr) {
                        Some((op, operands)) => (op, None, operands),
                        None => return Data::Invalid("an attribute that is not an int list".to_string()),
                    },
                };
                let mut types = Vec::with_capacity(operands.len());
                let (mut weights_only, mut consts_only) = (true, true);
                for &o in operands {
                    match data(o) {
                        Data::Tensor { ty, weights_only: w, consts_only: c } => {
                            types.push(ty);
                            weights_only &= *w;
                            consts_only &= *c;
                        }
                        _ => return Data::Invalid(format!("{} has an operand that is not a tensor", op.name())),
                    }
                }
                match (fxhlo_ir::infer::infer(&op, &types), declared) {
                    (Ok(None), Some(ty)) => Data::Tensor { ty, weights_only, consts_only },
                    (Ok(Some(results)), _) if results.len() == 1 => Data::Tensor { ty: results[0].clone(), weights_only, consts_only },
                    (Ok(_), _) => Data::Invalid(format!("{} has no single inferred result", op.name())),
                    (Err(e), _) => Data::Invalid(e),
                }
            }
        }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        match (&mut *a, b) {
            (Data::Tensor { ty, weights_only, consts_only }, Data::Tensor { ty: ty_b, weights_only: w_b, consts_only: c_b }) => {
                if *ty != ty_b {
                    self.conflict(format!("merged a {ty} class with a {ty_b} one"));
                    return DidMerge(false, true);
                }
                // One equivalent form reading only weights (constants) proves the value does.
                let was = (*weights_only, *consts_only);
                *weights_only |= w_b;
                *consts_only |= c_b;
                DidMerge((*weights_only, *consts_only) != was, (w_b, c_b) != (*weights_only, *consts_only))
            }
            (Data::Ints(x), Data::Ints(y)) => {
                if *x != y {
                    self.conflict(format!("merged attribute {x} with {y}"));
                }
                DidMerge(false, false)
            }
            // A valid form wins over one whose inference failed: the class stays usable.
            (Data::Invalid(_), b @ Data::Tensor { .. }) => {
                *a = b;
                DidMerge(true, false)
            }
            (_, Data::Invalid(_)) => DidMerge(false, true),
            (a, b) => {
                self.conflict(format!("merged {a:?} with {b:?}"));
                DidMerge(false, true)
            }
        }
    }
}

impl TensorAnalysis {
    /// The reference of `op` (with `ty`, its result type when inference gives none).
    pub fn intern(&mut self, op: Op, ty: Option<TensorType>) -> OpRef {
        let ops = &mut self.ops;
        *self.interned.entry((op, ty)).or_insert_with_key(|key| {
            ops.push(key.clone());
            OpRef(ops.len() as u32 - 1)
        })
    }

    /// The op of a reference.
    pub fn op(&self, r: OpRef) -> Option<&(Op, Option<TensorType>)> {
        self.ops.get(r.0 as usize)
    }

    fn conflict(&mut self, message: String) {
        if self.conflicts.len() < 8 {
            self.conflicts.push(message);
        }
    }
}

/// The IR op of a structured or `lifted` e-node of `egraph`, and its tensor operands; `None`
/// for `ints` and `orig` nodes.
pub(crate) fn node_op<'n>(egraph: &TensorGraph, node: &'n ENode) -> Option<(Op, &'n [Id])> {
    match node {
        ENode::Lifted(r, children) => Some((egraph.analysis.op(*r)?.0.clone(), &children[..])),
        _ => {
            let attr = super::lang::attr_child(node).and_then(|a| egraph[a].data.ints());
            to_op(node, attr)
        }
    }
}

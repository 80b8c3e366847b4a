//! The rewrite rules, as data, in themed files. Each rule states its identity in one comment
//! and checks anything shape- or dtype-dependent with an explicit condition.

pub mod algebra;
pub mod channels_last;
pub mod layout;
pub mod merge;

use egg::{Id, Rewrite, Subst, Var};
use fxhlo_ir::TensorType;

use super::analysis::TensorAnalysis;
use super::lang::ENode;

/// A rule of this language.
pub type Rule = Rewrite<ENode, TensorAnalysis>;

/// The e-graph the rules run on.
pub type EG = egg::EGraph<ENode, TensorAnalysis>;

/// Every rule, in a fixed order (rule names are unique; a test checks).
pub fn all() -> Vec<Rule> {
    let mut rules = algebra::rules();
    rules.extend(layout::rules());
    rules.extend(merge::rules());
    rules
}

/// Whether `rule` is a multi-pattern rule (run for a capped number of rounds).
pub fn is_multi_pattern(rule: &Rule) -> bool {
    merge::MULTI_PATTERN.contains(&rule.name.as_str())
}

/// The type of the tensor class bound to `var`, if it is one.
pub(crate) fn ty<'e>(egraph: &'e EG, subst: &Subst, var: Var) -> Option<&'e TensorType> {
    subst.get(var).and_then(|&id| egraph[id].data.ty())
}

/// The type of class `id`.
pub(crate) fn class_ty(egraph: &EG, id: Id) -> Option<&TensorType> {
    egraph[id].data.ty()
}

/// Unions `class` with `new`: the classes an applier changed (`class`, or none).
pub(crate) fn union_into(egraph: &mut EG, class: Id, new: Id) -> Vec<Id> {
    if egraph.union(class, new) {
        vec![class]
    } else {
        vec![]
    }
}

/// The `[dim, start, end, step]` of the slice attribute class `attr`, a negative dim resolved
/// for `rank`.
pub(crate) fn slice_attr(egraph: &EG, attr: Id, rank: usize) -> Option<[i64; 4]> {
    let [dim, start, end, step] = egraph[attr].data.ints()?.0[..] else { return None };
    Some([if dim < 0 { dim + rank as i64 } else { dim }, start, end, step])
}

/// A pattern variable (`"?x"`); the names in this module's rules are static and valid.
pub(crate) fn var(name: &str) -> Var {
    name.parse().unwrap_or_else(|_| panic!("bad pattern variable {name}"))
}

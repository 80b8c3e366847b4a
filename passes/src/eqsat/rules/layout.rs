//! Layout rules: permutations, views and slices that compose or cancel. XLA's simplifier does the
//! same on its side; doing it here lets the e-graph see the dot chains and elementwise ops
//! behind the layout ops the import and the other passes leave.

use egg::{rewrite, Applier, EGraph, Id, PatternAst, Subst, Symbol, Var};

use super::{class_ty, slice_attr, ty, union_into, var, Rule, EG};
use crate::eqsat::analysis::TensorAnalysis;
use crate::eqsat::lang::{ENode, Ints};

/// `permute(p, permute(q, x)) = permute(q∘p, x)`: result dim `i` of the outer permute is dim
/// `p[i]` of the inner one, which is dim `q[p[i]]` of `x`. Condition: both are permutations of
/// the same rank (else nothing is added).
struct ComposePermutes {
    p: Var,
    q: Var,
    x: Var,
}

impl Applier<ENode, TensorAnalysis> for ComposePermutes {
    fn apply_one(&self, egraph: &mut EGraph<ENode, TensorAnalysis>, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let ints = |v: Var| subst.get(v).and_then(|&id| egraph[id].data.ints()).map(|i| i.0.clone());
        let (Some(p), Some(q), Some(&x)) = (ints(self.p), ints(self.q), subst.get(self.x)) else { return vec![] };
        let Some(composed) = compose(&p, &q) else { return vec![] };
        let dims = egraph.add(ENode::Ints(Ints(composed)));
        let new = egraph.add(ENode::Permute([dims, x]));
        union_into(egraph, class, new)
    }
}

/// `q∘p` (`[q[p[0]], q[p[1]], ...]`) when `p` and `q` are permutations of one rank.
pub(crate) fn compose(p: &[i64], q: &[i64]) -> Option<Vec<i64>> {
    if p.len() != q.len() || !is_permutation(p) || !is_permutation(q) {
        return None;
    }
    p.iter().map(|&i| q.get(usize::try_from(i).ok()?).copied()).collect()
}

/// Whether `p` holds each of `0..p.len()` once.
fn is_permutation(p: &[i64]) -> bool {
    let mut seen = vec![false; p.len()];
    p.iter().all(|&i| usize::try_from(i).ok().and_then(|i| seen.get_mut(i)).is_some_and(|s| !std::mem::replace(s, true)))
}

/// `slice(s, slice(t, x)) = slice(s∘t, x)`: two step-1 slices of one dim, both within bounds
/// (`0 <= start <= end <= size`), are one slice from `t.start + s.start`.
struct ComposeSlices;

impl Applier<ENode, TensorAnalysis> for ComposeSlices {
    fn apply_one(&self, egraph: &mut EGraph<ENode, TensorAnalysis>, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let Some(x) = ty(egraph, subst, var("?x")) else { return vec![] };
        let rank = x.rank() as i64;
        let size = |d: i64| x.shape.get(d as usize).copied();
        let slice = |v: &str| slice_attr(egraph, *subst.get(var(v))?, x.rank());
        let (Some([d, s0, s1, 1]), Some([e, t0, t1, 1])) = (slice("?s"), slice("?t")) else { return vec![] };
        let within = |a: i64, b: i64, n: i64| 0 <= a && a <= b && b <= n;
        if d != e || d < 0 || d >= rank || !size(d).is_some_and(|n| within(t0, t1, n)) || !within(s0, s1, t1 - t0) {
            return vec![];
        }
        let ints = egraph.add(ENode::Ints(Ints(vec![d, t0 + s0, t0 + s1, 1])));
        let new = egraph.add(ENode::Slice([ints, subst[var("?x")]]));
        union_into(egraph, class, new)
    }
}

/// Whether `?p` is the identity permutation.
fn identity_permutation(egraph: &mut EG, _class: Id, subst: &Subst) -> bool {
    subst.get(var("?p")).and_then(|&id| egraph[id].data.ints()).is_some_and(|p| p.0.iter().enumerate().all(|(i, &d)| d == i as i64))
}

/// Whether the view's result (the matched class) has `?x`'s shape (and so its value).
fn same_shape_as_x(egraph: &mut EG, class: Id, subst: &Subst) -> bool {
    match (class_ty(egraph, class), ty(egraph, subst, var("?x"))) {
        (Some(out), Some(x)) => out == x,
        _ => false,
    }
}

/// The layout rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rule> {
    vec![
        // permute(p, permute(q, x)) = permute(q∘p, x)
        rewrite!("permute-permute"; "(permute ?p (permute ?q ?x))" => { ComposePermutes { p: var("?p"), q: var("?q"), x: var("?x") } }),
        // permute(identity, x) = x
        rewrite!("permute-identity"; "(permute ?p ?x)" => "?x" if identity_permutation),
        // view(s, view(t, x)) = view(s, x): a view is a row-major reinterpretation, so only
        // the last one counts (the element count is the same throughout).
        rewrite!("view-view"; "(view ?s (view ?t ?x))" => "(view ?s ?x)"),
        // slice(s, slice(t, x)) = slice(s∘t, x) (step-1 slices of one dim)
        rewrite!("slice-slice"; "(slice ?s (slice ?t ?x))" => { ComposeSlices }),
        // view(s, x) = x when the result has x's shape.
        rewrite!("view-identity"; "(view ?s ?x)" => "?x" if same_shape_as_x),
    ]
}

//! Algebraic rules: matrix-product chains reassociated, so the extractor picks the order with
//! fewer FLOPs (XLA does not reassociate dots by cost).
//!
//! `(A·B)·C = A·(B·C)` holds exactly in real arithmetic; in floating point the rounding
//! differs, as it does between any two matmul kernels. Both directions are rules: the e-graph
//! holds both orders and the cost model chooses. Only when the three factors share one float
//! dtype (type promotion between mixed dtypes would otherwise move with the parentheses).

use egg::{rewrite, Id, Subst};

use super::{ty, var, Rule, EG};

/// Whether `?a`, `?b` and `?c` are tensors of one float dtype.
fn same_float_dtype(egraph: &mut EG, _class: Id, subst: &Subst) -> bool {
    let types: Option<Vec<_>> = ["?a", "?b", "?c"].iter().map(|v| ty(egraph, subst, var(v))).collect();
    match types.as_deref() {
        Some([a, b, c]) => a.dtype.is_float() && a.dtype == b.dtype && b.dtype == c.dtype,
        _ => false,
    }
}

/// The algebra rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    // (A·B)·C = A·(B·C) for `[m,k]·[k,n]` matrices.
    rules.extend(rewrite!("mm-assoc";  "(mm (mm ?a ?b) ?c)"   <=> "(mm ?a (mm ?b ?c))"   if same_float_dtype));
    // The same per batch for `[b,m,k]·[b,k,n]`.
    rules.extend(rewrite!("bmm-assoc"; "(bmm (bmm ?a ?b) ?c)" <=> "(bmm ?a (bmm ?b ?c))" if same_float_dtype));
    rules
}

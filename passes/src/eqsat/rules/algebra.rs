//! Algebraic rules: matrix-product chains reassociated, so the extractor picks the order with
//! fewer FLOPs (XLA does not reassociate dots by cost), and a scalar factor moved to the
//! smallest tensor of a product (XLA scales a dot's large result where the model wrote it).
//!
//! `(A·B)·C = A·(B·C)` and `(A·B)·s = (A·s)·B` hold exactly in real arithmetic; in floating
//! point the rounding differs, as it does between any two matmul kernels (a power-of-two `s`
//! is exact). Both directions are rules: the e-graph holds every form and the cost model
//! chooses. Only when the factors share one float dtype (type promotion between mixed dtypes
//! would otherwise move with the parentheses), and only for a rank-0 scalar `s` (a tensor
//! factor does not commute with a product).

use egg::{rewrite, Id, Subst};

use super::{ty, var, Rule, EG};

/// Whether the classes bound to `vars` are tensors of one float dtype.
fn one_float_dtype(egraph: &EG, subst: &Subst, vars: &[&str]) -> bool {
    let types: Option<Vec<_>> = vars.iter().map(|v| ty(egraph, subst, var(v))).collect();
    match types.as_deref() {
        Some([first, rest @ ..]) => first.dtype.is_float() && rest.iter().all(|t| t.dtype == first.dtype),
        _ => false,
    }
}

/// Whether `?a`, `?b` and `?c` are tensors of one float dtype.
fn same_float_dtype(egraph: &mut EG, _class: Id, subst: &Subst) -> bool {
    one_float_dtype(egraph, subst, &["?a", "?b", "?c"])
}

/// Whether `?s` is a rank-0 tensor of the float dtype `?a` and `?b` have.
fn scalar_of_same_dtype(egraph: &mut EG, _class: Id, subst: &Subst) -> bool {
    one_float_dtype(egraph, subst, &["?a", "?b", "?s"]) && ty(egraph, subst, var("?s")).is_some_and(|s| s.rank() == 0)
}

/// Whether `?s` is a rank-0 tensor of `?x`'s float dtype.
fn scalar_of_x_dtype(egraph: &mut EG, _class: Id, subst: &Subst) -> bool {
    one_float_dtype(egraph, subst, &["?x", "?s"]) && ty(egraph, subst, var("?s")).is_some_and(|s| s.rank() == 0)
}

/// The algebra rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    // (A·B)·C = A·(B·C) for `[m,k]·[k,n]` matrices.
    rules.extend(rewrite!("mm-assoc";  "(mm (mm ?a ?b) ?c)"   <=> "(mm ?a (mm ?b ?c))"   if same_float_dtype));
    // The same per batch for `[b,m,k]·[b,k,n]`.
    rules.extend(rewrite!("bmm-assoc"; "(bmm (bmm ?a ?b) ?c)" <=> "(bmm ?a (bmm ?b ?c))" if same_float_dtype));
    // (A·B)·s = (A·s)·B = A·(B·s) for a scalar s: attention's `(q·kᵀ)·scale` scales the
    // [heads, n, n] scores where `q·scale` scales the [heads, n, d] queries.
    rules.extend(rewrite!("mm-scalar-lhs";  "(mul (mm ?a ?b) ?s)"  <=> "(mm (mul ?a ?s) ?b)"  if scalar_of_same_dtype));
    rules.extend(rewrite!("mm-scalar-rhs";  "(mul (mm ?a ?b) ?s)"  <=> "(mm ?a (mul ?b ?s))"  if scalar_of_same_dtype));
    rules.extend(rewrite!("bmm-scalar-lhs"; "(mul (bmm ?a ?b) ?s)" <=> "(bmm (mul ?a ?s) ?b)" if scalar_of_same_dtype));
    rules.extend(rewrite!("bmm-scalar-rhs"; "(mul (bmm ?a ?b) ?s)" <=> "(bmm ?a (mul ?b ?s))" if scalar_of_same_dtype));
    // view(x)·s = view(x·s) for a scalar s: an elementwise scaling does not see the shape,
    // so it moves through the views between a product and its scaling.
    rules.extend(rewrite!("view-scalar"; "(mul (view ?t ?x) ?s)" <=> "(view ?t (mul ?x ?s))" if scalar_of_x_dtype));
    rules
}

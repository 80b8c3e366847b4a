//! Merge rules: matrix products that share their left operand become one product over the
//! concatenated right operands, whose result is sliced back (BERT's separate Q, K and V
//! projections of one input), and convolutions with the same parameters that share their
//! input one convolution over the concatenated filters (Inception's branches, ResNet's first
//! downsampling shortcut beside its block); and the reverse, a slice of a product's columns
//! (a convolution's channels) as the product with the slice of the weight. The e-graph holds both forms and the cost model chooses: on
//! a memory-bound target one product reads the shared input once; on a compute-bound one the
//! FLOPs are the same and the merge gains nothing. The concatenated weights cost nothing when
//! they are constants (frozen weights: `fold-constant-layouts` concatenates them at compile
//! time); otherwise the `cat` is paid on every call.
//!
//! The merges are multi-patterns (two products anywhere in the graph), which grow the e-graph
//! quadratically per round: [`MULTI_PATTERN`] names them, and the pass runs them for
//! `Limits::multi_rounds` rounds only (TENSAT's lesson), the other rules to saturation.
//! XLA merges dots sharing an operand on some backends, below a size cap; it never merges by
//! cost.

use egg::{rewrite, Applier, Id, MultiPattern, PatternAst, Rewrite, Subst, Symbol};

use super::{slice_attr, ty, union_into, var, Rule, EG};
use crate::eqsat::analysis::TensorAnalysis;
use crate::eqsat::lang::{ConvAttr, ENode, Ints};

/// The names of the multi-pattern rules (run for a capped number of rounds).
pub const MULTI_PATTERN: &[&str] = &["merge-mm", "merge-addmm", "merge-conv", "merge-convb"];

/// The classes a weight is concatenated from (itself when it is no `cat`).
fn cat_leaves(egraph: &EG, id: Id, out: &mut Vec<Id>) {
    let id = egraph.find(id);
    match egraph[id].nodes.iter().find_map(|n| if let ENode::Cat([_, a, b]) = n { Some((*a, *b)) } else { None }) {
        Some((a, b)) if out.len() < 64 => {
            cat_leaves(egraph, a, out);
            cat_leaves(egraph, b, out);
        }
        _ => out.push(id),
    }
}

/// Whether the weights bound to `a` and `b` are concatenated from disjoint sets of weights:
/// a merge of a merged product with one of its own parts (or of two merges sharing a part)
/// would compute a weight's product twice, and only grows the e-graph.
fn disjoint_weights(egraph: &EG, subst: &Subst, a: &str, b: &str) -> bool {
    let (mut left, mut right) = (Vec::new(), Vec::new());
    cat_leaves(egraph, subst[var(a)], &mut left);
    cat_leaves(egraph, subst[var(b)], &mut right);
    left.iter().all(|l| !right.contains(l))
}

/// Unions the classes `p` and `q` of the two merged values with their slices of `merged`
/// along `dim`: `p` the first `n1`, `q` the next `n2`.
fn slice_back(egraph: &mut EG, merged: Id, dim: i64, (p, n1): (Id, i64), (q, n2): (Id, i64)) -> Vec<Id> {
    let first = egraph.add(ENode::Ints(Ints(vec![dim, 0, n1, 1])));
    let first = egraph.add(ENode::Slice([first, merged]));
    let second = egraph.add(ENode::Ints(Ints(vec![dim, n1, n1 + n2, 1])));
    let second = egraph.add(ENode::Slice([second, merged]));
    let mut changed = union_into(egraph, p, first);
    changed.extend(union_into(egraph, q, second));
    changed
}

/// `x·a, x·b = slice(x·cat(a, b))` (with `cat(c, d)` added to `x·cat(a, b)` for `addmm`):
/// for `x: [m,k]`, `a: [k,n1]`, `b: [k,n2]` of one float dtype, and 1-D biases `c: [n1]`,
/// `d: [n2]` of that dtype.
struct MergeProducts {
    bias: bool,
}

impl Applier<ENode, TensorAnalysis> for MergeProducts {
    fn apply_one(&self, egraph: &mut EG, _class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let (Some(&p), Some(&q)) = (subst.get(var("?p")), subst.get(var("?q"))) else { return vec![] };
        // One merge per unordered pair: (a, b) and (b, a) would add two equal products.
        if egraph.find(p) >= egraph.find(q) {
            return vec![];
        }
        let (Some(x), Some(a), Some(b)) = (ty(egraph, subst, var("?x")), ty(egraph, subst, var("?a")), ty(egraph, subst, var("?b"))) else {
            return vec![];
        };
        let dtype = x.dtype;
        let matrices = [x, a, b].iter().all(|t| t.rank() == 2 && t.dtype == dtype);
        if !dtype.is_float() || !matrices || a.shape[0] != b.shape[0] {
            return vec![];
        }
        let (n1, n2) = (a.shape[1], b.shape[1]);
        if !disjoint_weights(egraph, subst, "?a", "?b") {
            return vec![];
        }
        if self.bias {
            let biases = (ty(egraph, subst, var("?c")), ty(egraph, subst, var("?d")));
            let (Some(c), Some(d)) = biases else { return vec![] };
            if c.dtype != dtype || d.dtype != dtype || c.shape[..] != [n1] || d.shape[..] != [n2] {
                return vec![];
            }
        }
        let get = |v: &str| subst[var(v)];
        let dim1 = egraph.add(ENode::Ints(Ints(vec![1])));
        let weights = egraph.add(ENode::Cat([dim1, get("?a"), get("?b")]));
        let product = if self.bias {
            let dim0 = egraph.add(ENode::Ints(Ints(vec![0])));
            let biases = egraph.add(ENode::Cat([dim0, get("?c"), get("?d")]));
            egraph.add(ENode::Addmm([biases, get("?x"), weights]))
        } else {
            egraph.add(ENode::Mm([get("?x"), weights]))
        };
        slice_back(egraph, product, 1, (p, n1), (q, n2))
    }
}

/// `conv(x, w1), conv(x, w2) = slice(conv(x, cat(w1, w2)), channels)` (biases concatenated
/// too for `convb`): same parameters (one attribute class), not grouped, not transposed, the
/// filters `[o1, c, k...]` and `[o2, c, k...]` of one dtype with the same kernel. The result's
/// channels are dim 1, or the last dim when the convolution is `channels_last`.
struct MergeConvolutions {
    bias: bool,
}

impl Applier<ENode, TensorAnalysis> for MergeConvolutions {
    fn apply_one(&self, egraph: &mut EG, _class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let (Some(&p), Some(&q)) = (subst.get(var("?p")), subst.get(var("?q"))) else { return vec![] };
        if egraph.find(p) >= egraph.find(q) {
            return vec![];
        }
        let Some((groups, transposed, channels_last)) = egraph[subst[var("?a")]].data.ints().and_then(ConvAttr::flags) else { return vec![] };
        let (Some(x), Some(w1), Some(w2)) = (ty(egraph, subst, var("?x")), ty(egraph, subst, var("?w1")), ty(egraph, subst, var("?w2"))) else {
            return vec![];
        };
        if groups != 1 || transposed || !x.dtype.is_float() || w1.dtype != x.dtype || w2.dtype != x.dtype || w1.shape[1..] != w2.shape[1..] {
            return vec![];
        }
        let (o1, o2) = (w1.shape[0], w2.shape[0]);
        if !disjoint_weights(egraph, subst, "?w1", "?w2") {
            return vec![];
        }
        if self.bias {
            let (Some(b1), Some(b2)) = (ty(egraph, subst, var("?b1")), ty(egraph, subst, var("?b2"))) else { return vec![] };
            if b1.dtype != x.dtype || b2.dtype != x.dtype || b1.shape[..] != [o1] || b2.shape[..] != [o2] {
                return vec![];
            }
        }
        let channel = if channels_last { x.rank() as i64 - 1 } else { 1 };
        let get = |v: &str| subst[var(v)];
        let dim0 = egraph.add(ENode::Ints(Ints(vec![0])));
        let filters = egraph.add(ENode::Cat([dim0, get("?w1"), get("?w2")]));
        let conv = if self.bias {
            let biases = egraph.add(ENode::Cat([dim0, get("?b1"), get("?b2")]));
            egraph.add(ENode::ConvBias([get("?a"), get("?x"), filters, biases]))
        } else {
            egraph.add(ENode::Conv([get("?a"), get("?x"), filters]))
        };
        slice_back(egraph, conv, channel, (p, o1), (q, o2))
    }
}

/// `slice(conv(x, w), channels) = conv(x, slice(w, filters))` (and the bias sliced for
/// `convb`): a step-1 slice of the result's channels of an ungrouped, untransposed
/// convolution (the reverse of the merges).
struct SliceConvolution {
    bias: bool,
}

impl Applier<ENode, TensorAnalysis> for SliceConvolution {
    fn apply_one(&self, egraph: &mut EG, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let Some((groups, transposed, channels_last)) = egraph[subst[var("?a")]].data.ints().and_then(ConvAttr::flags) else { return vec![] };
        let Some(x) = ty(egraph, subst, var("?x")) else { return vec![] };
        let rank = x.rank();
        let Some([dim, start, end, step]) = slice_attr(egraph, subst[var("?s")], rank) else { return vec![] };
        let channel = if channels_last { rank as i64 - 1 } else { 1 };
        if groups != 1 || transposed || dim != channel {
            return vec![];
        }
        let get = |v: &str| subst[var(v)];
        let filters = egraph.add(ENode::Ints(Ints(vec![0, start, end, step])));
        let weight = egraph.add(ENode::Slice([filters, get("?w")]));
        let new = if self.bias {
            let bias = egraph.add(ENode::Slice([filters, get("?b")]));
            egraph.add(ENode::ConvBias([get("?a"), get("?x"), weight, bias]))
        } else {
            egraph.add(ENode::Conv([get("?a"), get("?x"), weight]))
        };
        union_into(egraph, class, new)
    }
}

/// `slice(x·w, columns) = x·slice(w, columns)`, and for `addmm` the 1-D bias sliced too: a
/// slice along the last dim of a 2-D product (the reverse of the merges).
struct SliceProduct {
    bias: bool,
}

impl Applier<ENode, TensorAnalysis> for SliceProduct {
    fn apply_one(&self, egraph: &mut EG, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let Some([dim, start, end, step]) = slice_attr(egraph, subst[var("?s")], 2) else { return vec![] };
        let Some(w) = ty(egraph, subst, var("?w")) else { return vec![] };
        if dim != 1 || w.rank() != 2 {
            return vec![];
        }
        if self.bias && ty(egraph, subst, var("?c")).is_none_or(|c| c.shape[..] != [w.shape[1]]) {
            return vec![];
        }
        let get = |v: &str| subst[var(v)];
        let columns = egraph.add(ENode::Ints(Ints(vec![1, start, end, step])));
        let weight = egraph.add(ENode::Slice([columns, get("?w")]));
        let new = if self.bias {
            let entries = egraph.add(ENode::Ints(Ints(vec![0, start, end, step])));
            let bias = egraph.add(ENode::Slice([entries, get("?c")]));
            egraph.add(ENode::Addmm([bias, get("?x"), weight]))
        } else {
            egraph.add(ENode::Mm([get("?x"), weight]))
        };
        union_into(egraph, class, new)
    }
}

/// `slice(cat(a, b), a's part) = a` and `slice(cat(a, b), b's part) = b`: a step-1 slice along
/// the cat's dim that covers exactly one operand.
struct SliceOfCat;

impl Applier<ENode, TensorAnalysis> for SliceOfCat {
    fn apply_one(&self, egraph: &mut EG, class: Id, subst: &Subst, _: Option<&PatternAst<ENode>>, _: Symbol) -> Vec<Id> {
        let (Some(a), Some(b)) = (ty(egraph, subst, var("?a")), ty(egraph, subst, var("?b"))) else { return vec![] };
        let rank = a.rank();
        let Some([dim, start, end, step]) = slice_attr(egraph, subst[var("?s")], rank) else { return vec![] };
        let Some(cat_dim) = egraph[subst[var("?d")]].data.ints().and_then(|i| i.0.first().copied()) else { return vec![] };
        let cat_dim = if cat_dim < 0 { cat_dim + rank as i64 } else { cat_dim };
        if dim != cat_dim || step != 1 || dim < 0 || dim as usize >= rank {
            return vec![];
        }
        let (na, nb) = (a.shape[dim as usize], b.shape[dim as usize]);
        let part = if (start, end) == (0, na) {
            subst[var("?a")]
        } else if (start, end) == (na, na + nb) {
            subst[var("?b")]
        } else {
            return vec![];
        };
        union_into(egraph, class, part)
    }
}

/// A multi-pattern rule (the patterns are static and valid).
fn multi(name: &str, pattern: &str, applier: impl Applier<ENode, TensorAnalysis> + Send + Sync + 'static) -> Rule {
    let searcher: MultiPattern<ENode> = pattern.parse().unwrap_or_else(|e| panic!("bad multi-pattern {pattern}: {e}"));
    Rewrite::new(name, searcher, applier).unwrap_or_else(|e| panic!("bad rule {name}: {e}"))
}

/// The merge rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rule> {
    vec![
        // x·a, x·b = slice(x·cat(a, b), [0, n1)), slice(x·cat(a, b), [n1, n1+n2))
        multi("merge-mm", "?p = (mm ?x ?a), ?q = (mm ?x ?b)", MergeProducts { bias: false }),
        // c + x·a, d + x·b = the same with cat(c, d) added
        multi("merge-addmm", "?p = (addmm ?c ?x ?a), ?q = (addmm ?d ?x ?b)", MergeProducts { bias: true }),
        // slice(x·w, columns) = x·slice(w, columns)
        rewrite!("slice-mm"; "(slice ?s (mm ?x ?w))" => { SliceProduct { bias: false } }),
        // slice(c + x·w, columns) = slice(c) + x·slice(w, columns)
        rewrite!("slice-addmm"; "(slice ?s (addmm ?c ?x ?w))" => { SliceProduct { bias: true } }),
        // conv(x, w1), conv(x, w2) = slices of conv(x, cat(w1, w2)) along the channels
        multi("merge-conv", "?p = (conv ?a ?x ?w1), ?q = (conv ?a ?x ?w2)", MergeConvolutions { bias: false }),
        multi("merge-convb", "?p = (convb ?a ?x ?w1 ?b1), ?q = (convb ?a ?x ?w2 ?b2)", MergeConvolutions { bias: true }),
        // slice(conv(x, w), channels) = conv(x, slice(w, filters))
        rewrite!("slice-conv"; "(slice ?s (conv ?a ?x ?w))" => { SliceConvolution { bias: false } }),
        rewrite!("slice-convb"; "(slice ?s (convb ?a ?x ?w ?b))" => { SliceConvolution { bias: true } }),
        // slice(cat(a, b), a's part) = a, and b's
        rewrite!("slice-cat"; "(slice ?s (cat ?d ?a ?b))" => { SliceOfCat }),
    ]
}

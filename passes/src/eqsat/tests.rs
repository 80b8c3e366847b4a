//! Unit tests of the e-graph pass: structure only (values are checked on the CPU plugin by
//! the testsuite's `eqsat` module).

use fxhlo_ir::{BinaryOp, DType, Graph, InputKind, Op, TensorType, ValueRef};

use super::*;

/// A graph builder with inferred types.
struct B(Graph, usize);

impl B {
    fn new() -> Self {
        B(Graph::new("t"), 0)
    }
    fn input(&mut self, name: &str, shape: &[i64]) -> ValueRef {
        ValueRef::first(self.0.add_input(name, InputKind::UserInput, None, TensorType::new(DType::F32, shape.to_vec()), None))
    }
    /// A constant of `shape` (zeros: structure tests read no values).
    fn constant(&mut self, shape: &[i64]) -> ValueRef {
        self.1 += 1;
        let ty = TensorType::new(DType::F32, shape.to_vec());
        let data = fxhlo_ir::TensorData::new(vec![0u8; ty.checked_size_bytes().unwrap()]);
        ValueRef::first(self.0.add_node(format!("c{}", self.1), Op::Constant { data }, &[], vec![ty], None).unwrap())
    }
    fn op(&mut self, op: Op, operands: &[ValueRef]) -> ValueRef {
        self.1 += 1;
        let types: Vec<&TensorType> = operands.iter().map(|v| self.0.value_type(*v).unwrap()).collect();
        let results = fxhlo_ir::infer::infer(&op, &types).unwrap().unwrap();
        ValueRef::first(self.0.add_node(format!("n{}", self.1), op, operands, results, None).unwrap())
    }
    fn finish(mut self, outputs: &[ValueRef]) -> Graph {
        self.0.set_outputs(outputs.to_vec()).unwrap();
        fxhlo_ir::verify(&self.0).unwrap();
        self.0
    }
}

fn permute(d: &[i64]) -> Op {
    Op::Permute { dims: d.into() }
}

fn count(g: &Graph, f: impl Fn(&Op) -> bool) -> usize {
    g.node_ids().filter(|&id| f(&g.node(id).op)).count()
}

/// `(a·b)·c` with a wide inner product: `a·(b·c)` costs far fewer FLOPs.
fn chain() -> Graph {
    let mut b = B::new();
    let (x, y, z) = (b.input("a", &[64, 64]), b.input("b", &[64, 64]), b.input("c", &[64, 2]));
    let ab = b.op(Op::Mm, &[x, y]);
    let abc = b.op(Op::Mm, &[ab, z]);
    b.finish(&[abc])
}

#[test]
fn every_rule_builds_and_names_are_unique() {
    let rules = rules::all();
    let mut names: Vec<String> = rules.iter().map(|r| r.name.to_string()).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate rule names");
    assert!(n >= 8, "{names:?}");
}

#[test]
fn without_rules_the_graph_round_trips_unchanged() {
    // Duplicated structured nodes hash-cons to one class; the rebuild must keep both anyway.
    let mut b = B::new();
    let (x, w) = (b.input("x", &[4, 8]), b.input("w", &[8, 8]));
    let m1 = b.op(Op::Mm, &[x, w]);
    let m2 = b.op(Op::Mm, &[x, w]);
    let s = b.op(Op::Binary(BinaryOp::Add), &[m1, m2]);
    let t = b.op(Op::Unary(fxhlo_ir::UnaryOp::Tanh), &[s]);
    let p = b.op(permute(&[1, 0]), &[t]);
    let mut g = b.finish(&[p, t]);
    let before = fxhlo_ir::print(&g);
    let report = optimize(&mut g, &[], &Limits::default(), &cost::CPU).unwrap();
    assert!(!report.changed, "{report:?}");
    assert_eq!(fxhlo_ir::print(&g), before);
}

#[test]
fn reassociation_picks_the_cheaper_order() {
    let mut g = chain();
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied["mm-assoc"] >= 1, "{report:?}");
    assert!(report.changed, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
    // The first product now is b·c ([64,64]·[64,2]), read by a·(b·c).
    let out = g.outputs()[0].node;
    let inner = g.operands(out)[1].node;
    assert_eq!(g.node(inner).op, Op::Mm);
    assert_eq!(&g.node(inner).results[0].shape[..], &[64, 2]);
    // 64x fewer FLOPs, but at this size both orders are memory-bound on the CPU's roofline:
    // the saving is the [64,64] intermediate's traffic, about half.
    assert!(report.cost_after.unwrap() < report.cost_before / 1.8, "{report:?}");
    // Already the cheap order: nothing to do.
    let again = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(!again.changed && again.kept_because.is_some(), "{again:?}");
}

#[test]
fn a_shared_product_is_counted_once() {
    // (a·b) feeds the chain and an output of its own: reassociating would compute a·b anyway
    // plus b·c, so a DAG-aware extractor keeps the graph (a tree extractor would not).
    let mut b = B::new();
    let (x, y, z) = (b.input("a", &[64, 64]), b.input("b", &[64, 64]), b.input("c", &[64, 64]));
    let ab = b.op(Op::Mm, &[x, y]);
    let abc = b.op(Op::Mm, &[ab, z]);
    let mut g = b.finish(&[abc, ab]);
    let before = fxhlo_ir::print(&g);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied["mm-assoc"] >= 1, "{report:?}");
    assert!(!report.changed, "{report:?}");
    assert_eq!(fxhlo_ir::print(&g), before);
}

#[test]
fn permutes_compose_and_cancel() {
    let mut b = B::new();
    let x = b.input("x", &[2, 3, 4]);
    let p1 = b.op(permute(&[1, 2, 0]), &[x]);
    let p2 = b.op(permute(&[2, 0, 1]), &[p1]);
    let e = b.op(Op::Unary(fxhlo_ir::UnaryOp::Exp), &[p2]);
    let q1 = b.op(permute(&[1, 0, 2]), &[e]);
    let q2 = b.op(permute(&[0, 2, 1]), &[q1]);
    let mut g = b.finish(&[q2]);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied["permute-permute"] >= 2 && report.applied["permute-identity"] >= 1, "{report:?}");
    assert!(report.changed, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
    // The first pair cancels; the second composes into one permute [1, 2, 0].
    let perms: Vec<Vec<i64>> = g.node_ids().filter_map(|id| match &g.node(id).op {
        Op::Permute { dims } => Some(dims.to_vec()),
        _ => None,
    }).collect();
    assert_eq!(perms, vec![vec![1, 2, 0]]);
    let exp = g.node_ids().find(|&id| matches!(g.node(id).op, Op::Unary(_))).unwrap();
    assert!(matches!(g.node(g.operands(exp)[0].node).op, Op::Input { .. }));
}

#[test]
fn views_collapse() {
    let mut b = B::new();
    let x = b.input("x", &[2, 12]);
    let v1 = b.op(Op::View { shape: [4, 6].into() }, &[x]);
    let v2 = b.op(Op::View { shape: [-1, 3].into() }, &[v1]);
    let v3 = b.op(Op::View { shape: [2, 12].into() }, &[v2]);
    let y = b.op(Op::Unary(fxhlo_ir::UnaryOp::Neg), &[v3]);
    let mut g = b.finish(&[y]);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied["view-view"] >= 1 && report.applied["view-identity"] >= 1, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
    // Three views of x back to x's own shape are no view at all.
    assert_eq!(count(&g, |op| matches!(op, Op::View { .. })), 0, "{}", fxhlo_ir::print(&g));
}

/// BERT-base's Q, K and V projections of one input, weights frozen (constants): the merge
/// into one product reads the input once, which pays on a memory-bound target (TPU v6e's
/// roofline at 128 tokens) and not on a compute-bound one (the CPU plugin's); with weights
/// passed in, the concatenation would run on every call, and nothing merges.
#[test]
fn shared_input_products_merge_where_the_roofline_says_so() {
    let build = |frozen: bool| {
        let mut b = B::new();
        let x = b.input("x", &[128, 768]);
        let outs: Vec<ValueRef> = (0..3)
            .map(|i| {
                let w = if frozen { b.constant(&[768, 768]) } else { b.input(&format!("w{i}"), &[768, 768]) };
                b.op(Op::Mm, &[x, w])
            })
            .collect();
        b.finish(&outs)
    };
    let mut g = build(true);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::ACCELERATOR).unwrap();
    assert!(report.applied["merge-mm"] >= 2 && report.changed, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
    // Two rounds of merges: one product over the three weights concatenated (a cat of a
    // merged pair's cat and the third), sliced three ways (slices of slices composed).
    assert_eq!(count(&g, |op| matches!(op, Op::Mm)), 1, "{}", fxhlo_ir::print(&g));
    assert_eq!(count(&g, |op| matches!(op, Op::Slice { .. })), 3, "{}", fxhlo_ir::print(&g));
    assert_eq!(count(&g, |op| matches!(op, Op::Cat { .. })), 2, "{}", fxhlo_ir::print(&g));
    let mut g = build(true);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied["merge-mm"] >= 2 && !report.changed, "{report:?}");
    let mut g = build(false);
    let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::ACCELERATOR).unwrap();
    assert!(report.applied["merge-mm"] >= 2 && !report.changed, "{report:?}");
}

/// The merges run for `multi_rounds` rounds only: with one round, pairs merge and no triple
/// does (it needs a merged pair to merge again).
#[test]
fn multi_pattern_rounds_are_capped() {
    let mut b = B::new();
    let x = b.input("x", &[512, 16]);
    let outs: Vec<ValueRef> = (0..4).map(|i| {
        let w = b.input(&format!("w{i}"), &[16, 8]);
        b.op(Op::Mm, &[x, w])
    }).collect();
    let g = b.finish(&outs);
    let applied = |rounds: usize| {
        let limits = Limits { multi_rounds: rounds, ..Limits::default() };
        optimize(&mut g.clone(), &rules::all(), &limits, &cost::CPU).unwrap().applied["merge-mm"]
    };
    // 4 products: 6 pairs in round one (each merge counts its two classes); round two also
    // pairs merged products.
    assert_eq!(applied(1), 12);
    assert!(applied(2) > 12);
    assert_eq!(applied(0), 0);
}

#[test]
fn convolution_parameters_round_trip_through_their_attribute() {
    use crate::eqsat::lang::ConvAttr;
    let op = Op::Convolution {
        stride: [2, 1].into(),
        padding: [3, 0].into(),
        dilation: [1, 2].into(),
        transposed: true,
        output_padding: [1, 0].into(),
        groups: 4,
        has_bias: true,
        channels_last: true,
    };
    let attr = ConvAttr::encode(&op).unwrap();
    assert_eq!(attr.0, vec![2, 2, 1, 3, 0, 1, 2, 1, 1, 0, 4, 1]);
    assert_eq!(ConvAttr::decode(&attr, true), Some(op));
    assert_eq!(ConvAttr::flags(&attr), Some((4, true, true)));
    assert_eq!(ConvAttr::decode(&Ints(vec![2, 1, 1]), false), None);
}

/// A 2-D convolution of `x` by `w`, 3x3, padding 1, channels-first.
fn conv3(b: &mut B, x: ValueRef, w: ValueRef) -> ValueRef {
    b.op(
        Op::Convolution {
            stride: [1, 1].into(),
            padding: [1, 1].into(),
            dilation: [1, 1].into(),
            transposed: false,
            output_padding: [0, 0].into(),
            groups: 1,
            has_bias: false,
            channels_last: false,
        },
        &[x, w],
    )
}

/// conv -> batch norm -> relu -> conv -> + residual -> mean over H, W: with the channels-last
/// rules on the CPU's roofline both convolutions run channels-last and the values between
/// them stay `[N, H, W, C]`: one permute in (the image), none out (the mean leaves `[N, C]`).
fn conv_block() -> Graph {
    let mut b = B::new();
    let x = b.input("x", &[1, 16, 28, 28]);
    let (w1, w2) = (b.input("w1", &[16, 16, 3, 3]), b.input("w2", &[16, 16, 3, 3]));
    let params: Vec<ValueRef> = (0..4).map(|i| b.input(&format!("bn{i}"), &[16])).collect();
    let c1 = conv3(&mut b, x, w1);
    let bn = {
        let mut operands = vec![c1];
        operands.extend(&params);
        b.0.add_node("bn", Op::BatchNorm { eps: fxhlo_ir::Scalar::float(1e-5), has_weight: true, has_bias: true }, &operands,
            vec![TensorType::new(DType::F32, vec![1, 16, 28, 28]), TensorType::new(DType::F32, vec![0]), TensorType::new(DType::F32, vec![0])], None).unwrap()
    };
    let r = b.op(Op::Unary(fxhlo_ir::UnaryOp::Relu), &[ValueRef::first(bn)]);
    let c2 = conv3(&mut b, r, w2);
    let sum = b.op(Op::Binary(BinaryOp::Add), &[c2, x]);
    let mean = b.op(Op::Reduce { op: fxhlo_ir::ReduceOp::Mean, dims: [2, 3].into(), keepdim: false, dtype: None }, &[sum]);
    b.finish(&[mean])
}

#[test]
fn the_layout_rules_keep_a_conv_block_channels_last() {
    let mut g = conv_block();
    let report = optimize(&mut g, &EQSAT_LAYOUT.rules(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.changed, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
    let printed = fxhlo_ir::print(&g);
    let convs: Vec<bool> = g.node_ids().filter_map(|id| match &g.node(id).op {
        Op::Convolution { channels_last, .. } => Some(*channels_last),
        _ => None,
    }).collect();
    assert_eq!(convs, vec![true, true], "{printed}");
    // The image permuted once to [N, H, W, C] (read by the first convolution and the sum).
    assert_eq!(count(&g, |op| matches!(op, Op::Permute { .. })), 1, "{printed}");
    // Without the channels-last rules nothing changes layout.
    let plain = optimize(&mut conv_block(), &EQSAT.rules(), &Limits::default(), &cost::CPU).unwrap();
    assert!(!plain.changed, "{plain:?}");
}

#[test]
fn compose_is_checked() {
    assert_eq!(rules::layout::compose(&[1, 0], &[1, 0]), Some(vec![0, 1]));
    assert_eq!(rules::layout::compose(&[1, 2, 0], &[2, 0, 1]), Some(vec![0, 1, 2]));
    assert_eq!(rules::layout::compose(&[0, 0], &[1, 0]), None);
    assert_eq!(rules::layout::compose(&[0, 1], &[0, 1, 2]), None);
    assert_eq!(rules::layout::compose(&[0, 5], &[1, 0]), None);
}

#[test]
fn a_graph_that_blows_up_stops_at_the_limit_and_stays_correct() {
    // A long chain of square products: reassociation finds Catalan-many orders.
    let mut b = B::new();
    let xs: Vec<ValueRef> = (0..12).map(|i| b.input(&format!("x{i}"), &[8, 8])).collect();
    let mut acc = xs[0];
    for &x in &xs[1..] {
        acc = b.op(Op::Mm, &[acc, x]);
    }
    let mut g = b.finish(&[acc]);
    let limits = Limits { iterations: 100, nodes: 500, time: std::time::Duration::from_secs(60), ..Limits::default() };
    let report = optimize(&mut g, &rules::all(), &limits, &cost::CPU).unwrap();
    assert!(report.stop_reason.contains("NodeLimit"), "{report:?}");
    // Every order costs the same FLOPs here: the guard keeps the graph.
    assert!(!report.changed, "{report:?}");
    fxhlo_ir::verify(&g).unwrap();
}

#[test]
fn the_pass_is_registered_at_o2_the_default() {
    assert_eq!(crate::lookup("eqsat").unwrap().name(), "eqsat");
    assert_eq!(crate::lookup("eqsat-layout").unwrap().name(), "eqsat-layout");
    let names = |level, cpu: bool| {
        let target = if cpu { crate::Target::Cpu } else { crate::Target::Other };
        crate::pipeline(level, target).iter().map(|p| p.name()).collect::<Vec<_>>()
    };
    assert!(!names(1, true).iter().any(|n| n.starts_with("eqsat")));
    // On the CPU plugin `-O2`'s e-graph carries the channels-last rules, in the pass's place.
    assert!(names(1, true).contains(&"channels-last"));
    assert!(names(2, true).contains(&"eqsat-layout") && !names(2, true).contains(&"channels-last"));
    assert!(names(2, false).contains(&"eqsat") && !names(2, false).contains(&"eqsat-layout"));
    assert!(crate::default_pipeline().iter().any(|p| p.name() == "eqsat-layout"));
}

#[test]
fn the_pass_manager_reports_the_egraph_it_built() {
    // A permute pair the rules fold: the summary names the rules that fired and the e-graph.
    let mut b = B::new();
    let x = b.input("x", &[2, 3, 4]);
    let p = b.op(permute(&[1, 2, 0]), &[x]);
    let q = b.op(permute(&[2, 0, 1]), &[p]);
    let mut g = b.finish(&[q]);
    let runs = crate::PassManager::new(vec![&EQSAT, &crate::Dce]).run(&mut g).unwrap();
    let summary = runs[0].summary.as_deref().expect("eqsat summarizes its run");
    assert!(summary.contains("e-nodes") && summary.contains("stop Saturated"), "{summary}");
    assert!(summary.contains("permute-permute x"), "{summary}");
    // A pass without its own account says nothing more than the manager's columns.
    assert_eq!(runs[1].summary, None);
}

fn cand(cost: f64, children: &[usize]) -> extract::Candidate {
    extract::Candidate { cost, children: children.to_vec() }
}

#[test]
fn the_generic_extractor_counts_a_shared_class_once() {
    // 0: S (5); 1: X = x(S) (1); 2: Y = y(S) (1); 3: R = r(X, Y) (1). A tree count says 13.
    let classes = vec![vec![cand(5.0, &[])], vec![cand(1.0, &[0])], vec![cand(1.0, &[0])], vec![cand(1.0, &[1, 2])]];
    let (choice, cost) = dag_greedy(&classes, &[3]);
    assert_eq!(choice, vec![Some(0); 4]);
    assert_eq!(cost, Some(8.0));
}

#[test]
fn the_generic_extractor_avoids_cycles_and_prefers_cheaper_candidates() {
    // 0: A = a1(B) (1) or a2 (10); 1: B = b1(A) (1) or b2 (3). From B: b2 alone costs 3.
    let classes = vec![vec![cand(1.0, &[1]), cand(10.0, &[])], vec![cand(1.0, &[0]), cand(3.0, &[])]];
    let (choice, cost) = dag_greedy(&classes, &[1]);
    assert_eq!(cost, Some(3.0), "{choice:?}");
    assert_eq!(choice[1], Some(1));
    // A cycle among the choices is no extraction; a class without a choice neither.
    assert_eq!(dag_cost(&classes, &[Some(0), Some(0)], &[1]), None);
    assert_eq!(dag_cost(&classes, &[None, Some(0)], &[1]), None);
    assert_eq!(dag_cost(&classes, &[Some(1), Some(0)], &[1]), Some(11.0));
    // The tree extraction (the fallback when greedy choices close a cycle) never closes one.
    let tree = tree_bottom_up(&classes);
    assert_eq!(dag_cost(&classes, &tree, &[0]), Some(4.0), "{tree:?}");
    assert_eq!(dag_cost(&classes, &tree, &[1]), Some(3.0), "{tree:?}");
}

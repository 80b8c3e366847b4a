//! The e-graph pass (`eqsat`, `-O2`): each rule fires on its example and the rewritten graph
//! computes the same values as the original on the CPU plugin (both at `-O0`, so XLA alone
//! sees each); every fixture round-trips unchanged without rules, and with the rules keeps
//! its PyTorch reference. Prints the pass's time and report per fixture (docs/optimizer.md).

use std::fs;
use std::time::Instant;

use fxhlo::frontend::Bundle;
use fxhlo::passes::eqsat::{cost, optimize, rules, Limits};
use fxhlo::runtime::HostTensor;
use fxhlo_ir::{BinaryOp, DType, Graph, Op, UnaryOp, ValueRef};

use crate::support::{cpu_at, max_abs_diff, Builder};

/// Deterministic inputs in [-1, 1) for every input of `g` (all f32 here).
fn inputs(g: &Graph) -> Vec<HostTensor> {
    let mut state = 0x2545_f491_u32;
    g.inputs()
        .iter()
        .map(|&id| {
            let ty = &g.node(id).results[0];
            let data: Vec<f32> = (0..ty.num_elements())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
                })
                .collect();
            HostTensor::from_f32(ty.shape.to_vec(), &data).unwrap()
        })
        .collect()
}

/// Optimizes a copy of `g` with every rule; asserts `rule` fired and the graph changed; runs
/// both at `-O0` and returns the largest difference of their outputs.
fn rewrite_and_compare(g: &Graph, rule: &str) -> f32 {
    let mut opt = g.clone();
    let report = optimize(&mut opt, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
    assert!(report.applied.get(rule).copied().unwrap_or(0) >= 1, "{}: {rule} did not fire: {report:?}", g.name);
    assert!(report.changed, "{}: nothing changed: {report:?}", g.name);
    fxhlo_ir::verify(&opt).unwrap();
    let session = cpu_at(0);
    let args = inputs(g);
    let run = |graph: &Graph| {
        let compiled = session.compile(graph, &fxhlo::Frozen::new(), None).unwrap_or_else(|e| panic!("{}: {e}", graph.name));
        compiled.run(&session, &args).unwrap()
    };
    let (want, got) = (run(g), run(&opt));
    assert_eq!(want.len(), got.len());
    want.iter().zip(&got).map(|(w, o)| max_abs_diff(&format!("{} {rule}", g.name), &o.to_f32_vec(), &w.to_f32_vec())).fold(0.0, f32::max)
}

#[test]
fn mm_chains_reassociate_and_keep_their_values() {
    let mut b = Builder::new("mm_chain");
    let (x, y, z) = (b.input("a", DType::F32, &[48, 64]), b.input("b", DType::F32, &[64, 64]), b.input("c", DType::F32, &[64, 3]));
    let xy = b.op(Op::Mm, &[x, y], None);
    let out = b.op(Op::Mm, &[xy, z], None);
    assert!(rewrite_and_compare(&b.finish(&[out]), "mm-assoc") < 1e-4);

    let mut b = Builder::new("bmm_chain");
    let (x, y, z) = (b.input("a", DType::F32, &[2, 3, 32]), b.input("b", DType::F32, &[2, 32, 32]), b.input("c", DType::F32, &[2, 32, 32]));
    let yz = b.op(Op::Bmm, &[y, z], None);
    let out = b.op(Op::Bmm, &[x, yz], None);
    assert!(rewrite_and_compare(&b.finish(&[out]), "bmm-assoc-rev") < 1e-4);
}

/// Attention's `(q·kᵀ)·scale` through a view, as PyTorch writes it: the scale moves onto the
/// smaller factor (a scale of 1/sqrt(8), not a power of two, so the rounding does change).
#[test]
fn scaled_products_move_the_scale_and_keep_their_values() {
    let scalar = |b: &mut Builder, v: f64| b.op(Op::Full { value: fxhlo_ir::Scalar::float(v) }, &[], Some(fxhlo_ir::TensorType::new(DType::F32, vec![])));
    let mut b = Builder::new("scaled_scores");
    let (q, kt) = (b.input("q", DType::F32, &[4, 64, 8]), b.input("kt", DType::F32, &[4, 8, 64]));
    let s = b.op(Op::Bmm, &[q, kt], None);
    let s4 = b.op(Op::View { shape: [1, 4, 64, 64].into() }, &[s], None);
    let scale = scalar(&mut b, 8f64.powf(-0.5));
    let scaled = b.op(Op::Binary(BinaryOp::Mul), &[s4, scale], None);
    let p = b.op(Op::Unary(UnaryOp::Exp), &[scaled], None);
    let err = rewrite_and_compare(&b.finish(&[p]), "bmm-scalar-lhs");
    println!("scaled_scores: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");

    let mut b = Builder::new("scaled_mm");
    let (x, w) = (b.input("x", DType::F32, &[128, 4]), b.input("w", DType::F32, &[4, 96]));
    let y = b.op(Op::Mm, &[x, w], None);
    let scale = scalar(&mut b, 0.3);
    let out = b.op(Op::Binary(BinaryOp::Mul), &[y, scale], None);
    let err = rewrite_and_compare(&b.finish(&[out]), "mm-scalar-lhs");
    println!("scaled_mm: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");
}

#[test]
fn permutes_and_views_collapse_and_keep_their_values() {
    let mut b = Builder::new("permute_chain");
    let x = b.input("x", DType::F32, &[2, 3, 4]);
    let p1 = b.op(Op::Permute { dims: [1, 2, 0].into() }, &[x], None);
    let p2 = b.op(Op::Permute { dims: [0, 2, 1].into() }, &[p1], None);
    let e = b.op(Op::Unary(UnaryOp::Exp), &[p2], None);
    let p3 = b.op(Op::Permute { dims: [2, 0, 1].into() }, &[e], None);
    let p4 = b.op(Op::Permute { dims: [1, 2, 0].into() }, &[p3], None);
    assert!(rewrite_and_compare(&b.finish(&[p4]), "permute-permute") == 0.0);

    let mut b = Builder::new("view_chain");
    let x = b.input("x", DType::F32, &[2, 12]);
    let v1 = b.op(Op::View { shape: [4, 6].into() }, &[x], None);
    let v2 = b.op(Op::View { shape: [-1, 3].into() }, &[v1], None);
    let v3 = b.op(Op::View { shape: [3, 8].into() }, &[v2], None);
    let y = b.op(Op::Binary(BinaryOp::Mul), &[v3, v3], None);
    assert!(rewrite_and_compare(&b.finish(&[y]), "view-view") == 0.0);
}

/// Products sharing their input merge where the input's traffic dominates (512 tokens, narrow
/// projections), with and without biases; and a slice of a product's columns becomes the
/// product with the sliced weight.
#[test]
fn merged_and_sliced_products_keep_their_values() {
    let mut b = Builder::new("merge_mm");
    let (x, wa, wb) = (b.input("x", DType::F32, &[512, 16]), b.input("wa", DType::F32, &[16, 8]), b.input("wb", DType::F32, &[16, 8]));
    let ya = b.op(Op::Mm, &[x, wa], None);
    let yb = b.op(Op::Mm, &[x, wb], None);
    let err = rewrite_and_compare(&b.finish(&[ya, yb]), "merge-mm");
    println!("merge_mm: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");

    let mut b = Builder::new("merge_addmm");
    let x = b.input("x", DType::F32, &[512, 16]);
    let (ca, cb) = (b.input("ca", DType::F32, &[8]), b.input("cb", DType::F32, &[4]));
    let (wa, wb) = (b.input("wa", DType::F32, &[16, 8]), b.input("wb", DType::F32, &[16, 4]));
    let ya = b.op(Op::Addmm, &[ca, x, wa], None);
    let yb = b.op(Op::Addmm, &[cb, x, wb], None);
    let sum = b.op(Op::Unary(UnaryOp::Tanh), &[yb], None);
    let err = rewrite_and_compare(&b.finish(&[ya, sum]), "merge-addmm");
    println!("merge_addmm: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");

    let mut b = Builder::new("slice_mm");
    let (x, w) = (b.input("x", DType::F32, &[64, 32]), b.input("w", DType::F32, &[32, 48]));
    let y = b.op(Op::Mm, &[x, w], None);
    let part = b.op(Op::Slice { dim: 1, start: 16, end: 32, step: 1 }, &[y], None);
    let err = rewrite_and_compare(&b.finish(&[part]), "slice-mm");
    println!("slice_mm: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");
}

/// A convolution of `x` by `w` (and `b`): 3x3, padding 1, or 1x1 without padding.
fn conv(b: &mut Builder, x: ValueRef, w: ValueRef, bias: Option<ValueRef>, k: i64) -> ValueRef {
    let op = Op::Convolution {
        stride: [1, 1].into(),
        padding: [k / 2, k / 2].into(),
        dilation: [1, 1].into(),
        transposed: false,
        output_padding: [0, 0].into(),
        groups: 1,
        has_bias: bias.is_some(),
        channels_last: false,
    };
    let operands: Vec<ValueRef> = [x, w].into_iter().chain(bias).collect();
    b.op(op, &operands, None)
}

/// Convolutions sharing their input and parameters merge where the input's traffic dominates
/// (two 1x1 convolutions of a 16-channel image into 8 channels each; with biases, 3x3), and
/// a slice of a convolution's channels becomes the convolution by the sliced filters.
#[test]
fn merged_and_sliced_convolutions_keep_their_values() {
    let mut b = Builder::new("merge_conv");
    let x = b.input("x", DType::F32, &[1, 16, 32, 32]);
    let (w1, w2) = (b.input("w1", DType::F32, &[8, 16, 1, 1]), b.input("w2", DType::F32, &[4, 16, 1, 1]));
    let (y1, y2) = (conv(&mut b, x, w1, None, 1), conv(&mut b, x, w2, None, 1));
    let err = rewrite_and_compare(&b.finish(&[y1, y2]), "merge-conv");
    println!("merge_conv: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");

    let mut b = Builder::new("merge_convb");
    let x = b.input("x", DType::F32, &[1, 4, 32, 32]);
    let (w1, w2) = (b.input("w1", DType::F32, &[2, 4, 3, 3]), b.input("w2", DType::F32, &[2, 4, 3, 3]));
    let (b1, b2) = (b.input("b1", DType::F32, &[2]), b.input("b2", DType::F32, &[2]));
    let (y1, y2) = (conv(&mut b, x, w1, Some(b1), 3), conv(&mut b, x, w2, Some(b2), 3));
    let err = rewrite_and_compare(&b.finish(&[y1, y2]), "merge-convb");
    println!("merge_convb: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");

    let mut b = Builder::new("slice_conv");
    let (x, w) = (b.input("x", DType::F32, &[1, 8, 16, 16]), b.input("w", DType::F32, &[32, 8, 3, 3]));
    let y = conv(&mut b, x, w, None, 3);
    let part = b.op(Op::Slice { dim: 1, start: 8, end: 16, step: 1 }, &[y], None);
    let err = rewrite_and_compare(&b.finish(&[part]), "slice-conv");
    println!("slice_conv: max abs error {err:e}");
    assert!(err < 1e-5, "{err}");
}

/// A broken comparison must fail: a graph and a different one are told apart.
#[test]
fn the_value_check_can_fail() {
    let mut b = Builder::new("a");
    let x = b.input("x", DType::F32, &[4, 4]);
    let t = b.op(Op::Permute { dims: [1, 0].into() }, &[x], None);
    let g = b.finish(&[t]);
    let session = cpu_at(0);
    let args = inputs(&g);
    let mut b = Builder::new("b");
    let x = b.input("x", DType::F32, &[4, 4]);
    let not_t = b.op(Op::Unary(UnaryOp::Neg), &[x], None);
    let h = b.finish(&[not_t]);
    let run = |graph: &Graph| session.compile(graph, &fxhlo::Frozen::new(), None).unwrap().run(&session, &args).unwrap()[0].to_f32_vec();
    assert!(max_abs_diff("transpose vs neg", &run(&g), &run(&h)) > 1e-3);
}

/// Every fixture: no rules, no change (the conversion round-trips); every rule: the time and
/// report are printed, and a changed graph still matches PyTorch at `-O0`.
#[test]
fn fixtures_round_trip_and_keep_their_references() {
    let mut entries: Vec<_> = fs::read_dir(fxhlo_testsuite::fixtures_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    let session = cpu_at(0);
    let mut count = 0;
    for dir in entries.into_iter().filter(|p| p.extension().is_some_and(|x| x == "fxt")) {
        let bundle = Bundle::open(&dir).unwrap_or_else(|e| panic!("{e}"));
        let before = fxhlo_ir::print(&bundle.graph);
        let mut g = bundle.graph.clone();
        let report = optimize(&mut g, &[], &Limits::default(), &cost::CPU).unwrap();
        assert!(!report.changed && fxhlo_ir::print(&g) == before, "{}: changed without rules: {report:?}", dir.display());
        let mut g = bundle.graph.clone();
        let start = Instant::now();
        let report = optimize(&mut g, &rules::all(), &Limits::default(), &cost::CPU).unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let fired: Vec<String> = report.applied.iter().filter(|(_, n)| **n > 0).map(|(r, n)| format!("{r}:{n}")).collect();
        println!(
            "eqsat {:<24} nodes {:>4} | {:>7.2} ms | {} | {} e-nodes, {} classes, {} iters | fired [{}] | cost {:.3e} -> {:?} | changed {} ({})",
            bundle.graph.name, bundle.graph.node_count(), ms, report.stop_reason, report.enodes, report.eclasses, report.iterations,
            fired.join(" "), report.cost_before, report.cost_after, report.changed, report.kept_because.as_deref().unwrap_or("-")
        );
        fxhlo_ir::verify(&g).unwrap();
        if report.changed {
            let compiled = session.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
            let outputs = compiled.run_bundle(&session, &bundle).unwrap();
            let check = fxhlo::check(&outputs, &bundle).unwrap();
            assert!(check.passed(), "{} after eqsat: {check}", dir.display());
        }
        count += 1;
    }
    assert!(count >= 6, "only {count} fixtures");
}

/// A deterministic generator of small random choices (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A random valid f32 graph over the ops the e-graph's language covers (`mm`, `bmm`,
/// `permute`, `view`, `add`, `mul`) and an opaque one (`exp`), built to give the rules work:
/// product chains of mixed widths (reassociation pays), permutes and views of earlier values
/// (they compose), and values used twice (shared subgraphs).
fn random_graph(seed: u64) -> Graph {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut b = Builder::new(&format!("random_{seed}"));
    let widths = [1i64, 3, 8, 24, 64];
    let mut inputs = 0;
    let mut fresh = |b: &mut Builder, shape: &[i64]| {
        inputs += 1;
        b.input(&format!("in{inputs}"), DType::F32, shape)
    };
    let (m, k) = (rng.pick(&widths), rng.pick(&widths));
    let mut pool: Vec<(ValueRef, Vec<i64>)> = vec![(fresh(&mut b, &[m, k]), vec![m, k])];
    if rng.below(2) == 0 {
        let (bt, m, k) = (2, rng.pick(&widths), rng.pick(&widths));
        pool.push((fresh(&mut b, &[bt, m, k]), vec![bt, m, k]));
    }
    for _ in 0..(6 + rng.below(8)) {
        // Mostly the newest value, so that chains form.
        let (v, shape) = if rng.below(3) > 0 { pool.last().unwrap().clone() } else { pool[rng.below(pool.len())].clone() };
        let (op, operands, shape): (Op, Vec<ValueRef>, Vec<i64>) = match (rng.below(7), shape.len()) {
            (0 | 1 | 2, 2) => {
                let n = rng.pick(&widths);
                let w = fresh(&mut b, &[shape[1], n]);
                (Op::Mm, vec![v, w], vec![shape[0], n])
            }
            (0 | 1 | 2, 3) => {
                let n = rng.pick(&widths);
                let w = fresh(&mut b, &[shape[0], shape[2], n]);
                (Op::Bmm, vec![v, w], vec![shape[0], shape[1], n])
            }
            (3, r) => {
                let mut dims: Vec<i64> = (0..r as i64).collect();
                for i in (1..dims.len()).rev() {
                    dims.swap(i, rng.below(i + 1));
                }
                let shape = dims.iter().map(|&d| shape[d as usize]).collect();
                (Op::Permute { dims: dims.into() }, vec![v], shape)
            }
            (4, _) => {
                // Another factorization of the same elements, back to rank 2 or 3.
                // Rank 2: all elements; rank 3: the last two dims (the batch stays).
                let n: i64 = shape.iter().skip(shape.len() - 2).product();
                let d = *[1i64, 2, 3, 4, 8].iter().filter(|&&d| n % d == 0).last().unwrap();
                let shape = if shape.len() == 2 { vec![d, n / d] } else { vec![shape[0], n / d, d] };
                (Op::View { shape: shape.clone().into() }, vec![v], shape)
            }
            (5, _) => (Op::Binary(if rng.below(2) == 0 { BinaryOp::Add } else { BinaryOp::Mul }), vec![v, v], shape),
            _ => (Op::Unary(UnaryOp::Exp), vec![v], shape),
        };
        let out = b.op(op, &operands, None);
        pool.push((out, shape));
    }
    let mut outputs = vec![pool.last().unwrap().0];
    let other = pool[rng.below(pool.len() - 1)].0;
    if rng.below(2) == 0 && other != outputs[0] {
        outputs.push(other);
    }
    b.finish(&outputs)
}

/// The property the issue asks for: random valid graphs, optimized with every rule, compute
/// what they computed (CPU plugin, both at `-O0`), relative to the outputs' size.
#[test]
fn random_graphs_keep_their_values() {
    let session = cpu_at(0);
    let (mut changed, mut worst) = (0, 0.0f32);
    for seed in 1..=40u64 {
        let g = random_graph(seed);
        let mut opt = g.clone();
        let report = optimize(&mut opt, &rules::all(), &Limits::default(), &cost::CPU).unwrap_or_else(|e| panic!("{}: {e}\n{}", g.name, fxhlo_ir::print(&g)));
        fxhlo_ir::verify(&opt).unwrap_or_else(|e| panic!("{}: {e}", g.name));
        if !report.changed {
            continue;
        }
        changed += 1;
        let args = inputs(&g);
        let run = |graph: &Graph| {
            let compiled = session.compile(graph, &fxhlo::Frozen::new(), None).unwrap_or_else(|e| panic!("{}: {e}", graph.name));
            compiled.run(&session, &args).unwrap()
        };
        let (want, got) = (run(&g), run(&opt));
        assert_eq!(want.len(), got.len(), "{}", g.name);
        for (w, o) in want.iter().zip(&got) {
            let (w, o) = (w.to_f32_vec(), o.to_f32_vec());
            let scale = w.iter().fold(1.0f32, |m, x| m.max(x.abs()));
            let err = max_abs_diff(&g.name, &o, &w) / scale;
            assert!(err < 1e-4, "{}: relative error {err:.2e} after {:?}\n{}", g.name, report.applied, fxhlo_ir::print(&g));
            worst = worst.max(err);
        }
    }
    println!("random graphs: {changed} of 40 rewritten, worst relative error {worst:.2e}");
    // Not vacuous: the generator makes graphs the rules improve.
    assert!(changed >= 10, "only {changed} of 40 random graphs were rewritten");
}

//! Graphs built in IR, lowered by codegen and run on the real CPU plugin; expected values are
//! computed by hand in each test.

use fxhlo::runtime::HostTensor;
use fxhlo_ir::{BinaryOp, DType, Op, Scalar, TensorType, UnaryOp};

use crate::support::{max_abs_diff, run, Builder};

/// `relu(x @ w + b) * 2 + c`: mm, expand (broadcast), add, relu, mul, full (constant), and a
/// numpy-style broadcast of a rank-1 operand.
#[test]
fn mlp_like_graph_matches_hand_computation() {
    let mut b = Builder::new("mlp_like");
    let x = b.input("x", DType::F32, &[2, 3]);
    let w = b.input("w", DType::F32, &[3, 2]);
    let bias = b.input("bias", DType::F32, &[2]);
    let c = b.input("c", DType::F32, &[2]);
    let mm = b.op(Op::Mm, &[x, w], None);
    let be = b.op(Op::Expand { sizes: vec![2, -1].into() }, &[bias], None);
    let add = b.op(Op::Binary(BinaryOp::Add), &[mm, be], None);
    let relu = b.op(Op::Unary(UnaryOp::Relu), &[add], None);
    let two = b.op(Op::Full { value: Scalar::float(2.0) }, &[], Some(TensorType::new(DType::F32, vec![])));
    let mul = b.op(Op::Binary(BinaryOp::Mul), &[relu, two], None);
    let out = b.op(Op::Binary(BinaryOp::Add), &[mul, c], None);
    let g = b.finish(&[out]);

    let xv = [1.0f32, -2.0, 0.5, 3.0, 0.25, -1.0];
    let wv = [0.5f32, -1.0, 2.0, 0.25, -0.75, 1.5];
    let bv = [0.1f32, -0.2];
    let cv = [10.0f32, 20.0];
    let mut want = vec![0.0f32; 4];
    for i in 0..2 {
        for j in 0..2 {
            let mut acc = bv[j];
            for k in 0..3 {
                acc += xv[i * 3 + k] * wv[k * 2 + j];
            }
            want[i * 2 + j] = acc.max(0.0) * 2.0 + cv[j];
        }
    }
    let args = [
        HostTensor::from_f32([2, 3], &xv).unwrap(),
        HostTensor::from_f32([3, 2], &wv).unwrap(),
        HostTensor::from_f32([2], &bv).unwrap(),
        HostTensor::from_f32([2], &cv).unwrap(),
    ];
    let out = run(&g, &args);
    assert_eq!(out[0].dims, vec![2, 2]);
    assert!(max_abs_diff("mlp_like", &out[0].to_f32_vec(), &want) <= 1e-5);
}

/// Integer and low-precision float arithmetic lower with the right element types.
#[test]
fn integer_and_half_precision_elementwise() {
    let mut b = Builder::new("ints");
    let x = b.input("x", DType::I64, &[3]);
    let y = b.input("y", DType::I64, &[2, 3]);
    let sum = b.op(Op::Binary(BinaryOp::Add), &[x, y], None);
    let prod = b.op(Op::Binary(BinaryOp::Mul), &[sum, y], None);
    let g = b.finish(&[prod]);
    let xv = [1i64, -2, 3_000_000_000];
    let yv = [4i64, 5, 6, -7, 8, 9];
    let want: Vec<i64> = (0..6).map(|i| (xv[i % 3] + yv[i]) * yv[i]).collect();
    let out = run(&g, &[HostTensor::from_i64([3], &xv).unwrap(), HostTensor::from_i64([2, 3], &yv).unwrap()]);
    assert_eq!(out[0].to_vec::<i64>().unwrap(), want);

    let mut b = Builder::new("bf16");
    let x = b.input("x", DType::BF16, &[4]);
    let r = b.op(Op::Unary(UnaryOp::Relu), &[x], None);
    let g = b.finish(&[r]);
    let xv: Vec<half::bf16> = [-1.5f32, 0.0, 2.25, -0.0].iter().map(|&v| half::bf16::from_f32(v)).collect();
    let out = run(&g, &[HostTensor::from_bf16([4], &xv).unwrap()]);
    assert_eq!(out[0].to_f32_vec(), vec![0.0, 0.0, 2.25, 0.0]);
}

/// Non-finite constants need MLIR's hex float form; relu must propagate NaN like torch.relu.
#[test]
fn non_finite_constants_and_nan_propagation() {
    let mut b = Builder::new("nonfinite");
    let x = b.input("x", DType::F32, &[3]);
    let ninf = b.op(Op::Full { value: Scalar::float(f64::NEG_INFINITY) }, &[], Some(TensorType::new(DType::F32, vec![3])));
    let sum = b.op(Op::Binary(BinaryOp::Add), &[x, ninf], None);
    let r = b.op(Op::Unary(UnaryOp::Relu), &[x], None);
    let g = b.finish(&[sum, r]);
    let out = run(&g, &[HostTensor::from_f32([3], &[1.0, f32::NAN, -2.0]).unwrap()]);
    let s = out[0].to_f32_vec();
    assert!(s[0] == f32::NEG_INFINITY && s[1].is_nan() && s[2] == f32::NEG_INFINITY, "{s:?}");
    let r = out[1].to_f32_vec();
    assert!(r[0] == 1.0 && r[1].is_nan() && r[2] == 0.0, "{r:?}");
}

/// A graph with unknown ops fails once, listing every one with its node name and why.
#[test]
fn unsupported_ops_are_reported_all_at_once() {
    let mut b = Builder::new("unknowns");
    let x = b.input("x", DType::F32, &[3]);
    let t = TensorType::new(DType::F32, vec![3]);
    let s = b.op(Op::Unknown { target: "aten.sin.default".into(), reason: None }, &[x], Some(t.clone()));
    let c = b.op(Op::Unknown { target: "aten.cos.default".into(), reason: None }, &[s], Some(t));
    let g = b.finish(&[c]);
    let err = fxhlo::codegen::lower(&g).unwrap_err().to_string();
    println!("{err}");
    assert!(err.contains("2 op(s) fxhlo cannot lower"), "{err}");
    // `<target> at node `<node>``, then the reason: the form users and the Python tests read.
    assert!(err.contains("aten.sin.default at node `n1`: fxhlo has no lowering for aten.sin.default"), "{err}");
    assert!(err.contains("aten.cos.default at node `n2`: fxhlo has no lowering for aten.cos.default"), "{err}");
}

/// Each unsupported op says why: the importer's reason (kept on the node, here from IR text)
/// where the target is known but its arguments are not, else that fxhlo has no lowering for
/// the target. The report's list and the error's text agree.
#[test]
fn unsupported_ops_carry_their_reason() {
    let g = fxhlo_ir::parse(
        r#"graph @g {
  %x = input {kind = user_input} : f32[3]
  %a = aten.frobnicate.default %x : f32[3]  loc("model.py":3)
  %b = aten.gelu.default %a {reason = "argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`"} : f32[3]
  return %b
}
"#,
    )
    .unwrap();
    let ops = fxhlo::codegen::unsupported_ops(&g).unwrap();
    let got: Vec<(&str, &str, Option<&str>, &str)> =
        ops.iter().map(|o| (o.target.as_str(), o.node.as_str(), o.source.as_deref(), o.reason.as_str())).collect();
    assert_eq!(
        got,
        [
            ("aten.frobnicate.default", "a", Some("model.py:3"), "fxhlo has no lowering for aten.frobnicate.default"),
            ("aten.gelu.default", "b", None, "argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`"),
        ]
    );
    let err = fxhlo::codegen::lower(&g).unwrap_err().to_string();
    assert_eq!(
        err,
        "graph `g` has 2 op(s) fxhlo cannot lower:\n  \
         - aten.frobnicate.default at node `a` (model.py:3): fxhlo has no lowering for aten.frobnicate.default\n  \
         - aten.gelu.default at node `b`: argument `approximate` is `erf`; fxhlo lowers only `none` and `tanh`"
    );
    // A known op refused for how its results are used says so too.
    let bag = fxhlo_ir::parse(
        r#"graph @bag {
  %w = input {kind = user_input} : f32[5,4]
  %i = input {kind = user_input} : i64[6]
  %o = input {kind = user_input} : i64[2]
  %e = aten.embedding_bag %w, %i, %o {mode = 0, include_last_offset = false, padding_idx = none, has_weights = false} : (f32[2,4], i64[6], i64[2], i64[2])
  return %e#0, %e#1
}
"#,
    )
    .unwrap();
    let ops = fxhlo::codegen::unsupported_ops(&bag).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!((ops[0].target.as_str(), ops[0].node.as_str()), ("aten._embedding_bag", "e"));
    assert!(ops[0].reason.starts_with("its bookkeeping results (offset2bag, bag_size, max_indices) are used"), "{}", ops[0].reason);
}

/// `while i < n: acc = acc + acc` then `sin(acc)` if `sum(acc) > 0.5` else `acc`: regions
/// lowered to `stablehlo.while` (with a loop-invariant operand) and `stablehlo.case`.
#[test]
fn while_loop_and_cond_run_their_regions() {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests/ir/control_flow.gir")).unwrap();
    let g = fxhlo_ir::parse(&text).unwrap();
    for (xv, n) in [([0.1f32, 0.05, -0.02], 3i64), ([0.1, -0.3, 0.1], 2), ([1.0, 2.0, 3.0], 0)] {
        let scale = 2f32.powi(n as i32);
        let acc: Vec<f32> = xv.iter().map(|v| v * scale).collect();
        let want: Vec<f32> = if acc.iter().sum::<f32>() > 0.5 { acc.iter().map(|v| v.sin()).collect() } else { acc };
        let out = run(&g, &[HostTensor::from_f32([3], &xv).unwrap(), HostTensor::from_i64(Vec::<i64>::new(), &[n]).unwrap()]);
        assert!(max_abs_diff("while + cond", &out[0].to_f32_vec(), &want) <= 1e-6);
        assert_eq!(out[1].to_vec::<i64>().unwrap(), vec![n], "iterations");
    }
}

/// `rng_bit_generator`: the bits are a function of the state, a new state gives new bits, and
/// the next state differs from the one given.
#[test]
fn random_bits_depend_only_on_the_state() {
    let text = r#"graph @bits {
  %state = input {kind = user_input} : i64[2]
  %rng = fxhlo.rng_bit_generator %state {shape = [1000], dtype = i32} : (i64[2], i32[1000])
  return %rng#0, %rng#1
}
"#;
    let g = fxhlo_ir::parse(text).unwrap();
    let draw = |key: i64, counter: i64| {
        let out = run(&g, &[HostTensor::from_i64([2], &[key, counter]).unwrap()]);
        (out[0].to_vec::<i64>().unwrap(), out[1].to_vec::<i32>().unwrap())
    };
    let (next, bits) = draw(42, 0);
    assert_eq!(draw(42, 0), (next.clone(), bits.clone()), "the same state gives the same bits");
    assert_ne!(next, vec![42, 0], "the state advances");
    let (_, other) = draw(43, 0);
    let same = bits.iter().zip(&other).filter(|(a, b)| a == b).count();
    assert!(same < 5, "another key gives other bits ({same} of 1000 equal)");
    // Uniform bits: each of the 32 bit positions set about half the time (1000 draws: within
    // 6 standard deviations, 6 * sqrt(250) = 95, of 500).
    for k in 0..32 {
        let ones = bits.iter().filter(|b| (**b >> k) & 1 == 1).count();
        assert!(ones.abs_diff(500) < 95, "bit {k} set {ones} times of 1000");
    }
}

/// Deterministic inputs in [-1, 1) for every input of `g`: a linear congruential sequence per
/// input, in its dtype (f32 or bf16).
fn deterministic_args(g: &fxhlo_ir::Graph) -> Vec<HostTensor> {
    g.inputs()
        .iter()
        .enumerate()
        .map(|(k, &id)| {
            let t = &g.node(id).results[0];
            let mut state = 12345u64 + k as u64;
            let values: Vec<f32> = (0..t.num_elements())
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect();
            match t.dtype {
                DType::BF16 => HostTensor::from_bf16(t.shape.to_vec(), &values.iter().map(|v| half::bf16::from_f32(*v)).collect::<Vec<_>>()).unwrap(),
                _ => HostTensor::from_f32(t.shape.to_vec(), &values).unwrap(),
            }
        })
        .collect()
}

/// The CPU pipeline's convolution rewrites (the default level) compute what the convolution (-O0)
/// computes, for the passes' test files: `depthwise-conv-taps` (padding, bias, stride,
/// dilation, bfloat16, a tap of the unpadded input, channels-last) and `pointwise-conv-dot`
/// (bias, a batch, bfloat16, channels-last; at -O0 codegen lowers a channels-last
/// convolution as it is).
#[test]
fn cpu_convolution_rewrites_match_the_convolution() {
    let files = [
        ("depthwise-conv-taps", "depthwise_3x3.gir"),
        ("depthwise-conv-taps", "strided_bf16.gir"),
        ("depthwise-conv-taps", "strided_padded.gir"),
        ("pointwise-conv-dot", "batch_1_bias.gir"),
        ("pointwise-conv-dot", "batch_3_bf16.gir"),
        ("depthwise-conv-taps", "channels_last.gir"),
        ("pointwise-conv-dot", "channels_last.gir"),
    ];
    let (o0, o1) = (crate::support::cpu_at(0), crate::support::cpu());
    for (pass, name) in files {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests/passes").join(pass).join(name);
        let g = fxhlo_ir::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let args = deterministic_args(&g);
        let run_at = |s: &fxhlo::Session| s.compile(&g, &fxhlo::Frozen::new(), None).unwrap().run(s, &args).unwrap()[0].to_f32_vec();
        let (conv, rewritten) = (run_at(&o0), run_at(&o1));
        let tol = if name.contains("bf16") { 2e-2 } else { 1e-5 };
        assert!(max_abs_diff(name, &rewritten, &conv) <= tol, "{pass}: {name}");
    }
}

/// Each of `unused-results`, `channels-last`, `channels-last-pooling`, `device-layout` and
/// `batch-blocks`, run alone, computes what the graph computes without it, for every one of its
/// test files (so codegen's literal lowering of each form the passes make is run too: max pools
/// without indices and channels-last, inputs declared in a layout and uploaded permuted by the
/// runtime, attention in blocks of heads).
/// The channels-last rules (`eqsat-layout`) on the `channels-last` pass's own file tests
/// (pools, reductions, batch and group norm in 16-bit and 32-bit floats, upsampling, slices
/// and concatenations, permutes of models written channels-last): the values of the graph
/// before, on the CPU plugin, and how many of them changed layout.
#[test]
fn the_channels_last_rules_keep_the_values_of_the_pass_files() {
    let none = fxhlo::Session::new(fxhlo::Options { passes: Some(vec![]), ..fxhlo::Options::default() }).unwrap();
    let rules = fxhlo::Session::new(fxhlo::Options { passes: Some(vec!["eqsat-layout".to_string()]), ..fxhlo::Options::default() }).unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests/passes/channels-last");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut rewritten = 0;
    for path in &files {
        let g = fxhlo_ir::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut h = g.clone();
        if fxhlo::passes::lookup("eqsat-layout").unwrap().run(&mut h).unwrap() {
            rewritten += 1;
        }
        let args = deterministic_args(&g);
        let run_with = |s: &fxhlo::Session| s.compile(&g, &fxhlo::Frozen::new(), None).unwrap().run(s, &args).unwrap();
        let (before, after) = (run_with(&none), run_with(&rules));
        for (k, (b, a)) in before.iter().zip(&after).enumerate() {
            let what = format!("eqsat-layout: {} output {k}", path.display());
            assert_eq!((a.element_type, &a.dims), (b.element_type, &b.dims), "{what}");
            let tol = if matches!(b.element_type, fxhlo::runtime::ElementType::BF16 | fxhlo::runtime::ElementType::F16) { 2e-2 } else { 1e-4 };
            let err = max_abs_diff(&what, &a.to_f32_vec(), &b.to_f32_vec());
            assert!(err <= tol, "{what}: {err}");
        }
    }
    // A file with one convolution and nothing after it that pools or reduces is a tie (the
    // two permutes the rewrite adds are the two transposes XLA puts around the convolution),
    // and the input is kept; the others are rewritten.
    println!("eqsat-layout rewrote {rewritten} of {} channels-last file tests", files.len());
    assert!(rewritten >= 3, "{rewritten} of {}", files.len());
}

#[test]
fn rewriting_passes_keep_the_values() {
    let none = fxhlo::Session::new(fxhlo::Options { passes: Some(vec![]), ..fxhlo::Options::default() }).unwrap();
    for pass in ["unused-results", "channels-last", "eqsat-layout", "channels-last-pooling", "device-layout", "batch-blocks", "attention-recompute"] {
        let only = fxhlo::Session::new(fxhlo::Options { passes: Some(vec![pass.to_string()]), ..fxhlo::Options::default() }).unwrap();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests/passes").join(pass);
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(!files.is_empty(), "{}", dir.display());
        for path in files {
            let g = fxhlo_ir::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let args = deterministic_args(&g);
            let run_with = |s: &fxhlo::Session| s.compile(&g, &fxhlo::Frozen::new(), None).unwrap().run(s, &args).unwrap();
            let (before, after) = (run_with(&none), run_with(&only));
            assert_eq!(before.len(), after.len());
            for (k, (b, a)) in before.iter().zip(&after).enumerate() {
                let what = format!("{pass}: {} output {k}", path.display());
                assert_eq!((a.element_type, &a.dims), (b.element_type, &b.dims), "{what}");
                // Pooling and permutes move values exactly; a convolution over a permuted
                // kernel may sum in another order.
                assert!(max_abs_diff(&what, &a.to_f32_vec(), &b.to_f32_vec()) <= 1e-5, "{what}");
            }
        }
    }
}

//! Device layouts of resident weights (the `device-layout` pass): which inputs the pipeline
//! declares permuted, that the signature the runtime uploads by comes from the graph after
//! passes, and that a compiled graph with permuted weights still computes what PyTorch did
//! (the fixtures test runs every fixture at -O1, where the pass runs).

use std::collections::BTreeMap;

use fxhlo::frontend::Bundle;
use fxhlo::{Frozen, Lowered, Options, Pipeline, TensorParallel};
use fxhlo_ir::InputKind;

fn lower(fixture: &str, options: Options) -> (Bundle, Lowered) {
    let bundle = Bundle::open(&fxhlo_testsuite::fixtures_dir().join(fixture)).unwrap();
    let lowered = Pipeline::new(options).lower(&bundle.graph, &Frozen::new(), None, "cpu").unwrap();
    (bundle, lowered)
}

/// Weight key -> the layout the signature gives it.
fn layouts_by_weight(lowered: &Lowered) -> BTreeMap<String, Vec<usize>> {
    lowered.inputs.iter().filter_map(|s| Some((s.weight.clone()?, s.layout.clone()?))).collect()
}

#[test]
fn conv_kernels_and_linear_weights_get_the_kernel_layouts() {
    let (bundle, lowered) = lower("cnn.fxt", Options::default());
    let layouts = layouts_by_weight(&lowered);
    // Conv kernels [out, in, kh, kw] -> [kh, kw, in, out]; the linear weight, read through
    // permute([1, 0]) by addmm, -> [in, out]. Biases and batch-norm statistics stay as they are.
    println!("{layouts:?}");
    let convs = layouts.values().filter(|p| **p == [2, 3, 1, 0]).count();
    let linears = layouts.values().filter(|p| **p == [1, 0]).count();
    assert!(convs >= 1 && linears >= 1 && convs + linears == layouts.len(), "{layouts:?}");
    assert!(layouts.keys().all(|k| k.ends_with("weight")), "{layouts:?}");
    // The signature gives the caller's (logical) types, the module the declared ones.
    for sig in &lowered.inputs {
        let id = bundle.graph.inputs().iter().copied().find(|&id| bundle.graph.node(id).name == sig.name).unwrap();
        assert_eq!(sig.ty, bundle.graph.node(id).results[0], "{}", sig.name);
        if let Some(perm) = &sig.layout {
            let declared = fxhlo_ir::layout::permuted(&sig.ty, perm);
            assert!(lowered.mlir.contains(&fxhlo::codegen::mlir_type_text(&declared)), "{}: {declared}", sig.name);
        }
    }
}

#[test]
fn user_inputs_are_never_permuted_and_o0_permutes_nothing() {
    let (_, lowered) = lower("cnn.fxt", Options::default());
    // The image feeds the convolution as its *input*, and is a user input anyway.
    assert!(lowered.inputs.iter().filter(|s| s.kind == InputKind::UserInput).all(|s| s.layout.is_none()));
    let (_, o0) = lowered_o0();
    assert!(o0.inputs.iter().all(|s| s.layout.is_none()), "-O0 is XLA alone: no layouts");
}

fn lowered_o0() -> (Bundle, Lowered) {
    lower("cnn.fxt", Options { opt_level: 0, ..Options::default() })
}

#[test]
fn weights_a_tensor_parallel_plan_splits_keep_their_layout() {
    let plan = TensorParallel::megatron(2);
    let (_, lowered) = lower("gpt_block.fxt", Options { tensor_parallel: Some(plan), ..Options::default() });
    let split: Vec<&str> = lowered.inputs.iter().filter(|s| s.split.is_some()).filter_map(|s| s.weight.as_deref()).collect();
    assert!(split.contains(&"qkv.weight") && split.contains(&"fc2.weight"), "{split:?}");
    assert!(lowered.inputs.iter().filter(|s| s.split.is_some()).all(|s| s.layout.is_none()));
    // Without the plan the same weights are permuted; with it, the others still are.
    let (_, single) = lower("gpt_block.fxt", Options::default());
    let single = layouts_by_weight(&single);
    assert!(single.contains_key("qkv.weight") && single.contains_key("fc2.weight"), "{single:?}");
    let kept = layouts_by_weight(&lowered);
    assert!(!kept.is_empty() && kept.keys().all(|k| !split.contains(&k.as_str())), "{kept:?}");
}

#[test]
fn frozen_inputs_are_not_permuted() {
    let bundle = Bundle::open(&fxhlo_testsuite::fixtures_dir().join("cnn.fxt")).unwrap();
    let g = &bundle.graph;
    let frozen: Frozen = fxhlo::frozen_weights(&bundle);
    assert!(!frozen.is_empty());
    let lowered = Pipeline::new(Options::default()).lower(g, &frozen, None, "cpu").unwrap();
    assert!(lowered.inputs.iter().all(|s| s.layout.is_none() && !frozen.contains_key(&s.name)));
}

#[test]
fn permuted_host_tensor_is_torch_permute_contiguous() {
    // [2, 3, 4] with values 0..24; permute(2, 0, 1) -> out[k][i][j] = in[i][j][k] = 12i + 4j + k.
    let data: Vec<f32> = (0..24).map(|v| v as f32).collect();
    let t = fxhlo::runtime::HostTensor::from_f32([2, 3, 4], &data).unwrap();
    let p = t.permuted(&[2, 0, 1]).unwrap();
    assert_eq!(p.dims, vec![4, 2, 3]);
    let mut want = Vec::new();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                want.push((12 * i + 4 * j + k) as f32);
            }
        }
    }
    assert_eq!(p.to_vec::<f32>().unwrap(), want);
    assert!(t.permuted(&[0, 0, 1]).is_err() && t.permuted(&[1, 0]).is_err());
}

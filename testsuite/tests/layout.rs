//! Device layouts of resident weights (codegen::layout): which inputs are declared permuted,
//! and that a compiled graph with permuted weights still computes what PyTorch did.

use std::collections::HashMap;

use fxhlo::frontend::Bundle;
use fxhlo_ir::{InputKind, Op};

fn layouts_by_weight(fixture: &str) -> (Bundle, HashMap<String, Vec<usize>>) {
    let bundle = Bundle::open(&fxhlo_testsuite::fixtures_dir().join(fixture)).unwrap();
    let g = &bundle.graph;
    let resident = |id| matches!(&g.node(id).op, Op::Input { kind, .. } if *kind != InputKind::UserInput);
    let layouts = fxhlo::codegen::input_layouts(g, resident)
        .into_iter()
        .map(|(id, perm)| match &g.node(id).op {
            Op::Input { weight: Some(key), .. } => (key.clone(), perm),
            _ => panic!("a layout for a non-weight input"),
        })
        .collect();
    (bundle, layouts)
}

#[test]
fn conv_kernels_and_linear_weights_get_the_kernel_layouts() {
    let (_, layouts) = layouts_by_weight("cnn.fxt");
    // Conv kernels [out, in, kh, kw] -> [kh, kw, in, out]; the linear weight, read through
    // permute([1, 0]) by addmm, -> [in, out]. Biases and batch-norm statistics stay as they are.
    let mut got: Vec<(&str, &[usize])> = layouts.iter().map(|(k, p)| (k.as_str(), p.as_slice())).collect();
    got.sort();
    println!("{got:?}");
    let convs = got.iter().filter(|(_, p)| *p == [2, 3, 1, 0]).count();
    let linears = got.iter().filter(|(_, p)| *p == [1, 0]).count();
    assert!(convs >= 1 && linears >= 1 && convs + linears == got.len(), "{got:?}");
    assert!(got.iter().all(|(k, _)| k.ends_with("weight")), "{got:?}");
}

#[test]
fn user_inputs_are_never_permuted() {
    let bundle = Bundle::open(&fxhlo_testsuite::fixtures_dir().join("cnn.fxt")).unwrap();
    let layouts = fxhlo::codegen::input_layouts(&bundle.graph, |_| true);
    let user = bundle.graph.inputs().iter().copied().find(|&id| {
        matches!(&bundle.graph.node(id).op, Op::Input { kind: InputKind::UserInput, .. })
    });
    // Eligible or not, the image feeds the convolution as its *input*, not its kernel.
    assert!(user.is_some_and(|id| !layouts.contains_key(&id)));
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

//! The bundled fixtures through the facade, compared with the PyTorch references stored beside
//! them; and a corrupted reference must fail the check.

use std::fs;


use fxhlo::frontend::Bundle;

use crate::support::cpu;

/// Every bundled model fixture compiles on the CPU plugin and matches its PyTorch reference.
#[test]
fn every_fixture_matches_pytorch() {
    let compiler = cpu();
    let mut names = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(fxhlo_testsuite::fixtures_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for dir in entries.into_iter().filter(|p| p.extension().is_some_and(|x| x == "fxt")) {
        let bundle = Bundle::open(&dir).unwrap_or_else(|e| panic!("{e}"));
        let compiled = compiler.compile(&bundle.graph).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let outputs = compiled.run_bundle(&compiler, &bundle).unwrap();
        let report = fxhlo::check(&outputs, &bundle).unwrap();
        println!("{}: {report}", bundle.graph.name);
        assert!(report.passed(), "{}: {report}", dir.display());
        names.push(bundle.graph.name.clone());
    }
    for required in ["mlp", "cnn", "resnet_block", "transformer_encoder", "gpt_block", "unet_block"] {
        assert!(names.iter().any(|n| n == required), "fixture {required} missing: {names:?}");
    }
}

#[test]
fn a_reference_that_does_not_match_fails_the_check() {
    let src = fxhlo_testsuite::fixtures_dir().join("mlp.fxt");
    let dir = std::env::temp_dir().join(format!("fxhlo-badref-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    for f in ["graph.json", "weights.safetensors"] {
        fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    // The same reference with one output element changed by +1.0.
    let original = Bundle::open(&src).unwrap();
    let reference = original.reference.as_ref().unwrap();
    let mut tensors = Vec::new();
    for name in reference.names() {
        let view = reference.get(name).unwrap();
        let mut data = view.bytes.to_vec();
        if name == "output.0" {
            let v = f32::from_le_bytes(data[..4].try_into().unwrap()) + 1.0;
            data[..4].copy_from_slice(&v.to_le_bytes());
        }
        tensors.push((name.to_string(), view.shape.to_vec(), data));
    }
    let views: Vec<_> = tensors
        .iter()
        .map(|(n, shape, data)| (n.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), data).unwrap()))
        .collect();
    fs::write(dir.join("reference.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();

    let bundle = Bundle::open(&dir).unwrap();
    let compiler = cpu();
    let outputs = compiler.compile(&bundle.graph).unwrap().run_bundle(&compiler, &bundle).unwrap();
    let report = fxhlo::check(&outputs, &bundle).unwrap();
    println!("{report}");
    assert!(!report.passed());
    let err = report.into_result().unwrap_err().to_string();
    assert!(err.contains("output 0: 1 of 8 elements differ from the PyTorch reference"), "{err}");
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_applies_atol_plus_rtol_and_nan_rules() {
    let tol = fxhlo::Tolerance { atol: 1e-5, rtol: 1e-5 };
    let c = fxhlo::compare(0, &[1.0, 2.0, f32::NAN], &[1.0, 2.00001, f32::NAN], tol);
    assert_eq!(c.mismatched, 0, "{c:?}");
    let c = fxhlo::compare(0, &[1.0, 2.1], &[1.0, 2.0], tol);
    assert_eq!(c.mismatched, 1);
    assert!((c.max_abs_err - 0.1).abs() < 1e-6 && (c.max_rel_err - 0.05).abs() < 1e-6, "{c:?}");
    assert_eq!(fxhlo::compare(0, &[f32::NAN], &[1.0], tol).mismatched, 1);
}

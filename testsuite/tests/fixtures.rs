//! The bundled fixtures through the facade, compared with the PyTorch references stored beside
//! them; and a corrupted reference must fail the check.

use std::fs;


use fxhlo::frontend::Bundle;
use fxhlo::runtime::HostTensor;

use crate::support::{cpu, cpu_at};

/// Every bundled model fixture compiles on the CPU plugin and matches its PyTorch reference, at
/// `-O0` (XLA alone) and at the default `-O1`.
#[test]
fn every_fixture_matches_pytorch() {
    let sessions = [cpu_at(0), cpu()];
    let mut names = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(fxhlo_testsuite::fixtures_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for dir in entries.into_iter().filter(|p| p.extension().is_some_and(|x| x == "fxt")) {
        let bundle = Bundle::open(&dir).unwrap_or_else(|e| panic!("{e}"));
        for session in &sessions {
            let level = session.options().opt_level;
            let compiled = session.compile(&bundle.graph, &fxhlo::Frozen::new(), None).unwrap_or_else(|e| panic!("{} -O{level}: {e}", dir.display()));
            let outputs = compiled.run_bundle(session, &bundle).unwrap();
            let report = fxhlo::check(&outputs, &bundle).unwrap();
            println!("{} -O{level}: {report}", bundle.graph.name);
            assert!(report.passed(), "{} -O{level}: {report}", dir.display());
        }
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
    let session = cpu();
    let outputs = session.compile(&bundle.graph, &fxhlo::Frozen::new(), None).unwrap().run_bundle(&session, &bundle).unwrap();
    let report = fxhlo::check(&outputs, &bundle).unwrap();
    println!("{report}");
    assert!(!report.passed());
    let err = report.into_result().unwrap_err().to_string();
    assert!(err.contains("output 0 (f32): FAIL") && err.contains("1 of 8 elements differ"), "{err}");
    fs::remove_dir_all(&dir).ok();
}

fn f32s(v: &[f32]) -> HostTensor {
    HostTensor::from_f32([v.len() as i64], v).unwrap()
}

fn f64s(v: &[f64]) -> HostTensor {
    HostTensor::from_slice([v.len() as i64], v).unwrap()
}

/// Integers compare exactly in their own type: 3298534883328 vs 3298534883329 is the same f32
/// (2^41 + 1 rounds to 2^41) and passed the old f32 comparison with max_abs_err=0.
#[test]
fn int64_off_by_one_fails_the_check() {
    let got = HostTensor::from_slice([2], &[3_298_534_883_328i64, 7]).unwrap();
    let want = HostTensor::from_slice([2], &[3_298_534_883_329i64, 7]).unwrap();
    let c = fxhlo::compare(0, &got, &want, None);
    println!("{c}");
    assert!(!c.passed && c.mismatched == 1 && c.max_abs_err == 1.0 && c.rule == fxhlo::Rule::Exact, "{c:?}");
    assert!(fxhlo::compare(0, &want, &want, None).passed);
    // The extremes of i64: their difference overflows an i64 and must not wrap to a pass.
    let lo = HostTensor::from_slice([1], &[i64::MIN]).unwrap();
    let hi = HostTensor::from_slice([1], &[i64::MAX]).unwrap();
    assert!(!fxhlo::compare(0, &lo, &hi, None).passed);
    // Values print in their own type, not as rounded floats.
    assert_eq!(fxhlo::Values::of(&want).preview(8), "[3298534883329, 7]");
}

/// f64 outputs are compared in f64: a difference below f32's resolution at 1.0 (1e-9) but far
/// above the tolerance scaled to the values is seen.
#[test]
fn f64_is_compared_in_f64() {
    let c = fxhlo::compare(0, &f64s(&[1e-7 + 1e-9]), &f64s(&[1e-7]), None);
    // |err| = 1e-9 <= 1e-5 * max(1, 1e-7) + 1e-5 * 1e-7: passes; the figure is exact in f64.
    assert!(c.passed && (c.max_abs_err - 1e-9).abs() < 1e-15, "{c:?}");
    let c = fxhlo::compare(0, &f64s(&[1.0 + 3e-5]), &f64s(&[1.0]), None);
    assert!(!c.passed, "{c:?}");
}

/// NaN matches only NaN and an infinity only the same infinity; a NaN or Inf in the reference
/// no longer turns the tolerance into NaN/Inf.
#[test]
fn nan_and_inf_match_only_themselves() {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let cases: [(&[f32], &[f32], bool); 7] = [
        (&[1.0, nan], &[1.0, nan], true),
        (&[1.0, 2.0], &[1.0, nan], false),
        (&[1.0, nan], &[1.0, 2.0], false),
        (&[inf, -inf], &[inf, -inf], true),
        (&[1e30, 0.0], &[inf, 0.0], false),
        (&[-inf], &[inf], false),
        (&[nan], &[inf], false),
    ];
    for (got, want, pass) in cases {
        let c = fxhlo::compare(0, &f32s(got), &f32s(want), None);
        println!("{got:?} vs {want:?}: {c}");
        assert_eq!(c.passed, pass, "{got:?} vs {want:?}: {c:?}");
        // The float64 rule applies the same NaN/Inf matching.
        let r: Vec<f64> = want.iter().map(|&w| f64::from(w)).collect();
        assert_eq!(fxhlo::compare(0, &f32s(got), &f32s(want), Some(&f64s(&r))).passed, pass, "{got:?} vs {want:?} (float64)");
    }
}

/// The scale-aware rule: atol scales with the largest magnitude of the reference.
#[test]
fn scale_aware_tolerance_grows_with_the_outputs_scale() {
    // Scale 50: atol 1e-5 * 50 = 5e-4, so 1.4e-4 (ResNet-50's error at that scale) passes.
    let c = fxhlo::compare(0, &f32s(&[50.0, 0.01 + 1.4e-4]), &f32s(&[50.0, 0.01]), None);
    println!("{c}");
    assert!(c.passed && matches!(c.rule, fxhlo::Rule::ScaleAware { scale, .. } if scale == 50.0), "{c:?}");
    // Scale 1: the same error fails (1.4e-4 > 1e-5 + 1e-5 * 0.01).
    let c = fxhlo::compare(0, &f32s(&[1.0, 0.01 + 1.4e-4]), &f32s(&[1.0, 0.01]), None);
    assert!(!c.passed && c.mismatched == 1, "{c:?}");
}

/// The float64 rule: fxhlo may be at most 2x as far from the float64 run as eager f32 is, plus
/// a 1e-5 floor.
#[test]
fn float64_rule_compares_errors_against_the_float64_run() {
    let reference = [10.0f64, 20.0, 30.0, 40.0];
    // Eager f32 is 1e-4 off everywhere: rmse 1e-4.
    let eager: Vec<f32> = reference.iter().map(|&r| (r + 1e-4) as f32).collect();
    // fxhlo 1.5e-4 off (<= 2 * 1e-4 + 1e-5): pass; 3e-4 off: fail.
    let close: Vec<f32> = reference.iter().map(|&r| (r - 1.5e-4) as f32).collect();
    let far: Vec<f32> = reference.iter().map(|&r| (r + 3e-4) as f32).collect();
    let c = fxhlo::compare(0, &f32s(&close), &f32s(&eager), Some(&f64s(&reference)));
    println!("{c}");
    assert!(c.passed && c.rule.name() == "float64", "{c:?}");
    let c = fxhlo::compare(0, &f32s(&far), &f32s(&eager), Some(&f64s(&reference)));
    println!("{c}");
    assert!(!c.passed, "{c:?}");
}

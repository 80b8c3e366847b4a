//! Frozen weights through the facade: the `freeze` pass turns bound inputs into constants,
//! codegen builds them from the raw bytes (never as text), `hoist-large-constants` gives the
//! large ones back to XLA as bound parameters at -O1, and every module reaches PJRT as MLIR
//! bytecode. Checked against products computed in the test.

use fxhlo::runtime::HostTensor;
use fxhlo::passes::Pass;
use fxhlo::{Frozen, Options, Pipeline};
use fxhlo_ir::{DType, InputKind, Op, TensorData, TensorType, ValueRef};

use crate::support::{cpu_at, Builder};

/// `n` floats from a fixed linear congruential sequence in [-1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// y = x @ w + where(m, 1, 0) summed per row, with w `[k, n]` and mask m `[n]` frozen.
fn graph(k: i64, n: i64) -> fxhlo_ir::Graph {
    let mut b = Builder::new("frozen_mm");
    let x = b.input("x", DType::F32, &[2, k]);
    let w = ValueRef::first(b.g.add_input("w", InputKind::Parameter, Some("w".into()), TensorType::new(DType::F32, vec![k, n]), None));
    let m = ValueRef::first(b.g.add_input("m", InputKind::Buffer, Some("m".into()), TensorType::new(DType::Bool, vec![n]), None));
    let y = b.op(Op::Mm, &[x, w], None);
    let mf = b.op(Op::Convert { dtype: DType::F32 }, &[m], None);
    let z = b.op(Op::Binary(fxhlo_ir::BinaryOp::Add), &[y, mf], None);
    b.finish(&[z])
}

/// At -O0 (XLA alone) every frozen weight is a constant (the large one elided from the text
/// that is for reading; PJRT gets bytecode either way). At -O1 `hoist-large-constants` makes the large one a parameter bound to its
/// bytes, which the session uploads once: the caller still passes only `x`.
#[test]
fn frozen_weights_become_constants_and_large_ones_bound_parameters() {
    // 8x8 (64 elements) and 64x64 (4096 > ELIDE_ELEMENTS and LARGE_CONSTANT_ELEMENTS).
    for opt_level in [0u8, 1] {
        for (k, n) in [(8usize, 8usize), (64, 64)] {
            let g = graph(k as i64, n as i64);
            let (xs, ws) = (values(2 * k, 1), values(k * n, 2));
            let mask: Vec<u8> = (0..n).map(|j| (j % 3 == 0) as u8).collect();
            let mut frozen = Frozen::new();
            frozen.insert("w".into(), TensorData::new(bytes(&ws)));
            frozen.insert("m".into(), TensorData::new(mask.clone()));
            let options = Options { opt_level, ..Options::default() };
            let case = format!("-O{opt_level} {k}x{n}");

            let lowered = Pipeline::new(options.clone()).lower(&g, &frozen, None, "cpu").unwrap();
            let large = k * n > fxhlo::codegen::ELIDE_ELEMENTS;
            let hoisted = large && opt_level > 0;
            let names: Vec<(&str, bool)> = lowered.inputs.iter().map(|i| (i.name.as_str(), i.value.is_some())).collect();
            let want: &[(&str, bool)] = if hoisted { &[("x", false), ("w", true)] } else { &[("x", false)] };
            assert_eq!(names, want, "{case}: frozen inputs leave the signature; large ones come back bound");
            assert!(lowered.bytecode.is_some(), "{case}: PJRT gets bytecode");
            assert_eq!(lowered.mlir.contains("__elided__"), large && !hoisted, "{case}: the text elides a large constant");

            let session = cpu_at(opt_level);
            let compiled = session.compile(&g, &frozen, None).unwrap();
            let callers: Vec<&str> = compiled.inputs.iter().map(|i| i.name.as_str()).collect();
            assert_eq!(callers, ["x"], "{case}: the caller passes only x");
            assert_eq!(compiled.bound.len(), hoisted as usize, "{case}");
            let out = compiled.run(&session, &[HostTensor::from_f32([2, k as i64], &xs).unwrap()]).unwrap();
            let got = out[0].to_vec::<f32>().unwrap();
            let mut worst = 0f32;
            for i in 0..2 {
                for j in 0..n {
                    let want: f32 = (0..k).map(|p| xs[i * k + p] * ws[p * n + j]).sum::<f32>() + mask[j] as f32;
                    worst = worst.max((got[i * n + j] - want).abs());
                }
            }
            println!("{case}: max |fxhlo - reference| = {worst:e}");
            assert!(worst < 1e-4, "{case}: off by {worst}");
        }
    }
}

#[test]
fn the_freeze_pass_prints_constants_by_digest_and_refuses_missing_bytes() {
    let mut g = graph(2, 2);
    let w = g.inputs()[1];
    let data = TensorData::new(bytes(&[1.0, 2.0, 3.0, 4.0]));
    g.bind_input(w, data.clone());
    let text = fxhlo_ir::print(&g);
    assert!(text.contains(&format!("value = \"{}\"", data.digest_hex())), "{text}");
    // The bound value survives a print/parse round trip by digest (no bytes).
    let back = fxhlo_ir::parse(&text).unwrap();
    assert_eq!(fxhlo_ir::print(&back), text);
    assert!(fxhlo::passes::Freeze.run(&mut g).unwrap());
    let text = fxhlo_ir::print(&g);
    assert!(text.contains(&format!("%w = constant {{data = \"{}\"}} : f32[2,2]", data.digest_hex())), "{text}");
    assert_eq!(g.inputs().len(), 2, "x and m stay inputs");
    // Parsed from text, the constant has no bytes: codegen says so by name.
    let parsed = fxhlo_ir::parse(&text).unwrap();
    let err = fxhlo::codegen::lower(&parsed).unwrap_err().to_string();
    assert!(err.contains("constant `w` has no data"), "{err}");
    // A value of the wrong size is refused, naming the input.
    let mut frozen = Frozen::new();
    frozen.insert("w".into(), TensorData::new(vec![0u8; 3]));
    let err = Pipeline::new(Options::default()).lower(&graph(2, 2), &frozen, None, "cpu").unwrap_err().to_string();
    assert!(err.contains("frozen input `w`") && err.contains("3 bytes"), "{err}");
}

/// Options built in Rust (not through `from_json`) are checked too: a misspelt pass is an
/// error listing the valid names, not silently dropped.
#[test]
fn a_pipeline_refuses_an_unknown_pass_name() {
    let options = Options { passes: Some(vec!["fold-everything".into()]), ..Options::default() };
    let err = Pipeline::new(options).lower(&graph(2, 2), &Frozen::new(), None, "cpu").unwrap_err().to_string();
    assert!(err.contains("unknown pass `fold-everything`") && err.contains("freeze"), "{err}");
}

/// A frozen convolution weight over the limit comes back at -O1 as a bound parameter that
/// `device-layout` lays out for the CPU kernels (as it does resident weights: left in PyTorch's
/// layout it cost a transpose per call, three times the latency of ResNet-18), and the session
/// uploads it permuted. Checked against a direct convolution computed here.
#[test]
fn a_hoisted_convolution_weight_gets_the_device_layout_and_still_computes_the_convolution() {
    let (c, o, h) = (8usize, 16usize, 6usize);
    let mut b = Builder::new("frozen_conv");
    let x = b.input("x", DType::F32, &[1, c as i64, h as i64, h as i64]);
    let w = ValueRef::first(b.g.add_input("w", InputKind::Parameter, Some("w".into()), TensorType::new(DType::F32, vec![o as i64, c as i64, 3, 3]), None));
    let conv = Op::Convolution {
        stride: vec![1, 1].into(),
        padding: vec![1, 1].into(),
        dilation: vec![1, 1].into(),
        transposed: false,
        output_padding: vec![0, 0].into(),
        groups: 1,
        has_bias: false,
        channels_last: false,
    };
    let y = b.op(conv, &[x, w], None);
    let g = b.finish(&[y]);
    let (xs, ws) = (values(c * h * h, 3), values(o * c * 9, 4));
    let mut frozen = Frozen::new();
    frozen.insert("w".into(), TensorData::new(bytes(&ws)));

    let lowered = Pipeline::new(Options::default()).lower(&g, &frozen, None, "cpu").unwrap();
    let w_sig = lowered.inputs.iter().find(|s| s.name == "w").expect("w is a bound parameter");
    assert!(w_sig.value.is_some() && w_sig.layout.is_some(), "bound and laid out: {w_sig:?}");

    let session = cpu_at(1);
    let compiled = session.compile(&g, &frozen, None).unwrap();
    let out = compiled.run(&session, &[HostTensor::from_f32([1, c as i64, h as i64, h as i64], &xs).unwrap()]).unwrap();
    let got = out[0].to_vec::<f32>().unwrap();
    let mut worst = 0f32;
    for oc in 0..o {
        for i in 0..h {
            for j in 0..h {
                let mut want = 0f32;
                for ic in 0..c {
                    for di in 0..3 {
                        for dj in 0..3 {
                            let (yi, xj) = (i as i64 + di as i64 - 1, j as i64 + dj as i64 - 1);
                            if (0..h as i64).contains(&yi) && (0..h as i64).contains(&xj) {
                                want += xs[(ic * h + yi as usize) * h + xj as usize] * ws[((oc * c + ic) * 3 + di) * 3 + dj];
                            }
                        }
                    }
                }
                worst = worst.max((got[(oc * h + i) * h + j] - want).abs());
            }
        }
    }
    println!("hoisted conv weight: max |fxhlo - reference| = {worst:e}");
    assert!(worst < 1e-4, "off by {worst}");
}

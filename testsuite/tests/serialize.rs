//! Executable serialization round trip on the CPU plugin (what the persistent cache needs).

use fxhlo::runtime::HostTensor;
use fxhlo_ir::{DType, Op, UnaryOp};

use std::sync::Arc;

use fxhlo::runtime::EnvConfig;
use fxhlo::{CacheConfig, CacheMode, CompileCache, Options, Session};

use crate::support::Builder;

#[test]
fn serialized_executable_runs_with_the_same_result() {
    let mut b = Builder::new("ser");
    let x = b.input("x", DType::F32, &[2, 2]);
    let y = b.input("y", DType::F32, &[2, 2]);
    let mm = b.op(Op::Mm, &[x, y], None);
    let r = b.op(Op::Unary(UnaryOp::Relu), &[mm], None);
    let g = b.finish(&[r]);
    // A cache of its own, memory only: an executable the disk cache served (an earlier run of
    // this build) is itself a deserialized one, and XLA's CPU plugin cannot serialize that
    // again with its kernels.
    let private = CacheConfig { mode: CacheMode::Off, error_on_compile: false, ..CacheConfig::from_env() };
    let session = Session::with_cache(Options::default(), &EnvConfig::from_env(), Arc::new(CompileCache::new(private))).unwrap();
    let compiled = session.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    assert!(compiled.cached.is_none(), "compiled now, not loaded");
    let args = [
        HostTensor::from_f32([2, 2], &[1.0, -2.0, 3.0, 4.0]).unwrap(),
        HostTensor::from_f32([2, 2], &[0.5, 1.0, 1.5, -1.0]).unwrap(),
    ];
    let first = compiled.run(&session, &args).unwrap();
    // Hand computation: [[1*0.5-2*1.5, 1*1-2*-1], [3*0.5+4*1.5, 3*1+4*-1]] = [[-2.5, 3], [7.5, -1]].
    assert_eq!(first[0].to_f32_vec(), vec![0.0, 3.0, 7.5, 0.0]);

    let bytes = compiled.executable.serialize().unwrap();
    assert!(!bytes.is_empty());
    println!("serialized executable: {} bytes", bytes.len());
    let loaded = session.client().load_serialized(&bytes).unwrap();
    let bufs: Vec<_> = args.iter().map(|a| session.client().upload(a).unwrap()).collect();
    let out = loaded.run(&bufs.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(out[0].to_host().unwrap().to_f32_vec(), first[0].to_f32_vec());

    let err = session.client().load_serialized(b"not an executable").err().map(|e| e.to_string());
    println!("{err:?}");
    assert!(err.is_some(), "garbage bytes must not load");
}

#[test]
fn a_module_lowered_on_one_session_loads_on_another_from_its_bytecode() {
    // x[2,64] @ w[64,64], w frozen at -O0: a constant of 4096 elements, which the module's
    // readable text elides. A second session with a cache of its own (as another thread of the
    // Python bridge, when the plugin could not serialize the executable) must compile the
    // module's bytecode, never that text.
    let mut b = Builder::new("frozen_mm");
    let x = b.input("x", DType::F32, &[2, 64]);
    let w = b.input("w", DType::F32, &[64, 64]);
    let mm = b.op(Op::Mm, &[x, w], None);
    let g = b.finish(&[mm]);
    let weights: Vec<f32> = (0..64 * 64).map(|i| ((i % 7) as f32 - 3.0) * 0.25).collect();
    let bytes: Vec<u8> = weights.iter().flat_map(|v| v.to_le_bytes()).collect();
    let frozen: fxhlo::Frozen = [("w".to_string(), fxhlo_ir::TensorData::new(bytes))].into_iter().collect();
    let options = Options { opt_level: 0, ..Options::default() };
    let private = || {
        let config = CacheConfig { mode: CacheMode::Off, error_on_compile: false, ..CacheConfig::from_env() };
        Arc::new(CompileCache::new(config))
    };
    let first = Session::with_cache(options.clone(), &EnvConfig::from_env(), private()).unwrap();
    let compiled = first.compile(&g, &frozen, None).unwrap();
    assert!(compiled.lowered.mlir.contains("__elided__"), "the readable text elides the weight");
    assert_eq!(compiled.inputs.len(), 1, "only x is passed");
    let xs: Vec<f32> = (0..2 * 64).map(|i| (i as f32) * 0.01).collect();
    let args = [HostTensor::from_f32([2, 64], &xs).unwrap()];
    let want = compiled.run(&first, &args).unwrap()[0].to_f32_vec();
    // Hand arithmetic for one element: out[1][5] = sum_k x[1][k] * w[k][5].
    let expect: f32 = (0..64).map(|k| xs[64 + k] * weights[k * 64 + 5]).sum();
    assert!((want[64 + 5] - expect).abs() < 1e-3, "{} vs {expect}", want[64 + 5]);

    let second = Session::with_cache(options, &EnvConfig::from_env(), private()).unwrap();
    let loaded = second.load(compiled.lowered.clone()).unwrap();
    assert!(loaded.cached.is_none(), "no cache of the second session holds it: compiled from the bytecode");
    let got = loaded.run(&second, &args).unwrap()[0].to_f32_vec();
    let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    println!("second session: max abs difference {worst:e}");
    assert!(worst <= 1e-6, "{worst}");
}

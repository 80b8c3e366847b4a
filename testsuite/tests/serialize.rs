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

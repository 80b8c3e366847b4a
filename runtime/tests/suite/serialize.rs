//! Executable serialization: serialize, deserialize-and-load, run, same results.

use std::time::Instant;

use fxhlo_runtime::HostTensor;

use super::cpu_client;

const MODULE: &str = r#"
func.func @main(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<3x4xf32>
  %1 = stablehlo.tanh %0 : tensor<3x4xf32>
  %2 = stablehlo.add %1, %x : tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}
"#;

#[test]
fn serialize_load_run_gives_the_same_result() {
    let client = cpu_client();
    let t0 = Instant::now();
    let exe = client.compile(MODULE).expect("compile");
    let compile_time = t0.elapsed();

    let x: Vec<f32> = (0..12).map(|i| i as f32 / 7.0 - 0.5).collect();
    let y: Vec<f32> = (0..12).map(|i| 1.5 - i as f32 / 5.0).collect();
    let xb = client
        .upload(&HostTensor::from_f32([3, 4], &x).unwrap())
        .unwrap();
    let yb = client
        .upload(&HostTensor::from_f32([3, 4], &y).unwrap())
        .unwrap();
    let first = exe.run(&[&xb, &yb]).unwrap()[0].to_host().unwrap();

    let bytes = exe.serialize().expect("serialize");
    assert!(!bytes.is_empty());
    // A fresh client, as a cache hit in another process would use.
    let other = cpu_client();
    let t1 = Instant::now();
    let loaded = other.load_serialized(&bytes).expect("load_serialized");
    let load_time = t1.elapsed();
    eprintln!(
        "compile {compile_time:?}, load_serialized {load_time:?}, {} bytes",
        bytes.len()
    );

    let xb2 = other
        .upload(&HostTensor::from_f32([3, 4], &x).unwrap())
        .unwrap();
    let yb2 = other
        .upload(&HostTensor::from_f32([3, 4], &y).unwrap())
        .unwrap();
    let second = loaded.run(&[&xb2, &yb2]).unwrap()[0].to_host().unwrap();
    assert_eq!(first, second);

    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| (a * b).tanh() + a).collect();
    for (g, w) in first.to_vec::<f32>().unwrap().iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "{g} vs {w}");
    }
    // The loaded executable serializes again.
    assert!(!loaded.serialize().expect("re-serialize").is_empty());
}

//! Compile hand-written StableHLO, run it, and compare with values computed here.

use fxhlo_runtime::{CompileOptions, HostTensor};

use super::{binary_module, cpu_client, run_mlir};

#[test]
fn client_reports_cpu_platform() {
    let client = cpu_client();
    assert_eq!(client.platform_name(), "cpu");
    assert!(!client.platform_version().is_empty());
    let (major, minor) = client.api_version();
    assert_eq!(major, 0);
    assert!(minor >= 81, "C API 0.{minor}");
}

/// The CPU plugin defaults to four devices and at least that many pool threads; fxhlo asks
/// for one device so the pool matches the cores (the plugin's default here would be 4).
#[test]
fn cpu_client_addresses_one_device() {
    assert_eq!(cpu_client().addressable_device_count(), 1);
}

#[test]
fn add_2x3_f32() {
    let client = cpu_client();
    let a: Vec<f32> = (0..6).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..6).map(|i| 10.0 - i as f32).collect();
    let out = run_mlir(
        &client,
        &binary_module("add", "2x3", "f32"),
        &[
            HostTensor::from_f32([2, 3], &a).unwrap(),
            HostTensor::from_f32([2, 3], &b).unwrap(),
        ],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dims, vec![2, 3]);
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), want);
}

const MATMUL_EXP: &str = r#"
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.exponential %0 : tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}
"#;

#[test]
fn matmul_with_two_results() {
    let client = cpu_client();
    let x = [1.0f32, 2.0, 3.0, -1.0, 0.5, 0.25];
    let w = [0.1f32, -0.2, 0.3, 0.4, -0.5, 0.6];
    let out = run_mlir(
        &client,
        MATMUL_EXP,
        &[
            HostTensor::from_f32([2, 3], &x).unwrap(),
            HostTensor::from_f32([3, 2], &w).unwrap(),
        ],
    );
    assert_eq!(out.len(), 2);
    let mut want = [0f32; 4];
    for i in 0..2 {
        for j in 0..2 {
            want[i * 2 + j] = (0..3).map(|k| x[i * 3 + k] * w[k * 2 + j]).sum();
        }
    }
    let got = out[0].to_vec::<f32>().unwrap();
    let got_exp = out[1].to_vec::<f32>().unwrap();
    for k in 0..4 {
        assert!((got[k] - want[k]).abs() < 1e-5, "{got:?} vs {want:?}");
        assert!((got_exp[k] - want[k].exp()).abs() < 1e-4 * want[k].exp().max(1.0));
    }
}

#[test]
fn scalar_and_reuse() {
    let client = cpu_client();
    let exe = client
        .compile(&binary_module("multiply", "", "f64"))
        .expect("compile scalar module");
    for k in 0..3 {
        let a = client
            .upload(&HostTensor::scalar(1.5f64 + k as f64))
            .unwrap();
        let b = client.upload(&HostTensor::scalar(-2.0f64)).unwrap();
        let out = exe.run(&[&a, &b]).unwrap();
        assert!(out[0].dims().is_empty());
        assert_eq!(
            out[0].to_host().unwrap().to_vec::<f64>().unwrap(),
            vec![-2.0 * (1.5 + k as f64)]
        );
    }
}

#[test]
fn explicit_default_options_compile() {
    let client = cpu_client();
    let exe = client
        .compile_with_options(
            &binary_module("subtract", "4", "i32"),
            &CompileOptions::default(),
        )
        .expect("compile with explicit options");
    let a = client
        .upload(&HostTensor::from_i32([4], &[5, 6, 7, 8]).unwrap())
        .unwrap();
    let b = client
        .upload(&HostTensor::from_i32([4], &[1, 1, 10, -8]).unwrap())
        .unwrap();
    let out = exe.run(&[&a, &b]).unwrap();
    assert_eq!(
        out[0].to_host().unwrap().to_vec::<i32>().unwrap(),
        vec![4, 5, -3, 16]
    );
}

#[test]
fn compile_time_is_logged_and_reasonable() {
    let client = cpu_client();
    let start = std::time::Instant::now();
    let _exe = client.compile(MATMUL_EXP).expect("compile");
    let elapsed = start.elapsed();
    eprintln!("compile of a dot_general+exp module took {elapsed:?}");
    assert!(elapsed.as_secs() < 60);
}

/// A strided upload gathers a permuted view: the 2x3 row-major tensor [[0,1,2],[3,4,5]] read as
/// its 3x2 transpose (byte strides [4, 12]) arrives as [[0,3],[1,4],[2,5]]; a view reaching past
/// the bytes is refused.
#[test]
fn strided_upload_transposes_while_copying() {
    let client = cpu_client();
    let data: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    let buf = client.upload_strided(fxhlo_runtime::ElementType::F32, &[3, 2], Some(&[4, 12]), &bytes).unwrap();
    let host = buf.to_host().unwrap();
    assert_eq!(host.dims, vec![3, 2]);
    assert_eq!(host.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let err = client.upload_strided(fxhlo_runtime::ElementType::F32, &[3, 2], Some(&[4, 16]), &bytes).err().map(|e| e.to_string());
    assert!(err.unwrap_or_default().contains("reaches byte"), "a view past the end must be refused");

    // upload_permuted gives on the device what permuting on the host first gives.
    let t = HostTensor::from_f32([2, 3, 4], &(0..24).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    for perm in [[2, 0, 1], [1, 2, 0], [0, 2, 1]] {
        let got = client.upload_permuted(&t, Some(&perm)).unwrap().to_host().unwrap();
        assert_eq!(got, t.permuted(&perm).unwrap(), "{perm:?}");
    }
    assert!(client.upload_permuted(&t, Some(&[0, 0, 1])).is_err(), "not a permutation");
}

/// Without outputs to wait on, a run waits on the execution's completion events instead (it
/// must be done when `run` returns: its inputs may be memory the caller frees next).
#[test]
fn a_module_without_results_runs_and_returns_none() {
    let client = cpu_client();
    let mlir = "func.func @main(%x: tensor<4xf32>) -> () {\n  return\n}\n";
    let out = run_mlir(&client, mlir, &[HostTensor::from_f32([4], &[1.0, 2.0, 3.0, 4.0]).unwrap()]);
    assert!(out.is_empty());
}

/// An output's value is there when `run` returns: read through its host pointer without a
/// wait (the run waited on it), it holds the result.
#[test]
fn outputs_are_ready_when_run_returns() {
    let client = cpu_client();
    let a: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let exe = client.compile(&binary_module("multiply", "2x3", "f32")).expect("compile");
    let bufs: Vec<_> = [&a, &a].iter().map(|v| client.upload(&HostTensor::from_f32([2, 3], v).unwrap()).expect("upload")).collect();
    let refs: Vec<_> = bufs.iter().collect();
    for out in exe.run(&refs).expect("run") {
        let shared = out.into_shared(client.memory_kind(0)).expect("share").ok().expect("host memory on the CPU plugin");
        // SAFETY: the shared buffer owns 6 f32 in host memory and lives to the end of the loop.
        let got = unsafe { std::slice::from_raw_parts(shared.data() as *const f32, 6) };
        let want: Vec<f32> = a.iter().map(|x| x * x).collect();
        assert_eq!(got, want.as_slice());
    }
}

const DONATES: &str = r#"
func.func @main(%x: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"#;

/// A module may ask for a parameter to be donated (its buffer consumed by the run). By default
/// every run names all arguments non-donatable, so the caller's buffer survives; an executable
/// told its module donates nothing runs without that list, and here the plugin then consumes
/// the buffer (which is why the loader only says so of modules without such attributes).
#[test]
fn arguments_survive_a_module_that_asks_for_donation() {
    let client = cpu_client();
    let x = client.upload(&HostTensor::from_f32([4], &[1.0, 2.0, 3.0, 4.0]).unwrap()).expect("upload");
    let mut exe = client.compile(DONATES).expect("compile");
    for _ in 0..2 {
        let out = exe.run(&[&x]).expect("run keeps its argument");
        assert_eq!(out[0].to_host().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0]);
    }
    exe.set_may_donate(false);
    exe.run(&[&x]).expect("this run may consume it");
    let again = exe.run(&[&x]);
    println!("after a donating run: {:?}", again.as_ref().map(|o| o.len()));
    assert!(again.is_err(), "the argument was donated by the run before");
}

/// An executable told its outputs are static reads their types on its first run only; every
/// run's outputs still have the module's types and the right values.
#[test]
fn static_outputs_keep_their_types_across_runs() {
    let client = cpu_client();
    let mut exe = client.compile(MATMUL_EXP).expect("compile");
    exe.set_static_outputs(true);
    let x = client.upload(&HostTensor::from_f32([2, 3], &[1.0, 2.0, 3.0, -1.0, 0.5, 0.25]).unwrap()).unwrap();
    let w = client.upload(&HostTensor::from_f32([3, 2], &[0.1, -0.2, 0.3, 0.4, -0.5, 0.6]).unwrap()).unwrap();
    // Hand arithmetic: x @ w.
    let want = [1.0f32 * 0.1 + 2.0 * 0.3 + 3.0 * -0.5, 1.0 * -0.2 + 2.0 * 0.4 + 3.0 * 0.6, -0.1 + 0.5 * 0.3 + 0.25 * -0.5, 0.2 + 0.5 * 0.4 + 0.25 * 0.6];
    for _ in 0..3 {
        let out = exe.run(&[&x, &w]).expect("run");
        assert_eq!(out.len(), 2);
        for b in &out {
            assert_eq!((b.element_type(), b.dims()), (fxhlo_runtime::ElementType::F32, &[2i64, 2][..]));
        }
        let got = out[0].to_host().unwrap().to_vec::<f32>().unwrap();
        assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-6), "{got:?} vs {want:?}");
    }
}

//! Bad inputs fail with clear errors and never panic: missing or fake plugins, no TPU, no CUDA
//! plugin, invalid MLIR, wrong arguments, bad tensors, garbage executables.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fxhlo_runtime::{Client, DeviceKind, ElementType, EnvConfig, Error, HostTensor, Target};

use super::{binary_module, cpu_client, cpu_target};

fn client_err(target: &Target) -> String {
    match Client::new(target) {
        Ok(_) => panic!("a client was created from {}", target.plugin.display()),
        Err(e) => e.to_string(),
    }
}

/// A folder under the system temp dir for this test (removed first).
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-runtime-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn missing_plugin_path_says_it_does_not_exist() {
    let msg = client_err(&Target::new(DeviceKind::Cpu, "/nonexistent.so"));
    assert!(
        msg.contains("/nonexistent.so") && msg.contains("does not exist"),
        "{msg}"
    );
}

#[test]
fn missing_plugin_from_override_names_the_variable() {
    let env = EnvConfig {
        plugin: Some("/nonexistent.so".into()),
        ..EnvConfig::from_env()
    };
    let msg = Target::resolve_in(DeviceKind::Cpu, &env)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("/nonexistent.so") && msg.contains("does not exist"),
        "{msg}"
    );
    assert!(msg.contains("FXHLO_PJRT_PLUGIN"), "{msg}");
}

const CHILD_MARKER: &str = "FXHLO_RUNTIME_TEST_CHILD";

/// The real `FXHLO_PJRT_PLUGIN` variable, set in a child process (never in this one: other
/// test threads and the plugin's own threads read the environment concurrently).
#[test]
fn missing_plugin_from_process_environment() {
    let exe = std::env::current_exe().expect("test binary path");
    // A (fake) GPU, so that `cuda` gets past its preflight to plugin discovery.
    let dev = scratch("child-dev");
    std::fs::write(dev.join("nvidia0"), b"").expect("fake nvidia0");
    let out = Command::new(exe)
        .args([
            "--exact",
            "suite::errors::child_resolve_with_env_override",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(CHILD_MARKER, "1")
        .env("FXHLO_PJRT_PLUGIN", "/nonexistent.so")
        .env("FXHLO_DEV_DIR", &dev)
        .output()
        .expect("run the child test");
    let _ = std::fs::remove_dir_all(&dev);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
#[ignore = "run in a child process by missing_plugin_from_process_environment"]
fn child_resolve_with_env_override() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        return;
    }
    // `tpu` is left out: its preflight runs before discovery (see the TPU tests).
    for device in [DeviceKind::Cpu, DeviceKind::Cuda] {
        let msg = Target::resolve(device)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("/nonexistent.so") && msg.contains("does not exist"),
            "{msg}"
        );
        assert!(msg.contains("FXHLO_PJRT_PLUGIN"), "{msg}");
    }
}

#[test]
fn text_file_is_not_a_plugin() {
    let dir = scratch("text");
    let fake = dir.join("fake_plugin.so");
    std::fs::write(&fake, "this is not a shared library\n").expect("write");
    let msg = client_err(&Target::new(DeviceKind::Cpu, &fake));
    assert!(msg.contains("is not a PJRT plugin"), "{msg}");
    assert!(msg.contains("shared library"), "{msg}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn directory_is_not_a_plugin() {
    let dir = scratch("dir");
    let msg = client_err(&Target::new(DeviceKind::Cpu, &dir));
    assert!(
        msg.contains("is not a PJRT plugin") && msg.contains("directory"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// libc: a real shared library without `GetPjrtApi`.
#[test]
fn shared_library_without_get_pjrt_api_is_not_a_plugin() {
    // The libc this test process has mapped: a real shared library without `GetPjrtApi`.
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        .map(Path::new)
        .expect("this test process maps a libc");
    let msg = client_err(&Target::new(DeviceKind::Cpu, libc));
    assert!(
        msg.contains("is not a PJRT plugin") && msg.contains("GetPjrtApi"),
        "{msg}"
    );
}

/// The preflight is given the folder to look in, so this holds on a TPU host too: an empty
/// folder is a machine without a TPU.
#[test]
fn tpu_without_a_tpu_fails_at_once() {
    let dev = scratch("tpu-dev-empty");
    let env = EnvConfig {
        tpu_force: false,
        dev_dir: Some(dev.clone()),
        ..EnvConfig::default()
    };
    let start = Instant::now();
    // Even with a real (CPU) plugin path: the preflight runs before anything is loaded.
    let target = Target::new(DeviceKind::Tpu, cpu_target().plugin);
    let err = Client::new_in(&target, &env).err();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(matches!(&err, Some(Error::NoTpu { dev: d }) if *d == dev), "{err:?}");
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("no TPU found")
            && msg.contains(&format!("{}/accel*", dev.display()))
            && msg.contains("FXHLO_TPU_FORCE=1"),
        "{msg}"
    );
    // The VFIO control node alone is no TPU either.
    std::fs::create_dir_all(dev.join("vfio")).expect("vfio folder");
    std::fs::write(dev.join("vfio/vfio"), b"").expect("vfio control node");
    assert!(matches!(
        fxhlo_runtime::tpu_preflight(&env),
        Err(Error::NoTpu { .. })
    ));
    let _ = std::fs::remove_dir_all(dev);
}

/// With a (fake) TPU device node the preflight lets `tpu` through to plugin discovery, on any
/// machine: the error is then about the plugin, not about the TPU.
#[test]
fn tpu_with_a_device_node_passes_the_preflight() {
    let dev = scratch("tpu-dev-accel");
    std::fs::write(dev.join("accel0"), b"").expect("fake accel0");
    let env = EnvConfig {
        dev_dir: Some(dev.clone()),
        plugin: Some("/nonexistent/libtpu.so".into()),
        ..EnvConfig::default()
    };
    assert!(fxhlo_runtime::tpu_preflight(&env).is_ok());
    let msg = Target::resolve_in(DeviceKind::Tpu, &env)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("/nonexistent/libtpu.so") && msg.contains("does not exist"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(dev);
}

/// Like the TPU preflight: the folder is injected, so this holds on a GPU host too.
#[test]
fn cuda_without_a_gpu_fails_at_once() {
    let dev = scratch("cuda-dev-empty");
    // A driver installed without a GPU leaves its control nodes: not a GPU.
    std::fs::write(dev.join("nvidiactl"), b"").expect("nvidiactl");
    let env = EnvConfig {
        dev_dir: Some(dev.clone()),
        ..EnvConfig::default()
    };
    let start = Instant::now();
    let target = Target::new(DeviceKind::Cuda, cpu_target().plugin);
    let err = Client::new_in(&target, &env).err();
    let elapsed = start.elapsed();
    println!("cuda without a GPU failed in {elapsed:?}");
    assert!(elapsed < Duration::from_millis(500), "{elapsed:?}");
    assert!(
        matches!(&err, Some(Error::NoGpu { dev: d }) if *d == dev),
        "{err:?}"
    );
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("no NVIDIA GPU found") && msg.contains(&format!("{}/nvidia0", dev.display())),
        "{msg}"
    );
    assert!(matches!(
        Target::resolve_in(DeviceKind::Cuda, &env),
        Err(Error::NoGpu { .. })
    ));
    let _ = std::fs::remove_dir_all(dev);
}

#[test]
fn cuda_without_a_plugin_is_a_clear_error() {
    let venv = scratch("cuda-venv");
    std::fs::create_dir_all(venv.join("lib/python3.11/site-packages")).expect("venv");
    // A (fake) GPU, so that the preflight lets `cuda` through to plugin discovery.
    let dev = scratch("cuda-dev-gpu");
    std::fs::write(dev.join("nvidia0"), b"").expect("fake nvidia0");
    let env = EnvConfig {
        venv: Some(venv.clone()),
        dev_dir: Some(dev.clone()),
        ..EnvConfig::default()
    };
    match Target::resolve_in(DeviceKind::Cuda, &env) {
        // A system-wide Python with the CUDA plugin (a GPU machine) is found as it should be.
        Ok(t) => assert!(
            t.plugin.is_file() && t.plugin.ends_with("xla_cuda_plugin.so"),
            "{}",
            t.plugin.display()
        ),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("no PJRT plugin for device `cuda`"), "{msg}");
            assert!(msg.contains("xla_cuda13/xla_cuda_plugin.so"), "{msg}");
            assert!(msg.contains("FXHLO_PJRT_PLUGIN"), "{msg}");
        }
    }
    let _ = std::fs::remove_dir_all(venv);
    let _ = std::fs::remove_dir_all(dev);
}

fn compile_err(mlir: &str) -> String {
    match cpu_client().compile(mlir) {
        Ok(_) => panic!("compiled: {mlir}"),
        Err(e) => {
            assert!(matches!(e, Error::Compile { .. }), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn invalid_mlir_is_a_compile_error_with_the_plugin_message() {
    let msg = compile_err("this is not MLIR");
    eprintln!("{msg}");
    assert!(
        msg.starts_with("PJRT compile failed: ") && msg.len() > 40,
        "{msg}"
    );
}

#[test]
fn ill_typed_stablehlo_is_a_compile_error() {
    let mlir = r#"
func.func @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"#;
    let msg = compile_err(mlir);
    eprintln!("{msg}");
    assert!(
        msg.contains("stablehlo.add") || msg.contains("shape"),
        "{msg}"
    );
}

/// The XLA CPU plugin throws a C++ exception while compiling a tensor whose size overflows 64
/// bits; without the guarded API table it unwound into Rust and aborted the process ("Rust
/// cannot catch foreign exceptions"). It must come back as a compile error, and the client must
/// still work afterwards.
#[test]
fn a_cpp_exception_in_the_plugin_is_a_compile_error() {
    let dims = "1099511627776x1099511627776";
    let mlir = format!(
        "func.func @main() -> tensor<{dims}xf32> {{\n  %0 = stablehlo.constant dense<1.0> : tensor<f32>\n  \
         %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<{dims}xf32>\n  \
         return %1 : tensor<{dims}xf32>\n}}\n"
    );
    let msg = compile_err(&mlir);
    eprintln!("{msg}");
    assert!(msg.contains("threw a C++ exception in PJRT_Client_Compile"), "{msg}");
    let out = super::run_mlir(
        &cpu_client(),
        &binary_module("add", "2", "f32"),
        &[HostTensor::from_f32([2], &[1.0, 2.0]).unwrap(), HostTensor::from_f32([2], &[3.0, 4.0]).unwrap()],
    );
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
}

#[test]
fn wrong_arguments_are_execute_errors() {
    let client = cpu_client();
    let exe = client
        .compile(&binary_module("add", "2", "f32"))
        .expect("compile");
    let a = client
        .upload(&HostTensor::from_f32([2], &[1.0, 2.0]).unwrap())
        .unwrap();
    let wrong_type = client
        .upload(&HostTensor::from_i32([2], &[1, 2]).unwrap())
        .unwrap();
    let wrong_shape = client
        .upload(&HostTensor::from_f32([3], &[1.0, 2.0, 3.0]).unwrap())
        .unwrap();
    for (what, args) in [
        ("too few", vec![&a]),
        ("too many", vec![&a, &a, &a]),
        ("wrong type", vec![&a, &wrong_type]),
        ("wrong shape", vec![&a, &wrong_shape]),
    ] {
        let err = exe.run(&args).err();
        eprintln!("{what}: {err:?}");
        assert!(
            matches!(err, Some(Error::Execute { .. })),
            "{what}: {err:?}"
        );
    }
    // The executable still works afterwards.
    assert_eq!(
        exe.run(&[&a, &a]).unwrap()[0]
            .to_host()
            .unwrap()
            .to_f32_vec(),
        vec![2.0, 4.0]
    );
}

/// Same byte size, other type or shape: the CPU plugin would run these and return garbage, so
/// the runtime checks them against `@main`'s signature, also after a serialization round trip.
#[test]
fn same_size_mismatches_are_caught_by_the_signature_check() {
    let client = cpu_client();
    let compiled = client
        .compile(&binary_module("add", "2x3", "f32"))
        .expect("compile");
    let loaded = client
        .load_serialized(&compiled.serialize().unwrap())
        .expect("load");
    let ok = client
        .upload(&HostTensor::from_f32([2, 3], &[1.0; 6]).unwrap())
        .unwrap();
    let as_i32 = client
        .upload(&HostTensor::from_i32([2, 3], &[1; 6]).unwrap())
        .unwrap();
    let transposed = client
        .upload(&HostTensor::from_f32([3, 2], &[1.0; 6]).unwrap())
        .unwrap();
    for exe in [&compiled, &loaded] {
        let msg = exe
            .run(&[&ok, &as_i32])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("argument 1 is i32[2, 3] but @main expects f32[2,3]"),
            "{msg}"
        );
        let msg = exe
            .run(&[&transposed, &ok])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("argument 0 is f32[3, 2]"), "{msg}");
        assert!(exe.run(&[&ok, &ok]).is_ok());
    }
}

#[test]
fn buffers_of_another_client_are_rejected() {
    let (c1, c2) = (cpu_client(), cpu_client());
    let exe = c1
        .compile(&binary_module("add", "2", "f32"))
        .expect("compile");
    let b = c2
        .upload(&HostTensor::from_f32([2], &[1.0, 2.0]).unwrap())
        .unwrap();
    let err = exe.run(&[&b, &b]).err();
    assert!(matches!(err, Some(Error::ForeignObject(_))), "{err:?}");
}

#[test]
fn inconsistent_host_tensors_are_rejected() {
    let client = cpu_client();
    let bad = HostTensor {
        element_type: ElementType::F32,
        dims: vec![2, 2],
        bytes: vec![0; 15],
    };
    let err = client
        .upload(&bad)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("needs 16 bytes") && err.contains("got 15"),
        "{err}"
    );
    let neg = HostTensor {
        element_type: ElementType::I8,
        dims: vec![-1],
        bytes: vec![],
    };
    assert!(matches!(client.upload(&neg), Err(Error::InvalidTensor(_))));
}

#[test]
fn garbage_serialized_executable_is_an_error() {
    let client = cpu_client();
    for bytes in [&b""[..], b"definitely not an executable", &[0xffu8; 64][..]] {
        let err = client.load_serialized(bytes).err();
        assert!(matches!(err, Some(Error::Deserialize { .. })), "{err:?}");
    }
}

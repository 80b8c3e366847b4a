//! The `fxhlo` binary run as a user runs it: exit codes, the check line, and clear errors for
//! bad input (each asserted on its message).

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures/mlp.fxt")
}

fn fxhlo(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fxhlo"));
    cmd.args(args).env_remove("FXHLO_PJRT_PLUGIN").env_remove("FXHLO_TPU_FORCE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run fxhlo");
    println!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-cli-{tag}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    for f in ["graph.json", "weights.safetensors", "reference.safetensors"] {
        fs::copy(fixture().join(f), dir.join(f)).unwrap();
    }
    dir
}

#[test]
fn run_check_passes_on_the_bundled_trace() {
    let out = fxhlo(&["run", fixture().to_str().unwrap(), "--check"], &[]);
    assert!(out.status.success());
    let last = last_line(&out);
    assert!(last.starts_with("check: PASS") && last.contains("max_abs_err=") && last.contains("max_rel_err="), "{last}");
}

#[test]
fn run_check_fails_when_the_reference_differs() {
    let dir = scratch("mismatch");
    let bytes = fs::read(dir.join("reference.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in st.tensors() {
        let mut data = view.data().to_vec();
        if name == "output.0" {
            for chunk in data.chunks_mut(4) {
                let v = f32::from_le_bytes(chunk.try_into().unwrap()) * 1.5 + 0.25;
                chunk.copy_from_slice(&v.to_le_bytes());
            }
        }
        owned.push((name, view.shape().to_vec(), data));
    }
    let views: Vec<_> = owned
        .iter()
        .map(|(n, s, d)| (n.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), d).unwrap()))
        .collect();
    fs::write(dir.join("reference.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
    let out = fxhlo(&["run", dir.to_str().unwrap(), "--check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(last_line(&out).starts_with("check: FAIL"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("8 of 8 elements differ from the PyTorch reference"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn tpu_on_a_machine_without_one_fails_at_once() {
    let start = std::time::Instant::now();
    let out = fxhlo(&["run", fixture().to_str().unwrap(), "--device", "tpu"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(stderr.contains("tpu") && stderr.contains("fxhlo_tpu_force"), "{stderr}");
    assert!(start.elapsed().as_secs() < 30, "the TPU preflight must not hang");
}

#[test]
fn a_missing_plugin_is_named() {
    let out = fxhlo(&["run", fixture().to_str().unwrap()], &[("FXHLO_PJRT_PLUGIN", "/nonexistent/plugin.so")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/plugin.so") && stderr.to_lowercase().contains("does not exist"), "{stderr}");
}

#[test]
fn a_file_that_is_not_a_plugin_is_named() {
    let dir = scratch("notaplugin");
    let fake = dir.join("fake.so");
    fs::write(&fake, b"this is not a shared library").unwrap();
    let out = fxhlo(&["run", fixture().to_str().unwrap()], &[("FXHLO_PJRT_PLUGIN", fake.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fake.so") && stderr.contains("not a PJRT plugin"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_malformed_trace_is_reported_with_its_position() {
    let dir = scratch("malformed");
    fs::write(dir.join("graph.json"), "{\"format\": \"fxhlo-trace\", \"version\": ").unwrap();
    let out = fxhlo(&["run", dir.to_str().unwrap(), "--check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("graph.json:1:") && stderr.contains("malformed trace JSON"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compile_prints_ir_and_stablehlo() {
    let out = fxhlo(&["compile", fixture().to_str().unwrap(), "--emit", "ir"], &[]);
    assert!(out.status.success());
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(ir.starts_with("graph @mlp {") && ir.contains("aten.addmm"), "{ir}");
    let out = fxhlo(&["compile", fixture().to_str().unwrap(), "--emit", "mlir"], &[]);
    let mlir = String::from_utf8_lossy(&out.stdout);
    assert!(mlir.contains("stablehlo.dot_general") && mlir.contains("loc(\"addmm\""), "{mlir}");
}


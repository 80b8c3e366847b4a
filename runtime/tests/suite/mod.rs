//! Test modules and shared helpers.

mod compile_run;
mod dtypes;
mod errors;
mod serialize;
mod share;

use fxhlo_runtime::{Client, DeviceKind, HostTensor, Target};

/// The CPU target, found the way users find it (fails the test with the discovery message).
pub fn cpu_target() -> Target {
    match Target::resolve(DeviceKind::Cpu) {
        Ok(t) => t,
        Err(e) => panic!("no CPU plugin (run scripts/setup.sh): {e}"),
    }
}

/// A fresh CPU client (clients are not `Send`: each test thread makes its own).
pub fn cpu_client() -> Client {
    match Client::new(&cpu_target()) {
        Ok(c) => c,
        Err(e) => panic!("CPU client: {e}"),
    }
}

/// Compiles `mlir`, uploads `args`, runs, and downloads every result.
pub fn run_mlir(client: &Client, mlir: &str, args: &[HostTensor]) -> Vec<HostTensor> {
    let exe = client
        .compile(mlir)
        .unwrap_or_else(|e| panic!("compile: {e}\n{mlir}"));
    let bufs: Vec<_> = args
        .iter()
        .map(|t| client.upload(t).expect("upload"))
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    exe.run(&refs)
        .expect("run")
        .iter()
        .map(|b| b.to_host().expect("to_host"))
        .collect()
}

/// A one-op elementwise module `main(a, b) = op(a, b)` on `tensor<{shape}x{ty}>` (a scalar
/// `tensor<{ty}>` when `shape` is empty).
pub fn binary_module(op: &str, shape: &str, ty: &str) -> String {
    let t = if shape.is_empty() {
        format!("tensor<{ty}>")
    } else {
        format!("tensor<{shape}x{ty}>")
    };
    format!(
        "func.func @main(%a: {t}, %b: {t}) -> {t} {{\n  \
         %0 = stablehlo.{op} %a, %b : {t}\n  \
         return %0 : {t}\n}}\n"
    )
}

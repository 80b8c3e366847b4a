//! Running the `fxhlo` binary from the CLI's test binaries (`mod support;` in each).

use std::process::{Command, Output};

/// Runs the binary with `env` added. Variables that steer fxhlo are cleared first, and the
/// compile cache's folder is off unless `env` says otherwise: a test never writes to the
/// user's cache, nor depends on what earlier runs or the caller's environment left.
pub fn fxhlo(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fxhlo"));
    cmd.args(args);
    for var in [
        "FXHLO_PJRT_PLUGIN",
        "FXHLO_TPU_FORCE",
        "FXHLO_DEV_DIR",
        "FXHLO_CACHE_DIR",
        "FXHLO_CACHE_MAX_BYTES",
        "FXHLO_ERROR_ON_COMPILE",
        "FXHLO_AOT_WORKER",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("FXHLO_CACHE", "off");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run fxhlo");
    println!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

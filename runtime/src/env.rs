//! Every environment variable `fxhlo-runtime` reads, declared and documented in one place.
//!
//! | Variable             | Meaning                                                              |
//! |----------------------|----------------------------------------------------------------------|
//! | `FXHLO_PJRT_PLUGIN`  | Path to a PJRT plugin `.so`; overrides discovery for every device.   |
//! | `FXHLO_VENV`         | The Python virtual environment to search for plugins (only that one).|
//! | `VIRTUAL_ENV`        | Set by `activate`; searched before the `.venv` folders found by walking up from the current directory and the executable. |
//! | `FXHLO_TPU_FORCE`    | `1`/`true`: skip the TPU device-node preflight (see [`crate::device`]). |
//! | `FXHLO_DEV_DIR`  | The folder the TPU and CUDA preflights look in for device nodes instead of `/dev` (for tests: an empty folder means "no TPU, no GPU" on any machine). |
//!
//! Nothing else in the crate calls `std::env::var`: the rest of the crate works on an
//! [`EnvConfig`] value, so tests can pass explicit settings instead of mutating the process
//! environment (which races with other test threads and with C code calling `getenv`).

use std::path::PathBuf;

/// Path to a PJRT plugin shared library; when set, it is used for every device kind.
pub const FXHLO_PJRT_PLUGIN: &str = "FXHLO_PJRT_PLUGIN";
/// Python virtual environment to search for plugins; when set, no other venv is searched.
pub const FXHLO_VENV: &str = "FXHLO_VENV";
/// The active virtual environment (set by `source .venv/bin/activate`).
pub const VIRTUAL_ENV: &str = "VIRTUAL_ENV";
/// Skip the TPU preflight (`1`, `true`, `yes`): use only where TPU device nodes are not where
/// the preflight looks, since a TPU client on a machine without a TPU hangs for minutes.
pub const FXHLO_TPU_FORCE: &str = "FXHLO_TPU_FORCE";
/// The folder the TPU preflight looks in for `accel*` and `vfio/<n>` device nodes instead of
/// `/dev`. Meant for tests, which point it at a folder they made (empty: no TPU; with a file
/// `accel0`: a TPU) so that they hold on any machine, TPU hosts included.
pub const FXHLO_DEV_DIR: &str = "FXHLO_DEV_DIR";

/// The environment settings the runtime uses, read once by [`EnvConfig::from_env`] or built
/// by hand (tests, embedders that take settings from elsewhere).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvConfig {
    /// [`FXHLO_PJRT_PLUGIN`].
    pub plugin: Option<PathBuf>,
    /// [`FXHLO_VENV`].
    pub venv: Option<PathBuf>,
    /// [`VIRTUAL_ENV`].
    pub virtual_env: Option<PathBuf>,
    /// [`FXHLO_TPU_FORCE`], parsed as a flag.
    pub tpu_force: bool,
    /// [`FXHLO_DEV_DIR`]: where the TPU and CUDA preflights look for device nodes; `None` is `/dev`.
    pub dev_dir: Option<PathBuf>,
    /// Where the upward search for a `.venv` folder starts: the current directory and the
    /// folder of the running executable.
    pub search_from: Vec<PathBuf>,
}

impl EnvConfig {
    /// Reads the variables above and the current directory / executable location.
    pub fn from_env() -> EnvConfig {
        let mut search_from = Vec::new();
        if let Ok(cwd) = std::env::current_dir() {
            search_from.push(cwd);
        }
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(PathBuf::from))
        {
            search_from.push(dir);
        }
        EnvConfig {
            plugin: path_var(FXHLO_PJRT_PLUGIN),
            venv: path_var(FXHLO_VENV),
            virtual_env: path_var(VIRTUAL_ENV),
            tpu_force: std::env::var(FXHLO_TPU_FORCE).is_ok_and(|v| is_truthy(&v)),
            dev_dir: path_var(FXHLO_DEV_DIR),
            search_from,
        }
    }
}

/// A non-empty path-valued variable.
fn path_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `1`, `true`, `yes`, `on` (any case) are true; everything else is false.
pub(crate) fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthy_values() {
        for v in ["1", "true", "TRUE", " yes ", "on"] {
            assert!(is_truthy(v), "{v}");
        }
        for v in ["", "0", "false", "no", "2"] {
            assert!(!is_truthy(v), "{v}");
        }
    }
}

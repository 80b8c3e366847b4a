//! PJRT plugin discovery (which `.so` drives a device) and checked loading.
//!
//! Discovery, for [`crate::Target::resolve`]:
//! 1. `FXHLO_PJRT_PLUGIN`, a path to a plugin, wins for every device (it must exist).
//! 2. Otherwise the device's plugin file (see [`plugin_files`]) is looked for in the
//!    `lib/python3*/site-packages` folders of, in order: `FXHLO_VENV` alone when set; else
//!    `VIRTUAL_ENV`, then every `.venv` folder found walking up from the current directory and
//!    from the running executable (nearest first). Then the system Python's site-packages.
//!
//! Loading checks, before handing the file to `pjrt`, that it exists, is a shared library,
//! exports `GetPjrtApi`, and implements a C API version these bindings can drive: each failure
//! is its own [`Error`] with a message that says what is wrong.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pjrt_sys::{PJRT_Api, PJRT_Buffer, PJRT_Buffer_ElementType_Args, PJRT_Buffer_Type};

use crate::env::{EnvConfig, FXHLO_PJRT_PLUGIN};
use crate::error::{guard, Error, Result};
// From the leaf, not from `device`: `device` resolves targets through this module's discovery,
// so taking the kind from there would make the two depend on each other.
use crate::kinds::DeviceKind;

/// Plugin files for `device`, relative to a Python site-packages folder, in preference order.
pub fn plugin_files(device: DeviceKind) -> &'static [&'static str] {
    match device {
        DeviceKind::Cpu => &["xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"],
        DeviceKind::Cuda => &[
            "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
            "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        ],
        DeviceKind::Tpu => &["libtpu/libtpu.so"],
    }
}

/// System Python folders searched after the virtual environments (`*` = any python3 version).
const SYSTEM_SITE_PACKAGES: &[&str] = &[
    "/usr/local/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/usr/lib/python3*/site-packages",
    "/usr/lib/python3/dist-packages",
];

/// Finds the plugin for `device` (see the module docs for the order).
pub(crate) fn discover(device: DeviceKind, env: &EnvConfig) -> Result<PathBuf> {
    if let Some(path) = &env.plugin {
        if path.exists() {
            // Checked (file, shared library, GetPjrtApi) when a client loads it.
            return Ok(path.clone());
        }
        return Err(Error::PluginMissing {
            path: path.clone(),
            origin: format!(" (set by {FXHLO_PJRT_PLUGIN})"),
        });
    }
    let dirs = site_packages_dirs(env);
    for dir in &dirs {
        for rel in plugin_files(device) {
            let candidate = dir.join(rel);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let searched = if dirs.is_empty() {
        "no virtual environment (.venv) or Python site-packages folder was found".to_string()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let install = match device {
        DeviceKind::Cpu => " (it installs the xla-cpu-pjrt plugin into .venv)",
        DeviceKind::Cuda => " or `pip install jax-cuda13-pjrt` into the venv",
        DeviceKind::Tpu => " or `pip install libtpu` into the venv",
    };
    Err(Error::PluginNotFound {
        device,
        wanted: plugin_files(device).join(" or "),
        searched,
        install: install.to_string(),
    })
}

/// Existing site-packages folders to search, in order, without duplicates.
fn site_packages_dirs(env: &EnvConfig) -> Vec<PathBuf> {
    let mut venvs: Vec<PathBuf> = Vec::new();
    if let Some(venv) = &env.venv {
        venvs.push(venv.clone());
    } else {
        venvs.extend(env.virtual_env.iter().cloned());
        for start in &env.search_from {
            for dir in start.ancestors() {
                let candidate = dir.join(".venv");
                if candidate.is_dir() {
                    venvs.push(candidate);
                }
            }
        }
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for venv in &venvs {
        dirs.extend(glob_python(&venv.join("lib"), "site-packages"));
    }
    for pattern in SYSTEM_SITE_PACKAGES {
        let pattern = Path::new(pattern);
        match pattern.to_str().and_then(|p| p.split_once("python3*/")) {
            Some((parent, tail)) => dirs.extend(glob_python(Path::new(parent), tail)),
            None if pattern.is_dir() => dirs.push(pattern.to_path_buf()),
            None => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
    dirs
}

/// `<parent>/python3*/<tail>` folders that exist, newest Python first.
fn glob_python(parent: &Path, tail: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path().join(tail))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found.reverse();
    found
}

/// A loaded, checked plugin.
pub(crate) struct Plugin {
    /// The `pjrt` crate's handle.
    pub api: pjrt::Api,
    /// The raw function table, for the calls `pjrt` 0.2.0 would panic on.
    pub raw: RawApi,
    /// The plugin's C API version (major, minor).
    pub version: (i32, i32),
}

type GetPjrtApi = unsafe extern "C" fn() -> *const PJRT_Api;

/// The plugins loaded in this process, by canonical path (a handful at most).
static LOADED: std::sync::Mutex<Vec<(PathBuf, pjrt::Api)>> = std::sync::Mutex::new(Vec::new());

/// Loads the plugin at `path`, checking it before `pjrt` touches it.
pub(crate) fn load(path: &Path) -> Result<Plugin> {
    let start = Instant::now();
    if path.is_dir() {
        let reason = "it is a directory, not a shared library".to_string();
        return Err(Error::NotAPlugin {
            path: path.to_path_buf(),
            reason,
        });
    }
    if !path.exists() {
        return Err(Error::PluginMissing {
            path: path.to_path_buf(),
            origin: String::new(),
        });
    }
    // The same plugin under two names would be initialized twice by `pjrt`'s cache.
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let not_a_plugin = |reason: String| Error::NotAPlugin {
        path: path.clone(),
        reason,
    };

    // SAFETY: loading a shared library runs its initializers; the user chose this file as a
    // PJRT plugin, which is exactly what loading one means.
    let lib = unsafe { libloading::Library::new(&path) }
        .map_err(|e| not_a_plugin(format!("it cannot be loaded as a shared library ({e})")))?;
    // SAFETY: `GetPjrtApi` has this signature in every PJRT plugin.
    let get_api = unsafe { lib.get::<GetPjrtApi>(b"GetPjrtApi\0") }
        .map_err(|_| not_a_plugin("it does not export the `GetPjrtApi` symbol".to_string()))?;
    // SAFETY: `GetPjrtApi` takes nothing and returns a pointer to a static table.
    let raw = unsafe { get_api() };
    if raw.is_null() {
        return Err(not_a_plugin(
            "`GetPjrtApi` returned a null pointer".to_string(),
        ));
    }
    // SAFETY: `struct_size` and `pjrt_api_version` lead `PJRT_Api` in every C API version.
    let (struct_size, major, minor) = unsafe {
        (
            (*raw).struct_size,
            (*raw).pjrt_api_version.major_version,
            (*raw).pjrt_api_version.minor_version,
        )
    };
    check_version(&path, struct_size, major, minor)?;

    // Every call goes through a copy of the table whose functions catch C++ exceptions
    // (pjrt-sys's guard.cc): one escaping into Rust would abort the process.
    // SAFETY: `raw` is the plugin's table, checked above to be at least as long as ours.
    let table = unsafe { pjrt_sys::fxhlo_pjrt_guard_api(raw) };
    let api = {
        // One `pjrt::Api` per plugin file: `wrap` initializes the plugin, which must happen once.
        let mut loaded = LOADED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match loaded.iter().find(|(p, _)| *p == path) {
            Some((_, api)) => api.clone(),
            None => {
                let api = guard("plugin initialization", || pjrt::Api::wrap(table))?;
                // The library stays loaded for the life of the process, as the table does.
                std::mem::forget(lib);
                loaded.push((path.clone(), api.clone()));
                api
            }
        }
    };
    tracing::debug!(
        plugin = %path.display(),
        version = %format!("{major}.{minor}"),
        elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
        "loaded PJRT plugin"
    );
    Ok(Plugin {
        api,
        raw: RawApi(table),
        version: (major, minor),
    })
}

/// Rejects plugins the bindings cannot drive: another major version, or a `PJRT_Api` table
/// shorter than the one the bindings were generated from (`pjrt` copies the whole table).
fn check_version(path: &Path, struct_size: usize, major: i32, minor: i32) -> Result<()> {
    let expected = format!("{}.{}", pjrt_sys::PJRT_API_MAJOR, pjrt_sys::PJRT_API_MINOR);
    let incompatible = |reason: &str| Error::IncompatiblePlugin {
        path: path.to_path_buf(),
        found: format!("{major}.{minor}"),
        expected: expected.clone(),
        reason: reason.to_string(),
    };
    if i64::from(major) != i64::from(pjrt_sys::PJRT_API_MAJOR) {
        return Err(incompatible("the major versions differ"));
    }
    if struct_size < pjrt_sys::PJRT_Api_STRUCT_SIZE as usize {
        return Err(incompatible(
            "the plugin is older than the header; rebuild pjrt-sys with FXHLO_PJRT_HEADER set \
             to the pjrt_c_api.h that came with this plugin",
        ));
    }
    Ok(())
}

/// The plugin's function table, used directly where `pjrt` 0.2.0 has no fallible call.
#[derive(Clone, Copy)]
pub(crate) struct RawApi(*const PJRT_Api);

impl RawApi {
    /// The function table.
    pub(crate) fn table(&self) -> &PJRT_Api {
        // SAFETY: `self.0` points at the guarded copy of the plugin's table (pjrt-sys's
        // guard.cc), which lives as long as the process, as the plugin does (never unloaded);
        // it is as long as ours (`check_version`).
        unsafe { &*self.0 }
    }

    /// The element type of a buffer, as the raw `PJRT_Buffer_Type` code (`pjrt`'s
    /// `Buffer::primitive_type` panics on codes it does not know, such as newer f8/f4 types).
    pub(crate) fn buffer_element_type(&self, buffer: *mut PJRT_Buffer) -> Result<PJRT_Buffer_Type> {
        let f = self.table().PJRT_Buffer_ElementType.ok_or_else(|| Error::Pjrt {
            operation: "PJRT_Buffer_ElementType",
            message: "the plugin does not implement it".to_string(),
        })?;
        let mut args = PJRT_Buffer_ElementType_Args::new();
        args.buffer = buffer;
        // SAFETY: `buffer` is a live buffer of this plugin; `args` is fully initialized.
        let err = unsafe { f(&mut args) };
        if err.is_null() {
            return Ok(args.type_);
        }
        Err(Error::Pjrt {
            operation: "PJRT_Buffer_ElementType",
            message: self.take_error(err),
        })
    }

    /// Reads and frees a `PJRT_Error`.
    pub(crate) fn take_error(&self, err: *mut pjrt_sys::PJRT_Error) -> String {
        let api = self.table();
        let mut message = String::from("unknown error");
        if let Some(f) = api.PJRT_Error_Message {
            let mut args = pjrt_sys::PJRT_Error_Message_Args::new();
            args.error = err;
            // SAFETY: valid error and args; the message stays valid until the error is freed.
            unsafe {
                f(&mut args);
                if !args.message.is_null() {
                    let bytes =
                        std::slice::from_raw_parts(args.message as *const u8, args.message_size);
                    message = String::from_utf8_lossy(bytes).into_owned();
                }
            }
        }
        if let Some(f) = api.PJRT_Error_Destroy {
            let mut args = pjrt_sys::PJRT_Error_Destroy_Args::new();
            args.error = err;
            // SAFETY: frees the error exactly once.
            unsafe { f(&mut args) };
        }
        message
    }
}

/// The raw pointer of a `pjrt` buffer (through the public `ExecutionInputs` impl, the only
/// place `pjrt` 0.2.0 exposes it).
pub(crate) fn buffer_ptr(buffer: &pjrt::Buffer) -> Option<*mut PJRT_Buffer> {
    use pjrt::ExecutionInputs;
    buffer
        .buffer_ptrs()
        .first()
        .and_then(|list| list.first().copied())
}

#[cfg(test)]
mod tests;

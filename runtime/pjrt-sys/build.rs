//! Generates the PJRT C API bindings from the header the installed plugin ships, the `::new()`
//! constructors `pjrt` relies on, and the compile-options protos.
//!
//! Header lookup order:
//!   1. `FXHLO_PJRT_HEADER`: a path to `pjrt_c_api.h`;
//!   2. `<workspace>/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h`
//!      (installed by `scripts/setup.sh`).

use std::collections::BTreeSet;
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const HEADER_ENV: &str = "FXHLO_PJRT_HEADER";
const PLUGIN_INCLUDE: &str = "site-packages/xla_plugins/xla_cpu_pjrt/include";
const HEADER_NAME: &str = "pjrt_c_api.h";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));

    let header = find_header(&manifest_dir);
    println!("cargo:rerun-if-changed={}", header.display());
    let include_dirs = include_dirs(&header);

    generate_bindings(&header, &include_dirs, &out_dir);
    generate_protos(&manifest_dir, &out_dir);
}

/// Finds `pjrt_c_api.h`, or stops the build with a message that says how to get one.
fn find_header(manifest_dir: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed={HEADER_ENV}");
    if let Some(path) = env::var_os(HEADER_ENV) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return path;
        }
        panic!(
            "{HEADER_ENV} is set to `{}`, which is not a file. Point it at the pjrt_c_api.h \
             that matches your PJRT plugin, or unset it to use the one scripts/setup.sh installs.",
            path.display()
        );
    }

    // runtime/pjrt-sys -> runtime -> workspace root
    let root = manifest_dir.join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let lib = root.join(".venv/lib");
    // No rerun-if-changed on `.venv/lib`: Cargo would scan the whole folder, and every pip or
    // maturin install (and every .pyc) there would rebuild pjrt and everything above it. The
    // header found is watched by `main`; a build that finds none fails, and a failed build
    // script runs again next time anyway.
    let mut candidates: Vec<PathBuf> = fs::read_dir(&lib)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| e.path().join(PLUGIN_INCLUDE).join(HEADER_NAME))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    match candidates.pop() {
        Some(path) => path,
        None => panic!(
            "pjrt-sys: cannot find the PJRT C API header. Looked for \
             .venv/lib/python3*/{PLUGIN_INCLUDE}/{HEADER_NAME} under the workspace root \
             ({}). Run scripts/setup.sh (it installs the xla-cpu-pjrt plugin and its header \
             into .venv), or set {HEADER_ENV} to the path of a pjrt_c_api.h.",
            root.display()
        ),
    }
}

/// Include directories for clang: the header's own folder, and, when the header sits in an
/// XLA source layout (`<root>/xla/pjrt/c/pjrt_c_api.h`), `<root>` so that its
/// `#include "xla/pjrt/c/..."` lines resolve.
fn include_dirs(header: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = header.parent() {
        dirs.push(dir.to_path_buf());
        let mut ancestors = dir.ancestors();
        let parts: Vec<_> = dir.components().rev().take(3).collect();
        let is_xla_layout = parts.len() == 3
            && parts[0].as_os_str() == "c"
            && parts[1].as_os_str() == "pjrt"
            && parts[2].as_os_str() == "xla";
        if is_xla_layout {
            if let Some(root) = ancestors.nth(3) {
                dirs.push(root.to_path_buf());
            }
        }
    }
    // Fail early with a clear message if the header pulls in XLA files we cannot see.
    if let Ok(text) = fs::read_to_string(header) {
        for line in text.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("#include \"") else {
                continue;
            };
            let Some(inc) = rest.split('"').next() else {
                continue;
            };
            if !dirs.iter().any(|d| d.join(inc).is_file()) {
                panic!(
                    "pjrt-sys: {} includes \"{inc}\", which is not found next to it. Point \
                     {HEADER_ENV} at a header inside a complete XLA include tree \
                     (<root>/xla/pjrt/c/{HEADER_NAME}).",
                    header.display()
                );
            }
        }
    }
    dirs
}

fn generate_bindings(header: &Path, include_dirs: &[PathBuf], out_dir: &Path) {
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .derive_default(true);
    for dir in include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder
        .generate()
        .unwrap_or_else(|e| panic!("pjrt-sys: bindgen failed on {}: {e}", header.display()));
    let text = bindings.to_string();
    fs::write(out_dir.join("bindings.rs"), &text).expect("write bindings.rs");
    fs::write(out_dir.join("constructors.rs"), constructors(&text)).expect("write constructors.rs");
}

/// Emits `impl PJRT_X { STRUCT_SIZE; new() }` for every struct with a `PJRT_X_STRUCT_SIZE`
/// constant and a `struct_size` field, and a plain `new()` (= `default()`) for every other
/// `PJRT_*` struct that derives `Default` and has no `struct_size` field (e.g. `PJRT_Program`).
fn constructors(bindings: &str) -> String {
    let sizes = struct_size_consts(bindings);
    let structs = structs(bindings);
    let mut out = String::from("// Generated by build.rs from the bindings: do not edit.\n");
    for s in &structs {
        let const_name = format!("{}_STRUCT_SIZE", s.name);
        if sizes.contains(&const_name) {
            if !s.has_struct_size_field {
                continue;
            }
            let _ = writeln!(
                out,
                "impl {name} {{\n    /// `{const_name}`: the size this header was built with.\n    \
                 pub const STRUCT_SIZE: usize = {const_name} as usize;\n    \
                 /// A zeroed value with `struct_size` set.\n    \
                 pub fn new() -> Self {{\n        let mut t = Self::default();\n        \
                 t.struct_size = Self::STRUCT_SIZE;\n        t\n    }}\n}}",
                name = s.name
            );
        } else if s.derives_default && !s.has_struct_size_field {
            let _ = writeln!(
                out,
                "impl {name} {{\n    /// A zeroed value (this struct has no `struct_size`).\n    \
                 pub fn new() -> Self {{\n        Self::default()\n    }}\n}}",
                name = s.name
            );
        } else if s.has_struct_size_field {
            println!(
                "cargo:warning=pjrt-sys: {} has a struct_size field but no {const_name}; no new()",
                s.name
            );
        }
    }
    out
}

/// Names of all `pub const PJRT_*_STRUCT_SIZE` items.
fn struct_size_consts(bindings: &str) -> BTreeSet<String> {
    bindings
        .split("pub const ")
        .skip(1)
        .filter_map(|rest| rest.split(':').next())
        .map(str::trim)
        .filter(|name| name.starts_with("PJRT_") && name.ends_with("_STRUCT_SIZE"))
        .map(str::to_owned)
        .collect()
}

struct StructInfo {
    name: String,
    has_struct_size_field: bool,
    derives_default: bool,
}

/// Every `pub struct PJRT_* { ... }` with whether it has a `struct_size` field and derives (or
/// implements) `Default`.
fn structs(bindings: &str) -> Vec<StructInfo> {
    let mut out = Vec::new();
    let mut rest = bindings;
    while let Some(pos) = rest.find("pub struct PJRT_") {
        // The attributes just before the item (`#[derive(...)]`).
        let before = &rest[..pos];
        let attrs_start = before.rfind(['}', ';']).map_or(0, |i| i + 1);
        let attrs = &before[attrs_start..];
        let after = &rest[pos + "pub struct ".len()..];
        let name_end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = after[..name_end].to_owned();
        let body_start = name_end + after[name_end..].find(['{', ';', '(']).unwrap_or(0);
        let body = if after[body_start..].starts_with('{') {
            let end = after[body_start..]
                .find('}')
                .map_or(after.len(), |e| body_start + e);
            &after[body_start..end]
        } else {
            ""
        };
        let has_struct_size_field = body.contains("pub struct_size:");
        let derives_default = (attrs.contains("derive(") && attrs.contains("Default"))
            || bindings.contains(&format!("impl Default for {name} "));
        out.push(StructInfo {
            name,
            has_struct_size_field,
            derives_default,
        });
        rest = &after[name_end..];
    }
    out
}

fn generate_protos(manifest_dir: &Path, out_dir: &Path) {
    let protos = manifest_dir.join("protos");
    let file = protos.join("compile_options.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    println!("cargo:rerun-if-env-changed=PROTOC");
    prost_build::Config::new()
        .out_dir(out_dir)
        .include_file("protos.rs")
        .compile_protos(&[&file], &[&protos])
        .unwrap_or_else(|e| {
            panic!(
                "pjrt-sys: compiling {} failed: {e}. protoc is needed: run scripts/setup.sh \
                 (it installs protobuf-compiler) or set PROTOC to a protoc binary.",
                file.display()
            )
        });
}

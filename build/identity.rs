//! fxhlo's build identity: a blake3 hash of every source that decides what fxhlo emits or compiles.
//!
//! One file for the two places that need it: `build.rs`, which puts the hash into
//! `FXHLO_BUILD_HASH` (part of the compile cache's key), and the integration tests
//! (`tests/main.rs`, checked in `tests/suite/build_identity.rs` on small fake trees). Both take
//! it in with `#[path]`, so the tests exercise the very code the build runs.
//!
//! fxhlo's version alone is not enough: a changed lowering, pass or compile option under the same
//! version would be served the executables the old build compiled (torch_xla's stale-executable
//! bug, #7169).

use std::fs;
use std::path::{Path, PathBuf};

/// What is hashed, relative to the workspace root: folders (their `.rs` and `.proto` files,
/// recursively) and single files.
///
/// Every entry is here because a change to it can change an executable or the bytes that
/// produce one:
/// - `src`, `ir/src`, `frontend/src`, `passes/src`, `codegen/src`: import, passes and the
///   StableHLO that codegen emits;
/// - `runtime/src`: the compile options every executable is compiled with
///   (`CompileOptions::to_pjrt`, the ahead-of-time compile path);
/// - `runtime/pjrt-sys/protos`: the compile-options messages those options are encoded with
///   (field numbers and defaults are what the plugin reads);
/// - `runtime/pjrt-sys/build.rs`: how those messages are generated (maps as `BTreeMap`, so the
///   encoded options are the same bytes on every run);
/// - `Cargo.lock`: the versions of `pjrt`, `prost` and the MLIR bindings.
///
/// Left out on purpose: `runtime/pjrt-sys/src` (it only `include!`s the generated bindings and
/// declares the exception guard, `guard.cc`, which catches C++ exceptions and never changes what
/// is compiled) and the PJRT header (it ships with the plugin, whose platform name and version
/// are already the key's target part). Tests, docs, the CLI and the Python bridge do not
/// change what is compiled either. Hashing one file too many costs a cache miss after an
/// upgrade; one too few serves stale executables, so when unsure, add it here.
pub const SOURCES: &[&str] = &[
    "src",
    "ir/src",
    "frontend/src",
    "passes/src",
    "codegen/src",
    "runtime/src",
    "runtime/pjrt-sys/protos",
    "runtime/pjrt-sys/build.rs",
    "Cargo.lock",
];

/// The file extensions hashed inside a folder of [`SOURCES`]: Rust sources and the protobuf
/// definitions of the compile options.
const EXTENSIONS: &[&str] = &["rs", "proto"];

/// How many hex digits of the blake3 hash the identity keeps: 64 bits tell two builds apart,
/// and the identity is printed in cache-miss explanations, where a short one reads better.
const DIGITS: usize = 16;

/// The build identity of the tree at `root`: the first 16 hex digits of a blake3 hash over
/// every file [`inputs`] lists, each fed as its path relative to `root` (with `/` separators)
/// and its bytes, both length-prefixed so that no two trees feed the same stream.
///
/// A file that cannot be read is hashed as a marker instead of its bytes (the build that reads
/// it fails anyway; the identity still differs from that of the tree with the file readable).
pub fn identity(root: &Path, sources: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut feed = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for file in inputs(root, sources) {
        let rel = file.strip_prefix(root).unwrap_or(&file);
        let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        feed(rel.join("/").as_bytes());
        match fs::read(&file) {
            Ok(bytes) => feed(&bytes),
            Err(e) => feed(format!("unreadable: {:?}", e.kind()).as_bytes()),
        }
    }
    let hex = hasher.finalize().to_hex();
    hex[..DIGITS].to_string()
}

/// Every file the identity of `root` covers, sorted: each file entry of `sources` that exists,
/// and each `.rs`/`.proto` file under each folder entry. Entries that do not exist contribute
/// nothing (a fake tree in a test holds only some of them).
pub fn inputs(root: &Path, sources: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for source in sources {
        let path = root.join(source);
        if path.is_file() {
            files.push(path);
        } else {
            collect(&path, &mut files);
        }
    }
    // Sorted and deduplicated: the hash must not depend on `read_dir`'s order or on two
    // entries naming the same file.
    files.sort();
    files.dedup();
    files
}

/// Every file with one of [`EXTENSIONS`] under `dir`, recursively (none when `dir` does not
/// exist or cannot be read).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|x| EXTENSIONS.iter().any(|e| x == *e)) {
            out.push(path);
        }
    }
}

//! Build identity for the compile cache's key: a hash of every source file that decides what
//! fxhlo emits (the IR, the importer, the passes, codegen, the facade) and of Cargo.lock.
//! fxhlo's version alone is not enough: a changed lowering under the same version would be
//! served the executables the old one compiled (torch_xla's stale-executable bug, #7169).

use std::fs;
use std::path::{Path, PathBuf};

/// The folders whose sources change the executables fxhlo produces.
const SOURCES: &[&str] = &["src", "ir/src", "frontend/src", "passes/src", "codegen/src"];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let mut files = Vec::new();
    for dir in SOURCES {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(&dir, &mut files);
    }
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    files.push(lock);
    files.sort();
    // FNV-1a (64 bit): stable across toolchains and enough to tell two builds apart.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        feed(rel.to_string_lossy().as_bytes());
        feed(&fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=FXHLO_BUILD_HASH={hash:016x}");
}

/// Every `.rs` file under `dir`, recursively (none when it does not exist).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

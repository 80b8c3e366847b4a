//! Tests of fxhlo's build identity (`build/identity.rs`, the code build.rs runs) on small fake trees.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::identity::{identity, SOURCES};

/// A fresh folder under the system temp dir, removed on drop.
struct TempTree(PathBuf);

impl TempTree {
    /// A tree with one file in every source folder that matters, and some that do not.
    fn new() -> TempTree {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("fxhlo-build-identity-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let tree = TempTree(root);
        for (path, text) in [
            ("src/lib.rs", "pub mod pipeline;"),
            ("codegen/src/lower/mod.rs", "fn lower() {}"),
            ("runtime/src/executable.rs", "fn to_pjrt() { num_replicas = 1; }"),
            ("runtime/pjrt-sys/protos/compile_options.proto", "message CompileOptionsProto {}"),
            ("runtime/pjrt-sys/build.rs", "fn main() {}"),
            ("Cargo.lock", "version = 4"),
            ("README.md", "# fxhlo"),
            ("docs/cache.md", "the cache"),
            ("runtime/tests/client.rs", "#[test] fn t() {}"),
            ("runtime/pjrt-sys/src/guard.cc", "// guard"),
            ("src/notes.txt", "not a source"),
        ] {
            tree.write(path, text);
        }
        tree
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `rel` under the tree (creating folders). A failure fails the test.
    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        }
        fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The tree's identity under the build's own source list.
    fn identity(&self) -> String {
        identity(self.path(), SOURCES)
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn identity_changes_with_the_runtime_sources() {
    let tree = TempTree::new();
    let before = tree.identity();
    // A changed compile option must never be served the executables the old one compiled.
    tree.write("runtime/src/executable.rs", "fn to_pjrt() { num_replicas = 2; }");
    assert_ne!(tree.identity(), before, "a change under runtime/src left the build identity as it was");
    let before = tree.identity();
    tree.write("runtime/src/aot.rs", "fn compile() {}");
    assert_ne!(tree.identity(), before, "a new file under runtime/src left the build identity as it was");
}

#[test]
fn identity_changes_with_the_compiler_sources_and_the_compile_options_proto() {
    for (rel, text) in [
        ("src/lib.rs", "pub mod pipeline; pub mod cache;"),
        ("codegen/src/lower/mod.rs", "fn lower() { emit(); }"),
        ("passes/src/dce.rs", "fn run() {}"),
        ("runtime/pjrt-sys/protos/compile_options.proto", "message CompileOptionsProto { int64 x = 1; }"),
        ("runtime/pjrt-sys/build.rs", "fn main() { btree_map(); }"),
        ("Cargo.lock", "version = 4\n[[package]]"),
    ] {
        let tree = TempTree::new();
        let before = tree.identity();
        tree.write(rel, text);
        assert_ne!(tree.identity(), before, "changing {rel} left the build identity as it was");
    }
}

#[test]
fn identity_ignores_files_that_do_not_change_what_is_compiled() {
    let tree = TempTree::new();
    let before = tree.identity();
    for (rel, text) in [
        ("README.md", "# fxhlo, edited"),
        ("docs/cache.md", "the cache, edited"),
        ("runtime/tests/client.rs", "#[test] fn t2() {}"),
        ("runtime/pjrt-sys/src/guard.cc", "// guard, edited"),
        ("src/notes.txt", "still not a source"),
        ("cli/src/main.rs", "fn main() {}"),
    ] {
        tree.write(rel, text);
        assert_eq!(tree.identity(), before, "changing {rel} changed the build identity");
    }
}

#[test]
fn identity_is_deterministic_and_depends_on_file_names() {
    let tree = TempTree::new();
    let first = tree.identity();
    assert_eq!(tree.identity(), first);
    assert_eq!(first.len(), 16);
    assert!(first.chars().all(|c| c.is_ascii_hexdigit()), "{first}");
    // The same bytes under another name are another tree.
    fs::rename(tree.path().join("codegen/src/lower/mod.rs"), tree.path().join("codegen/src/lower/emit.rs"))
        .unwrap_or_else(|e| panic!("rename: {e}"));
    assert_ne!(tree.identity(), first);
}

#[test]
fn sources_name_the_runtime() {
    assert!(SOURCES.contains(&"runtime/src"), "SOURCES leaves out runtime/src: {SOURCES:?}");
}

/// Every workspace crate the fxhlo library depends on decides what it emits or compiles, so
/// its `src` must be hashed: a crate added to `[dependencies]` without its sources in
/// `SOURCES` would bring the stale-executable bug back.
#[test]
fn sources_cover_every_crate_fxhlo_depends_on() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let text = fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("read {}: {e}", manifest.display()));
    let section = |name: &str| -> Vec<String> {
        let header = format!("[{name}]");
        text.lines()
            .skip_while(|l| l.trim() != header)
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .map(str::to_string)
            .collect()
    };
    // `fxhlo-ir = { path = "ir" }` in [workspace.dependencies]: crate name -> folder.
    let folders: Vec<(String, String)> = section("workspace.dependencies")
        .iter()
        .filter_map(|line| {
            let (name, rest) = line.split_once('=')?;
            let path = rest.split("path = \"").nth(1)?.split('"').next()?;
            Some((name.trim().to_string(), path.to_string()))
        })
        .collect();
    let dependencies = section("dependencies");
    let mut checked = 0;
    for (name, folder) in &folders {
        if !dependencies.iter().any(|l| l.trim_start().starts_with(&format!("{name}."))) {
            continue;
        }
        let src = format!("{folder}/src");
        assert!(SOURCES.contains(&src.as_str()), "fxhlo depends on {name}, but SOURCES leaves out {src}: {SOURCES:?}");
        checked += 1;
    }
    // ir, frontend, passes, codegen, runtime: a parser that found none would prove nothing.
    assert!(checked >= 5, "found only {checked} workspace dependencies in {}", manifest.display());
}

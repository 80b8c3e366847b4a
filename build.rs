//! Build script: puts fxhlo's build identity (see `build/identity.rs`) into `FXHLO_BUILD_HASH`,
//! the build part of the compile cache's key.

use std::path::PathBuf;

#[path = "build/identity.rs"]
mod identity;

fn main() {
    // Cargo always sets CARGO_MANIFEST_DIR for build scripts; "." only serves a script run by hand.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    // A folder makes Cargo rerun the script when anything under it changes; the hash then
    // decides whether the identity did.
    for source in identity::SOURCES {
        println!("cargo:rerun-if-changed={}", root.join(source).display());
    }
    println!("cargo:rerun-if-changed=build/identity.rs");
    let hash = identity::identity(&root, identity::SOURCES);
    println!("cargo:rustc-env=FXHLO_BUILD_HASH={hash}");
}

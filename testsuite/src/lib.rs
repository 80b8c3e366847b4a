//! fxhlo's end-to-end test suite. The tests live in `tests/` (one binary, since every binary
//! that links codegen carries MLIR); this library only locates the fixtures.

use std::path::PathBuf;

/// The fixture folder (`testsuite/fixtures`), made by `scripts/gen_fixtures.py`.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

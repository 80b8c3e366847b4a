//! fxhlo's own integration tests (one test binary); end-to-end tests through codegen live in testsuite/.

/// The build identity, the very file `build.rs` runs.
#[path = "../build/identity.rs"]
mod identity;

mod suite;

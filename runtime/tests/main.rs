//! fxhlo-runtime integration tests against the real XLA CPU PJRT plugin (one test binary).
//!
//! The plugin comes from the workspace's `.venv` (scripts/setup.sh) or `FXHLO_PJRT_PLUGIN`.

mod suite;

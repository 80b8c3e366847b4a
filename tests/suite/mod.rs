//! The test modules, one per file.

mod build_identity;

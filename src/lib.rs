//! fxhlo: a graph compiler that serves as a `torch.compile` backend for PJRT devices.
//!
//! This crate is the facade every user calls (the CLI, the Python extension, Rust users): it
//! runs import → passes → codegen → runtime and owns the options that tie the stages together.
//!
//! ```no_run
//! use fxhlo::{Compiler, Options};
//! # fn main() -> Result<(), fxhlo::Error> {
//! let bundle = fxhlo::frontend::Bundle::open("model.fxt".as_ref())?;
//! let compiler = Compiler::new(Options::default())?;
//! let compiled = compiler.compile(&bundle.graph)?;
//! let outputs = compiled.run_bundle(&compiler, &bundle)?;
//! let report = fxhlo::check(&outputs, &bundle)?;
//! println!("{report}");
//! # Ok(()) }
//! ```

pub mod cache;
mod check;
mod compiler;
mod dump;
pub mod env;
mod error;
mod tensor;

pub use check::{check, compare, float64_key, CheckReport, OutputCheck, Rule, Tolerance, Values};
pub use cache::{CacheConfig, CacheKey, CacheMode, CacheStats, CompileCache, Tier};
pub use compiler::{lower, Checks, Compiled, Compiler, Frozen, InputSignature, Lowered, Options};
pub use dump::Dump;
pub use error::{Error, Result};
pub use tensor::{element_type, host_tensor};

pub use fxhlo_codegen as codegen;
pub use fxhlo_frontend as frontend;
pub use fxhlo_ir as ir;
pub use fxhlo_passes as passes;
pub use fxhlo_runtime as runtime;

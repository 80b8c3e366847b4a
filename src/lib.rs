//! fxhlo: a graph compiler that serves as a `torch.compile` backend for PJRT devices.
//!
//! This crate is the facade every user calls (the CLI, the Python extension, Rust users): it
//! runs import → passes → codegen → runtime and owns the options that tie the stages together.
//! The flow: [`Options`] → [`Pipeline`] (device-free, `Send + Sync`) → [`Lowered`] (StableHLO
//! and its [`CacheKey`]) → [`CompileCache`] → [`Session`] (one PJRT client on one thread).
//!
//! ```no_run
//! use fxhlo::{Options, Session};
//! # fn main() -> Result<(), fxhlo::Error> {
//! let bundle = fxhlo::frontend::Bundle::open("model.fxt".as_ref())?;
//! let session = Session::new(Options::default())?;
//! let compiled = session.compile(&bundle.graph, &Default::default(), None)?;   // from the cache when it has it
//! let outputs = compiled.run_bundle(&session, &bundle)?;
//! let report = fxhlo::check(&outputs, &bundle)?;
//! println!("{report}");
//! # Ok(()) }
//! ```

pub mod aot;
pub mod cache;
mod call;
mod check;
mod compile;
mod dump;
pub mod env;
mod error;
mod fault_hint;
mod pipeline;
pub mod repro;
mod resident;
mod session;
mod sharding;
mod tensor;

pub use cache::{CacheConfig, CacheKey, CacheMode, CacheStats, CompileCache, Tier};
pub use check::{check, compare, float64_key, CheckReport, OutputCheck, Rule, Tolerance, Values};
pub use dump::{export_failed, import_failed, stage_of, Dump, DumpConfig, DumpFilter, Report as DumpReport};
pub use error::{Error, Result};
pub use repro::Repro;
pub use pipeline::{frozen_weights, pass_target, passes_text, Checks, Frozen, InputSignature, Lowered, Options, Pipeline};
pub use resident::{LentView, ResidentWeights, WeightStamp};
pub use call::{split_bound, with_bound, Arg, Call, CallArgs, Compiled, Keep};
pub use session::{import_parsed, import_trace, open_bundle, Session};
pub use sharding::{SplitRule, TensorParallel};
pub use tensor::{element_type, host_tensor};

pub use fxhlo_codegen as codegen;
pub use fxhlo_frontend as frontend;
pub use fxhlo_ir as ir;
pub use fxhlo_passes as passes;
pub use fxhlo_runtime as runtime;

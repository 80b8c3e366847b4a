//! fxhlo's intermediate representation: a typed dataflow graph on petgraph.
//!
//! Every later stage (passes, codegen, cache keys) reads and writes [`Graph`]. Values are typed
//! by [`DType`] and a static shape; ops are the [`Op`] enum; [`verify()`] checks the invariants
//! and [`print()`] gives the stable text form used by dumps, golden tests and cache keys.

mod error;
mod graph;
pub mod infer;
mod op;
mod print;
mod types;
mod verify;

pub use error::{Error, Result};
pub use graph::{Graph, Node, NodeId, SourceLoc, Use, ValueRef};
pub use op::{InputKind, Op, Scalar};
pub use print::print;
pub use types::{DType, TensorType, UnknownDType};
pub use verify::verify;

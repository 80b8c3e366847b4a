//! fxhlo's intermediate representation: a typed dataflow graph on petgraph.
//!
//! Every later stage (passes, codegen, cache keys) reads and writes [`Graph`]. Values are typed
//! by [`DType`] and a static shape; ops are the [`Op`] enum; [`verify()`] checks the invariants
//! and [`print()`] gives the stable text form used by dumps, golden tests and cache keys.

mod attr;
mod dot;
mod error;
mod families;
mod graph;
pub mod infer;
mod op;
mod parts;
mod parse;
mod print;
mod types;
mod verify;

pub use dot::to_dot;
pub use error::{Error, Result};
pub use graph::{Graph, Node, NodeId, SourceLoc, Use, ValueRef};
pub use op::{BinaryOp, CompareOp, InputKind, Op, PadMode, ReduceOp, Scalar, ScatterReduce, UnaryOp};
pub use parse::parse;
pub use print::print;
pub use types::{DType, TensorType, UnknownDType};
pub use verify::verify;

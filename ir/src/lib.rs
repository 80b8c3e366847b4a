//! fxhlo's intermediate representation: a typed dataflow graph on petgraph.
//!
//! Every later stage (passes, codegen, cache keys) reads and writes [`Graph`]. Values are typed
//! by [`DType`] and a static shape; ops are the [`Op`] enum; [`verify()`] checks the invariants
//! and [`print()`] gives the stable text form used by dumps, golden tests and cache keys.

mod attr;
mod data;
mod dot;
mod error;
mod families;
mod graph;
pub mod infer;
pub mod layout;
mod name;
mod op;
mod parts;
mod parse;
mod print;
mod types;
mod verify;

/// The small-vector crate behind [`Shape`] and [`Results`], so that users build them with the
/// same version (`fxhlo_ir::smallvec::smallvec![2, 3]`).
pub use smallvec;

pub use data::{Bytes, TensorData};
pub use dot::{to_dot, to_dot_marked};
pub use error::{Error, Result};
pub use graph::{Graph, Node, NodeId, Results, SourceLoc, Use, ValueRef};
pub use name::Name;
pub use op::{BinaryOp, CompareOp, FftKind, InputKind, Op, PadMode, ReduceOp, Scalar, ScatterReduce, UnaryOp};
pub use parse::parse;
pub use print::{print, print_canonical};
pub use types::{DType, Shape, TensorType, UnknownDType};
pub use verify::{check_regions, verify};

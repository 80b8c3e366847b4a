//! Lowerings, one file per op family. Each takes the node's operands (already lowered) and
//! returns the MLIR values of its results.

pub mod creation;
pub mod elementwise;
pub mod matmul;
pub mod shape;

//! fxhlo's frontend: reads trace bundles written by the PyTorch exporter and turns them into a
//! validated [`fxhlo_ir::Graph`]. Never panics on bad input: every problem is an [`Error`]
//! naming the file and, where there is one, the node.

mod bundle;
mod error;
pub mod import;
pub mod schema;
mod weights;

pub use bundle::{parse_json, read_json, Bundle, GRAPH_JSON, REFERENCE, WEIGHTS};
pub use error::{Error, Result};
pub use weights::{TensorFile, TensorView};

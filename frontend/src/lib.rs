//! fxhlo's frontend: reads trace bundles written by the PyTorch exporter and turns them into a
//! validated [`fxhlo_ir::Graph`]. Never panics on bad input: every problem is an [`Error`]
//! naming the file and, where there is one, the node.

mod atomic;
mod aten;
mod bundle;
pub mod encoding;
mod error;
pub mod import;
pub mod schema;
mod weights;

pub use atomic::write_atomic;
pub use bundle::{read_bin, read_json, trace_file, Bundle, GRAPH_BIN, GRAPH_JSON, REFERENCE, WEIGHTS};
pub use encoding::{parse_bin, parse_bin_view, parse_json, to_bin, to_json};
pub use error::{Error, Result};
pub use weights::{TensorFile, TensorView};

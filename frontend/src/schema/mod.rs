//! The trace schema (version 1): the serde model of `graph.json` in a trace bundle.
//!
//! Modelled on `torch.export`'s serialized graph: inputs with a kind, nodes calling
//! `aten.<op>.<overload>` with typed arguments, per-value tensor meta, an output list. The
//! specification with an example is `docs/trace-format.md`; keep both in step and bump
//! [`SCHEMA_VERSION`] on any incompatible change.

pub(crate) mod decode;
mod scalars;
mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use scalars::{Dim, F64};
pub use view::{ArgView, DimView, InputView, MetaView, NodeView, SourceView, Span, SubgraphView, TraceView};

/// The `format` field every trace carries.
pub const FORMAT: &str = "fxhlo-trace";
/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole trace: one FX graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// Always [`FORMAT`].
    pub format: String,
    /// Schema version; must equal [`SCHEMA_VERSION`].
    pub version: u32,
    /// The model's name (becomes the graph's name).
    pub name: String,
    /// The decomposition table that produced the graph (e.g. `core_aten`).
    #[serde(default)]
    pub decomposition_table: Option<String>,
    /// Graph inputs (FX placeholders), in calling order.
    pub inputs: Vec<InputSpec>,
    /// Nodes in FX order (every argument refers to an input or an earlier node).
    pub nodes: Vec<NodeSpec>,
    /// The values the graph returns, in order.
    pub outputs: Vec<Arg>,
    /// The graphs its control-flow nodes run (`higher_order.cond`'s branches,
    /// `higher_order.while_loop`'s condition and body), named by `{"graph": name}` arguments.
    /// Absent in JSON when there are none.
    #[serde(default)]
    pub subgraphs: Vec<SubgraphSpec>,
}

/// A graph run by a control-flow node: FX's sub-`GraphModule` of `torch.cond` or
/// `torch.while_loop`. Its inputs are its arguments (kind `user_input`, no weight); its nodes
/// refer to its own inputs and nodes only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubgraphSpec {
    /// Unique among the trace's subgraphs.
    pub name: String,
    pub inputs: Vec<InputSpec>,
    pub nodes: Vec<NodeSpec>,
    pub outputs: Vec<Arg>,
}

/// The kind of a graph input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKindSpec {
    UserInput,
    Parameter,
    Buffer,
    Constant,
}

/// One graph input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// The FX placeholder name (unique among inputs and nodes).
    pub name: String,
    pub kind: InputKindSpec,
    /// For parameters, buffers and constants: the tensor's key in `weights.safetensors`
    /// (its fully qualified name, e.g. `layers.0.weight`).
    #[serde(default)]
    pub weight: Option<String>,
    pub meta: TensorMeta,
}

/// Per-value tensor metadata, as FX's `node.meta["val"]` has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorMeta {
    /// `f32`, `bf16`, `i64`, `bool`, ... (see `ir::DType`).
    pub dtype: String,
    /// Sizes. A symbolic size parses (so the error can name it) and is rejected on import:
    /// fxhlo specializes shapes.
    pub sizes: Vec<Dim>,
    /// Strides in elements.
    pub strides: Vec<i64>,
    #[serde(default)]
    pub storage_offset: i64,
}

/// A user-source location (from FX's stack trace).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    pub file: String,
    pub line: u32,
}

/// One FX `call_function` node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// The FX node name (unique).
    pub name: String,
    /// `aten.<op>.<overload>`, or `getitem`.
    pub target: String,
    /// Positional arguments.
    pub args: Vec<Arg>,
    /// Keyword arguments, sorted by name.
    #[serde(default)]
    pub kwargs: BTreeMap<String, Arg>,
    /// One meta per result (one for single-result ops); `null` where the op returns `None`
    /// in that position.
    pub meta: Vec<Option<TensorMeta>>,
    #[serde(default)]
    pub source: Option<SourceSpec>,
}

/// A typed argument. Externally tagged (`{"tensor": "x"}`, `{"int": 3}`, `"none"`) so that
/// both JSON and bincode encode it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arg {
    /// A reference to a value: an input or node name (`name` for the first result).
    Tensor(String),
    Tensors(Vec<String>),
    /// A list of optional tensors (`Tensor?[]`, e.g. the indices of `aten.index`), `null` for
    /// an absent entry.
    OptionalTensors(Vec<Option<String>>),
    Int(i64),
    Ints(Vec<i64>),
    Float(F64),
    Floats(Vec<F64>),
    Bool(bool),
    Bools(Vec<bool>),
    String(String),
    /// A `torch.dtype`, by IR name (`f32`, ...).
    Dtype(String),
    /// A `torch.device`, e.g. `cpu`.
    Device(String),
    /// A `torch.memory_format`, e.g. `contiguous_format`.
    MemoryFormat(String),
    None,
    /// A subgraph of the trace, by name (the branches and bodies of control-flow nodes).
    Graph(String),
}

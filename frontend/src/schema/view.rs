//! A borrowed view of a trace: the schema with every string a `&'a str` into the bytes it was
//! decoded from, and every list a [`Span`] into a few flat pools. It is what the importer reads.
//!
//! Decoding `graph.bin` into a [`TraceView`] ([`crate::encoding::parse_bin_view`], the decoder
//! in `decode.rs`) copies no string and allocates only the pools, a handful of growing vectors
//! for the whole trace instead of several small ones per node. A [`Trace`] (from JSON, or built
//! in memory) lends itself as a view with [`TraceView::of`], so that one importer serves both
//! encodings. Strides are not kept (fxhlo has no layouts and the importer never reads them);
//! the decoder still checks that they are well formed.

use super::{Arg, Dim, InputKindSpec, Trace};

/// A range of one of the view's pools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// A whole trace, borrowed. Field for field [`Trace`], lists in the pools.
#[derive(Clone, Debug, Default)]
pub struct TraceView<'a> {
    pub format: &'a str,
    pub version: u32,
    pub name: &'a str,
    pub decomposition_table: Option<&'a str>,
    pub inputs: Vec<InputView<'a>>,
    pub nodes: Vec<NodeView<'a>>,
    /// A span of the argument pool.
    pub outputs: Span,
    pub subgraphs: Vec<SubgraphView<'a>>,
    pub(crate) pools: Pools<'a>,
}

/// One subgraph ([`super::SubgraphSpec`]), borrowed; its lists share the trace's pools.
#[derive(Clone, Debug, Default)]
pub struct SubgraphView<'a> {
    pub name: &'a str,
    pub inputs: Vec<InputView<'a>>,
    pub nodes: Vec<NodeView<'a>>,
    pub outputs: Span,
}

/// The flat storage behind every [`Span`] of one view.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pools<'a> {
    pub args: Vec<ArgView<'a>>,
    pub kwargs: Vec<(&'a str, ArgView<'a>)>,
    pub metas: Vec<Option<MetaView<'a>>>,
    pub dims: Vec<DimView<'a>>,
    pub names: Vec<Option<&'a str>>,
    pub ints: Vec<i64>,
    pub floats: Vec<f64>,
    pub bools: Vec<bool>,
}

/// One graph input, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct InputView<'a> {
    pub name: &'a str,
    pub kind: InputKindSpec,
    pub weight: Option<&'a str>,
    pub meta: MetaView<'a>,
}

/// Tensor metadata, borrowed and without the strides; `sizes` spans the dimension pool.
#[derive(Clone, Copy, Debug)]
pub struct MetaView<'a> {
    pub dtype: &'a str,
    pub sizes: Span,
    pub storage_offset: i64,
}

/// One dimension ([`Dim`]), borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimView<'a> {
    Static(i64),
    Symbolic(&'a str),
}

/// A source location, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct SourceView<'a> {
    pub file: &'a str,
    pub line: u32,
}

/// One node, borrowed. `kwargs` are sorted by name, a repeated name keeping its last value (as
/// the `BTreeMap` of [`super::NodeSpec`] decodes them).
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'a> {
    pub name: &'a str,
    pub target: &'a str,
    pub args: Span,
    pub kwargs: Span,
    pub meta: Span,
    pub source: Option<SourceView<'a>>,
}

/// A typed argument, borrowed ([`Arg`], variants in the same order); lists span the pools.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgView<'a> {
    Tensor(&'a str),
    /// Spans the name pool (every entry `Some`).
    Tensors(Span),
    OptionalTensors(Span),
    Int(i64),
    Ints(Span),
    Float(f64),
    Floats(Span),
    Bool(bool),
    Bools(Span),
    String(&'a str),
    Dtype(&'a str),
    Device(&'a str),
    MemoryFormat(&'a str),
    None,
    Graph(&'a str),
}

impl ArgView<'_> {
    /// The argument's kind as the JSON encoding tags it (`tensor`, `ints`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            ArgView::Tensor(_) => "tensor",
            ArgView::Tensors(_) => "tensors",
            ArgView::OptionalTensors(_) => "optional_tensors",
            ArgView::Int(_) => "int",
            ArgView::Ints(_) => "ints",
            ArgView::Float(_) => "float",
            ArgView::Floats(_) => "floats",
            ArgView::Bool(_) => "bool",
            ArgView::Bools(_) => "bools",
            ArgView::String(_) => "string",
            ArgView::Dtype(_) => "dtype",
            ArgView::Device(_) => "device",
            ArgView::MemoryFormat(_) => "memory_format",
            ArgView::None => "none",
            ArgView::Graph(_) => "graph",
        }
    }
}

impl<'a> TraceView<'a> {
    /// A node's positional arguments.
    pub fn args(&self, span: Span) -> &[ArgView<'a>] {
        &self.pools.args[span.range()]
    }
    /// A node's keyword arguments, sorted by name.
    pub fn kwargs(&self, node: &NodeView) -> &[(&'a str, ArgView<'a>)] {
        &self.pools.kwargs[node.kwargs.range()]
    }
    /// A node's result metas.
    pub fn metas(&self, node: &NodeView) -> &[Option<MetaView<'a>>] {
        &self.pools.metas[node.meta.range()]
    }
    /// A meta's sizes.
    pub fn sizes(&self, meta: &MetaView) -> &[DimView<'a>] {
        &self.pools.dims[meta.sizes.range()]
    }
    /// The names of a `Tensors` or `OptionalTensors` argument.
    pub fn names(&self, span: Span) -> &[Option<&'a str>] {
        &self.pools.names[span.range()]
    }
    /// The values of an `Ints` argument.
    pub fn ints(&self, span: Span) -> &[i64] {
        &self.pools.ints[span.range()]
    }

    /// The view of an owned trace: strings borrowed, lists copied into the pools.
    pub fn of(t: &'a Trace) -> Self {
        let mut v = TraceView {
            format: &t.format,
            version: t.version,
            name: &t.name,
            decomposition_table: t.decomposition_table.as_deref(),
            ..Default::default()
        };
        v.inputs = v.pools.inputs(&t.inputs);
        v.nodes = v.pools.nodes(&t.nodes);
        v.outputs = v.pools.push_args(t.outputs.iter());
        for g in &t.subgraphs {
            let (inputs, nodes) = (v.pools.inputs(&g.inputs), v.pools.nodes(&g.nodes));
            let outputs = v.pools.push_args(g.outputs.iter());
            v.subgraphs.push(SubgraphView { name: &g.name, inputs, nodes, outputs });
        }
        v
    }

    /// The subgraph named `name`.
    pub fn subgraph(&self, name: &str) -> Option<&SubgraphView<'a>> {
        self.subgraphs.iter().find(|g| g.name == name)
    }
}

/// The span `start..end` of a pool (pools never outgrow `u32`: see `decode.rs`).
pub(crate) fn span(start: usize, end: usize) -> Span {
    Span { start: start as u32, len: (end - start) as u32 }
}

impl<'a> Pools<'a> {
    fn inputs(&mut self, inputs: &'a [super::InputSpec]) -> Vec<InputView<'a>> {
        inputs
            .iter()
            .map(|i| InputView { name: &i.name, kind: i.kind, weight: i.weight.as_deref(), meta: self.meta(&i.meta) })
            .collect()
    }

    fn nodes(&mut self, nodes: &'a [super::NodeSpec]) -> Vec<NodeView<'a>> {
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            let args = self.push_args(n.args.iter());
            let start = self.kwargs.len();
            for (k, a) in &n.kwargs {
                let a = self.arg(a);
                self.kwargs.push((k, a));
            }
            let kwargs = span(start, self.kwargs.len());
            let start = self.metas.len();
            for m in &n.meta {
                let m = m.as_ref().map(|m| self.meta(m));
                self.metas.push(m);
            }
            let meta = span(start, self.metas.len());
            let source = n.source.as_ref().map(|s| SourceView { file: &s.file, line: s.line });
            out.push(NodeView { name: &n.name, target: &n.target, args, kwargs, meta, source });
        }
        out
    }

    fn push_args(&mut self, args: impl Iterator<Item = &'a Arg>) -> Span {
        let start = self.args.len();
        for a in args {
            let a = self.arg(a);
            self.args.push(a);
        }
        span(start, self.args.len())
    }

    fn meta(&mut self, m: &'a super::TensorMeta) -> MetaView<'a> {
        let start = self.dims.len();
        self.dims.extend(m.sizes.iter().map(|d| match d {
            Dim::Static(v) => DimView::Static(*v),
            Dim::Symbolic(s) => DimView::Symbolic(s),
        }));
        MetaView { dtype: &m.dtype, sizes: span(start, self.dims.len()), storage_offset: m.storage_offset }
    }

    fn arg(&mut self, a: &'a Arg) -> ArgView<'a> {
        macro_rules! list {
            ($pool:ident, $items:expr) => {{
                let start = self.$pool.len();
                self.$pool.extend($items);
                span(start, self.$pool.len())
            }};
        }
        match a {
            Arg::Tensor(n) => ArgView::Tensor(n),
            Arg::Tensors(ns) => ArgView::Tensors(list!(names, ns.iter().map(|n| Some(n.as_str())))),
            Arg::OptionalTensors(ns) => ArgView::OptionalTensors(list!(names, ns.iter().map(Option::as_deref))),
            Arg::Int(v) => ArgView::Int(*v),
            Arg::Ints(v) => ArgView::Ints(list!(ints, v.iter().copied())),
            Arg::Float(v) => ArgView::Float(v.0),
            Arg::Floats(v) => ArgView::Floats(list!(floats, v.iter().map(|f| f.0))),
            Arg::Bool(v) => ArgView::Bool(*v),
            Arg::Bools(v) => ArgView::Bools(list!(bools, v.iter().copied())),
            Arg::String(s) => ArgView::String(s),
            Arg::Dtype(s) => ArgView::Dtype(s),
            Arg::Device(s) => ArgView::Device(s),
            Arg::MemoryFormat(s) => ArgView::MemoryFormat(s),
            Arg::None => ArgView::None,
            Arg::Graph(s) => ArgView::Graph(s),
        }
    }
}

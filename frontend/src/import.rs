//! Trace → `ir::Graph`: resolves names, maps ATen calls to `ir::Op` (see `aten/`) and checks
//! every node's meta against shape inference, so that the graph it returns is verified.
//!
//! Scalars in tensor positions become 0-d `full` nodes named `<node>.scalar<i>`, typed as
//! PyTorch types a wrapped number (the tensor's dtype unless the scalar is of a higher
//! category, then the default dtype). `getitem` nodes become aliases of one result of their
//! producer and leave no node behind.
//!
//! The importer reads a [`TraceView`]: decoded straight from `graph.bin` (nothing copied but
//! what the graph keeps) or lent by an owned [`Trace`] from JSON. Its own checks establish
//! every invariant of [`fxhlo_ir::verify`], which a release build therefore does not re-run
//! (it would redo the shape inference just done); debug builds and the tests run it anyway,
//! and an error from it means a gap in this list:
//!
//! 1. unique names: every node (and every `getitem` alias) is entered in the name map, which
//!    refuses a second entry ([`Error::DuplicateName`]), generated `full` names included;
//! 2. operand slots `0..n`: `Graph::add_node` numbers them; the arity is checked by
//!    `infer::infer`, called for every node the importer adds except 0-d `full` nodes (no
//!    operands);
//! 3. existing operands: names resolve only to values already added, `getitem` checks the
//!    result index, and `Graph::add_node` checks each operand again;
//! 4. acyclic: an operand is always an earlier node (references resolve only to the past);
//! 5. at least one result and no negative dimension: [`Importer::node`] and
//!    [`Importer::tensor_type`]; inferred types of generated nodes broadcast non-negative
//!    shapes;
//! 6. inputs: only trace inputs become `Op::Input` nodes, each added once by
//!    `Graph::add_input` (no ATen mapping yields `Op::Input`);
//! 7. result types equal inference: every meta is compared with `infer::infer`; generated
//!    nodes take their types from it;
//! 8. at least one output: checked in [`import_view`].

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use fxhlo_ir::smallvec::smallvec;
use fxhlo_ir::{infer, BinaryOp, DType, Graph, InputKind, Op, Results, Scalar, Shape, SourceLoc, TensorType, ValueRef};
use rustc_hash::FxBuildHasher;

use crate::aten::{self, Mapped, Operand};
use crate::schema::{ArgView, DimView, InputKindSpec, InputView, MetaView, NodeView, Span, Trace, TraceView, FORMAT, SCHEMA_VERSION};
use crate::{Error, Result};

/// Builds and verifies the graph of `trace`; `path` names the file in errors.
pub fn import(trace: &Trace, path: &Path) -> Result<Graph> {
    import_view(&TraceView::of(trace), path)
}

/// Builds and verifies the graph of a borrowed trace (from [`crate::parse_bin_view`], or
/// [`TraceView::of`] a [`Trace`]); `path` names the file in errors.
pub fn import_view<'a>(trace: &'a TraceView<'a>, path: &Path) -> Result<Graph> {
    if trace.format != FORMAT {
        return Err(Error::Format { path: path.into(), found: trace.format.into() });
    }
    if trace.version != SCHEMA_VERSION {
        return Err(Error::Version { path: path.into(), found: trace.version, supported: SCHEMA_VERSION });
    }
    let graph = import_graph(trace, path, trace.name, &trace.inputs, &trace.nodes, trace.outputs, 0)?;
    // The checks above cover every invariant (module doc); debug builds make sure of it.
    #[cfg(debug_assertions)]
    fxhlo_ir::verify(&graph).map_err(|source| Error::Ir { path: path.into(), source })?;
    Ok(graph)
}

/// How deeply control-flow subgraphs may nest (a trace whose subgraph runs itself would
/// otherwise recurse until the stack overflows).
const MAX_NESTING: usize = 32;

/// The graph of one list of inputs, nodes and outputs of `trace`: the trace's own, or a
/// subgraph's (`depth` levels of control flow down), with the subgraphs it runs as regions.
fn import_graph<'a>(
    trace: &'a TraceView<'a>,
    path: &Path,
    name: &str,
    inputs: &'a [InputView<'a>],
    nodes: &'a [NodeView<'a>],
    outputs: Span,
    depth: usize,
) -> Result<Graph> {
    let n = inputs.len() + nodes.len();
    let mut cx = Importer {
        view: trace,
        path,
        graph: Graph::with_capacity(name, n, 2 * nodes.len()),
        values: HashMap::with_capacity_and_hasher(n, FxBuildHasher),
        operands: Vec::new(),
        files: Vec::new(),
        last: None,
        depth,
        expanded: HashMap::default(),
    };
    for input in inputs {
        let ty = cx.tensor_type(input.name, &input.meta)?;
        let kind = match input.kind {
            InputKindSpec::UserInput => InputKind::UserInput,
            InputKindSpec::Parameter => InputKind::Parameter,
            InputKindSpec::Buffer => InputKind::Buffer,
            InputKindSpec::Constant => InputKind::Constant,
        };
        let id = cx.graph.add_input(input.name, kind, input.weight.map(str::to_string), ty, None);
        cx.define(Cow::Borrowed(input.name), ValueRef::first(id))?;
    }
    for node in nodes {
        cx.node(node)?;
    }
    let output_error = |message: String| Error::BadArgument {
        path: path.into(),
        node: "output".into(),
        target: if depth == 0 { "output".into() } else { format!("output of subgraph {name}") },
        message,
    };
    let mut values = Vec::with_capacity(outputs.len as usize);
    for arg in trace.args(outputs) {
        match arg {
            ArgView::Tensor(name) => values.push(cx.value("output", name)?),
            other => return Err(output_error(format!("graph outputs must be tensors, found a `{}` argument", other.kind()))),
        }
    }
    if values.is_empty() {
        return Err(output_error("the graph has no outputs".into()));
    }
    cx.graph.set_outputs(values).map_err(|source| Error::Ir { path: path.into(), source })?;
    Ok(cx.graph)
}

/// Names are borrowed from the trace, except those of generated nodes (`mul.scalar1`).
/// FxHash rather than SipHash: the map is looked up several times per node and its keys are
/// short; a trace crafted for collisions can slow its own import down, nothing else.
type Values<'a> = HashMap<Cow<'a, str>, ValueRef, FxBuildHasher>;

struct Importer<'a, 'p> {
    view: &'a TraceView<'a>,
    path: &'p Path,
    graph: Graph,
    values: Values<'a>,
    /// The operands of the node being added, reused from node to node.
    operands: Vec<ValueRef>,
    /// Source files seen so far, most recent last: nodes share one `Arc<str>` per file.
    files: Vec<(&'a str, Arc<str>)>,
    /// The trace name defined last and its value.
    last: Option<(&'a str, ValueRef)>,
    /// How many control-flow levels down this graph is (0: the trace's own).
    depth: usize,
    /// The results of each node imported as several ops ([`Mapped::Expanded`]), by trace name:
    /// `getitem` reads them here (`None`: a result that is not a tensor).
    expanded: HashMap<&'a str, Vec<Option<ValueRef>>, FxBuildHasher>,
}

impl<'a> Importer<'a, '_> {
    fn define(&mut self, name: Cow<'a, str>, v: ValueRef) -> Result<()> {
        if let Cow::Borrowed(n) = name {
            self.last = Some((n, v));
        }
        match self.values.entry(name) {
            Entry::Occupied(e) => Err(Error::DuplicateName { path: self.path.into(), name: e.key().to_string() }),
            Entry::Vacant(e) => {
                e.insert(v);
                Ok(())
            }
        }
    }

    fn value(&self, node: &str, name: &str) -> Result<ValueRef> {
        // Most operands are the value just defined (a chain of ops): no hashing for those.
        // Names are unique, so the last one defined maps to `v` for as long as the import runs
        // (a duplicate fails the import).
        if let Some((last, v)) = self.last {
            if last == name {
                return Ok(v);
            }
        }
        self.values.get(name).copied().ok_or_else(|| Error::UnknownValue {
            path: self.path.into(),
            node: node.into(),
            name: name.into(),
        })
    }

    fn tensor_type(&self, node: &str, meta: &MetaView) -> Result<TensorType> {
        let dtype: DType = meta
            .dtype
            .parse()
            .map_err(|source| Error::DType { path: self.path.into(), node: node.into(), source })?;
        let sizes = self.view.sizes(meta);
        let mut shape = Shape::new();
        for (dim, d) in sizes.iter().enumerate() {
            match *d {
                DimView::Static(v) if v >= 0 => shape.push(v),
                DimView::Static(v) => {
                    return Err(Error::BadArgument {
                        path: self.path.into(),
                        node: node.into(),
                        target: "meta".into(),
                        message: format!("negative size {v} at dim {dim}"),
                    })
                }
                DimView::Symbolic(size) => {
                    return Err(Error::SymbolicSize { path: self.path.into(), node: node.into(), dim, size: size.into() })
                }
            }
        }
        let ty = TensorType::new(dtype, shape);
        if ty.checked_size_bytes().is_none() {
            return Err(Error::TooLarge { path: self.path.into(), node: node.into(), ty: ty.to_string() });
        }
        Ok(ty)
    }

    fn err(&self, spec: &NodeView, message: String) -> Error {
        Error::BadArgument { path: self.path.into(), node: spec.name.into(), target: spec.target.into(), message }
    }

    fn node(&mut self, spec: &'a NodeView<'a>) -> Result<()> {
        let metas = self.view.metas(spec);
        let mut results = Results::new();
        // Only when some result is not a tensor: every result's type, `None` at those.
        let mut partial: Vec<Option<TensorType>> = Vec::new();
        for (i, m) in metas.iter().enumerate() {
            match m {
                Some(m) => {
                    let t = self.tensor_type(spec.name, m)?;
                    if !partial.is_empty() {
                        partial.push(Some(t.clone()));
                    }
                    results.push(t);
                }
                None => {
                    if partial.is_empty() {
                        partial.extend(results.iter().cloned().map(Some));
                    }
                    partial.push(None);
                    // `partial` now has i + 1 entries.
                    debug_assert_eq!(partial.len(), i + 1);
                }
            }
        }
        if results.is_empty() {
            return Err(self.err(spec, "node has no result meta".into()));
        }
        if matches!(spec.target, "higher_order.cond" | "higher_order.while_loop") {
            return self.control_flow(spec, results);
        }
        let mut operands = std::mem::take(&mut self.operands);
        operands.clear();
        let mapped = {
            let operand_type = |name: &str| self.value(spec.name, name).ok().and_then(|v| self.graph.value_type(v)).cloned();
            let complete: &[TensorType] = if partial.is_empty() { &results } else { &[] };
            aten::map(self.view, spec, complete, &partial, &operand_type)
        };
        let op = match mapped {
            Mapped::Expanded(x) => {
                self.operands = operands;
                return self.expanded(spec, x, &results, &partial);
            }
            // Every IR value is a tensor; ops returning None or a number (training-only
            // variants) have no inference use, so they are refused here with their name.
            _ if partial.iter().any(Option::is_none) => {
                let i = partial.iter().position(Option::is_none).unwrap_or_default();
                return Err(self.err(spec, format!("result {i} is not a tensor; fxhlo supports only ops whose results are all tensors")));
            }
            Mapped::GetItem(producer, index) => return self.getitem(spec, producer, index, &results),
            Mapped::Op(op, mapped) => {
                self.operands_into(spec, &mapped, &mut operands)?;
                op
            }
            Mapped::Unknown(why) => {
                self.all_tensor_args(spec, &mut operands)?;
                Op::Unknown { target: spec.target.into(), reason: why.into_reason() }
            }
        };
        // On the stack for up to 4 operands (almost every op), not a vector per node; unused
        // slots hold a placeholder (the node's own first type) and are never read.
        let mut stack = [&results[0]; 4];
        let mut heap = Vec::new();
        let types: &[&TensorType] = if operands.len() <= stack.len() {
            let mut n = 0;
            for t in operands.iter().filter_map(|v| self.graph.value_type(*v)) {
                stack[n] = t;
                n += 1;
            }
            &stack[..n]
        } else {
            heap.extend(operands.iter().filter_map(|v| self.graph.value_type(*v)));
            &heap
        };
        match infer::infer(&op, types) {
            // Auxiliary results whose form depends on the device (norm statistics) follow the
            // meta where it shows one of the forms PyTorch's kernels give (`infer::agrees`).
            Ok(Some(inferred)) if !infer::agrees(&op, types, &inferred, &results) => return Err(self.mismatch(spec, &results, &inferred)),
            Ok(_) => {}
            Err(message) => return Err(self.err(spec, message)),
        }
        let source = spec.source.as_ref().map(|s| SourceLoc { file: self.file(s.file), line: s.line });
        let id = self
            .graph
            .add_node(spec.name, op, &operands, results, source)
            .map_err(|source| Error::Ir { path: self.path.into(), source })?;
        self.operands = operands;
        self.define(Cow::Borrowed(spec.name), ValueRef::first(id))
    }

    /// `higher_order.cond(pred, then, else, operands)` or `higher_order.while_loop(cond, body,
    /// carried, additional)`: the subgraphs become regions of the graph, checked against the
    /// node's operands and results.
    fn control_flow(&mut self, spec: &'a NodeView<'a>, results: Results) -> Result<()> {
        let args = self.view.args(spec.args);
        let subgraph = |i: usize| match args.get(i) {
            Some(ArgView::Graph(name)) => Ok(*name),
            _ => Err(self.err(spec, format!("argument {i} must be a subgraph (`{{\"graph\": name}}`)"))),
        };
        let tensors = |i: usize| -> Result<Vec<ValueRef>> {
            match args.get(i) {
                Some(ArgView::Tensors(span)) => {
                    self.view.names(*span).iter().flatten().map(|n| self.value(spec.name, n)).collect()
                }
                _ => Err(self.err(spec, format!("argument {i} must be a list of tensors"))),
            }
        };
        let (op, operands) = if spec.target == "higher_order.cond" {
            let pred = match args.first() {
                Some(ArgView::Tensor(name)) => self.value(spec.name, name)?,
                _ => return Err(self.err(spec, "the predicate (argument 0) must be a tensor".into())),
            };
            let (then_graph, else_graph, rest) = (subgraph(1)?, subgraph(2)?, tensors(3)?);
            let op = Op::Cond { then_region: self.region(spec, then_graph)?, else_region: self.region(spec, else_graph)? };
            (op, std::iter::once(pred).chain(rest).collect::<Vec<_>>())
        } else {
            let (cond_graph, body_graph) = (subgraph(0)?, subgraph(1)?);
            let mut operands = tensors(2)?;
            operands.extend(tensors(3)?);
            (Op::While { cond: self.region(spec, cond_graph)?, body: self.region(spec, body_graph)? }, operands)
        };
        let source = spec.source.as_ref().map(|s| SourceLoc { file: self.file(s.file), line: s.line });
        let id = self
            .graph
            .add_node(spec.name, op, &operands, results, source)
            .map_err(|source| Error::Ir { path: self.path.into(), source })?;
        fxhlo_ir::check_regions(&self.graph, id).map_err(|message| self.err(spec, message))?;
        self.define(Cow::Borrowed(spec.name), ValueRef::first(id))
    }

    /// Imports the subgraph `name` as a region of the graph; its index.
    fn region(&mut self, spec: &NodeView, name: &str) -> Result<u32> {
        if self.depth >= MAX_NESTING {
            return Err(self.err(spec, format!("control flow nested more than {MAX_NESTING} deep (does subgraph `{name}` run itself?)")));
        }
        let view = self.view;
        let sub = view.subgraph(name).ok_or_else(|| self.err(spec, format!("the trace has no subgraph `{name}`")))?;
        let region = import_graph(view, self.path, name, &sub.inputs, &sub.nodes, sub.outputs, self.depth + 1)?;
        Ok(self.graph.add_region(region))
    }

    /// The shared name of a source file: the last one used, or an earlier one, or a new one.
    /// A trace names few files (its model's modules), nodes of one file mostly in a row.
    fn file(&mut self, file: &'a str) -> Arc<str> {
        if let Some((_, shared)) = self.files.iter().rev().find(|(f, _)| *f == file) {
            return shared.clone();
        }
        let shared: Arc<str> = file.into();
        self.files.push((file, shared.clone()));
        shared
    }

    fn mismatch(&self, spec: &NodeView, meta: &[TensorType], inferred: &[TensorType]) -> Error {
        let fmt = |v: &[TensorType]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        Error::MetaMismatch {
            path: self.path.into(),
            node: spec.name.into(),
            target: spec.target.into(),
            meta: fmt(meta),
            inferred: fmt(inferred),
        }
    }

    /// A node imported as the ops of `x` (see [`crate::aten::Expansion`]): each op named
    /// `<node>.<step>` with the node's source line, its type inferred (or given, for `full`
    /// and `arange`); each result the expansion gives must have the type of the node's meta.
    fn expanded(&mut self, spec: &'a NodeView<'a>, x: aten::Expansion<'a>, results: &[TensorType], partial: &[Option<TensorType>]) -> Result<()> {
        let source = spec.source.as_ref().map(|s| SourceLoc { file: self.file(s.file), line: s.line });
        let mut values: Vec<ValueRef> = Vec::with_capacity(x.steps.len());
        for step in x.steps {
            let mut operands = Vec::with_capacity(step.operands.len());
            for src in &step.operands {
                operands.push(match *src {
                    aten::Src::Value(n) => self.value(spec.name, n)?,
                    aten::Src::Step(i) => *values.get(i).ok_or_else(|| self.err(spec, format!("step `{}` reads a later step", step.name)))?,
                });
            }
            let types: Vec<&TensorType> = operands.iter().filter_map(|v| self.graph.value_type(*v)).collect();
            let types = match infer::infer(&step.op, &types) {
                Ok(Some(inferred)) => inferred,
                Ok(None) => match step.ty {
                    Some(t) => smallvec![t],
                    None => return Err(self.err(spec, format!("step `{}` ({}) has no type", step.name, step.op.name()))),
                },
                Err(message) => return Err(self.err(spec, format!("step `{}`: {message}", step.name))),
            };
            let name = format!("{}.{}", spec.name, step.name);
            let id = self
                .graph
                .add_node(name.clone(), step.op, &operands, types, source.clone())
                .map_err(|source| Error::Ir { path: self.path.into(), source })?;
            self.define(Cow::Owned(name), ValueRef::first(id))?;
            values.push(ValueRef::first(id));
        }
        let meta = |i: usize| if partial.is_empty() { results.get(i) } else { partial.get(i).and_then(Option::as_ref) };
        let mut outs = Vec::with_capacity(x.results.len());
        for (i, r) in x.results.iter().enumerate() {
            let Some(j) = r else {
                outs.push(None);
                continue;
            };
            let v = *values.get(*j).ok_or_else(|| self.err(spec, format!("result {i} names a missing step")))?;
            match (self.graph.value_type(v), meta(i)) {
                (Some(t), Some(m)) if t == m => outs.push(Some(v)),
                (t, m) => {
                    let found = t.map_or("nothing".into(), |t| t.to_string());
                    let want = m.map_or("no tensor".into(), |m| m.to_string());
                    return Err(self.err(spec, format!("result {i}: the meta says {want} but the expansion gives {found}")));
                }
            }
        }
        let main = outs.first().copied().flatten().ok_or_else(|| self.err(spec, "the expansion gives no output".into()))?;
        // The node's own name stands for its main result (and is reserved, like any name).
        self.define(Cow::Borrowed(spec.name), main)?;
        self.expanded.insert(spec.name, outs);
        Ok(())
    }

    fn getitem(&mut self, spec: &'a NodeView<'a>, producer: &str, index: u32, results: &[TensorType]) -> Result<()> {
        if let Some(outs) = self.expanded.get(producer) {
            let v = match outs.get(index as usize) {
                Some(Some(v)) => *v,
                Some(None) => return Err(self.err(spec, format!("result {index} of `{producer}` is not a tensor"))),
                None => return Err(self.err(spec, format!("`{producer}` has no result {index}"))),
            };
            return match self.graph.value_type(v) {
                Some(t) if results.len() == 1 && *t == results[0] => self.define(Cow::Borrowed(spec.name), v),
                Some(t) => Err(self.mismatch(spec, results, std::slice::from_ref(t))),
                None => Err(self.err(spec, format!("`{producer}` has no result {index}"))),
            };
        }
        let base = self.value(spec.name, producer)?;
        let v = ValueRef { node: base.node, result: index };
        match self.graph.value_type(v) {
            Some(t) if results.len() == 1 && *t == results[0] => self.define(Cow::Borrowed(spec.name), v),
            Some(t) => Err(self.mismatch(spec, results, std::slice::from_ref(t))),
            None => Err(self.err(spec, format!("`{producer}` has no result {index}"))),
        }
    }

    /// Every tensor argument, in order, for an unknown op (keeps data dependencies right).
    fn all_tensor_args(&self, spec: &NodeView, out: &mut Vec<ValueRef>) -> Result<()> {
        let kwargs = self.view.kwargs(spec).iter().map(|(_, a)| a);
        for a in self.view.args(spec.args).iter().chain(kwargs) {
            match a {
                ArgView::Tensor(n) => out.push(self.value(spec.name, n)?),
                ArgView::Tensors(ns) | ArgView::OptionalTensors(ns) => {
                    for n in self.view.names(*ns).iter().flatten() {
                        out.push(self.value(spec.name, n)?);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Resolves operands into `out`; scalars become 0-d `full` nodes typed like PyTorch's
    /// wrapped numbers, which needs the promoted dtype of the tensor operands.
    fn operands_into(&mut self, spec: &NodeView, operands: &[Operand], out: &mut Vec<ValueRef>) -> Result<()> {
        let mut tensor_dtype = None;
        if operands.iter().any(|o| matches!(o.base(), Operand::Scalar(_))) {
            let mut types = Vec::with_capacity(operands.len());
            for o in operands {
                if let Operand::Tensor(n) = o.base() {
                    types.extend(self.graph.value_type(self.value(spec.name, n)?));
                }
            }
            tensor_dtype = (!types.is_empty()).then(|| infer::result_type(&types));
        }
        for (i, o) in operands.iter().enumerate() {
            out.push(self.operand(spec, i, o, tensor_dtype)?);
        }
        Ok(())
    }

    fn operand(&mut self, spec: &NodeView, i: usize, o: &Operand, tensor_dtype: Option<DType>) -> Result<ValueRef> {
        match o {
            Operand::Tensor(n) => self.value(spec.name, n),
            Operand::Scalar(s) => self.full(format!("{}.scalar{i}", spec.name), *s, wrapped_dtype(*s, tensor_dtype)),
            Operand::Scaled(inner, factor) => {
                let v = self.operand(spec, i, inner, tensor_dtype)?;
                let ty = self.graph.value_type(v).cloned().ok_or_else(|| self.err(spec, "missing operand".into()))?;
                let f = self.full(format!("{}.alpha{i}", spec.name), *factor, wrapped_dtype(*factor, Some(ty.dtype)))?;
                let f_ty = self.graph.value_type(f).cloned().ok_or_else(|| self.err(spec, "missing operand".into()))?;
                let op = Op::Binary(BinaryOp::Mul);
                let results = infer::infer(&op, &[&ty, &f_ty]).map_err(|m| self.err(spec, m))?.unwrap_or_default();
                let name = format!("{}.scaled{i}", spec.name);
                let id = self
                    .graph
                    .add_node(name.clone(), op, &[v, f], results, None)
                    .map_err(|source| Error::Ir { path: self.path.into(), source })?;
                self.define(Cow::Owned(name), ValueRef::first(id))?;
                Ok(ValueRef::first(id))
            }
        }
    }

    /// A 0-d `full` node. Its name is reserved like a trace name, so that a trace node of the
    /// same name is a duplicate, not two graph nodes of one name.
    fn full(&mut self, name: String, value: Scalar, dtype: DType) -> Result<ValueRef> {
        let ty = TensorType::new(dtype, Shape::new());
        let id = self
            .graph
            .add_node(name.clone(), Op::Full { value }, &[], smallvec![ty] as Results, None)
            .map_err(|source| Error::Ir { path: self.path.into(), source })?;
        self.define(Cow::Owned(name), ValueRef::first(id))?;
        Ok(ValueRef::first(id))
    }
}

impl<'a> Operand<'a> {
    fn base(&self) -> &Operand<'a> {
        match self {
            Operand::Scaled(inner, _) => inner.base(),
            o => o,
        }
    }
}

/// The dtype PyTorch gives a Python scalar next to tensors of `tensor_dtype`: the tensor's when
/// the scalar's category (bool < int < float) is not higher, else the default for its kind.
fn wrapped_dtype(s: Scalar, tensor_dtype: Option<DType>) -> DType {
    let (cat, default) = match s {
        Scalar::Bool(_) => (0, DType::Bool),
        Scalar::Int(_) => (1, DType::I64),
        Scalar::Float(_) => (2, DType::F32),
    };
    match tensor_dtype {
        Some(t) => {
            let tcat = if t == DType::Bool { 0 } else if t.is_float() { 2 } else { 1 };
            if cat > tcat { default } else { t }
        }
        None => default,
    }
}

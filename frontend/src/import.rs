//! Trace → `ir::Graph`: resolves names, maps ATen calls to `ir::Op` (see `aten.rs`), checks
//! every node's meta against shape inference, and runs the IR verifier.
//!
//! Scalars in tensor positions become 0-d `full` nodes named `<node>.scalar<i>`, typed as
//! PyTorch types a wrapped number (the tensor's dtype unless the scalar is of a higher
//! category, then the default dtype). `getitem` nodes become aliases of one result of their
//! producer and leave no node behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use fxhlo_ir::{infer, BinaryOp, DType, Graph, InputKind, Op, Scalar, SourceLoc, TensorType, ValueRef};

use crate::aten::{self, Mapped, Operand};
use crate::schema::{Arg, Dim, InputKindSpec, NodeSpec, TensorMeta, Trace, FORMAT, SCHEMA_VERSION};
use crate::{Error, Result};

/// Builds and verifies the graph of `trace`; `path` names the file in errors.
pub fn import(trace: &Trace, path: &Path) -> Result<Graph> {
    if trace.format != FORMAT {
        return Err(Error::Format { path: path.into(), found: trace.format.clone() });
    }
    if trace.version != SCHEMA_VERSION {
        return Err(Error::Version { path: path.into(), found: trace.version, supported: SCHEMA_VERSION });
    }
    let mut cx = Importer { path: path.to_path_buf(), graph: Graph::new(&trace.name), values: HashMap::new() };
    for input in &trace.inputs {
        let ty = cx.tensor_type(&input.name, &input.meta)?;
        let kind = match input.kind {
            InputKindSpec::UserInput => InputKind::UserInput,
            InputKindSpec::Parameter => InputKind::Parameter,
            InputKindSpec::Buffer => InputKind::Buffer,
            InputKindSpec::Constant => InputKind::Constant,
        };
        let id = cx.graph.add_input(&input.name, kind, input.weight.clone(), ty, None);
        cx.define(&input.name, ValueRef::first(id))?;
    }
    for node in &trace.nodes {
        cx.node(node)?;
    }
    let mut outputs = Vec::with_capacity(trace.outputs.len());
    for arg in &trace.outputs {
        match arg {
            Arg::Tensor(name) => outputs.push(cx.value("output", name)?),
            other => {
                return Err(Error::BadArgument {
                    path: cx.path.clone(),
                    node: "output".into(),
                    target: "output".into(),
                    message: format!("graph outputs must be tensors, found {other:?}"),
                })
            }
        }
    }
    if outputs.is_empty() {
        return Err(Error::BadArgument {
            path: cx.path.clone(),
            node: "output".into(),
            target: "output".into(),
            message: "the graph has no outputs".into(),
        });
    }
    let ir = |source| Error::Ir { path: path.into(), source };
    cx.graph.set_outputs(outputs).map_err(ir)?;
    fxhlo_ir::verify(&cx.graph).map_err(ir)?;
    Ok(cx.graph)
}

struct Importer {
    path: PathBuf,
    graph: Graph,
    values: HashMap<String, ValueRef>,
}

impl Importer {
    fn define(&mut self, name: &str, v: ValueRef) -> Result<()> {
        if self.values.insert(name.to_string(), v).is_some() {
            return Err(Error::DuplicateName { path: self.path.clone(), name: name.into() });
        }
        Ok(())
    }

    fn value(&self, node: &str, name: &str) -> Result<ValueRef> {
        self.values.get(name).copied().ok_or_else(|| Error::UnknownValue {
            path: self.path.clone(),
            node: node.into(),
            name: name.into(),
        })
    }

    fn tensor_type(&self, node: &str, meta: &TensorMeta) -> Result<TensorType> {
        let dtype: DType = meta
            .dtype
            .parse()
            .map_err(|source| Error::DType { path: self.path.clone(), node: node.into(), source })?;
        let mut shape = Vec::with_capacity(meta.sizes.len());
        for (dim, d) in meta.sizes.iter().enumerate() {
            match d {
                Dim::Static(v) if *v >= 0 => shape.push(*v),
                Dim::Static(v) => {
                    return Err(Error::BadArgument {
                        path: self.path.clone(),
                        node: node.into(),
                        target: "meta".into(),
                        message: format!("negative size {v} at dim {dim}"),
                    })
                }
                Dim::Symbolic(size) => {
                    return Err(Error::SymbolicSize { path: self.path.clone(), node: node.into(), dim, size: size.clone() })
                }
            }
        }
        Ok(TensorType::new(dtype, shape))
    }

    fn err(&self, spec: &NodeSpec, message: String) -> Error {
        Error::BadArgument { path: self.path.clone(), node: spec.name.clone(), target: spec.target.clone(), message }
    }

    fn node(&mut self, spec: &NodeSpec) -> Result<()> {
        let mut results = Vec::with_capacity(spec.meta.len());
        for (i, m) in spec.meta.iter().enumerate() {
            match m {
                Some(m) => results.push(self.tensor_type(&spec.name, m)?),
                // Every IR value is a tensor; ops returning None (training-only variants)
                // have no inference use, so they are refused here with their name.
                None => return Err(self.err(spec, format!("result {i} is None; fxhlo supports only ops whose results are all tensors"))),
            }
        }
        if results.is_empty() {
            return Err(self.err(spec, "node has no result meta".into()));
        }
        let source = spec.source.as_ref().map(|s| SourceLoc { file: s.file.clone(), line: s.line });
        let (op, operands) = match aten::map(&spec.target, &spec.args, &spec.kwargs, &results) {
            Mapped::GetItem(producer, index) => return self.getitem(spec, &producer, index, &results),
            Mapped::Op(op, operands) => (op, self.operands(spec, &operands)?),
            Mapped::Unknown => (Op::Unknown { target: spec.target.clone() }, self.all_tensor_args(spec)?),
        };
        let operand_types: Vec<&TensorType> = operands.iter().filter_map(|v| self.graph.value_type(*v)).collect();
        match infer::infer(&op, &operand_types) {
            Ok(Some(inferred)) if inferred != results => return Err(self.mismatch(spec, &results, &inferred)),
            Ok(_) => {}
            Err(message) => return Err(self.err(spec, message)),
        }
        let id = self
            .graph
            .add_node(&spec.name, op, &operands, results, source)
            .map_err(|source| Error::Ir { path: self.path.clone(), source })?;
        self.define(&spec.name, ValueRef::first(id))
    }

    fn mismatch(&self, spec: &NodeSpec, meta: &[TensorType], inferred: &[TensorType]) -> Error {
        let fmt = |v: &[TensorType]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        Error::MetaMismatch {
            path: self.path.clone(),
            node: spec.name.clone(),
            target: spec.target.clone(),
            meta: fmt(meta),
            inferred: fmt(inferred),
        }
    }

    fn getitem(&mut self, spec: &NodeSpec, producer: &str, index: u32, results: &[TensorType]) -> Result<()> {
        let base = self.value(&spec.name, producer)?;
        let v = ValueRef { node: base.node, result: index };
        match self.graph.value_type(v) {
            Some(t) if results.len() == 1 && *t == results[0] => self.define(&spec.name, v),
            Some(t) => Err(self.mismatch(spec, results, std::slice::from_ref(t))),
            None => Err(self.err(spec, format!("`{producer}` has no result {index}"))),
        }
    }

    /// Every tensor argument, in order, for an unknown op (keeps data dependencies right).
    fn all_tensor_args(&self, spec: &NodeSpec) -> Result<Vec<ValueRef>> {
        let mut out = Vec::new();
        for a in spec.args.iter().chain(spec.kwargs.values()) {
            match a {
                Arg::Tensor(n) => out.push(self.value(&spec.name, n)?),
                Arg::Tensors(ns) => {
                    for n in ns {
                        out.push(self.value(&spec.name, n)?);
                    }
                }
                Arg::OptionalTensors(ns) => {
                    for n in ns.iter().flatten() {
                        out.push(self.value(&spec.name, n)?);
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Resolves operands; scalars become 0-d `full` nodes typed like PyTorch's wrapped numbers.
    fn operands(&mut self, spec: &NodeSpec, operands: &[Operand]) -> Result<Vec<ValueRef>> {
        let mut tensor_dtypes = Vec::new();
        for o in operands {
            if let Operand::Tensor(n) = o.base() {
                let v = self.value(&spec.name, n)?;
                if let Some(t) = self.graph.value_type(v) {
                    tensor_dtypes.push(t.clone());
                }
            }
        }
        let refs: Vec<&TensorType> = tensor_dtypes.iter().collect();
        let tensor_dtype = (!refs.is_empty()).then(|| infer::result_type(&refs));
        let mut out = Vec::with_capacity(operands.len());
        for (i, o) in operands.iter().enumerate() {
            out.push(self.operand(spec, i, o, tensor_dtype)?);
        }
        Ok(out)
    }

    fn operand(&mut self, spec: &NodeSpec, i: usize, o: &Operand, tensor_dtype: Option<DType>) -> Result<ValueRef> {
        match o {
            Operand::Tensor(n) => self.value(&spec.name, n),
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
                    .map_err(|source| Error::Ir { path: self.path.clone(), source })?;
                self.define(&name, ValueRef::first(id))?;
                Ok(ValueRef::first(id))
            }
        }
    }

    /// A 0-d `full` node. Its name is reserved like a trace name, so that a trace node of the
    /// same name is a duplicate, not two graph nodes of one name.
    fn full(&mut self, name: String, value: Scalar, dtype: DType) -> Result<ValueRef> {
        let ty = TensorType::new(dtype, Vec::new());
        let id = self
            .graph
            .add_node(name.clone(), Op::Full { value }, &[], vec![ty], None)
            .map_err(|source| Error::Ir { path: self.path.clone(), source })?;
        self.define(&name, ValueRef::first(id))?;
        Ok(ValueRef::first(id))
    }
}

impl Operand {
    fn base(&self) -> &Operand {
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

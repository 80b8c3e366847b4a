//! Trace → `ir::Graph`: resolves names, maps ATen targets to `ir::Op`, checks every node's
//! meta against shape inference, and runs the IR verifier.
//!
//! Targets without a dedicated `Op` become `Op::Unknown` with their types from the meta, so
//! import never fails because an op is unknown; lowering reports those.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use fxhlo_ir::{infer, DType, Graph, InputKind, Op, Scalar, SourceLoc, TensorType, ValueRef};

use crate::schema::{Arg, InputKindSpec, NodeSpec, TensorMeta, Trace, FORMAT, SCHEMA_VERSION};
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
        Ok(TensorType::new(dtype, meta.sizes.clone()))
    }

    fn node(&mut self, spec: &NodeSpec) -> Result<()> {
        let path = self.path.clone();
        let bad = |message: String| Error::BadArgument {
            path: path.clone(),
            node: spec.name.clone(),
            target: spec.target.clone(),
            message,
        };
        let mut results = Vec::with_capacity(spec.meta.len());
        for m in &spec.meta {
            results.push(self.tensor_type(&spec.name, m)?);
        }
        if results.is_empty() {
            return Err(bad("node has no result meta".into()));
        }
        let source = spec.source.as_ref().map(|s| SourceLoc { file: s.file.clone(), line: s.line });
        let (op, operands) = self.op_and_operands(spec, &results)?;
        let operand_types: Vec<&TensorType> =
            operands.iter().filter_map(|v| self.graph.value_type(*v)).collect();
        match infer::infer(&op, &operand_types) {
            Ok(Some(inferred)) if inferred != results => {
                let fmt = |v: &[TensorType]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
                return Err(Error::MetaMismatch {
                    path: self.path.clone(),
                    node: spec.name.clone(),
                    target: spec.target.clone(),
                    meta: fmt(&results),
                    inferred: fmt(&inferred),
                });
            }
            Ok(_) => {}
            Err(message) => return Err(bad(message)),
        }
        let id = self
            .graph
            .add_node(&spec.name, op, &operands, results, source)
            .map_err(|source| Error::Ir { path: self.path.clone(), source })?;
        self.define(&spec.name, ValueRef::first(id))
    }

    /// Maps an ATen call to an op and its tensor operands. Scalars in tensor positions become
    /// 0-d `full` nodes of the other operand's dtype (PyTorch: a Python scalar does not promote
    /// a tensor of the same category).
    fn op_and_operands(&mut self, spec: &NodeSpec, results: &[TensorType]) -> Result<(Op, Vec<ValueRef>)> {
        let name = spec.name.as_str();
        let args = &spec.args;
        let kw_is_one = |k: &str| match spec.kwargs.get(k) {
            None => true,
            Some(Arg::Int(1)) => true,
            Some(Arg::Float(f)) => *f == 1.0,
            _ => false,
        };
        let ints = |i: usize| match args.get(i) {
            Some(Arg::Ints(v)) => Some(v.clone()),
            _ => None,
        };
        let known = match (spec.target.as_str(), args.as_slice()) {
            ("aten.add.Tensor", [a, b]) if kw_is_one("alpha") => Some((Op::Add, vec![a, b])),
            ("aten.mul.Tensor", [a, b]) => Some((Op::Mul, vec![a, b])),
            ("aten.relu.default", [x]) => Some((Op::Relu, vec![x])),
            ("aten.mm.default", [a, b]) => Some((Op::Mm, vec![a, b])),
            ("aten.addmm.default", [c, a, b]) if kw_is_one("beta") && kw_is_one("alpha") => {
                Some((Op::Addmm, vec![c, a, b]))
            }
            ("aten.permute.default", [x, _]) => ints(1).map(|dims| (Op::Permute { dims }, vec![x])),
            ("aten.t.default", [x]) => Some((Op::Permute { dims: vec![1, 0] }, vec![x])),
            ("aten.expand.default", [x, _]) => ints(1).map(|sizes| (Op::Expand { sizes }, vec![x])),
            ("aten.full.default", [Arg::Ints(_), v]) => scalar(v).map(|value| (Op::Full { value }, vec![])),
            _ => None,
        };
        let Some((op, arg_refs)) = known else {
            // Unknown (or a known op with arguments we do not model yet): keep every tensor
            // argument as an operand so the data dependencies stay right.
            let mut operands = Vec::new();
            for a in args.iter().chain(spec.kwargs.values()) {
                match a {
                    Arg::Tensor(n) => operands.push(self.value(name, n)?),
                    Arg::Tensors(ns) => {
                        for n in ns {
                            operands.push(self.value(name, n)?);
                        }
                    }
                    _ => {}
                }
            }
            return Ok((Op::Unknown { target: spec.target.clone() }, operands));
        };
        let dtype = results[0].dtype;
        let mut operands = Vec::with_capacity(arg_refs.len());
        for (i, a) in arg_refs.into_iter().enumerate() {
            match a {
                Arg::Tensor(n) => operands.push(self.value(name, n)?),
                other => match scalar(other) {
                    Some(value) => {
                        let ty = TensorType::new(dtype, Vec::new());
                        let id = self
                            .graph
                            .add_node(format!("{name}.scalar{i}"), Op::Full { value }, &[], vec![ty], None)
                            .map_err(|source| Error::Ir { path: self.path.clone(), source })?;
                        operands.push(ValueRef::first(id));
                    }
                    None => {
                        return Err(Error::BadArgument {
                            path: self.path.clone(),
                            node: name.into(),
                            target: spec.target.clone(),
                            message: format!("argument {i} must be a tensor or a scalar, found {other:?}"),
                        })
                    }
                },
            }
        }
        Ok((op, operands))
    }
}

fn scalar(a: &Arg) -> Option<Scalar> {
    match *a {
        Arg::Int(v) => Some(Scalar::Int(v)),
        Arg::Float(v) => Some(Scalar::float(v)),
        Arg::Bool(v) => Some(Scalar::Bool(v)),
        _ => None,
    }
}

//! `check-indices`: makes out-of-range indices observable.
//!
//! XLA clamps an out-of-range gather or scatter index on every device, where eager PyTorch
//! raises `IndexError`. With the option `check_indices` on, this pass adds, for every node that
//! indexes with a tensor (`embedding`, `index`, `index_put`, `gather`, `index_select`,
//! `scatter`), a bool scalar that is true when any of its indices is out of range, and appends
//! it to the graph's outputs. The caller (the facade) strips those trailing outputs after each
//! run and reports the first true one as an error naming the node. Off by default: it costs a
//! comparison and a reduction per index tensor.
//!
//! The valid range is PyTorch's: `[-n, n)` for advanced indexing (`index`, `index_put`),
//! where negative indices count from the end, and `[0, n)` for `embedding`, `gather`,
//! `index_select` and `scatter`, where eager refuses negative indices.
//!
//! Relies on: verified input. Preserves: every existing node and output (the checks are
//! appended after them). Each check node is named [`check_name`] of the node it checks.
//!
//! ```text
//! before:  %e = aten.embedding %w, %i : f32[4,8]          (%w : f32[10,8], %i : i64[4])
//!          return %e
//! after:   %e = aten.embedding %w, %i : f32[4,8]
//!          %check_indices.e.lo = full {value = 0} : i64[]
//!          %check_indices.e.hi = full {value = 10} : i64[]
//!          ... lt / ge / logical_or / any ...
//!          %check_indices.e = aten.any ... : bool[]
//!          return %e, %check_indices.e
//! ```

use fxhlo_ir::{BinaryOp, CompareOp, DType, Graph, NodeId, Op, ReduceOp, Scalar, Shape, TensorType, ValueRef};

use crate::{Error, Pass, Result};

/// The pass; see the module doc.
pub struct CheckIndices;

/// The name of the check node added for the node named `node`.
pub fn check_name(node: &str) -> String {
    format!("check_indices.{node}")
}

/// The node a check output belongs to, from the check node's name.
pub fn checked_node(check: &str) -> Option<&str> {
    check.strip_prefix("check_indices.")
}

/// The index operands of `op` (operand position, indexed dim of operand 0) and whether
/// negative indices are valid.
fn index_operands(op: &Op, operands: usize, rank: usize) -> Option<(Vec<(usize, usize)>, bool)> {
    let present_dims = |present: &[bool]| -> Vec<usize> { present.iter().enumerate().filter(|(_, p)| **p).map(|(d, _)| d).collect() };
    let dim = |d: i64| -> Option<usize> {
        let d = if d < 0 { d + rank as i64 } else { d };
        usize::try_from(d).ok().filter(|&d| d < rank)
    };
    match op {
        Op::Embedding => Some((vec![(1, 0)], false)),
        Op::Index { present } => Some((present_dims(present).into_iter().enumerate().map(|(i, d)| (i + 1, d)).collect(), true)),
        // index_put's operands: the tensor, one index per present dim, the values.
        Op::IndexPut { present, .. } => {
            let dims = present_dims(present);
            (dims.len() + 2 == operands).then(|| (dims.into_iter().enumerate().map(|(i, d)| (i + 1, d)).collect(), true))
        }
        Op::Gather { dim: d } | Op::IndexSelect { dim: d } | Op::Scatter { dim: d, .. } => Some((vec![(1, dim(*d)?)], false)),
        _ => None,
    }
}

impl CheckIndices {
    /// Adds the check of node `id`; returns its bool scalar, or `None` for a node that indexes
    /// nothing.
    fn check(graph: &mut Graph, id: NodeId) -> Result<Option<ValueRef>> {
        let node = graph.node(id);
        let name = node.name.to_string();
        let operands = graph.operands(id);
        let Some(x) = operands.first().and_then(|v| graph.value_type(*v)).cloned() else {
            return Ok(None);
        };
        let Some((indices, negative_ok)) = index_operands(&node.op, operands.len(), x.rank()) else {
            return Ok(None);
        };
        let fail = |message: String| Error::Failed { pass: "check-indices", message: format!("node `{name}`: {message}") };
        let add = |graph: &mut Graph, suffix: String, op: Op, args: &[ValueRef], ty: TensorType| -> Result<ValueRef> {
            let id = graph
                .add_node(format!("{}.{suffix}", check_name(&name)), op, args, vec![ty], None)
                .map_err(|e| fail(e.to_string()))?;
            Ok(ValueRef::first(id))
        };
        let scalar_bool = TensorType::new(DType::Bool, Shape::new());
        let mut any: Option<ValueRef> = None;
        for (k, (position, dim)) in indices.into_iter().enumerate() {
            let Some(&idx) = operands.get(position) else { continue };
            let ity = graph.value_type(idx).cloned().ok_or_else(|| fail("index operand has no type".into()))?;
            if ity.dtype.is_float() || ity.dtype == DType::Bool {
                continue;
            }
            let n = x.shape.get(dim).copied().ok_or_else(|| fail(format!("dim {dim} out of {x}")))?;
            let bound = TensorType::new(ity.dtype, Shape::new());
            let flags = TensorType::new(DType::Bool, ity.shape.clone());
            let lo = add(graph, format!("{k}.lo"), Op::Full { value: Scalar::Int(if negative_ok { -n } else { 0 }) }, &[], bound.clone())?;
            let hi = add(graph, format!("{k}.hi"), Op::Full { value: Scalar::Int(n) }, &[], bound)?;
            let below = add(graph, format!("{k}.below"), Op::Compare(CompareOp::Lt), &[idx, lo], flags.clone())?;
            let above = add(graph, format!("{k}.above"), Op::Compare(CompareOp::Ge), &[idx, hi], flags.clone())?;
            let out = add(graph, format!("{k}.out"), Op::Binary(BinaryOp::LogicalOr), &[below, above], flags)?;
            let reduce = Op::Reduce { op: ReduceOp::Any, dims: Shape::new(), keepdim: false, dtype: None };
            let one = add(graph, format!("{k}.any"), reduce, &[out], scalar_bool.clone())?;
            any = Some(match any {
                None => one,
                Some(prev) => add(graph, format!("{k}.or"), Op::Binary(BinaryOp::LogicalOr), &[prev, one], scalar_bool.clone())?,
            });
        }
        let Some(any) = any else { return Ok(None) };
        // The check node itself carries the plain name, so that the caller can map it back.
        let id = graph
            .add_node(check_name(&name), Op::Copy, &[any], vec![scalar_bool], None)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Some(ValueRef::first(id)))
    }
}

impl Pass for CheckIndices {
    fn name(&self) -> &'static str {
        "check-indices"
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        let order = graph.topo_order().map_err(|e| Error::Failed { pass: "check-indices", message: e.to_string() })?;
        let mut checks = Vec::new();
        for id in order {
            if let Some(check) = Self::check(graph, id)? {
                checks.push(check);
            }
        }
        if checks.is_empty() {
            return Ok(false);
        }
        let mut outputs = graph.outputs().to_vec();
        outputs.extend(checks);
        graph.set_outputs(outputs).map_err(|e| Error::Failed { pass: "check-indices", message: e.to_string() })?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxhlo_ir::InputKind;

    #[test]
    fn an_embedding_gets_one_check_output_named_after_it() {
        let mut g = Graph::new("t");
        let w = g.add_input("w", InputKind::Parameter, None, TensorType::new(DType::F32, vec![10, 8]), None);
        let i = g.add_input("i", InputKind::UserInput, None, TensorType::new(DType::I64, vec![4]), None);
        let e = g
            .add_node("e", Op::Embedding, &[ValueRef::first(w), ValueRef::first(i)], vec![TensorType::new(DType::F32, vec![4, 8])], None)
            .unwrap();
        g.set_outputs(vec![ValueRef::first(e)]).unwrap();
        assert!(CheckIndices.run(&mut g).unwrap());
        fxhlo_ir::verify(&g).unwrap();
        assert_eq!(g.outputs().len(), 2);
        let check = g.node(g.outputs()[1].node);
        assert_eq!(checked_node(&check.name), Some("e"));
        assert_eq!(check.results[0], TensorType::new(DType::Bool, Shape::new()));
        // A graph without indexing is left alone.
        let mut h = Graph::new("h");
        let x = h.add_input("x", InputKind::UserInput, None, TensorType::new(DType::F32, vec![2]), None);
        h.set_outputs(vec![ValueRef::first(x)]).unwrap();
        assert!(!CheckIndices.run(&mut h).unwrap());
    }
}

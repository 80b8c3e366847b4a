//! Control flow: `Op::Cond` as `stablehlo.case` (branch 0 when the predicate holds, 1 when not)
//! and `Op::While` as `stablehlo.while`. Each region of the IR is lowered into a block of its
//! own by the same node loop as `@main`. A case branch reads the node's operands from the
//! enclosing block (StableHLO's branches take no arguments); a while loop carries every operand,
//! the additional (loop-invariant) ones passed through its body unchanged.

use fxhlo_ir::{DType, Graph, Scalar, TensorType, ValueRef};
use melior::ir::block::BlockLike;
use melior::ir::{Block, Location, Region, RegionLike, Value};

use super::Operand;
use crate::emit::Emitter;
use crate::Result;

/// Region `i` of `graph`.
fn region<'g>(e: &Emitter<'_, '_>, graph: &'g Graph, i: u32) -> Result<&'g Graph> {
    graph.regions().get(i as usize).ok_or_else(|| e.internal(format!("region {i} does not exist")))
}

/// `torch.cond`: `stablehlo.case` on index 0 (`then_region`) when the predicate holds, 1 when not.
#[allow(clippy::too_many_arguments)]
pub fn cond<'c, 'a>(
    e: &Emitter<'c, 'a>,
    graph: &Graph,
    then_region: u32,
    else_region: u32,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<Value<'c, 'a>>> {
    let (pred, args) = operands.split_first().ok_or_else(|| e.internal("cond without a predicate"))?;
    let index_t = TensorType::new(DType::I32, vec![]);
    let (zero, one) = (e.splat(Scalar::Int(0), &index_t, loc)?, e.splat(Scalar::Int(1), &index_t, loc)?);
    let index = e.op("stablehlo.select", loc, &[pred.0, zero, one], &index_t, &[])?;
    let values: Vec<Value<'c, 'a>> = args.iter().map(|a| a.0).collect();
    let branches = vec![
        branch(e, region(e, graph, then_region)?, &values, loc)?,
        branch(e, region(e, graph, else_region)?, &values, loc)?,
    ];
    e.op_n("stablehlo.case", loc, &[index], results, &[], branches)
}

/// `torch.while_loop`: `stablehlo.while` carrying every operand; the results are the first
/// `results.len()` (the carried values).
#[allow(clippy::too_many_arguments)]
pub fn while_loop<'c, 'a>(
    e: &Emitter<'c, 'a>,
    graph: &Graph,
    cond: u32,
    body: u32,
    operands: &[Operand<'c, 'a, '_>],
    results: &[TensorType],
    loc: Location<'c>,
) -> Result<Vec<Value<'c, 'a>>> {
    let types: Vec<TensorType> = operands.iter().map(|o| o.1.clone()).collect();
    let values: Vec<Value<'c, 'a>> = operands.iter().map(|o| o.0).collect();
    let regions = vec![
        loop_region(e, region(e, graph, cond)?, &types, 0, loc)?,
        loop_region(e, region(e, graph, body)?, &types, results.len(), loc)?,
    ];
    let all = e.op_n("stablehlo.while", loc, &values, &types, &[], regions)?;
    Ok(all.into_iter().take(results.len()).collect())
}

/// A `stablehlo.case` branch: `graph` lowered with its inputs bound to `captured`.
fn branch<'c>(e: &Emitter<'c, '_>, graph: &Graph, captured: &[Value<'c, '_>], loc: Location<'c>) -> Result<Region<'c>> {
    if graph.inputs().len() != captured.len() {
        return Err(e.internal(format!("a branch of {} inputs for {} operands", graph.inputs().len(), captured.len())));
    }
    let block = Block::new(&[]);
    {
        let mut inner = Emitter::new(e.ctx, &block);
        for (&id, &v) in graph.inputs().iter().zip(captured) {
            inner.bind(ValueRef::first(id), v);
        }
        finish(e, &mut inner, &block, graph, &[], loc)?;
    }
    let region = Region::new();
    region.append_block(block);
    Ok(region)
}

/// A `stablehlo.while` region over block arguments of `types`: the condition (`carried` 0:
/// its one output) or the body (its outputs, then the arguments past the `carried` ones,
/// passed through).
fn loop_region<'c>(e: &Emitter<'c, '_>, graph: &Graph, types: &[TensorType], carried: usize, loc: Location<'c>) -> Result<Region<'c>> {
    if graph.inputs().len() != types.len() {
        return Err(e.internal(format!("a loop region of {} inputs for {} operands", graph.inputs().len(), types.len())));
    }
    let args: Vec<_> = types.iter().map(|t| (e.tensor_type(t), loc)).collect();
    let block = Block::new(&args);
    {
        let mut inner = Emitter::new(e.ctx, &block);
        let mut arguments = Vec::with_capacity(types.len());
        for (i, &id) in graph.inputs().iter().enumerate() {
            let arg: Value = block.argument(i).map_err(|err| e.internal(err.to_string()))?.into();
            inner.bind(ValueRef::first(id), arg);
            arguments.push(arg);
        }
        let passed = if carried == 0 { &[][..] } else { &arguments[carried..] };
        finish(e, &mut inner, &block, graph, passed, loc)?;
    }
    let region = Region::new();
    region.append_block(block);
    Ok(region)
}

/// Lowers `graph`'s nodes into `block` and ends it with `stablehlo.return` of its outputs and
/// then `extra`.
fn finish<'c, 'b>(
    e: &Emitter<'c, '_>,
    inner: &mut Emitter<'c, 'b>,
    block: &'b Block<'c>,
    graph: &Graph,
    extra: &[Value<'c, 'b>],
    loc: Location<'c>,
) -> Result<()> {
    crate::lower_nodes(e.ctx, inner, graph)?;
    let mut returned = graph.outputs().iter().map(|v| inner.value(*v)).collect::<Result<Vec<_>>>()?;
    returned.extend_from_slice(extra);
    inner.append_return(block, &returned, loc)
}

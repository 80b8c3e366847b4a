//! fxhlo's codegen: lowers a verified [`fxhlo_ir::Graph`] to a StableHLO module through melior.
//! It translates: every graph change (device layouts, channels-last pooling, dropping unread
//! results) is a pass that ran before, so each node is lowered as it stands.
//!
//! The module has one public function, `@main`, whose arguments are the graph inputs in order,
//! each of its node's type (an input with a `layout` has the permuted type already), and whose
//! results are the graph outputs. Every op carries an MLIR location made of the FX node name
//! and, where the trace has it, the user's source file and line, so XLA's errors and dumps
//! point back at the model. Unsupported ops are reported all at once
//! ([`Error::Unsupported`]) before anything is built.

pub mod attr;
mod emit;
mod error;
pub mod lower;
mod region;
pub mod sharding;

use fxhlo_ir::{Graph, NodeId, Op, ValueRef};
use melior::dialect::{func, DialectHandle};
use melior::ir::attribute::{ArrayAttribute, DictionaryAttribute, StringAttribute, TypeAttribute};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationMutLike, OperationPrintingFlags};
use melior::ir::r#type::FunctionType;
use melior::ir::{Attribute, Block, BytecodeWriterConfig, Identifier, Location, Module as MlirModule, Region, RegionLike, Value};
use melior::Context;

pub use emit::mlir_type_text;
pub use error::{Error, Result, UnsupportedOp};
pub use sharding::InputShardings;

use emit::Emitter;

/// Every op of `graph` that codegen cannot lower, in graph order.
pub fn unsupported_ops(graph: &Graph) -> Result<Vec<UnsupportedOp>> {
    let mut ops = Vec::new();
    collect_unsupported(graph, &mut ops)?;
    Ok(ops)
}

/// [`unsupported_ops`] of `graph` and, after its own, of its regions.
fn collect_unsupported(graph: &Graph, ops: &mut Vec<UnsupportedOp>) -> Result<()> {
    for id in graph.topo_order()? {
        let node = graph.node(id);
        if let Some((target, reason)) = unsupported_reason(graph, id) {
            ops.push(UnsupportedOp {
                target,
                node: node.name.to_string(),
                source: node.source.as_ref().map(|s| format!("{}:{}", s.file, s.line)),
                reason,
            });
        }
    }
    for region in graph.regions() {
        collect_unsupported(region, ops)?;
    }
    Ok(())
}

/// Lowers `graph` to the text of a StableHLO module (with locations), ready for PJRT.
pub fn lower(graph: &Graph) -> Result<String> {
    lower_with(graph, None)
}

/// [`lower`], with `shardings`, every parameter and result annotated for an SPMD compile over
/// that many devices (see [`sharding`]; a split input must not also have a layout). The text
/// holds every constant in full; see [`lower_module`] for large ones.
pub fn lower_with(graph: &Graph, shardings: Option<&InputShardings>) -> Result<String> {
    lower_module(graph, shardings, None).map(|m| m.text)
}

/// Constants with more elements than this are left out of [`Module::text`] when bytecode is
/// asked for (frozen weights: hundreds of megabytes of hex otherwise).
pub const ELIDE_ELEMENTS: usize = 1024;

/// A lowered module: its text, and (when asked) MLIR bytecode, which is what PJRT compiles.
#[derive(Debug, Clone)]
pub struct Module {
    /// The module's text with locations. With bytecode, constants over [`ELIDE_ELEMENTS`]
    /// elements print as `dense_resource<__elided__>`: read it, do not compile it.
    pub text: String,
    /// The module as MLIR bytecode (every constant in full); `None` unless asked for.
    pub bytecode: Option<Vec<u8>>,
}

/// [`lower_with`], also writing the module as MLIR bytecode when `bytecode` names the
/// bytecode version to emit (the consumer's MLIR must read that version; `Some(0)`: the newest
/// this MLIR writes). Large constants then go only into the bytecode, so that a frozen
/// model's weights are never formatted as text nor parsed back (see [`Module::text`]).
pub fn lower_module(
    graph: &Graph,
    shardings: Option<&InputShardings>,
    bytecode: Option<i64>,
) -> Result<Module> {
    let unsupported = unsupported_ops(graph)?;
    if !unsupported.is_empty() {
        return Err(Error::Unsupported { graph: graph.name.clone(), ops: unsupported });
    }
    let ctx = Context::new();
    // Only `func` is an upstream dialect we use; loading every upstream dialect costs tens of
    // milliseconds per graph. StableHLO and CHLO are not upstream: their ops are built in
    // generic form (see emit.rs) and verified by the PJRT plugin.
    DialectHandle::func().load_dialect(&ctx);
    ctx.set_allow_unregistered_dialects(true);

    let module_loc = Location::new(&ctx, &graph.name, 0, 0);
    let mut module = MlirModule::new(module_loc);
    let params: Vec<NodeId> = graph.inputs().to_vec();
    let arg_types: Vec<_> = params.iter().map(|&id| emit::tensor_type(&ctx, &graph.node(id).results[0])).collect();
    let result_types: Vec<_> = graph
        .outputs()
        .iter()
        .map(|v| graph.value_type(*v).map(|t| emit::tensor_type(&ctx, t)))
        .collect::<Option<_>>()
        .ok_or(Error::Ir(fxhlo_ir::Error::DanglingOutput))?;

    let arg_locs: Vec<_> = params.iter().map(|&id| node_location(&ctx, graph, id)).collect();
    let block = Block::new(&arg_types.iter().copied().zip(arg_locs).collect::<Vec<_>>());
    emit_body(&ctx, &block, graph, &params)?;
    let region = Region::new();
    region.append_block(block);
    let fn_type = FunctionType::new(&ctx, &arg_types, &result_types);
    let mut attributes = Vec::new();
    if let Some(s) = shardings {
        let dict = |sharding| -> Attribute { DictionaryAttribute::new(&ctx, &[(Identifier::new(&ctx, "sdy.sharding"), sharding)]).into() };
        let args: Vec<Attribute> = params
            .iter()
            .map(|&id| dict(s.sharding_attr(&ctx, s.split.get(&id).copied(), graph.node(id).results[0].rank())))
            .collect();
        let results: Vec<Attribute> = graph
            .outputs()
            .iter()
            .filter_map(|v| graph.value_type(*v))
            .map(|t| dict(s.sharding_attr(&ctx, None, t.rank())))
            .collect();
        for (name, list) in [("arg_attrs", args), ("res_attrs", results)] {
            attributes.push((Identifier::new(&ctx, name), ArrayAttribute::new(&ctx, &list).into()));
        }
        let mesh = OperationBuilder::new("sdy.mesh", module_loc)
            .add_attributes(&[
                (Identifier::new(&ctx, "sym_name"), StringAttribute::new(&ctx, "mesh").into()),
                (Identifier::new(&ctx, "mesh"), s.mesh_attr(&ctx)),
            ])
            .build()
            .map_err(|e| Error::Internal { node: graph.name.clone(), message: format!("building sdy.mesh: {e}") })?;
        module.body().append_operation(mesh);
        let partitions = i32::try_from(s.devices)
            .map_err(|_| Error::Internal { node: graph.name.clone(), message: format!("{} partitions", s.devices) })?;
        module.as_operation_mut().set_attribute("mhlo.num_partitions", attr::i32_attr(&ctx, partitions));
    }
    let main = func::func(
        &ctx,
        StringAttribute::new(&ctx, "main"),
        TypeAttribute::new(fn_type.into()),
        region,
        &attributes,
        module_loc,
    );
    module.body().append_operation(main);
    if !module.as_operation().verify() {
        return Err(Error::Internal { node: graph.name.clone(), message: "the built module does not verify".into() });
    }
    let printing = |flags: OperationPrintingFlags| {
        module
            .as_operation()
            .to_string_with_flags(flags.enable_debug_info(true, false))
            .map_err(|e| Error::Internal { node: graph.name.clone(), message: format!("printing the module: {e}") })
    };
    let Some(version) = bytecode else {
        return Ok(Module { text: printing(OperationPrintingFlags::new())?, bytecode: None });
    };
    let config = BytecodeWriterConfig::new();
    if version > 0 {
        config.set_desired_emit_version(version);
    }
    let bytes = module
        .as_operation()
        .write_bytecode_with_config(&config)
        .map_err(|e| Error::Internal { node: graph.name.clone(), message: format!("writing bytecode (version {version}): {e}") })?;
    let text = printing(OperationPrintingFlags::new().elide_large_elements_attributes(ELIDE_ELEMENTS))?;
    Ok(Module { text, bytecode: Some(bytes) })
}

/// Lowers every node into `block` and appends the `func.return`. `params` are the inputs, the
/// block's arguments, in order.
fn emit_body<'c>(ctx: &'c Context, block: &Block<'c>, graph: &Graph, params: &[NodeId]) -> Result<()> {
    let mut e = Emitter::new(ctx, block);
    for (i, &id) in params.iter().enumerate() {
        let arg = block.argument(i).map_err(|err| e.internal(err.to_string()))?;
        e.bind(ValueRef::first(id), arg.into());
    }
    lower_nodes(ctx, &mut e, graph)?;
    let results = graph.outputs().iter().map(|v| e.value(*v)).collect::<Result<Vec<_>>>()?;
    block.append_operation(func::r#return(&results, Location::unknown(ctx)));
    Ok(())
}

/// Lowers every node of `graph` but its inputs, which `e` must already bind, in topological
/// order (the body of `@main`, or of a control-flow region).
pub(crate) fn lower_nodes<'c, 'a>(ctx: &'c Context, e: &mut Emitter<'c, 'a>, graph: &Graph) -> Result<()> {
    for id in graph.topo_order()? {
        if matches!(graph.node(id).op, Op::Input { .. }) {
            continue;
        }
        e.node = graph.node(id).name.to_string();
        let values = lower_node(e, graph, id, node_location(ctx, graph, id))?;
        for (k, value) in values.into_iter().enumerate() {
            e.bind(ValueRef { node: id, result: k as u32 }, value);
        }
    }
    Ok(())
}

fn lower_node<'c, 'a>(e: &Emitter<'c, 'a>, graph: &Graph, id: NodeId, loc: Location<'c>) -> Result<Vec<Value<'c, 'a>>> {
    let node = graph.node(id);
    let refs = graph.operands(id);
    let mut operands = Vec::with_capacity(refs.len());
    for v in &refs {
        let ty = graph.value_type(*v).ok_or(Error::Ir(fxhlo_ir::Error::DanglingOutput))?;
        operands.push((e.value(*v)?, ty));
    }
    // Every result empty: nothing to compute (and StableHLO rejects some ops on empty shapes).
    if !node.results.is_empty() && node.results.iter().all(|t| t.num_elements() == 0) && !matches!(node.op, Op::Input { .. }) {
        return node.results.iter().map(|t| e.splat(fxhlo_ir::Scalar::Int(0), t, loc)).collect();
    }
    let values = lower::lower(e, graph, &node.op, &operands, &node.results, loc)?;
    if values.len() != node.results.len() {
        return Err(e.internal(format!("lowering gave {} values for {} results", values.len(), node.results.len())));
    }
    Ok(values)
}

/// The target of node `id` and why codegen cannot lower it, if it cannot: an op fxhlo does not
/// model (with the importer's reason where the target is known but its arguments are not), or
/// an embedding bag whose bookkeeping results are read.
fn unsupported_reason(graph: &Graph, id: NodeId) -> Option<(String, String)> {
    let node = graph.node(id);
    match &node.op {
        Op::Unknown { target, reason } => {
            let reason = reason.clone().unwrap_or_else(|| format!("fxhlo has no lowering for {target}"));
            Some((target.clone(), reason))
        }
        Op::EmbeddingBag { .. } if (1..node.results.len() as u32).any(|k| result_used(graph, id, k)) => Some((
            "aten._embedding_bag".into(),
            "its bookkeeping results (offset2bag, bag_size, max_indices) are used, and fxhlo computes only its first result, the bags".into(),
        )),
        _ => None,
    }
}

/// Whether result `k` of node `id` is used by another node or returned.
fn result_used(graph: &Graph, id: NodeId, k: u32) -> bool {
    let v = ValueRef { node: id, result: k };
    graph.outputs().contains(&v) || graph.node_ids().any(|n| graph.operands(n).contains(&v))
}

/// `"node_name"("file":line:0)`, or the bare name where the node has no source.
fn node_location<'c>(ctx: &'c Context, graph: &Graph, id: NodeId) -> Location<'c> {
    let node = graph.node(id);
    let child = match &node.source {
        Some(s) => Location::new(ctx, &s.file, s.line as usize, 0),
        None => Location::unknown(ctx),
    };
    Location::name(ctx, &node.name, child)
}

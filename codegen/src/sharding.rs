//! SPMD annotations: which parameters of `@main` are split across devices. The plan is chosen
//! before codegen (the facade's `TensorParallel` resolves it per input); codegen only writes it
//! as Shardy annotations, the form XLA's partitioner is moving to (GSPMD's `mhlo.sharding`
//! propagation is deprecated): one mesh `@mesh` with a single axis `"tp"` over every device,
//! `sdy.sharding` on `@main`'s parameters and results, and the module's partition count. XLA's
//! SPMD partitioner does the rest, collectives included; compile with
//! `use_shardy_partitioner` (the runtime's `CompileOptions::partitioned` sets it).
//!
//! The Shardy dialect is not registered in fxhlo's MLIR context, so the mesh is a generic
//! operation and the shardings are opaque attributes; the PJRT plugin parses them with the
//! dialect registered.

use std::collections::HashMap;

use fxhlo_ir::NodeId;
use melior::ir::Attribute;
use melior::Context;

use crate::attr;

/// The name of the one mesh axis every split uses.
pub const AXIS: &str = "tp";

/// The partition count and the split of each split parameter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputShardings {
    /// Devices (SPMD partitions) the program runs on.
    pub devices: usize,
    /// Input node -> the dimension split evenly across the devices; inputs not here are
    /// replicated (every device holds all of it).
    pub split: HashMap<NodeId, usize>,
}

impl InputShardings {
    /// The `mesh` attribute of the module's `sdy.mesh @mesh`, `#sdy.mesh<["tp"=N]>`: one axis
    /// over every device.
    pub fn mesh_attr<'c>(&self, ctx: &'c Context) -> Attribute<'c> {
        attr::opaque(ctx, "sdy", &format!("mesh<[\"{AXIS}\"={}]>", self.devices))
    }

    /// The `sdy.sharding` of a value of rank `rank`: split along `dim` over the mesh axis
    /// (`#sdy.sharding<@mesh, [{}, {"tp"}, {}]>`), or replicated (every dim `{}`).
    pub fn sharding_attr<'c>(&self, ctx: &'c Context, dim: Option<usize>, rank: usize) -> Attribute<'c> {
        let dims: Vec<String> = (0..rank)
            .map(|i| if Some(i) == dim { format!("{{\"{AXIS}\"}}") } else { "{}".into() })
            .collect();
        attr::opaque(ctx, "sdy", &format!("sharding<@mesh, [{}]>", dims.join(", ")))
    }
}

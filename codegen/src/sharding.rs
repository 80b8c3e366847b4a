//! SPMD annotations: which parameters of `@main` are split across devices. The plan is chosen
//! before codegen (the facade's `TensorParallel` resolves it per input); codegen only writes it
//! as GSPMD `mhlo.sharding` attributes on the parameters and results and the module's
//! partition count, and XLA's SPMD partitioner does the rest (collectives included).

use std::collections::HashMap;

use fxhlo_ir::NodeId;

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
    /// The `mhlo.sharding` text of a parameter of rank `rank`: split along `dim` over every
    /// device (`{devices=[1,4,1]0,1,2,3}`), or `{replicated}`.
    pub fn sharding_text(&self, dim: Option<usize>, rank: usize) -> String {
        match dim {
            Some(d) if d < rank => {
                let tiles: Vec<String> = (0..rank)
                    .map(|i| {
                        if i == d {
                            self.devices.to_string()
                        } else {
                            "1".into()
                        }
                    })
                    .collect();
                let ids: Vec<String> = (0..self.devices).map(|i| i.to_string()).collect();
                format!("{{devices=[{}]{}}}", tiles.join(","), ids.join(","))
            }
            _ => "{replicated}".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharding_text_tiles_one_dim() {
        let s = InputShardings {
            devices: 4,
            split: HashMap::new(),
        };
        assert_eq!(s.sharding_text(Some(1), 3), "{devices=[1,4,1]0,1,2,3}");
        assert_eq!(s.sharding_text(Some(0), 1), "{devices=[4]0,1,2,3}");
        assert_eq!(s.sharding_text(None, 2), "{replicated}");
    }
}

//! Tensor parallelism: a plan of which weights are split along which dimension over how many
//! devices (Megatron-style: a column-parallel linear splits its weight's output dim 0, a
//! row-parallel one its input dim 1; attention heads follow their projections), resolved
//! against a graph into [`InputShardings`] that codegen writes as SPMD annotations. XLA's SPMD
//! partitioner then splits the program and inserts the collectives: fxhlo schedules nothing
//! itself, and any plan gives the same results as one device, only the traffic differs.

use fxhlo_codegen::InputShardings;
use fxhlo_ir::{Graph, Op};

use crate::{Error, Result};

/// A tensor-parallel plan (`Options::tensor_parallel`; JSON
/// `{"devices": 2, "split": [{"weights": "*.fc1.weight", "dim": 0}]}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorParallel {
    /// Devices (SPMD partitions) to split over.
    pub devices: usize,
    /// Rules, first match wins; a weight no rule matches is replicated on every device.
    #[serde(default)]
    pub split: Vec<SplitRule>,
}

/// One rule of a [`TensorParallel`] plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitRule {
    /// A weight key pattern (the parameter's or buffer's name in the model, as
    /// `named_parameters()` gives it); `*` matches any run of characters.
    pub weights: String,
    /// The dimension split evenly across the devices.
    pub dim: usize,
}

impl TensorParallel {
    /// The Megatron-style plan over `devices` for the usual names of transformer layers
    /// (these models' and Hugging Face's): the projections that fan out (attention's
    /// `qkv`/`c_attn`/`query`/`key`/`value`, the MLP's `fc1`/`c_fc`/`intermediate`) are
    /// column-parallel, weight and bias split on dim 0, so each device computes whole heads and
    /// its part of the hidden layer; the projections that fan in (`proj`, `c_proj`,
    /// `mlp_proj`, `attention.output`, `fc2`, `ffn_output`) are row-parallel, weight split on
    /// dim 1, followed by one all-reduce. Everything else is replicated.
    pub fn megatron(devices: usize) -> TensorParallel {
        let mut split = Vec::new();
        for column in [
            "qkv",
            "c_attn",
            "query",
            "key",
            "value",
            "fc1",
            "c_fc",
            "intermediate",
        ] {
            for (part, dim) in [("weight", 0), ("bias", 0)] {
                split.push(SplitRule {
                    weights: format!("*{column}.{part}"),
                    dim,
                });
            }
        }
        for row in ["proj", "attention.output", "fc2", "ffn_output"] {
            split.push(SplitRule {
                weights: format!("*{row}.weight"),
                dim: 1,
            });
        }
        TensorParallel { devices, split }
    }

    /// The split of each input of `graph` this plan decides. Errors: no device, or a split
    /// that names a dimension the weight does not have or does not divide evenly.
    pub fn resolve(&self, graph: &Graph) -> Result<InputShardings> {
        if self.devices == 0 {
            return Err(Error::Options(
                "tensor_parallel: `devices` must be at least 1".into(),
            ));
        }
        let mut shardings = InputShardings {
            devices: self.devices,
            ..Default::default()
        };
        for &id in graph.inputs() {
            let node = graph.node(id);
            let Op::Input {
                weight: Some(key), ..
            } = &node.op
            else {
                continue;
            };
            let Some(rule) = self.split.iter().find(|r| glob(&r.weights, key)) else {
                continue;
            };
            let ty = &node.results[0];
            let size = ty.shape.get(rule.dim).copied();
            match size {
                None => {
                    return Err(Error::Options(format!(
                        "tensor_parallel: rule `{}` splits dim {} of weight `{key}`, which is {ty} (rank {})",
                        rule.weights,
                        rule.dim,
                        ty.rank()
                    )))
                }
                Some(n) if n % self.devices as i64 != 0 => {
                    return Err(Error::Options(format!(
                        "tensor_parallel: rule `{}` splits dim {} of weight `{key}` ({ty}) over {} devices, \
                         but {n} does not divide evenly; choose a device count that divides {n}, or split \
                         another dim",
                        rule.weights, rule.dim, self.devices
                    )))
                }
                Some(_) => {
                    shardings.split.insert(id, rule.dim);
                }
            }
        }
        Ok(shardings)
    }
}

/// `pattern` (`*` = any run of characters, everything else literal) matches all of `text`.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob("*.fc1.weight", "blocks.0.fc1.weight"));
        assert!(glob("blocks.*.attn.*", "blocks.3.attn.qkv.bias"));
        assert!(glob("fc1.weight", "fc1.weight"));
        assert!(!glob("fc1.weight", "xfc1.weight"));
        assert!(!glob("*.fc1.weight", "blocks.0.fc1.bias"));
        assert!(!glob("a*b*c", "acb"));
        assert!(glob("*", "anything"));
    }
}

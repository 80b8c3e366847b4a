//! The pass manager: runs a pipeline in order, verifies the graph after every pass and times
//! each one.

use std::time::{Duration, Instant};

use fxhlo_ir::Graph;

use crate::{Error, Pass, Result};

/// What one pass did in one run.
#[derive(Debug, Clone)]
pub struct PassRun {
    pub pass: &'static str,
    pub changed: bool,
    pub time: Duration,
}

/// Runs an ordered list of passes (the registry's, or instances a caller configured, such as a
/// [`crate::DeviceLayout`] that keeps some inputs as they are).
pub struct PassManager<'p> {
    pipeline: Vec<&'p dyn Pass>,
    /// Verify after every pass (always on in debug builds and tests; cheap enough to keep on).
    pub verify: bool,
}

impl<'p> PassManager<'p> {
    /// A manager for `pipeline`, verifying after each pass.
    pub fn new(pipeline: Vec<&'p dyn Pass>) -> Self {
        PassManager { pipeline, verify: true }
    }

    /// The pipeline's pass names, in order (part of the cache key).
    pub fn names(&self) -> Vec<&'static str> {
        self.pipeline.iter().map(|p| p.name()).collect()
    }

    /// Runs every pass on `graph` in order.
    pub fn run(&self, graph: &mut Graph) -> Result<Vec<PassRun>> {
        let mut runs = Vec::with_capacity(self.pipeline.len());
        for pass in &self.pipeline {
            let start = Instant::now();
            let changed = pass.run(graph)?;
            let time = start.elapsed();
            tracing::debug!(pass = pass.name(), changed, ?time, "pass ran");
            if self.verify {
                fxhlo_ir::verify(graph).map_err(|source| Error::Verify { pass: pass.name(), source })?;
            }
            runs.push(PassRun { pass: pass.name(), changed, time });
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxhlo_ir::{DType, InputKind, Op, TensorType, ValueRef};

    /// A pass that breaks the graph, to prove the manager's verifier catches it.
    struct Breaker;
    impl Pass for Breaker {
        fn name(&self) -> &'static str {
            "breaker"
        }
        fn run(&self, graph: &mut Graph) -> Result<bool> {
            let id = graph.node_ids().last().expect("test graph has nodes");
            graph.node_mut(id).results[0] = TensorType::new(DType::F32, vec![99]);
            Ok(true)
        }
    }
    static BREAKER: Breaker = Breaker;

    #[test]
    fn verifier_runs_after_each_pass() {
        let mut g = Graph::new("t");
        let ty = TensorType::new(DType::F32, vec![2]);
        let x = g.add_input("x", InputKind::UserInput, None, ty.clone(), None);
        let r = g.add_node("r", Op::Unary(fxhlo_ir::UnaryOp::Relu), &[ValueRef::first(x)], vec![ty], None).unwrap();
        g.set_outputs(vec![ValueRef::first(r)]).unwrap();
        assert!(PassManager::new(vec![]).run(&mut g).unwrap().is_empty());
        let err = PassManager::new(vec![&BREAKER]).run(&mut g).unwrap_err().to_string();
        assert!(err.contains("invalid after pass `breaker`") && err.contains("node `r`"), "{err}");
    }

    #[test]
    fn unknown_pass_names_are_rejected() {
        let err = crate::lookup("fold-everything").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown pass `fold-everything`"), "{err}");
    }
}

//! The pass manager: runs a pipeline in order, verifies the graph after every pass, times
//! each one and counts nodes before and after it. A caller that wants more after each pass
//! (the facade's dumps: the IR file of a pass that changed the graph) gives an observer to
//! [`PassManager::run_observed`]; passes themselves never print or write files.

use std::time::{Duration, Instant};

use fxhlo_ir::Graph;

use crate::{Error, Pass, Result};

/// What one pass did in one run.
#[derive(Debug, Clone)]
pub struct PassRun {
    pub pass: &'static str,
    pub changed: bool,
    pub time: Duration,
    /// Nodes of the graph (top level) before and after the pass.
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// The pass's own account of the run ([`Pass::run_summarized`]), if it gives one.
    pub summary: Option<String>,
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
        self.run_observed(graph, |_, _| Ok(()))
    }

    /// [`PassManager::run`], calling `observe` after each pass (once the verifier accepted
    /// the graph) with what the pass did and the graph it left. An error of `observe` stops
    /// the pipeline and is returned as it is.
    pub fn run_observed<E: From<Error>>(
        &self,
        graph: &mut Graph,
        mut observe: impl FnMut(&PassRun, &Graph) -> std::result::Result<(), E>,
    ) -> std::result::Result<Vec<PassRun>, E> {
        let mut runs = Vec::with_capacity(self.pipeline.len());
        for pass in &self.pipeline {
            let nodes_before = graph.node_count();
            let start = Instant::now();
            let (changed, summary) = pass.run_summarized(graph)?;
            let time = start.elapsed();
            tracing::debug!(pass = pass.name(), changed, ?time, "pass ran");
            if self.verify {
                fxhlo_ir::verify(graph).map_err(|source| Error::Verify { pass: pass.name(), source })?;
            }
            let run = PassRun { pass: pass.name(), changed, time, nodes_before, nodes_after: graph.node_count(), summary };
            observe(&run, graph)?;
            runs.push(run);
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
    fn the_observer_sees_each_pass_after_the_verifier() {
        let mut g = Graph::new("t");
        let ty = TensorType::new(DType::F32, vec![2]);
        let x = g.add_input("x", InputKind::UserInput, None, ty.clone(), None);
        let r = g.add_node("r", Op::Unary(fxhlo_ir::UnaryOp::Relu), &[ValueRef::first(x)], vec![ty.clone()], None).unwrap();
        g.add_node("dead", Op::Unary(fxhlo_ir::UnaryOp::Relu), &[ValueRef::first(x)], vec![ty], None).unwrap();
        g.set_outputs(vec![ValueRef::first(r)]).unwrap();
        let mut seen = Vec::new();
        let runs = PassManager::new(vec![&crate::Dce, &crate::Dce])
            .run_observed(&mut g, |run, graph| {
                seen.push((run.pass, run.changed, run.nodes_before, run.nodes_after, graph.node_count()));
                Ok::<(), Error>(())
            })
            .unwrap();
        assert_eq!(seen, [("dce", true, 3, 2, 2), ("dce", false, 2, 2, 2)]);
        assert_eq!(runs.len(), 2);
        // A graph the verifier refuses never reaches the observer.
        let mut calls = 0;
        let err = PassManager::new(vec![&BREAKER]).run_observed(&mut g, |_, _| {
            calls += 1;
            Ok::<(), Error>(())
        });
        assert!(err.is_err() && calls == 0);
    }

    #[test]
    fn unknown_pass_names_are_rejected() {
        let err = crate::lookup("fold-everything").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown pass `fold-everything`"), "{err}");
    }
}

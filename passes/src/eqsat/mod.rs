//! `eqsat`: equality saturation with `egg` over the graph's matrix products, layout ops and
//! elementwise adds and products, then a DAG-aware extraction under a cost model (`-O2` only).
//!
//! The graph's top level becomes an e-graph (`convert`: structured nodes for the ops rules
//! look into, `orig` nodes naming every other value), the rules (`rules/`) run under node,
//! iteration and time limits with egg's backoff scheduler, the extractor (`extract`) picks a
//! DAG counting shared subgraphs once, and `rebuild` applies it to the graph, keeping every
//! node whose choice did not change. A predicted gain under [`MIN_GAIN`] keeps the graph as it
//! was: the pass never trades a graph for one the cost model barely prefers.
//!
//! Relies on: a verified graph. Preserves: inputs, outputs and their types; every node the
//! extraction did not replace (names, source lines); regions (they stay opaque).
//!
//! ```text
//! before:  %ab  = aten.mm %a, %b : f32[64,64]      (a: [64,64], b: [64,64], c: [64,2])
//!          %abc = aten.mm %ab, %c : f32[64,2]
//! after:   %eqsat.1     = aten.mm %b, %c : f32[64,2]
//!          %abc.eqsat.1 = aten.mm %a, %eqsat.1 : f32[64,2]
//! ```

mod analysis;
mod convert;
pub mod cost;
mod extract;
mod lang;
mod rebuild;
pub mod rules;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use egg::{BackoffScheduler, Runner, StopReason};
use fxhlo_ir::Graph;

pub use analysis::{Data, TensorAnalysis};
pub use cost::Roofline;
pub use extract::{dag_cost, dag_greedy, tree_bottom_up, Candidate};
pub use lang::{ENode, Ints, ValueKey};
pub use rules::Rule;

use crate::{Error, Pass, Result};

/// The smallest predicted gain (a fraction of the graph's cost) worth a rewrite.
pub const MIN_GAIN: f64 = 0.01;

/// The bounds of one saturation. Defaults keep the fixture models well under the compile
/// budget of issue 27 (150 ms and 50k e-nodes on BERT-base); see docs/optimizer.md.
#[derive(Clone, Debug)]
pub struct Limits {
    pub iterations: usize,
    pub nodes: usize,
    /// A wall-clock bound makes the result depend on the machine's speed; it is a safety net,
    /// set well above what the node and iteration limits allow in practice.
    pub time: Duration,
    /// Rounds of the multi-pattern rules (`rules::merge`), which grow the e-graph
    /// quadratically per round: the first rounds run every rule, the rest only the others.
    pub multi_rounds: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { iterations: 16, nodes: 20_000, time: Duration::from_millis(200), multi_rounds: 2 }
    }
}

/// What one run did: for tracing, tests and the docs' figures.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Why saturation stopped (`Saturated`, `IterationLimit(n)`, `NodeLimit(n)`, ...).
    pub stop_reason: String,
    pub iterations: usize,
    pub enodes: usize,
    pub eclasses: usize,
    /// How many times each rule was applied, by name (every rule listed, zeros included).
    pub applied: BTreeMap<String, usize>,
    /// The cost of the graph as it came in, and of the extraction (`None`: not extracted).
    pub cost_before: f64,
    pub cost_after: Option<f64>,
    /// Whether the graph was rewritten (the gain passed [`MIN_GAIN`] and rebuilding worked).
    pub changed: bool,
    /// Why the graph was kept, when it was.
    pub kept_because: Option<String>,
    pub time: Duration,
}

/// Runs `rules` on `graph` under `limits` and rewrites it when the extraction is at least
/// [`MIN_GAIN`] cheaper on `target`'s roofline. An error means a bug (a rule merged classes of
/// different types, or the rewritten graph could not be built); the graph is then left as it
/// was where possible.
pub fn optimize(graph: &mut Graph, rules: &[Rule], limits: &Limits, target: &Roofline) -> Result<Report> {
    let start = Instant::now();
    let fail = |message: String| Error::Failed { pass: "eqsat", message };
    let conv = convert::to_egraph(graph).map_err(|e| fail(e.to_string()))?;
    let mut report = Report { cost_before: extract::original_cost(graph, &conv, target), ..Report::default() };
    report.applied = rules.iter().map(|r| (r.name.to_string(), 0)).collect();
    // Two phases: every rule for `multi_rounds` rounds, then the single-pattern ones alone
    // for the iterations left (phase two starts saturated if nothing new can fire).
    let single: Vec<&Rule> = rules.iter().filter(|r| !rules::is_multi_pattern(r)).collect();
    let multi_rounds = if single.len() < rules.len() { limits.multi_rounds.min(limits.iterations) } else { 0 };
    let mut egraph = conv.egraph;
    let mut phases: Vec<(Vec<&Rule>, usize)> = Vec::new();
    if multi_rounds > 0 {
        phases.push((rules.iter().collect(), multi_rounds));
    }
    phases.push((single, limits.iterations - multi_rounds));
    for (phase_rules, iterations) in phases {
        let left = limits.time.saturating_sub(start.elapsed());
        let runner = Runner::default()
            .with_egraph(egraph)
            .with_iter_limit(iterations)
            .with_node_limit(limits.nodes)
            .with_time_limit(left)
            .with_scheduler(rules::channels_last::SCAN_ALL.iter().fold(BackoffScheduler::default(), |s, r| s.do_not_ban(*r)))
            .run(phase_rules.iter().copied());
        report.stop_reason = match &runner.stop_reason {
            Some(StopReason::Other(s)) => s.clone(),
            Some(r) => format!("{r:?}"),
            None => "none".to_string(),
        };
        report.iterations += runner.iterations.len();
        for it in &runner.iterations {
            for (rule, n) in &it.applied {
                *report.applied.entry(rule.to_string()).or_default() += n;
            }
        }
        let bounded = matches!(runner.stop_reason, Some(StopReason::NodeLimit(_) | StopReason::TimeLimit(_)));
        egraph = runner.egraph;
        if bounded {
            break;
        }
    }
    report.enodes = egraph.total_number_of_nodes();
    report.eclasses = egraph.number_of_classes();
    let conv = convert::Converted { egraph, ..conv };
    if !conv.egraph.analysis.conflicts.is_empty() {
        return Err(fail(format!("a rule merged unequal classes: {}", conv.egraph.analysis.conflicts.join("; "))));
    }
    let roots: Vec<egg::Id> = graph.outputs().iter().filter_map(|v| conv.class_of.get(v).copied()).collect();
    let kept = match extract::extract(&conv.egraph, &roots, target) {
        None => Some("no acyclic extraction".to_string()),
        Some(ex) => {
            report.cost_after = Some(ex.cost);
            if ex.cost > report.cost_before * (1.0 - MIN_GAIN) {
                Some(format!("predicted gain under {}%", MIN_GAIN * 100.0))
            } else {
                match rebuild::apply(graph, &conv, &ex) {
                    Ok(changed) => {
                        report.changed = changed;
                        None
                    }
                    Err(e) => return Err(fail(e)),
                }
            }
        }
    };
    report.kept_because = kept;
    report.time = start.elapsed();
    tracing::debug!(
        stop = %report.stop_reason, iterations = report.iterations, enodes = report.enodes, eclasses = report.eclasses,
        applied = ?report.applied, cost_before = report.cost_before, cost_after = ?report.cost_after,
        changed = report.changed, kept = ?report.kept_because, time = ?report.time, "eqsat"
    );
    Ok(report)
}

/// The pass; see the module doc. It prices graphs on one target's roofline: the registry's
/// instance is [`EQSAT`] (the CPU plugin's), the pipeline for other devices takes
/// [`EQSAT_ACCELERATOR`] (TPU v6e's); both are named `eqsat`. `-O2` on the CPU plugin runs
/// [`EQSAT_LAYOUT`] (`eqsat-layout`).
pub struct Eqsat {
    target: &'static Roofline,
    /// With the channels-last rules (`rules::channels_last`): the pass `eqsat-layout`.
    layout: bool,
}

/// The pass pricing graphs for the PJRT CPU plugin.
pub static EQSAT: Eqsat = Eqsat::new(&cost::CPU);

/// The pass pricing graphs for an accelerator (TPU v6e's peaks).
pub static EQSAT_ACCELERATOR: Eqsat = Eqsat::new(&cost::ACCELERATOR);

/// `eqsat-layout`: [`EQSAT`] with the channels-last rules, the e-graph form of the
/// `channels-last` pass: `-O2`'s e-graph on the CPU plugin, in that pass's place (as fast on
/// the convnets and UNets measured, docs/optimizer.md).
pub static EQSAT_LAYOUT: Eqsat = Eqsat { target: &cost::CPU, layout: true };

impl Eqsat {
    /// The pass pricing graphs on `target`.
    pub const fn new(target: &'static Roofline) -> Eqsat {
        Eqsat { target, layout: false }
    }

    /// The rules this instance runs.
    pub fn rules(&self) -> Vec<Rule> {
        let mut rules = rules::all();
        if self.layout {
            rules.extend(rules::channels_last::rules());
        }
        rules
    }

    /// The roofline this instance prices graphs on.
    pub fn target(&self) -> &'static Roofline {
        self.target
    }
}

impl Pass for Eqsat {
    fn name(&self) -> &'static str {
        if self.layout {
            "eqsat-layout"
        } else {
            "eqsat"
        }
    }

    fn run(&self, graph: &mut Graph) -> Result<bool> {
        Ok(self.run_summarized(graph)?.0)
    }

    fn run_summarized(&self, graph: &mut Graph) -> Result<(bool, Option<String>)> {
        let report = optimize(graph, &self.rules(), &Limits::default(), self.target)?;
        Ok((report.changed, Some(report.summary())))
    }
}

impl Report {
    /// One line for the dump report: why saturation stopped, the e-graph's size, the rules that
    /// fired (with their counts), the extraction's cost against the input's, and why the input
    /// graph was kept when it was.
    pub fn summary(&self) -> String {
        let fired: Vec<String> = self.applied.iter().filter(|(_, n)| **n > 0).map(|(r, n)| format!("{r} x{n}")).collect();
        let fired = if fired.is_empty() { "none".to_string() } else { fired.join(", ") };
        let after = self.cost_after.map(|c| format!("{c:.4e}")).unwrap_or_else(|| "-".to_string());
        let outcome = match (&self.kept_because, self.changed) {
            (Some(why), _) => format!("kept the input graph ({why})"),
            (None, true) => "rewrote the graph".to_string(),
            (None, false) => "the extraction is the input graph".to_string(),
        };
        format!(
            "stop {}, {} iterations, {} e-nodes, {} e-classes; rules fired: {fired}; cost {:.4e} -> {after}; {outcome}",
            self.stop_reason, self.iterations, self.enodes, self.eclasses, self.cost_before
        )
    }
}

#[cfg(test)]
mod tests;

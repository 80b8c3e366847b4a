//! A dump's report (`report.txt` for people, `report.json` for scripts): each stage's time,
//! the nodes before and after each pass, the files written, and where the executable came
//! from (a cache hit, or a miss and why).

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// The report of one graph's compile.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub graph: String,
    /// The folder's name (`<graph>-<key8>`).
    pub folder: String,
    /// The cache key's digest (hex).
    pub key: String,
    /// The dump filter in effect.
    pub filter: String,
    /// Nodes of the graph as imported.
    pub imported_nodes: usize,
    /// The stages in order.
    pub stages: Vec<StageRecord>,
    /// `hit (memory)`, `hit (disk)`, or `miss: <why>`; `None` when nothing was compiled
    /// (`fxhlo compile` without a device, or a failure before).
    pub cache: Option<String>,
    /// Why compiling stopped, when it did.
    pub error: Option<String>,
    /// Anything the reader should know (no SVGs, and why).
    pub notes: Vec<String>,
}

/// One stage: a pass, codegen, the PJRT compile, ...
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageRecord {
    /// `import`, `pass dce`, `codegen`, `PJRT compile`.
    pub stage: String,
    /// Milliseconds, where timed.
    pub ms: Option<f64>,
    /// For a pass: whether it changed the graph.
    pub changed: Option<bool>,
    pub nodes_before: Option<usize>,
    pub nodes_after: Option<usize>,
    /// The file written for it, if any.
    pub file: Option<String>,
    /// For a pass that gives one: its account of the run (`eqsat`: e-graph size, stop reason,
    /// rules fired), printed under its row.
    pub detail: Option<String>,
}

impl StageRecord {
    /// A stage with no time.
    pub fn named(stage: &str) -> StageRecord {
        StageRecord { stage: stage.to_string(), ..StageRecord::default() }
    }

    /// A stage that took `time`.
    pub fn timed(stage: &str, time: Duration) -> StageRecord {
        StageRecord { ms: Some(time.as_secs_f64() * 1e3), ..StageRecord::named(stage) }
    }
}

impl Report {
    /// Pretty JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The table people read.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "graph {} (cache key {}), dump filter: {}", self.graph, self.key, self.filter);
        let _ = writeln!(out, "{:<28} {:>10} {:>8} {:>13}  file", "stage", "ms", "changed", "nodes");
        for s in &self.stages {
            let ms = s.ms.map(|ms| format!("{ms:.2}")).unwrap_or_default();
            let changed = match s.changed {
                Some(true) => "yes",
                Some(false) => "no",
                None => "",
            };
            let nodes = match (s.nodes_before, s.nodes_after) {
                (Some(b), Some(a)) => format!("{b} -> {a}"),
                (None, Some(a)) => a.to_string(),
                _ => String::new(),
            };
            let _ = writeln!(out, "{:<28} {ms:>10} {changed:>8} {nodes:>13}  {}", s.stage, s.file.as_deref().unwrap_or(""));
            if let Some(detail) = &s.detail {
                let _ = writeln!(out, "    {detail}");
            }
        }
        // `+ 0.0`: the sum of nothing is -0.0, which would print as `-0.00`.
        let total: f64 = self.stages.iter().filter_map(|s| s.ms).sum::<f64>() + 0.0;
        let _ = writeln!(out, "{:<28} {total:>10.2}", "total");
        match &self.cache {
            Some(cache) => {
                let _ = writeln!(out, "cache: {cache}");
            }
            None => out.push_str("cache: not consulted (nothing compiled for a device)\n"),
        }
        if let Some(error) = &self.error {
            let _ = writeln!(out, "error: {error}");
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }
}

//! The pictures of a dump: which nodes a pass changed, and SVGs rendered by Graphviz's `dot`
//! (a subprocess with a time limit; skipped, with a note in the report, when `dot` is not
//! installed or the graph is too big to read as a picture).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fxhlo_ir::{Graph, NodeId};

/// Graphs with more nodes get no SVG: `dot` takes minutes on them and nobody reads the result.
pub const MAX_SVG_NODES: usize = 3000;

/// How long one `dot` may run.
const DOT_TIMEOUT: Duration = Duration::from_secs(30);

/// Set once `dot` was found missing: later stages do not try again.
static DOT_MISSING: AtomicBool = AtomicBool::new(false);

/// What makes a node "the same" across two stages: its name, op, result types and operands
/// (by producer name). A node a pass created, or changed in any of these, has a new one.
pub(crate) fn identity(graph: &Graph, id: NodeId) -> u64 {
    let node = graph.node(id);
    // SipHash with fixed keys: deterministic within and across processes.
    let mut h = std::hash::DefaultHasher::new();
    node.name.hash(&mut h);
    node.op.hash(&mut h);
    node.results.hash(&mut h);
    for v in graph.operands(id) {
        graph.node(v.node).name.hash(&mut h);
        v.result.hash(&mut h);
    }
    h.finish()
}

/// The identities of every node of `graph` (top level).
pub(crate) fn identities(graph: &Graph) -> HashSet<u64> {
    graph.node_ids().map(|id| identity(graph, id)).collect()
}

/// Renders `dot` into `svg` with Graphviz. `None` when done; else a note for the report
/// saying why there is no SVG (the same note for every stage, so it is listed once).
pub(crate) fn render_svg(dot: &Path, svg: &Path, nodes: usize) -> Option<String> {
    if nodes > MAX_SVG_NODES {
        return Some(format!("no .svg for graphs over {MAX_SVG_NODES} nodes (render the .dot yourself: dot -Tsvg)"));
    }
    if DOT_MISSING.load(Ordering::Relaxed) {
        return Some("no .svg: Graphviz's `dot` is not installed (apt-get install graphviz)".into());
    }
    let child = Command::new("dot")
        .arg("-Tsvg")
        .arg(dot)
        .arg("-o")
        .arg(svg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            DOT_MISSING.store(true, Ordering::Relaxed);
            return Some("no .svg: Graphviz's `dot` is not installed (apt-get install graphviz)".into());
        }
        Err(e) => return Some(format!("no .svg: cannot run Graphviz's `dot`: {e}")),
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return None,
            Ok(Some(status)) => return Some(format!("no .svg for {}: `dot` failed ({status})", file_name(dot))),
            Ok(None) if start.elapsed() > DOT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_file(svg);
                return Some(format!("no .svg for {}: `dot` ran over {} s", file_name(dot), DOT_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Some(format!("no .svg: waiting for `dot`: {e}")),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

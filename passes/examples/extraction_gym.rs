//! fxhlo's extractor on the e-graphs that extraction-gym publishes (`data/tensat/*.json` of
//! github.com/egraphs-good/extraction-gym: TENSAT's e-graphs of BERT, NasNet-A, NasRNN,
//! ResNet-50 and VGG with TASO's measured op costs). Not shipped and not in the tests: the
//! files are the gym's, read from wherever the user keeps a copy.
//!
//! For each file it prints the e-graph's size and the DAG cost (each class once, the cost the
//! gym scores) of three extractions: fxhlo's DAG-aware greedy (`dag_greedy`, which keeps the
//! tree extraction where that scores better), the bottom-up tree extraction alone (egg's
//! default: each class's cheapest candidate counting its children's costs once per use), and
//! the first candidate of every class (the gym's files list the input graph's node first), with
//! the time of the first two.
//!
//! Usage: `cargo run --release -p fxhlo-passes --example extraction_gym -- <file.json>...`

use std::collections::HashMap;
use std::time::Instant;

use fxhlo_passes::eqsat::{dag_cost, dag_greedy, tree_bottom_up, Candidate};

/// The gym's serialized e-graph as class-indexed candidates, and its roots.
fn read(path: &str) -> Result<(Vec<Vec<Candidate>>, Vec<usize>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let nodes = json["nodes"].as_object().ok_or_else(|| format!("{path}: no `nodes` object"))?;
    let mut class_index: HashMap<String, usize> = HashMap::new();
    let mut class_of_node: HashMap<&str, usize> = HashMap::new();
    // Classes numbered in order of first appearance; nodes in file order within a class.
    for (id, node) in nodes {
        let class = node["eclass"].as_str().ok_or_else(|| format!("{path}: node {id} has no eclass"))?.to_string();
        let next = class_index.len();
        class_of_node.insert(id, *class_index.entry(class).or_insert(next));
    }
    let mut classes: Vec<Vec<Candidate>> = vec![Vec::new(); class_index.len()];
    for (id, node) in nodes {
        let cost = node["cost"].as_f64().ok_or_else(|| format!("{path}: node {id} has no cost"))?;
        let children = node["children"]
            .as_array()
            .ok_or_else(|| format!("{path}: node {id} has no children list"))?
            .iter()
            .map(|c| c.as_str().and_then(|c| class_of_node.get(c).copied()).ok_or_else(|| format!("{path}: node {id}: unknown child {c}")))
            .collect::<Result<Vec<_>, _>>()?;
        classes[class_of_node[id.as_str()]].push(Candidate { cost, children });
    }
    let roots = json["root_eclasses"]
        .as_array()
        .ok_or_else(|| format!("{path}: no root_eclasses"))?
        .iter()
        .map(|r| r.as_str().and_then(|r| class_index.get(r).copied()).ok_or_else(|| format!("{path}: unknown root {r}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((classes, roots))
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: extraction_gym <file.json>...  (extraction-gym's data/tensat/*.json)");
        std::process::exit(2);
    }
    println!("| e-graph | classes | nodes | fxhlo dag-greedy | ms | tree bottom-up | ms | first candidates |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for path in files {
        let (classes, roots) = match read(&path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        let nodes: usize = classes.iter().map(Vec::len).sum();
        let start = Instant::now();
        let (_, dag) = dag_greedy(&classes, &roots);
        let dag_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let tree = dag_cost(&classes, &tree_bottom_up(&classes), &roots);
        let tree_ms = start.elapsed().as_secs_f64() * 1e3;
        let first = dag_cost(&classes, &vec![Some(0); classes.len()], &roots);
        let show = |c: Option<f64>| c.map_or("none (cycle)".to_string(), |c| format!("{c:.4}"));
        let name = std::path::Path::new(&path).file_stem().map_or(path.clone(), |s| s.to_string_lossy().into_owned());
        println!("| {name} | {} | {nodes} | {} | {dag_ms:.1} | {} | {tree_ms:.1} | {} |", classes.len(), show(dag), show(tree), show(first));
    }
}

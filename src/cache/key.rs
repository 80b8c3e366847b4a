//! The compile cache's key: a struct of named fields, each hashed on its own and then
//! together, so that a miss can be explained field by field.
//!
//! What goes in is everything the executable depends on: the graph as imported in canonical
//! form (values numbered by position, no names, no source locations: the same model hits from
//! another script or process), every input's kind, dtype and shape, the bytes of frozen
//! weights, the compile options, the target (plugin platform and version, device count,
//! topology), `XLA_FLAGS`, and fxhlo's own version. Dump settings and log levels are not.

use std::fmt::Write as _;

use fxhlo_ir::{Graph, InputKind, Op};
use serde::{Deserialize, Serialize};

use super::miss::FieldDiff;
use crate::pipeline::{Frozen, Options};

/// The key of one executable. Compare keys with `==`; name files with [`CacheKey::hex`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// fxhlo's version and build ([`build_id`]): another build may lower the same graph
    /// differently.
    pub fxhlo: String,
    /// blake3 of the graph's shape-free structure: ops and how they connect. Two keys of one
    /// model at two image sizes share it; a miss reports the nearest entry with the same one.
    pub structure: String,
    /// blake3 of [`fxhlo_ir::print_canonical`]: the whole graph, types and attributes included.
    pub graph: String,
    /// One per graph input, in calling order: `user_input f32[1,3,224,224]`,
    /// `parameter f32[64,3,7,7]`.
    pub inputs: Vec<String>,
    /// blake3 over the frozen inputs' names and bytes (`freeze`), `None` without.
    pub frozen: Option<String>,
    /// [`Options::fingerprint`].
    pub options: String,
    /// The target: `cpu 0.81 (1 device); host x86_64 sse3 ... avx2 fma ...` ([`target_id`] and
    /// the CPU's extensions: the CPU plugin's code is for this CPU); on TPU, ahead of time or on
    /// a TPU VM alike, what the topology description says and the plugin's identity
    /// ([`topology_target_id`]).
    pub target: String,
    /// `XLA_FLAGS` as set when compiling.
    pub xla_flags: String,
}

fn hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

impl CacheKey {
    /// The key of `graph` (as imported, before passes) compiled with `options` and `frozen` for
    /// `target` (see [`target_id`]).
    pub fn new(graph: &Graph, options: &Options, frozen: &Frozen, target: String) -> CacheKey {
        let inputs = graph
            .inputs()
            .iter()
            .map(|&id| {
                let node = graph.node(id);
                match &node.op {
                    // The weight key is left out: the same model reached through another
                    // path names its weights otherwise, and the executable does not care.
                    Op::Input { kind, .. } => {
                        let kind = match kind {
                            InputKind::UserInput => "user_input",
                            InputKind::Parameter => "parameter",
                            InputKind::Buffer => "buffer",
                            InputKind::Constant => "constant",
                        };
                        format!("{kind} {}", node.results[0])
                    }
                    other => format!("{} {}", other.name(), node.results[0]),
                }
            })
            .collect();
        let frozen = (!frozen.is_empty()).then(|| {
            let mut h = blake3::Hasher::new();
            // Sorted by name: the key must not depend on a map's iteration order.
            let mut names: Vec<&String> = frozen.keys().collect();
            names.sort();
            for name in names {
                h.update(&(name.len() as u64).to_le_bytes());
                h.update(name.as_bytes());
                // The data's own blake3 (computed once, reused by the IR text and dumps).
                let data = &frozen[name];
                h.update(&(data.len() as u64).to_le_bytes());
                h.update(&data.digest());
            }
            h.finalize().to_hex().to_string()
        });
        CacheKey {
            fxhlo: build_id(),
            structure: hex(structure(graph).as_bytes()),
            graph: hex(fxhlo_ir::print_canonical(graph).as_bytes()),
            inputs,
            frozen,
            options: options.fingerprint(),
            target,
            xla_flags: crate::env::var(crate::env::XLA_FLAGS).unwrap_or_default(),
        }
    }

    /// The digest of the key: each field hashed on its own (with its name), then the field
    /// hashes together. 64 hex digits.
    pub fn hex(&self) -> String {
        let mut all = blake3::Hasher::new();
        for (name, value) in self.fields() {
            let mut h = blake3::Hasher::new();
            h.update(name.as_bytes());
            h.update(&[0]);
            h.update(value.as_bytes());
            all.update(h.finalize().as_bytes());
        }
        all.finalize().to_hex().to_string()
    }

    /// `(name, value)` of every field, in a fixed order (inputs one by one).
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("fxhlo".to_string(), self.fxhlo.clone()),
            ("structure".to_string(), self.structure.clone()),
            ("graph".to_string(), self.graph.clone()),
            ("inputs".to_string(), self.inputs.len().to_string()),
        ];
        out.extend(self.inputs.iter().enumerate().map(|(i, s)| (format!("input {i}"), s.clone())));
        out.push(("frozen".to_string(), self.frozen.clone().unwrap_or_else(|| "none".to_string())));
        out.push(("options".to_string(), self.options.clone()));
        out.push(("target".to_string(), self.target.clone()));
        out.push(("xla_flags".to_string(), self.xla_flags.clone()));
        out
    }

    /// The fields in which `other` (an entry) differs from `self` (the key looked up), in
    /// [`CacheKey::fields`] order. The graph hash is left out when an input differs: a new
    /// shape changes it too.
    pub fn field_differences(&self, other: &CacheKey) -> Vec<FieldDiff> {
        let mine: Vec<(String, String)> = self.fields();
        let theirs: Vec<(String, String)> = other.fields();
        let mut out = Vec::new();
        for (name, value) in &mine {
            let there = theirs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or("(absent)");
            if there != value {
                out.push(FieldDiff { field: name.clone(), cached: there.to_string(), wanted: value.clone() });
            }
        }
        for (name, value) in &theirs {
            if !mine.iter().any(|(n, _)| n == name) {
                out.push(FieldDiff { field: name.clone(), cached: value.clone(), wanted: "(absent)".to_string() });
            }
        }
        if out.iter().any(|d| d.field.starts_with("input")) {
            out.retain(|d| d.field != "graph");
        }
        out
    }

    /// [`CacheKey::field_differences`] as text, each `name: other's vs self's`
    /// (`input 0: user_input f32[1,3,224,224] vs user_input f32[1,3,256,256]`).
    pub fn differences(&self, other: &CacheKey) -> Vec<String> {
        self.field_differences(other).iter().map(ToString::to_string).collect()
    }

    /// The key as pretty JSON (`cache-key.json` in a dump folder), with its digest.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert("digest".to_string(), serde_json::Value::String(self.hex()));
        }
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// A graph's structure without types or attributes: one line per node with its op and
/// operand positions. Two image sizes of one model print the same.
fn structure(graph: &Graph) -> String {
    let order = graph.topo_order().unwrap_or_else(|_| graph.node_ids().collect());
    let position: std::collections::HashMap<_, _> = order.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut out = String::new();
    for &id in &order {
        let _ = write!(out, "{}", graph.node(id).op.name());
        for v in graph.operands(id) {
            let _ = write!(out, " {}#{}", position.get(&v.node).copied().unwrap_or(usize::MAX), v.result);
        }
        out.push('\n');
    }
    for v in graph.outputs() {
        let _ = writeln!(out, "return {}#{}", position.get(&v.node).copied().unwrap_or(usize::MAX), v.result);
    }
    out
}

/// fxhlo's version and a hash of the sources that decide what it emits and how it compiles
/// (`0.1.0+3f2a...`, from build.rs; the list is `build/identity.rs`'s `SOURCES`), so that a
/// rebuilt fxhlo never loads what another build compiled.
pub fn build_id() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), env!("FXHLO_BUILD_HASH"))
}

/// The target part of a key: the plugin's platform name and version as PJRT reports them,
/// the device count, and the topology of an ahead-of-time target.
pub fn target_id(platform: &str, version: &str, devices: usize, topology: Option<&str>) -> String {
    let plural = if devices == 1 { "" } else { "s" };
    match topology {
        Some(t) => format!("{platform} {version} ({devices} device{plural}, topology {t})"),
        None => format!("{platform} {version} ({devices} device{plural})"),
    }
}

/// The target part of a key for a device whose client describes its topology (TPU), made
/// from the same fields whether the topology was described by name for an ahead-of-time
/// compile ([`crate::aot::AotTarget`]) or is a TPU VM's live client's
/// ([`crate::Session::target_id`]): the device kind, the topology's platform name and
/// version, its device count, kinds and layout, and the plugin's identity. No topology name
/// (`v6e:2x2`: a client does not know it; the kinds and layout say the same) and nothing of
/// this machine: what one machine compiles, another with that slice finds.
/// `tpu: tpu TFRT TPU v6 lite (4 devices: TPU v6 lite, layout 2x2x1); plugin libtpu.so (libtpu 0.0.52, 137 bytes)`.
pub fn topology_target_id(device: fxhlo_runtime::DeviceKind, plugin: &str, t: &fxhlo_runtime::TopologyInfo) -> String {
    let plural = if t.device_count == 1 { "" } else { "s" };
    // libtpu's version has its build on a second line: one line reads better in listings.
    let version = t.platform_version.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "{device}: {} {version} ({} device{plural}: {}, layout {}); plugin {plugin}",
        t.platform_name,
        t.device_count,
        t.device_kinds.join(", "),
        t.layout()
    )
}

/// The plugin file as the key names it: its pip package and version when the package's
/// metadata is beside it (`libtpu.so (libtpu 0.0.52, 137045832 bytes)`), which any machine
/// with that package names alike; else its size and modification time, which tell another
/// build apart on this machine only. Reading the file itself (137 MB for libtpu) would cost
/// more than a cache hit saves.
pub fn plugin_identity(plugin: &std::path::Path) -> String {
    let meta = std::fs::metadata(plugin).ok();
    let size = meta.as_ref().map(|m| m.len()).unwrap_or(0);
    let file = plugin.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    if let Some(package) = package_version(plugin) {
        return format!("{file} ({package}, {size} bytes)");
    }
    let modified = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{file} ({size} bytes, modified {modified})")
}

/// `name version` of the pip package a plugin file came from (`site-packages/<pkg>/<file>`
/// with `site-packages/<pkg>-<version>.dist-info` beside it).
fn package_version(plugin: &std::path::Path) -> Option<String> {
    let pkg_dir = plugin.parent()?;
    let pkg = pkg_dir.file_name()?.to_str()?.to_string();
    let site = pkg_dir.parent()?;
    let mut found: Vec<String> = std::fs::read_dir(site)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rest = name.strip_suffix(".dist-info")?.strip_prefix(&format!("{pkg}-"))?.to_string();
            Some(format!("{pkg} {rest}"))
        })
        .collect();
    // Deterministic when a folder holds two (a botched upgrade): the key must not depend on
    // the order the folder is listed in.
    found.sort();
    found.pop()
}

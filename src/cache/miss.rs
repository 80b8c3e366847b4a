//! Why a key is not in the cache: the nearest entry of the same graph structure and the key
//! fields in which it differs. One explanation for the info log of every miss, the error of
//! `FXHLO_ERROR_ON_COMPILE` and `fxhlo explain`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::disk;
use super::key::CacheKey;

/// One field in which the nearest entry's key differs from the key looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// The field's name as [`CacheKey::fields`] gives it (`options`, `input 0`, `target`, ...).
    pub field: String,
    /// The entry's value (`(absent)` where it has no such field).
    pub cached: String,
    /// The looked-up key's value.
    pub wanted: String,
}

impl fmt::Display for FieldDiff {
    /// `field: cached vs wanted`, as the cache's log and errors have always written it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.cached, self.wanted)
    }
}

/// A cache key that a miss is compared with: one this process saw, or one on disk.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub key: CacheKey,
    /// Its entry file; `None` for a key known to this process only (memory tier).
    pub entry: Option<PathBuf>,
}

/// The explanation of one miss.
#[derive(Debug, Clone)]
pub struct Miss {
    /// The candidate of the same structure with the fewest differing fields, and those fields
    /// (see [`CacheKey::field_differences`]); `None` when no entry has this graph's structure.
    pub nearest: Option<(Candidate, Vec<FieldDiff>)>,
}

impl Miss {
    /// Explains a miss of `key` against `candidates`: those of another structure (another
    /// graph) and `key` itself are ignored; of the rest the first with the fewest differing
    /// fields is the nearest (candidates come in a defined order, so the answer is stable).
    pub fn explain(key: &CacheKey, candidates: impl IntoIterator<Item = Candidate>) -> Miss {
        let nearest = candidates
            .into_iter()
            .filter(|c| c.key.structure == key.structure && c.key != *key)
            .map(|c| {
                let diffs = key.field_differences(&c.key);
                (c, diffs)
            })
            .min_by_key(|(_, diffs)| diffs.len());
        Miss { nearest }
    }

    /// The reason as a counter's name: `new graph`, or the differing fields joined by commas,
    /// every `input N` counted as `inputs` (`inputs`, `options,target`).
    pub fn reason(&self) -> String {
        match &self.nearest {
            None => "new graph".to_string(),
            Some((_, diffs)) => {
                let mut fields: Vec<&str> =
                    diffs.iter().map(|d| if d.field.starts_with("input") { "inputs" } else { d.field.as_str() }).collect();
                fields.dedup();
                if fields.is_empty() {
                    "unknown".to_string()
                } else {
                    fields.join(",")
                }
            }
        }
    }

    /// The reason as a sentence: `no entry for this graph`, or `the nearest entry of this graph
    /// differs in options: ... vs ...; target: ... vs ...`.
    pub fn detail(&self) -> String {
        match &self.nearest {
            None => "no entry for this graph".to_string(),
            Some((_, diffs)) => {
                let diffs: Vec<String> = diffs.iter().map(ToString::to_string).collect();
                format!("the nearest entry of this graph differs in {}", diffs.join("; "))
            }
        }
    }
}

/// The keys of the entries in `dir` whose headers can be read, in file name order (a folder
/// that cannot be listed has none).
pub fn disk_candidates(dir: &Path) -> Vec<Candidate> {
    disk::list(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| disk::read_header(&f.path).ok().map(|h| Candidate { key: h.key, entry: Some(f.path) }))
        .collect()
}

//! The compile cache: executables keyed by [`CacheKey`], so that a fixed shape compiles once,
//! in a process and across processes.
//!
//! Two tiers: memory (serialized executables, shared by every thread of the process: a thread
//! that did not compile a graph loads it from here, 1-2 ms against a full PJRT compile) and
//! disk (one file per entry under [`CacheConfig::dir`], see [`disk`]). A miss is logged at info
//! level with its reason: no entry of this graph, or the nearest entry of the same graph and
//! the fields that differ. A damaged entry is reported once, removed and recompiled; a disk
//! that cannot be written degrades to the memory tier with one warning. Nothing here fails a
//! user's model, except `FXHLO_ERROR_ON_COMPILE`, which asks for exactly that.

pub mod disk;
pub mod key;
pub mod miss;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use key::{plugin_identity, target_id, topology_target_id, CacheKey};
pub use miss::{Candidate, FieldDiff, Miss};

use crate::env;

/// What the disk tier may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Read entries and write new ones (the default).
    ReadWrite,
    /// Read entries, never write, touch or remove a file.
    ReadOnly,
    /// No disk tier (the memory tier still serves the process).
    Off,
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "read-write" | "rw" | "on" | "1" => Ok(CacheMode::ReadWrite),
            "read-only" | "ro" => Ok(CacheMode::ReadOnly),
            "off" | "0" => Ok(CacheMode::Off),
            other => Err(format!("{}={other:?}: valid values are read-write, read-only, off", env::FXHLO_CACHE)),
        }
    }
}

/// The cache's settings: from the environment ([`CacheConfig::from_env`]) or by hand.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    pub mode: CacheMode,
    /// The folder of the disk tier (`None`: no folder could be chosen, so no disk tier).
    pub dir: Option<PathBuf>,
    /// Size cap of the folder's entries.
    pub max_bytes: u64,
    /// Refuse PJRT compiles: a miss is an error naming its reason.
    pub error_on_compile: bool,
}

impl CacheConfig {
    /// `FXHLO_CACHE`, `FXHLO_CACHE_DIR`, `FXHLO_CACHE_MAX_BYTES`, `FXHLO_ERROR_ON_COMPILE`.
    /// An invalid value is warned about and its default used: a setting must not break a model.
    pub fn from_env() -> CacheConfig {
        let mode = env::var(env::FXHLO_CACHE).map_or(CacheMode::ReadWrite, |v| {
            v.parse().unwrap_or_else(|e: String| {
                tracing::warn!("{e}; using read-write");
                CacheMode::ReadWrite
            })
        });
        let max_bytes = env::var(env::FXHLO_CACHE_MAX_BYTES).map_or(env::DEFAULT_CACHE_MAX_BYTES, |v| {
            v.parse().unwrap_or_else(|_| {
                tracing::warn!("{}={v:?} is not a number of bytes; using {}", env::FXHLO_CACHE_MAX_BYTES, env::DEFAULT_CACHE_MAX_BYTES);
                env::DEFAULT_CACHE_MAX_BYTES
            })
        });
        CacheConfig {
            mode,
            dir: env::var(env::FXHLO_CACHE_DIR).map(PathBuf::from).or_else(env::default_cache_dir),
            max_bytes,
            error_on_compile: env::var(env::FXHLO_ERROR_ON_COMPILE).is_some_and(|v| env::is_truthy(&v)),
        }
    }

    /// A cache in `dir`, read-write, 4 GiB, compiles allowed (tests, embedders).
    pub fn in_dir(dir: impl Into<PathBuf>) -> CacheConfig {
        CacheConfig { mode: CacheMode::ReadWrite, dir: Some(dir.into()), max_bytes: env::DEFAULT_CACHE_MAX_BYTES, error_on_compile: false }
    }

    fn disk_dir(&self) -> Option<&Path> {
        match self.mode {
            CacheMode::Off => None,
            _ => self.dir.as_deref(),
        }
    }
}

/// Counters of one cache since the process started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// PJRT compiles done because the cache missed.
    pub compiles: u64,
    pub memory_hits: u64,
    pub disk_hits: u64,
    /// Misses by reason: `new graph` (no entry of the same structure), or the key fields that
    /// differ from the nearest entry (`inputs`, `frozen`, `options`, `target`, ...), `corrupt`.
    pub misses_by_reason: BTreeMap<String, u64>,
    /// Bytes of the entries in the folder now.
    pub bytes_on_disk: u64,
    /// Entries in the folder now.
    pub entries_on_disk: u64,
}

/// Where a lookup found its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Memory,
    Disk,
}

impl Tier {
    /// `memory` or `disk`, as reports and the Python bridge print it.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Memory => "memory",
            Tier::Disk => "disk",
        }
    }
}

/// The compile cache. One per process ([`CompileCache::global`]) unless a caller builds its own.
pub struct CompileCache {
    config: CacheConfig,
    memory: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    /// Keys seen this process, by structure, for explaining misses of entries only in memory.
    seen: Mutex<Vec<CacheKey>>,
    compiles: AtomicU64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    misses: Mutex<BTreeMap<String, u64>>,
    /// The one warning about a disk tier that cannot be written has been given.
    write_warned: AtomicBool,
}

impl CompileCache {
    /// A cache with `config`.
    pub fn new(config: CacheConfig) -> CompileCache {
        CompileCache {
            config,
            memory: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            compiles: AtomicU64::new(0),
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            misses: Mutex::new(BTreeMap::new()),
            write_warned: AtomicBool::new(false),
        }
    }

    /// The process's cache, configured from the environment on first use.
    pub fn global() -> Arc<CompileCache> {
        static GLOBAL: OnceLock<Arc<CompileCache>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(CompileCache::new(CacheConfig::from_env()))).clone()
    }

    /// The settings.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The serialized executable of `key`, from memory, else from disk (then kept in memory).
    /// A miss is counted and logged with its reason.
    pub fn get(&self, key: &CacheKey) -> Option<(Arc<Vec<u8>>, Tier)> {
        let hex = key.hex();
        if let Some(bytes) = lock(&self.memory).get(&hex).cloned() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Some((bytes, Tier::Memory));
        }
        if let Some(dir) = self.config.disk_dir() {
            let path = disk::entry_path(dir, key);
            match std::fs::read(&path) {
                Ok(bytes) => match disk::decode(&bytes, key) {
                    Ok(payload) => {
                        if self.config.mode == CacheMode::ReadWrite {
                            disk::touch(&path);
                        }
                        let payload = Arc::new(payload);
                        lock(&self.memory).insert(hex, payload.clone());
                        self.remember(key);
                        self.disk_hits.fetch_add(1, Ordering::Relaxed);
                        return Some((payload, Tier::Disk));
                    }
                    Err(disk::Corrupt(why)) => {
                        tracing::warn!(entry = %path.display(), "fxhlo cache: unusable entry ({why}); removing it and compiling again");
                        self.remove_file(&path);
                        self.count_miss("corrupt");
                        return None;
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(entry = %path.display(), "fxhlo cache: cannot read entry ({e})"),
            }
        }
        let (reason, detail) = self.explain_miss(key);
        tracing::info!(key = %&hex[..16], "fxhlo cache miss: {detail}");
        self.count_miss(&reason);
        None
    }

    /// Why `key` missed: `(reason, message)` of [`CompileCache::miss`].
    pub fn explain_miss(&self, key: &CacheKey) -> (String, String) {
        let miss = self.miss(key);
        (miss.reason(), miss.detail())
    }

    /// Why `key` missed: the nearest entry of the same structure (the same model at another
    /// shape, with other options, ...), among the keys this process saw and the folder's entry
    /// headers, and the fields that differ.
    pub fn miss(&self, key: &CacheKey) -> Miss {
        let mut candidates: Vec<Candidate> = lock(&self.seen)
            .iter()
            .filter(|k| k.structure == key.structure)
            .map(|k| Candidate { key: k.clone(), entry: None })
            .collect();
        if let Some(dir) = self.config.disk_dir() {
            candidates.extend(miss::disk_candidates(dir));
        }
        Miss::explain(key, candidates)
    }

    /// Stores `payload` under `key`: in memory, and on disk unless read-only or off (a write
    /// that fails warns once and leaves the memory tier serving).
    pub fn put(&self, key: &CacheKey, payload: Vec<u8>) {
        let payload = Arc::new(payload);
        lock(&self.memory).insert(key.hex(), payload.clone());
        self.remember(key);
        if self.config.mode != CacheMode::ReadWrite {
            return;
        }
        let Some(dir) = self.config.dir.as_deref() else { return };
        let path = disk::entry_path(dir, key);
        let written = std::fs::create_dir_all(dir).and_then(|()| fxhlo_frontend::write_atomic(&path, &disk::encode(key, &payload)));
        match written {
            Ok(()) => {
                if let Err(e) = disk::evict(dir, self.config.max_bytes, &path) {
                    tracing::warn!(dir = %dir.display(), "fxhlo cache: eviction failed ({e})");
                }
            }
            Err(e) => {
                if !self.write_warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        dir = %dir.display(),
                        "fxhlo cache: cannot write to the cache folder ({e}); executables are cached in memory only for this process (set {} to another folder, or {}=off)",
                        env::FXHLO_CACHE_DIR,
                        env::FXHLO_CACHE
                    );
                }
            }
        }
    }

    /// Drops `key` from both tiers (an entry the plugin could not load).
    pub fn forget(&self, key: &CacheKey) {
        lock(&self.memory).remove(&key.hex());
        if let Some(dir) = self.config.disk_dir() {
            self.remove_file(&disk::entry_path(dir, key));
        }
    }

    /// Counts one PJRT compile.
    pub fn count_compile(&self) {
        self.compiles.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, and the folder's size now.
    pub fn stats(&self) -> CacheStats {
        let files = self.config.disk_dir().map(|d| disk::list(d).unwrap_or_default()).unwrap_or_default();
        CacheStats {
            compiles: self.compiles.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            misses_by_reason: lock(&self.misses).clone(),
            bytes_on_disk: files.iter().map(|f| f.size).sum(),
            entries_on_disk: files.len() as u64,
        }
    }

    fn remember(&self, key: &CacheKey) {
        let mut seen = lock(&self.seen);
        if !seen.contains(key) {
            seen.push(key.clone());
        }
    }

    fn count_miss(&self, reason: &str) {
        *lock(&self.misses).entry(reason.to_string()).or_default() += 1;
    }

    fn remove_file(&self, path: &Path) {
        if self.config.mode == CacheMode::ReadWrite {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A poisoned lock still holds valid data here (counters, maps of bytes): use it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

//! Every environment variable the facade reads, declared and documented in one place (the
//! runtime's are in `fxhlo_runtime::env`). The README's table lists them all.
//!
//! | Variable                 | Meaning                                                           |
//! |--------------------------|-------------------------------------------------------------------|
//! | `FXHLO_CACHE`            | `read-write` (default), `read-only` or `off`: the disk tier of the compile cache. |
//! | `FXHLO_CACHE_DIR`        | The cache folder (default `$XDG_CACHE_HOME/fxhlo`, else `~/.cache/fxhlo`). |
//! | `FXHLO_CACHE_MAX_BYTES`  | Size cap of the folder; least recently used entries go first (default 4 GiB). |
//! | `FXHLO_ERROR_ON_COMPILE` | `1`: a PJRT compile is an error naming why the cache missed.      |
//! | `FXHLO_DUMP`             | Dump each compiled graph's stages: `all`, or a comma list of stage and pass names (`import,dce,stablehlo`; see [`crate::DumpFilter`]). |
//! | `FXHLO_DUMP_DIR`         | The folder dumps and failure reproductions go to (default `./fxhlo-dump`; reproductions without it: the temporary folder). |
//! | `FXHLO_AOT_WORKER`       | The `fxhlo` binary that runs ahead-of-time compiles in a child process (default: next to the running executable, else on `PATH`). |
//! | `XLA_FLAGS`              | Read (not set) for the cache key: XLA's flags change what it compiles. |

use std::path::PathBuf;

/// The disk tier's mode.
pub const FXHLO_CACHE: &str = "FXHLO_CACHE";
/// The cache folder.
pub const FXHLO_CACHE_DIR: &str = "FXHLO_CACHE_DIR";
/// The cache folder's size cap in bytes.
pub const FXHLO_CACHE_MAX_BYTES: &str = "FXHLO_CACHE_MAX_BYTES";
/// Refuse PJRT compiles (a service asserting that its warm-up covered every shape).
pub const FXHLO_ERROR_ON_COMPILE: &str = "FXHLO_ERROR_ON_COMPILE";
/// Which stages of each compiled graph to dump (`all`, or names).
pub const FXHLO_DUMP: &str = "FXHLO_DUMP";
/// The folder dumps are written to.
pub const FXHLO_DUMP_DIR: &str = "FXHLO_DUMP_DIR";
/// The program that runs ahead-of-time compiles (see [`crate::aot::Worker`]).
pub const FXHLO_AOT_WORKER: &str = "FXHLO_AOT_WORKER";
/// XLA's own flags, part of the cache key.
pub const XLA_FLAGS: &str = "XLA_FLAGS";

/// The dump folder when `FXHLO_DUMP_DIR` is unset (relative to the working directory).
pub const DEFAULT_DUMP_DIR: &str = "fxhlo-dump";

/// The default size cap of the cache folder: 4 GiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 4 << 30;

/// A variable's value, `None` when unset or empty.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `1`, `true`, `yes`, `on` (any case).
pub fn is_truthy(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// The XDG cache folder for fxhlo: `$XDG_CACHE_HOME/fxhlo`, else `$HOME/.cache/fxhlo`; `None`
/// when neither variable is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(xdg) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("fxhlo"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache").join("fxhlo"))
}

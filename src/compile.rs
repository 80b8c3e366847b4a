//! The one compile orchestration: a [`Lowered`] module's executable comes from the
//! [`CompileCache`], or from the target's compiler on a miss (then it is counted and stored).
//! A device's PJRT client ([`crate::Session`]) and the ahead-of-time worker
//! ([`crate::aot`]) are two [`Compiler`]s behind this same function, so that caching,
//! `FXHLO_ERROR_ON_COMPILE`, XLA's dump folder, the dump report and the reproduction of a
//! rejected module are written once.

use std::path::Path;
use std::time::{Duration, Instant};

use fxhlo_ir::Graph;

use crate::cache::{CompileCache, Tier};
use crate::dump::Dump;
use crate::pipeline::{Frozen, Lowered, Options};
use crate::{Error, Result};

/// The bytes a compile gives the cache, or why there are none.
pub(crate) type Serialized = std::result::Result<Vec<u8>, String>;

/// What compiles a [`Lowered`] module on a cache miss, and loads what the cache holds.
pub(crate) trait Compiler {
    /// What the caller gets: a loaded executable, or serialized bytes.
    type Output;

    /// Loads an executable the cache held (an error sends the caller to compile again).
    fn load(&self, bytes: &[u8]) -> Result<Self::Output>;

    /// Compiles `lowered` (XLA dumping what it compiles into `xla_dump_to`), with the bytes
    /// to store in the cache, or why there are none (a plugin that cannot serialize this
    /// executable: it still runs, and is compiled again next time).
    fn compile(&self, lowered: &Lowered, xla_dump_to: Option<&Path>) -> Result<(Self::Output, Serialized)>;

    /// Whether `error` is the compiler rejecting the module (worth a reproduction), rather
    /// than the machinery around it failing.
    fn rejected(&self, error: &Error) -> bool;

    /// How a miss is compiled, for the dump's report (`""`, or ` in the worker process`).
    fn how(&self) -> &'static str {
        ""
    }
}

/// What the graph was, for the reproduction of a module the compiler rejects.
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) graph: &'a Graph,
    pub(crate) frozen: &'a Frozen,
    pub(crate) options: &'a Options,
}

/// An executable (or its bytes) and where it came from.
pub(crate) struct Obtained<T> {
    pub(crate) output: T,
    /// `None`: compiled now; else the cache tier it came from.
    pub(crate) cached: Option<Tier>,
    /// Time in the compiler, or loading from the cache.
    pub(crate) time: Duration,
}

/// `lowered`'s executable from `cache`, or compiled by `compiler` (and stored) on a miss.
/// With `fresh` the cache is not read, only written (a cost analysis comes only from a
/// compile). With `dump`, XLA's own dump and the cache's hit or miss go into the report. A
/// module the compiler rejects comes back with a reproduction when its `origin` is known.
pub(crate) fn get_or_compile<C: Compiler>(
    compiler: &C,
    cache: &CompileCache,
    lowered: &Lowered,
    origin: Option<Origin<'_>>,
    dump: Option<&Dump>,
    fresh: bool,
) -> Result<Obtained<C::Output>> {
    let start = Instant::now();
    let xla_dir = match dump {
        Some(d) => d.xla_dir()?,
        None => None,
    };
    // Why the cache misses, asked before the compile fills it (only for the report).
    let miss = dump.map(|_| cache.explain_miss(&lowered.key).1);
    let result = obtain(compiler, cache, lowered, fresh, xla_dir.as_deref()).map_err(|e| match origin {
        // With dumping on, any failure here gets the module's reproduction in the dump folder
        // (a crash of the compiler too), except a compile refused by FXHLO_ERROR_ON_COMPILE.
        Some(o) if compiler.rejected(&e) || (dump.is_some() && !matches!(e, Error::CompileRefused { .. })) => {
            let failed = crate::repro::Failed::Compile { mlir: &lowered.mlir };
            crate::repro::wrap(e, failed, o.graph, o.options, &lowered.key, o.frozen, dump)
        }
        _ => e,
    });
    let time = start.elapsed();
    if let (Some(d), Ok((_, cached))) = (dump, &result) {
        let outcome = match (cached, miss) {
            (Some(tier), _) => format!("hit ({} tier): XLA did not compile, so it dumped nothing", tier.name()),
            (None, Some(why)) => format!("miss{}: {why}", compiler.how()),
            (None, None) => format!("miss{}", compiler.how()),
        };
        if let (Some(dir), Some(_)) = (&xla_dir, cached) {
            // Nothing was compiled: leave no empty folder behind.
            let _ = std::fs::remove_dir(dir);
        }
        d.executable(outcome, time, xla_dir.as_deref().filter(|_| cached.is_none()))?;
    }
    crate::dump::finish(dump, &result)?;
    let (output, cached) = result?;
    tracing::debug!(graph = %lowered.graph, ?cached, ?time, "executable ready");
    Ok(Obtained { output, cached, time })
}

/// [`get_or_compile`] without the dump and the reproduction.
fn obtain<C: Compiler>(
    compiler: &C,
    cache: &CompileCache,
    lowered: &Lowered,
    fresh: bool,
    xla_dump_to: Option<&Path>,
) -> Result<(C::Output, Option<Tier>)> {
    let key = &lowered.key;
    if !fresh {
        if let Some((bytes, tier)) = cache.get(key) {
            match compiler.load(&bytes) {
                Ok(output) => return Ok((output, Some(tier))),
                Err(e) => {
                    tracing::warn!(graph = %lowered.graph, "fxhlo cache: the cached executable cannot be loaded ({e}); compiling again");
                    cache.forget(key);
                }
            }
        }
        if cache.config().error_on_compile {
            let (_, detail) = cache.explain_miss(key);
            return Err(Error::CompileRefused { graph: lowered.graph.clone(), detail });
        }
    }
    let (output, bytes) = compiler.compile(lowered, xla_dump_to)?;
    cache.count_compile();
    match bytes {
        Ok(bytes) => cache.put(key, bytes),
        Err(why) => tracing::warn!(graph = %lowered.graph, "fxhlo cache: the plugin cannot serialize this executable ({why}); not cached"),
    }
    Ok((output, None))
}

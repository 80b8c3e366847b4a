//! A hint for graphs whose temporaries are faulted in again on every call (CPU plugin).
//!
//! XLA's CPU runtime allocates each execution's temporaries with `malloc` and frees them at
//! its end; glibc maps a block over its mmap threshold afresh and unmaps it on `free`, so a
//! graph with large intermediates (attention over a thousand positions, a diffusion UNet)
//! faults every page of them in on every call: 42,000 minor faults and a third of the time of
//! a diffusers UNet's call (README, "Graphs with large intermediates"). Nothing fxhlo can set
//! from inside a running process fixes it reliably, but glibc's tunables at process start do:
//! so the second call of each graph on the CPU plugin (the first faults its memory in
//! legitimately) counts the process's minor page faults around its execution, and the first
//! graph over [`FAULTS`] gets a warning that says what to set. Linux only (`/proc/self/stat`).

use std::sync::atomic::{AtomicBool, Ordering};

/// Minor faults in one execution above which the hint is given: 16 MB of 4 KB pages.
pub(crate) const FAULTS: u64 = 4096;

/// The glibc tunables the hint recommends (README).
pub const GLIBC_TUNABLES: &str =
    "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295";

static HINTED: AtomicBool = AtomicBool::new(false);

/// This process's minor page faults so far; `None` where `/proc/self/stat` cannot say.
pub(crate) fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name (which may hold spaces, so from the last ')'): state, ppid,
    // pgrp, session, tty_nr, tpgid, flags, minflt.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(7)?.parse().ok()
}

/// Runs `execute`; when `probe` (the graph's second call on the CPU plugin), counts the minor
/// page faults it caused and warns once per process when they exceed [`FAULTS`]. Returns the
/// result and the faults counted (`None` when not probed).
pub(crate) fn watch<T>(probe: bool, graph: &str, execute: impl FnOnce() -> T) -> (T, Option<u64>) {
    let before = if probe { minor_faults() } else { None };
    let out = execute();
    let faults = before.and_then(|b| Some(minor_faults()?.saturating_sub(b)));
    if let Some(n) = faults {
        let tuned = std::env::var_os("GLIBC_TUNABLES").is_some();
        if n > FAULTS && !tuned && !HINTED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "graph `{graph}`: its second call faulted in {n} pages ({} MB): XLA allocates the call's temporaries anew and \
                 glibc maps them afresh on every call. Start the process with GLIBC_TUNABLES={GLIBC_TUNABLES} to keep \
                 freed memory for reuse (README, \"Graphs with large intermediates\"; a diffusers UNet: 214 -> 158 ms per call)",
                n * 4096 / (1 << 20)
            );
        }
    }
    (out, faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn fresh_memory_written_once_counts_its_pages() {
        // 64 MB from the allocator (a fresh mapping: over glibc's mmap threshold), one write
        // per 4 KB page: each write faults its page in.
        let pages = 16_384;
        let (touched, faults) = watch(true, "test", || {
            let mut v = vec![0u8; pages * 4096];
            for i in (0..v.len()).step_by(4096) {
                v[i] = 1;
            }
            v.iter().step_by(4096).map(|&b| b as usize).sum::<usize>()
        });
        assert_eq!(touched, pages);
        let faults = faults.expect("/proc/self/stat is readable on Linux");
        println!("{faults} minor faults for {pages} pages");
        // One fault per page, or per 2 MB where transparent huge pages are always on.
        assert!(faults as usize >= pages * 4096 / (2 << 20), "{faults} faults for {pages} fresh pages");
        // Not probed: nothing counted.
        assert_eq!(watch(false, "test", || 1).1, None);
    }
}

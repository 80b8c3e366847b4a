//! `fxhlo cache stats|ls|verify|clear`: the compile cache's folder, as `CacheConfig::from_env`
//! names it (`FXHLO_CACHE_DIR`, ...), inspected, checked and emptied.
//!
//! These commands work on the folder whatever `FXHLO_CACHE` says, except that `read-only`
//! forbids removing anything (`verify --fix`, `clear`), as it forbids compiles to. They touch
//! only entries (`<digest>.fxc`) and the temporaries of interrupted writes
//! (`.<digest>.fxc.<pid>.<n>.tmp`): a folder shared with other files keeps them.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{bail, Context as _};
use clap::Subcommand;
use fxhlo::cache::disk::{self, EntryFile, Header};
use fxhlo::{env, CacheConfig, CacheMode};

/// What `fxhlo cache` does.
#[derive(Subcommand)]
pub enum CacheCommand {
    /// The folder, the mode, the entries and bytes on disk, and the size cap.
    Stats,
    /// One line per entry, most recently used first: digest (first 16 hex digits), size, last
    /// use, and from its header the target, the inputs and the options.
    Ls,
    /// Check every entry fully (header, format, name, payload length and checksum) and print
    /// each bad one with its reason; exit 1 if any is bad.
    Verify {
        /// Remove the bad entries (the exit status still says that there were some).
        #[arg(long)]
        fix: bool,
    },
    /// Remove every entry and leftover temporary file of the folder (nothing else).
    Clear,
}

/// Runs `cmd` on the cache folder of the environment.
pub fn run(cmd: CacheCommand) -> anyhow::Result<ExitCode> {
    let config = CacheConfig::from_env();
    match cmd {
        CacheCommand::Stats => stats(&config),
        CacheCommand::Ls => ls(&config),
        CacheCommand::Verify { fix } => verify(&config, fix),
        CacheCommand::Clear => clear(&config),
    }
}

fn stats(config: &CacheConfig) -> anyhow::Result<ExitCode> {
    let files = match &config.dir {
        Some(dir) => {
            let source = if env::var(env::FXHLO_CACHE_DIR).is_some() { env::FXHLO_CACHE_DIR } else { "default" };
            let missing = if dir.exists() { "" } else { ", does not exist yet" };
            println!("folder:  {} ({source}{missing})", dir.display());
            entries(dir)?
        }
        None => {
            println!("folder:  none ({} is unset, and so are XDG_CACHE_HOME and HOME)", env::FXHLO_CACHE_DIR);
            Vec::new()
        }
    };
    println!("mode:    {}", mode_name(config.mode));
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let share = if config.max_bytes == 0 { String::new() } else { format!(", {:.1}% of the cap", 100.0 * bytes as f64 / config.max_bytes as f64) };
    println!("entries: {} ({}, {bytes} bytes{share})", files.len(), human_bytes(bytes));
    println!("cap:     {} ({} bytes, {})", human_bytes(config.max_bytes), config.max_bytes, env::FXHLO_CACHE_MAX_BYTES);
    if let Some(dir) = &config.dir {
        let temporaries = temporaries(dir)?;
        if !temporaries.is_empty() {
            let bytes: u64 = temporaries.iter().map(|(_, size)| size).sum();
            println!("temporaries: {} ({}) of interrupted writes; `fxhlo cache clear` removes them", temporaries.len(), human_bytes(bytes));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn ls(config: &CacheConfig) -> anyhow::Result<ExitCode> {
    let dir = folder(config)?;
    let mut files = entries(dir)?;
    files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    if files.is_empty() {
        eprintln!("no entries in {}", dir.display());
    }
    let now = SystemTime::now();
    for f in &files {
        let head = format!("{}  {:>10}  {:>13}", short_digest(&f.path), human_bytes(f.size), age(now, f.modified));
        match read_header(&f.path).and_then(|h| check_name(&f.path, &h).map(|()| h)) {
            Ok(h) => {
                let key = &h.key;
                let version = if key.fxhlo == fxhlo::cache::key::build_id() { String::new() } else { format!("  (fxhlo {}: another build, never used by this one)", key.fxhlo) };
                println!("{head}  target: {}  inputs: {}  options: {}{version}", key.target, inputs_summary(&key.inputs), options_summary(&key.options));
            }
            Err(why) => println!("{head}  unreadable: {why}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(config: &CacheConfig, fix: bool) -> anyhow::Result<ExitCode> {
    let dir = folder(config)?;
    if fix {
        writable(config, "remove bad entries")?;
    }
    let files = entries(dir)?;
    let (mut bad, mut removed, mut stale) = (0, 0, 0);
    for f in &files {
        let name = f.path.file_name().unwrap_or_default().to_string_lossy();
        match check_entry(&f.path) {
            Ok(header) => stale += usize::from(header.key.fxhlo != fxhlo::cache::key::build_id()),
            Err(why) if fix => {
                bad += 1;
                match fs::remove_file(&f.path) {
                    Ok(()) => {
                        removed += 1;
                        println!("bad: {name}: {why}; removed");
                    }
                    Err(e) => println!("bad: {name}: {why}; cannot remove it ({e})"),
                }
            }
            Err(why) => {
                bad += 1;
                println!("bad: {name}: {why}");
            }
        }
    }
    let mut summary = format!("{} checked in {}: {} ok, {bad} bad", count(files.len(), "entry", "entries"), dir.display(), files.len() - bad);
    if fix {
        summary += &format!(", {removed} removed");
    }
    if stale > 0 {
        summary += &format!("; {stale} written by another fxhlo build (valid, but only that build uses them)");
    }
    println!("{summary}");
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn clear(config: &CacheConfig) -> anyhow::Result<ExitCode> {
    let dir = folder(config)?;
    writable(config, "clear it")?;
    let files = entries(dir)?;
    let temporaries = temporaries(dir)?;
    let (mut removed, mut bytes, mut temps, mut failed) = (0, 0, 0, Vec::new());
    for f in &files {
        match fs::remove_file(&f.path) {
            Ok(()) => {
                removed += 1;
                bytes += f.size;
            }
            // Another process (eviction, a concurrent clear) removed it first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => failed.push(format!("{}: {e}", f.path.display())),
        }
    }
    for (path, _) in &temporaries {
        match fs::remove_file(path) {
            Ok(()) => temps += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => failed.push(format!("{}: {e}", path.display())),
        }
    }
    let temps = if temps == 0 { String::new() } else { format!(" and {}", count(temps, "temporary file", "temporary files")) };
    println!("removed {} ({}, {bytes} bytes){temps} from {}", count(removed, "entry", "entries"), human_bytes(bytes), dir.display());
    if let Some(first) = failed.first() {
        bail!("could not remove {} files, the first: {first}", failed.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// The cache folder, or why there is none.
fn folder(config: &CacheConfig) -> anyhow::Result<&Path> {
    config.dir.as_deref().with_context(|| format!("no cache folder: set {} (XDG_CACHE_HOME and HOME are unset too)", env::FXHLO_CACHE_DIR))
}

/// Refuses to remove files from a read-only cache.
fn writable(config: &CacheConfig, what: &str) -> anyhow::Result<()> {
    if config.mode == CacheMode::ReadOnly {
        bail!("the compile cache is read-only ({}=read-only): set it to read-write to {what}", env::FXHLO_CACHE);
    }
    Ok(())
}

/// The folder's entries (none when it does not exist).
fn entries(dir: &Path) -> anyhow::Result<Vec<EntryFile>> {
    disk::list(dir).with_context(|| format!("reading the cache folder {}", dir.display()))
}

/// The folder's leftover temporaries of entry writes, with their sizes (none when it does not
/// exist). A write in progress in another process has one too: removing it makes that write
/// fail with a warning, the executable staying cached in that process's memory.
fn temporaries(dir: &Path) -> anyhow::Result<Vec<(std::path::PathBuf, u64)>> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading the cache folder {}", dir.display())),
    };
    let infix = format!(".{}.", disk::EXTENSION);
    let mut out = Vec::new();
    for entry in read.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(".tmp") && name.contains(&infix)) {
            continue;
        }
        // `DirEntry::metadata` does not follow symbolic links: a link is never removed.
        match entry.metadata() {
            Ok(meta) if meta.is_file() => out.push((entry.path(), meta.len())),
            _ => {}
        }
    }
    out.sort();
    Ok(out)
}

/// The header of the entry at `path`, read without its payload.
fn read_header(path: &Path) -> Result<Header, String> {
    disk::read_header(path).map_err(|c| c.0)
}

/// The whole entry at `path` checked, against the key its own header holds.
fn check_entry(path: &Path) -> Result<Header, String> {
    let bytes = fs::read(path).map_err(|e| format!("cannot read it ({e})"))?;
    let (header, _) = disk::decode_header(&bytes).map_err(|c| c.0)?;
    check_name(path, &header)?;
    disk::decode(&bytes, &header.key).map_err(|c| c.0)?;
    Ok(header)
}

/// An entry is found by its name: one named for another key is never used.
fn check_name(path: &Path, header: &Header) -> Result<(), String> {
    let hex = header.key.hex();
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    if stem != hex {
        return Err(format!("named {stem} but holds the entry of key {}", &hex[..16]));
    }
    Ok(())
}

/// The first 16 characters of an entry's file name (its digest), padded for alignment.
fn short_digest(path: &Path) -> String {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    format!("{:<16}", stem.chars().take(16).collect::<String>())
}

fn mode_name(mode: CacheMode) -> &'static str {
    match mode {
        CacheMode::ReadWrite => "read-write",
        CacheMode::ReadOnly => "read-only (compiles read entries, never write or remove one)",
        CacheMode::Off => "off (compiles do not use the folder)",
    }
}

/// The key's inputs, shortened: the first user inputs as the key writes them
/// (`user_input f32[1,3,224,224]`), then how many more, then the weights counted by kind.
fn inputs_summary(inputs: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut users = Vec::new();
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    for input in inputs {
        // Each is `<kind> <type>[ <weight name>]` (see `CacheKey::inputs`).
        let kind = input.split(' ').next().unwrap_or_default();
        if kind == "user_input" {
            users.push(input.as_str());
        } else {
            *others.entry(kind).or_default() += 1;
        }
    }
    let mut parts: Vec<String> = users.iter().take(SHOWN).map(|s| s.to_string()).collect();
    if users.len() > SHOWN {
        parts.push(format!("+{} more user inputs", users.len() - SHOWN));
    }
    for (kind, n) in others {
        parts.push(format!("{n} {kind}{}", if n == 1 { "" } else { "s" }));
    }
    if parts.is_empty() {
        return "none".to_string();
    }
    parts.join(", ")
}

/// The key's options, with this fxhlo's default pass list written `passes=default`.
fn options_summary(options: &str) -> String {
    options.replace(&fxhlo::passes_text(&fxhlo::passes::default_pipeline()), "passes=default")
}

/// `1 entry`, `2 entries`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `12.3 KiB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// How long ago `then` was: `12 s ago`, `5 min ago`, `3 h ago`, `4 days ago`.
fn age(now: SystemTime, then: SystemTime) -> String {
    let Ok(d) = now.duration_since(then) else { return "in the future".to_string() };
    match d.as_secs() {
        s if s < 60 => format!("{s} s ago"),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86400),
    }
}

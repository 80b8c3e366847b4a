//! Atomic file replacement: every file fxhlo writes for someone else to read goes through here.
//!
//! A reader that opens the file (another `fxhlo`, a Python process, an editor) sees either the
//! old contents or the new, never a truncated or half-written file: the bytes go to a temporary
//! file in the same folder, which is then renamed over the target (a rename within one file
//! system is atomic on POSIX systems and replaces the target on Windows).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files of one process (threads may write side by side).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `contents` to `path` atomically: to `.<name>.<pid>.<n>.tmp` beside it, flushed to the
/// disk, then renamed over `path`. On an error the temporary file is removed and `path` is left
/// as it was. A symbolic link at `path` is replaced by the file, not written through; the new
/// file gets the permissions [`File::create`] gives (the umask's), like [`fs::write`].
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path)?;
    let written = File::options()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(contents)?;
            f.sync_all()
        })
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The temporary file's path: hidden, in `path`'s folder (so the rename stays on one file system).
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path names no file (it ends in `..` or is a root)")
    })?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{}.{n}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp))
}

#[cfg(test)]
mod tests {
    use super::write_atomic;
    use std::io::Read;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("fxhlo-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    /// A reader that opened the old file keeps reading the old bytes; later readers see the
    /// new ones; no temporary file is left behind.
    #[test]
    fn an_open_reader_keeps_the_old_contents() {
        let dir = scratch("reader");
        let path = dir.join("graph.bin");
        write_atomic(&path, b"old contents").expect("first write");
        let mut reader = std::fs::File::open(&path).expect("open");
        write_atomic(&path, b"new").expect("second write");
        let mut seen = String::new();
        reader.read_to_string(&mut seen).expect("read");
        assert_eq!(seen, "old contents");
        assert_eq!(std::fs::read(&path).expect("read new"), b"new");
        let names: Vec<_> = std::fs::read_dir(&dir).expect("list").map(|e| e.map(|e| e.file_name())).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let dir = scratch("fail");
        // The target is a non-empty directory: the rename fails.
        std::fs::create_dir_all(dir.join("out/inner")).expect("dirs");
        assert!(write_atomic(&dir.join("out"), b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(&dir).expect("list").filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out")]);
        let _ = std::fs::remove_dir_all(dir);
    }
}

//! The disk tier: one file per entry, `<digest>.fxc`, in the cache folder.
//!
//! An entry is `FXHLOCE\0`, a little-endian `u32` header length, the [`Header`] (bincode: the
//! format version, the whole key, the payload's length and blake3), then the payload (the
//! serialized executable). Every entry is untrusted until its header parses, its format and
//! key are this fxhlo's and its payload matches length and checksum; anything else is
//! [`Corrupt`] and the caller removes it. Entries are written to a temporary file in the same
//! folder and renamed into place, so a reader (another process) never sees half of one and two
//! writers of one key both succeed, leaving one valid entry. A hit touches the file's mtime;
//! eviction removes the entries with the oldest mtimes first.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::key::CacheKey;

/// The first bytes of every entry.
pub const MAGIC: &[u8; 8] = b"FXHLOCE\0";
/// The entry format this fxhlo writes and reads.
pub const FORMAT: u32 = 1;
/// The file extension of entries.
pub const EXTENSION: &str = "fxc";

/// What precedes the payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub format: u32,
    pub key: CacheKey,
    pub payload_len: u64,
    pub payload_blake3: [u8; 32],
}

/// Why an entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt(pub String);

/// The path of `key`'s entry in `dir`.
pub fn entry_path(dir: &Path, key: &CacheKey) -> PathBuf {
    dir.join(format!("{}.{EXTENSION}", key.hex()))
}

/// The bytes of an entry holding `payload` under `key`.
pub fn encode(key: &CacheKey, payload: &[u8]) -> Vec<u8> {
    let header = Header {
        format: FORMAT,
        key: key.clone(),
        payload_len: payload.len() as u64,
        payload_blake3: *blake3::hash(payload).as_bytes(),
    };
    // Serializing plain strings and numbers cannot fail.
    let head = bincode::serde::encode_to_vec(&header, bincode::config::standard()).unwrap_or_default();
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + head.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    out
}

/// The header of an entry's bytes (enough of them to hold it), checked for magic and format.
pub fn decode_header(bytes: &[u8]) -> Result<(Header, usize), Corrupt> {
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(Corrupt("not an fxhlo cache entry (no FXHLOCE header)".into()));
    }
    let len_at = MAGIC.len();
    let head_len = u32::from_le_bytes([bytes[len_at], bytes[len_at + 1], bytes[len_at + 2], bytes[len_at + 3]]) as usize;
    let start = len_at + 4;
    let head = bytes.get(start..start.saturating_add(head_len)).ok_or_else(|| Corrupt(format!("truncated in its header ({} bytes)", bytes.len())))?;
    let (header, _): (Header, usize) = bincode::serde::decode_from_slice(head, bincode::config::standard())
        .map_err(|e| Corrupt(format!("unreadable header ({e})")))?;
    if header.format != FORMAT {
        return Err(Corrupt(format!("entry format {} (this fxhlo reads {FORMAT})", header.format)));
    }
    Ok((header, start + head_len))
}

/// The header of the entry file at `path`, read without the payload behind it (listing a
/// folder of large executables reads a few hundred bytes each).
pub fn read_header(path: &Path) -> Result<Header, Corrupt> {
    use std::io::Read;
    let unreadable = |e: io::Error| Corrupt(format!("cannot read it ({e})"));
    let mut file = fs::File::open(path).map_err(|e| Corrupt(format!("cannot open it ({e})")))?;
    let prefix = MAGIC.len() + 4;
    let mut bytes = Vec::with_capacity(prefix);
    (&mut file).take(prefix as u64).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() == prefix && bytes.starts_with(MAGIC) {
        let len = u32::from_le_bytes([bytes[prefix - 4], bytes[prefix - 3], bytes[prefix - 2], bytes[prefix - 1]]);
        file.take(u64::from(len)).read_to_end(&mut bytes).map_err(unreadable)?;
    }
    decode_header(&bytes).map(|(header, _)| header)
}

/// The payload of an entry's bytes, checked against `key` and the header's length and checksum.
pub fn decode(bytes: &[u8], key: &CacheKey) -> Result<Vec<u8>, Corrupt> {
    let (header, at) = decode_header(bytes)?;
    if header.key != *key {
        let what = key.differences(&header.key);
        return Err(Corrupt(format!("holds another key ({})", what.join("; "))));
    }
    let payload = &bytes[at..];
    if payload.len() as u64 != header.payload_len {
        return Err(Corrupt(format!("payload is {} bytes, its header says {}", payload.len(), header.payload_len)));
    }
    if blake3::hash(payload).as_bytes() != &header.payload_blake3 {
        return Err(Corrupt("payload checksum does not match (the file was changed or damaged)".into()));
    }
    Ok(payload.to_vec())
}

/// One entry file of the folder, as listed.
#[derive(Debug, Clone)]
pub struct EntryFile {
    pub path: PathBuf,
    pub size: u64,
    pub modified: SystemTime,
}

/// Every `*.fxc` file of `dir` (none when it does not exist).
pub fn list(dir: &Path) -> io::Result<Vec<EntryFile>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != EXTENSION) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        out.push(EntryFile { path, size: meta.len(), modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH) });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Removes the least recently used entries of `dir` until the folder's entries take at most
/// `max_bytes`, never `keep` (the entry just written). Returns how many were removed.
pub fn evict(dir: &Path, max_bytes: u64, keep: &Path) -> io::Result<usize> {
    let mut files = list(dir)?;
    let mut total: u64 = files.iter().map(|f| f.size).sum();
    files.sort_by_key(|f| f.modified);
    let mut removed = 0;
    for f in files {
        if total <= max_bytes {
            break;
        }
        if f.path == keep {
            continue;
        }
        if fs::remove_file(&f.path).is_ok() {
            total = total.saturating_sub(f.size);
            removed += 1;
        }
    }
    Ok(removed)
}

/// Marks an entry as just used (its mtime drives eviction).
pub fn touch(path: &Path) {
    if let Ok(f) = fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

//! The two encodings of one trace schema: JSON for people, bincode for speed.
//!
//! A bincode trace starts with a header: the magic bytes `FXHLOTRC`, then the schema version
//! as a little-endian u32, then the bincode (standard configuration) of [`Trace`]. The header
//! lets a reader reject another file or another schema version before decoding anything.

use std::path::Path;

use crate::schema::decode::{decode_view, Failure};
use crate::schema::{Trace, TraceView, SCHEMA_VERSION};
use crate::{Error, Result};

/// The first bytes of every bincode trace.
pub const MAGIC: &[u8; 8] = b"FXHLOTRC";
/// The header's length: [`MAGIC`], then the schema version (u32). Error offsets count from the
/// start of the file, header included.
const HEADER_LEN: usize = 12;
/// Decoding never allocates more than this for one trace (a corrupt length cannot exhaust
/// memory); smaller inputs get smaller limits, see [`decode_limited`].
const DECODE_LIMIT: usize = 1 << 30;

/// Parses JSON trace bytes; `path` names the source in errors, with line and column.
pub fn parse_json(bytes: &[u8], path: &Path) -> Result<Trace> {
    serde_json::from_slice(bytes).map_err(|e| Error::Json {
        path: path.into(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// The JSON text of a trace (pretty-printed, deterministic: fields in schema order, kwargs
/// sorted).
pub fn to_json(trace: &Trace) -> String {
    // Serializing plain data to a String cannot fail.
    let mut s = serde_json::to_string_pretty(trace).unwrap_or_default();
    s.push('\n');
    s
}

/// Decodes a bincode trace (header included); `path` names the source in errors.
///
/// An error says what was being read and at which byte: bincode's own errors say neither, so
/// on a failure the body is decoded again by [`parse_bin_view`]'s decoder, which accepts and
/// rejects exactly the same bodies (the fuzz tests hold the two to that) and tells both.
pub fn parse_bin(bytes: &[u8], path: &Path) -> Result<Trace> {
    let body = bin_body(bytes, path)?;
    let (trace, used) = decode_limited(body).map_err(|e| match decode_view(body) {
        Err(failure) => bad_bin(path, failure),
        Ok(_) => Error::Bincode {
            path: path.into(),
            offset: HEADER_LEN,
            message: format!("bincode refused the body ({e}) that fxhlo's own decoder accepts; please report this"),
        },
    })?;
    check_trailing(body, used, path)?;
    Ok(trace)
}

/// Decodes a bincode trace (header included) into a view that borrows every string from
/// `bytes` (`schema/decode.rs`): the fast way from `graph.bin` to a graph, with
/// `import::import_view`. Accepts and rejects exactly what [`parse_bin`] does.
pub fn parse_bin_view<'a>(bytes: &'a [u8], path: &Path) -> Result<TraceView<'a>> {
    let body = bin_body(bytes, path)?;
    let (view, used) = decode_view(body).map_err(|e| bad_bin(path, e))?;
    check_trailing(body, used, path)?;
    Ok(view)
}

/// A decoding failure in the body, its offset moved past the header.
fn bad_bin(path: &Path, failure: Failure) -> Error {
    Error::Bincode { path: path.into(), offset: HEADER_LEN + failure.offset, message: failure.message }
}

/// Checks the header; returns the body after it.
fn bin_body<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a [u8]> {
    let header = |offset: usize, message: String| Error::Bincode { path: path.into(), offset, message };
    if !bytes.starts_with(&MAGIC[..bytes.len().min(MAGIC.len())]) || bytes.is_empty() {
        return Err(header(0, "not a bincode fxhlo trace (missing the FXHLOTRC header)".into()));
    }
    if bytes.len() < HEADER_LEN {
        let what = if bytes.len() < MAGIC.len() { "the FXHLOTRC header" } else { "the schema version in the header" };
        return Err(header(bytes.len(), format!("unexpected end of input reading {what} (the file is {} bytes)", bytes.len())));
    }
    let mut v = [0u8; 4];
    v.copy_from_slice(&bytes[MAGIC.len()..HEADER_LEN]);
    let version = u32::from_le_bytes(v);
    if version != SCHEMA_VERSION {
        return Err(Error::Version { path: path.into(), found: version, supported: SCHEMA_VERSION });
    }
    Ok(&bytes[HEADER_LEN..])
}

fn check_trailing(body: &[u8], used: usize, path: &Path) -> Result<()> {
    if used != body.len() {
        return Err(Error::Bincode {
            path: path.into(),
            offset: HEADER_LEN + used,
            message: format!("{} trailing bytes after the trace", body.len() - used),
        });
    }
    Ok(())
}

/// Decodes a bincode body under a limit scaled to its size. Bincode counts each string's length
/// and at most 8 bytes per primitive against the limit, and each of those takes at least one
/// input byte, so a valid body never reaches 8 times its size: the smallest limit above that
/// never rejects a valid trace, and a corrupt length prefix can no longer make a small input
/// allocate up to the whole [`DECODE_LIMIT`] (at most 32 times the input, or 1 MiB).
fn decode_limited(body: &[u8]) -> std::result::Result<(Trace, usize), bincode::error::DecodeError> {
    macro_rules! limit {
        ($n:expr) => {
            bincode::serde::decode_from_slice(body, bincode::config::standard().with_limit::<{ $n }>())
        };
    }
    match body.len().saturating_mul(8) {
        n if n <= 1 << 20 => limit!(1 << 20),
        n if n <= 1 << 22 => limit!(1 << 22),
        n if n <= 1 << 24 => limit!(1 << 24),
        n if n <= 1 << 26 => limit!(1 << 26),
        n if n <= 1 << 28 => limit!(1 << 28),
        _ => limit!(DECODE_LIMIT),
    }
}

/// The bincode encoding of a trace, header included.
pub fn to_bin(trace: &Trace) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&trace.version.to_le_bytes());
    // Encoding plain data into a Vec cannot fail.
    out.extend(bincode::serde::encode_to_vec(trace, bincode::config::standard()).unwrap_or_default());
    out
}

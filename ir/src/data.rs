//! Tensor bytes a graph holds: the value of an [`crate::Op::Constant`] (a frozen weight) or of
//! an input whose value is known when compiling (see [`crate::Graph::bind_input`]).
//!
//! The bytes are shared, never copied: a [`TensorData`] wraps whatever owns them (a `Vec`, a
//! memory-mapped weights file, a Python tensor) behind an `Arc`, so cloning a graph (the
//! pipeline rewrites a copy) costs a reference count per constant. The IR text prints a
//! constant by its blake3 digest, not its bytes; parsing that text back gives data whose
//! bytes are missing ([`TensorData::bytes`] is `None`), which codegen refuses with an error
//! naming the node.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Anything that owns a tensor's bytes and can lend them from any thread.
pub trait Bytes: Send + Sync {
    /// The bytes: dense, row-major, little-endian, in the dtype of the value they hold.
    fn bytes(&self) -> &[u8];
}

impl Bytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl Bytes for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

struct Inner {
    bytes: Option<Box<dyn Bytes>>,
    /// blake3 of the bytes, computed on first use (printing, comparing); given when parsed.
    digest: OnceLock<[u8; 32]>,
}

/// A tensor's bytes, shared (see the module doc). Two values are equal when their bytes are
/// (compared by digest).
#[derive(Clone)]
pub struct TensorData(Arc<Inner>);

impl TensorData {
    /// Data owned by `bytes` (not copied).
    pub fn new(bytes: impl Bytes + 'static) -> TensorData {
        TensorData(Arc::new(Inner { bytes: Some(Box::new(bytes)), digest: OnceLock::new() }))
    }

    /// Data known only by its digest (read from IR text): no bytes.
    pub fn missing(digest: [u8; 32]) -> TensorData {
        TensorData(Arc::new(Inner { bytes: None, digest: OnceLock::from(digest) }))
    }

    /// The bytes, or `None` for data parsed from IR text.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.0.bytes.as_deref().map(|b| b.bytes())
    }

    /// The number of bytes (0 when missing).
    pub fn len(&self) -> usize {
        self.bytes().map_or(0, <[u8]>::len)
    }

    /// Whether there are no bytes (an empty tensor, or missing data).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// blake3 of the bytes (computed once).
    pub fn digest(&self) -> [u8; 32] {
        *self.0.digest.get_or_init(|| *blake3::hash(self.bytes().unwrap_or_default()).as_bytes())
    }

    /// The digest as 64 hex digits (how the IR text names the data).
    pub fn digest_hex(&self) -> String {
        self.digest().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Data named by `hex` (64 hex digits), as the IR text prints it; bytes missing.
    pub fn from_digest_hex(hex: &str) -> Option<TensorData> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut digest = [0u8; 32];
        for (i, d) in digest.iter_mut().enumerate() {
            *d = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(TensorData::missing(digest))
    }
}

impl fmt::Debug for TensorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes() {
            Some(b) => write!(f, "TensorData({} bytes)", b.len()),
            None => write!(f, "TensorData(missing {})", &self.digest_hex()[..16]),
        }
    }
}

impl PartialEq for TensorData {
    fn eq(&self, other: &TensorData) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.digest() == other.digest()
    }
}

impl Eq for TensorData {}

impl std::hash::Hash for TensorData {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.digest().hash(state);
    }
}

impl serde::Serialize for TensorData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest_hex())
    }
}

impl<'de> serde::Deserialize<'de> for TensorData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TensorData, D::Error> {
        let hex = String::deserialize(d)?;
        TensorData::from_digest_hex(&hex).ok_or_else(|| serde::de::Error::custom("expected 64 hex digits of a blake3 digest"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_named_by_its_digest_and_parses_back_without_bytes() {
        let d = TensorData::new(vec![1u8, 2, 3, 4]);
        assert_eq!(d.len(), 4);
        assert_eq!(d.digest(), *blake3::hash(&[1, 2, 3, 4]).as_bytes());
        let back = TensorData::from_digest_hex(&d.digest_hex()).expect("64 hex digits");
        assert_eq!(back, d);
        assert!(back.bytes().is_none());
        assert_ne!(TensorData::new(vec![1u8, 2, 3, 5]), d);
        assert!(TensorData::from_digest_hex("xyz").is_none());
    }
}

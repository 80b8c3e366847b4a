//! [`Name`]: an immutable string stored inline up to 22 bytes, for node names.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Longest name kept inline (the rest of the 24 bytes hold the length and the tag).
const INLINE: usize = 22;

/// A node's name: FX names (`add_12`, `arg3_1`, `mul.scalar1`) are short, so they live inline
/// in the node, with no allocation; a longer one goes to the heap. Reads like a `&str` (it
/// derefs to one, compares with `str` and `String`, hashes and orders as its text does) and
/// prints like one with `{}` and `{:?}`. Build one with `Name::from("x")` or `.into()`.
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    /// Invariant: `bytes[..len]` is valid UTF-8 (copied from a `str`), `len <= INLINE`.
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl Name {
    /// A name with this text.
    pub fn new(s: &str) -> Self {
        if s.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Name(Repr::Inline { len: s.len() as u8, bytes })
        } else {
            Name(Repr::Heap(s.into()))
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: `bytes[..len]` was copied from a `str` (see `Repr::Inline`).
            Repr::Inline { len, bytes } => unsafe { std::str::from_utf8_unchecked(&bytes[..*len as usize]) },
            Repr::Heap(s) => s,
        }
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name::new(s)
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Self {
        Name::new(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        if s.len() <= INLINE { Name::new(&s) } else { Name(Repr::Heap(s.into_boxed_str())) }
    }
}

impl From<&Name> for Name {
    fn from(s: &Name) -> Self {
        s.clone()
    }
}

impl From<Name> for String {
    fn from(n: Name) -> Self {
        match n.0 {
            Repr::Heap(s) => s.into_string(),
            Repr::Inline { .. } => n.as_str().to_string(),
        }
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `str` hashes, so that `Borrow<str>` lookups find it.
        self.as_str().hash(state)
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_names_read_back() {
        for s in ["", "x", "add_12", "a".repeat(22).as_str(), "b".repeat(23).as_str(), "héllo_wörld_ünïcode_nämé"] {
            let n = Name::from(s);
            assert_eq!(n, s);
            assert_eq!(n.to_string(), s);
            assert_eq!(format!("{n:?}"), format!("{s:?}"));
            assert_eq!(String::from(n.clone()), s);
            assert_eq!(Name::from(s.to_string()), n);
        }
        assert_eq!(std::mem::size_of::<Name>(), std::mem::size_of::<String>());
    }
}

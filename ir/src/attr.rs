//! Op attributes in the IR text: scalars, and the formatting and parsing of attribute values
//! (`3`, `[1, 0]`, `true`, `1.0e-5`, `none`, `f32`, `"name"`), shared by printer and parser.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::types::DType;

/// A scalar literal. Floats are kept as their bit pattern so that `Op` can derive `Eq` and
/// `Hash` (two NaNs with the same bits are the same constant, as a hash key must have it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scalar {
    /// A floating-point value, stored as `f64::to_bits`.
    Float(u64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    /// A float scalar.
    pub fn float(v: f64) -> Self {
        Scalar::Float(v.to_bits())
    }

    /// The value as f64 (bools are 0 or 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(bits) => f64::from_bits(bits),
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as i64 as f64,
        }
    }

    /// Parses the text form written by `Display`.
    pub fn parse(s: &str) -> Option<Scalar> {
        match s {
            "true" => Some(Scalar::Bool(true)),
            "false" => Some(Scalar::Bool(false)),
            _ if s.contains(['.', 'e', 'E']) || s.ends_with("inf") || s == "NaN" => {
                s.parse::<f64>().ok().map(Scalar::float)
            }
            _ => s.parse::<i64>().ok().map(Scalar::Int),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            // `{:?}` keeps a decimal point or exponent (1.0, 1e-5), round-trips exactly, and
            // prints inf/NaN in a form `f64::from_str` reads back.
            Scalar::Float(bits) => write!(f, "{:?}", f64::from_bits(bits)),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Formats an integer list as `[1, 0]`.
pub fn ints(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// Formats a bool list as `[true, false]`.
pub fn bools(v: &[bool]) -> String {
    let items: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// Formats an optional scalar (`none` when absent).
pub fn opt_scalar(v: &Option<Scalar>) -> String {
    v.map(|s| s.to_string()).unwrap_or_else(|| "none".into())
}

/// Attribute values by key, as parsed from text, with typed getters that report which key of
/// which op is wrong.
pub struct Attr<'a> {
    pub op: &'a str,
    pub values: &'a BTreeMap<String, String>,
}

impl Attr<'_> {
    fn raw(&self, key: &str) -> Result<&str, String> {
        self.values.get(key).map(|s| s.as_str()).ok_or_else(|| format!("{} needs attribute `{key}`", self.op))
    }

    fn bad(&self, key: &str, want: &str) -> String {
        format!("{}: attribute `{key}` must be {want}, found `{}`", self.op, self.values.get(key).map(|s| s.as_str()).unwrap_or(""))
    }

    /// An integer.
    pub fn int(&self, key: &str) -> Result<i64, String> {
        self.raw(key)?.parse().map_err(|_| self.bad(key, "an integer"))
    }

    /// An integer or `none`.
    pub fn opt_int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.raw(key)? {
            "none" => Ok(None),
            s => s.parse().map(Some).map_err(|_| self.bad(key, "an integer or none")),
        }
    }

    /// `true` or `false`.
    pub fn bool(&self, key: &str) -> Result<bool, String> {
        match self.raw(key)? {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.bad(key, "true or false")),
        }
    }

    /// `true` or `false`, absent meaning `default` (a flag printed only when it is not).
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.values.get(key) {
            None => Ok(default),
            Some(_) => self.bool(key),
        }
    }

    /// A list of dim indices `[2, 3, 1, 0]`, absent meaning `None`.
    pub fn opt_dims(&self, key: &str) -> Result<Option<Vec<usize>>, String> {
        match self.values.get(key) {
            None => Ok(None),
            Some(_) => self.list(key, |x| x.parse().ok(), "a list of dim indices").map(Some),
        }
    }

    /// A scalar.
    pub fn scalar(&self, key: &str) -> Result<Scalar, String> {
        Scalar::parse(self.raw(key)?).ok_or_else(|| self.bad(key, "a number or bool"))
    }

    /// A scalar or `none`.
    pub fn opt_scalar(&self, key: &str) -> Result<Option<Scalar>, String> {
        match self.raw(key)? {
            "none" => Ok(None),
            _ => self.scalar(key).map(Some),
        }
    }

    /// A region index (a non-negative integer).
    pub fn region(&self, key: &str) -> Result<u32, String> {
        self.raw(key)?.parse().map_err(|_| self.bad(key, "a region index"))
    }

    /// A dtype name.
    pub fn dtype(&self, key: &str) -> Result<DType, String> {
        self.raw(key)?.parse().map_err(|_| self.bad(key, "a dtype"))
    }

    /// A dtype name, absent meaning `None`.
    pub fn opt_dtype(&self, key: &str) -> Result<Option<DType>, String> {
        match self.values.get(key) {
            None => Ok(None),
            Some(_) => self.dtype(key).map(Some),
        }
    }

    /// A quoted string (Rust escapes), or `none`.
    pub fn opt_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.values.get(key).map(|s| s.as_str()) {
            None | Some("none") => Ok(None),
            Some(s) => unquote(s).map(Some).ok_or_else(|| self.bad(key, "a quoted string")),
        }
    }

    fn list<T>(&self, key: &str, item: impl Fn(&str) -> Option<T>, want: &str) -> Result<Vec<T>, String> {
        let s = self.raw(key)?;
        let inner = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')).ok_or_else(|| self.bad(key, want))?;
        if inner.trim().is_empty() {
            return Ok(Vec::new());
        }
        inner.split(',').map(|x| item(x.trim()).ok_or_else(|| self.bad(key, want))).collect()
    }

    /// An integer list `[1, 0]`.
    pub fn ints(&self, key: &str) -> Result<Vec<i64>, String> {
        self.list(key, |x| x.parse().ok(), "a list of integers")
    }

    /// A bool list `[true, false]`.
    pub fn bools(&self, key: &str) -> Result<Vec<bool>, String> {
        self.list(key, |x| match x { "true" => Some(true), "false" => Some(false), _ => None }, "a list of bools")
    }
}

/// Quotes a string with Rust's escapes (what `{:?}` writes).
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Reverses [`quote`] for the escapes it can produce in names (`\"`, `\\`, `\n`, `\t`,
/// `\u{..}`).
pub fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '0' => out.push('\0'),
            'u' => {
                let rest: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let hex = rest.strip_prefix('{')?;
                out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_round_trip_through_text() {
        for s in [Scalar::float(1.0), Scalar::float(1e-5), Scalar::float(-0.0), Scalar::float(f64::NEG_INFINITY),
                  Scalar::float(1e300), Scalar::Int(-3), Scalar::Bool(true)] {
            assert_eq!(Scalar::parse(&s.to_string()), Some(s), "{s}");
        }
        let nan = Scalar::parse(&Scalar::float(f64::NAN).to_string()).unwrap();
        assert!(nan.as_f64().is_nan());
    }

    #[test]
    fn strings_round_trip_through_quotes() {
        for s in ["fc1.weight", "a\"b\\c", "tab\there", "ünï"] {
            assert_eq!(unquote(&quote(s)).as_deref(), Some(s));
        }
    }
}

//! Scalar encodings shared by both trace encodings: tensor sizes that may be symbolic, and
//! floats that may be non-finite.
//!
//! JSON (human readable) writes a static size as a number and a symbolic one as its name
//! (`"s0"`), and a float as a number or, since JSON has no literal for them, as `"inf"`,
//! `"-inf"` or `"nan"`. Bincode (not self-describing) writes a size as an enum and a float as
//! its eight bytes.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One dimension of a tensor's sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(i64),
    /// A symbolic size (`SymInt`) such as `s0`: fxhlo specializes shapes and rejects these.
    Symbolic(String),
}

#[derive(Serialize, Deserialize)]
enum DimRepr {
    Static(i64),
    Symbolic(String),
}

impl Serialize for Dim {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self, s.is_human_readable()) {
            (Dim::Static(v), true) => s.serialize_i64(*v),
            (Dim::Symbolic(n), true) => s.serialize_str(n),
            (Dim::Static(v), false) => DimRepr::Static(*v).serialize(s),
            (Dim::Symbolic(n), false) => DimRepr::Symbolic(n.clone()).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return Ok(match DimRepr::deserialize(d)? {
                DimRepr::Static(v) => Dim::Static(v),
                DimRepr::Symbolic(n) => Dim::Symbolic(n),
            });
        }
        struct V;
        impl Visitor<'_> for V {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer size or a symbolic size name")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dim, E> {
                Ok(Dim::Static(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dim, E> {
                i64::try_from(v).map(Dim::Static).map_err(|_| E::custom(format!("size {v} is too large")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dim, E> {
                Ok(Dim::Symbolic(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// An f64 that survives JSON even when infinite or NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F64(pub f64);

impl Serialize for F64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if !s.is_human_readable() || v.is_finite() {
            return s.serialize_f64(v);
        }
        s.serialize_str(if v.is_nan() { "nan" } else if v > 0.0 { "inf" } else { "-inf" })
    }
}

impl<'de> Deserialize<'de> for F64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return f64::deserialize(d).map(F64);
        }
        struct V;
        impl Visitor<'_> for V {
            type Value = F64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, \"inf\", \"-inf\" or \"nan\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<F64, E> {
                Ok(F64(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<F64, E> {
                Ok(F64(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<F64, E> {
                Ok(F64(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<F64, E> {
                match v {
                    "inf" => Ok(F64(f64::INFINITY)),
                    "-inf" => Ok(F64(f64::NEG_INFINITY)),
                    "nan" => Ok(F64(f64::NAN)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

//! The exporter's trace handed over as the Python objects it is built of (dicts, lists, str,
//! int, float, bool, None), read straight into the frontend's serde schema: no JSON text is
//! written in Python nor parsed in Rust on the way (BERT-base's trace: ~70 ms of text each
//! way on a warm start, against a few ms to walk the objects). The schema, its checks and its
//! errors are the JSON reader's: this is one more serde `Deserializer`, for Python values.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess, Visitor};

/// A value that does not fit the schema (serde's message: the field or variant it expected).
#[derive(Debug)]
pub(crate) struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error(msg.to_string())
    }
}

/// Reads a `T` (the frontend's `Trace`) from the Python value `value`.
pub(crate) fn from_py<T: de::DeserializeOwned>(value: &Bound<'_, PyAny>) -> Result<T, Error> {
    T::deserialize(Value(value.clone()))
}

/// One Python value, as a serde data source.
struct Value<'py>(Bound<'py, PyAny>);

fn py_error(e: PyErr) -> Error {
    Error(e.to_string())
}

impl<'de, 'py> Deserializer<'de> for Value<'py> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let v = &self.0;
        if v.is_none() {
            visitor.visit_unit()
        } else if v.is_instance_of::<PyBool>() {
            visitor.visit_bool(v.extract().map_err(py_error)?)
        } else if v.is_instance_of::<PyInt>() {
            match v.extract::<i64>() {
                Ok(i) => visitor.visit_i64(i),
                Err(_) => visitor.visit_u64(v.extract().map_err(py_error)?),
            }
        } else if v.is_instance_of::<PyFloat>() {
            visitor.visit_f64(v.extract().map_err(py_error)?)
        } else if let Ok(s) = v.cast::<PyString>() {
            visitor.visit_str(s.to_str().map_err(py_error)?)
        } else if let Ok(d) = v.cast::<PyDict>() {
            let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = d.iter().collect();
            visitor.visit_map(Map { items: items.into_iter(), value: None })
        } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            let items = v.try_iter().map_err(py_error)?.collect::<PyResult<Vec<_>>>().map_err(py_error)?;
            visitor.visit_seq(Seq(items.into_iter()))
        } else {
            let ty = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(Error(format!("a trace holds dicts, lists, str, int, float, bool and None, not {ty}")))
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.0.is_none() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _name: &'static str, _variants: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        // Externally tagged: `"none"` (a unit variant) or `{"int": 3}`.
        if let Ok(s) = self.0.cast::<PyString>() {
            return visitor.visit_enum(s.to_str().map_err(py_error)?.into_deserializer());
        }
        let d = self.0.cast::<PyDict>().map_err(|_| Error("an enum value is a string or a dict of one entry".into()))?;
        let mut items = d.iter();
        match (items.next(), items.next()) {
            (Some((tag, value)), None) => visitor.visit_enum(Variant { tag, value }),
            _ => Err(Error(format!("an enum value is a dict of exactly one entry, not {} entries", d.len()))),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct Seq<'py>(std::vec::IntoIter<Bound<'py, PyAny>>);

impl<'de> SeqAccess<'de> for Seq<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|v| seed.deserialize(Value(v))).transpose()
    }
}

struct Map<'py> {
    items: std::vec::IntoIter<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    value: Option<Bound<'py, PyAny>>,
}

impl<'de> MapAccess<'de> for Map<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        match self.items.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(Value(k)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let v = self.value.take().ok_or_else(|| Error("a map value without its key".into()))?;
        seed.deserialize(Value(v))
    }
}

struct Variant<'py> {
    tag: Bound<'py, PyAny>,
    value: Bound<'py, PyAny>,
}

impl<'de, 'py> EnumAccess<'de> for Variant<'py> {
    type Error = Error;
    type Variant = Value<'py>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Value<'py>), Error> {
        Ok((seed.deserialize(Value(self.tag))?, Value(self.value)))
    }
}

impl<'de> VariantAccess<'de> for Value<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }
}

/// Containers nested deeper than this are written as their `repr` (a list that holds itself
/// would otherwise never end).
const MAX_DEPTH: usize = 256;

/// `value` as JSON text, for the dump of a trace that does not fit the schema: what JSON can
/// hold as it is (dicts in their order, lists and tuples as arrays, str, int, float, bool,
/// None), a non-finite float as the exporter writes it (`"nan"`, `"inf"`, `"-inf"`), anything
/// else (an object no trace holds, a dict key that is not a str, a container nested too deep)
/// as the string of its `repr`. Indented like the exporter's `to_json`: one space a level,
/// lists of scalars on one line.
pub(crate) fn to_json(value: &Bound<'_, PyAny>) -> String {
    let mut out = String::new();
    write_json(value, 0, &mut out);
    out.push('\n');
    out
}

/// `v` as a JSON string literal of its `repr` (or of its type's name when even that fails).
fn repr_json(v: &Bound<'_, PyAny>) -> String {
    let text = v
        .repr()
        .ok()
        .and_then(|r| r.to_str().ok().map(str::to_string))
        .unwrap_or_else(|| format!("<{} without a repr>", v.get_type().name().map(|n| n.to_string()).unwrap_or_default()));
    json_string(&text)
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// `v` as one JSON scalar, or `None` when it is a container.
fn scalar_json(v: &Bound<'_, PyAny>) -> Option<String> {
    if v.is_none() {
        Some("null".into())
    } else if v.is_instance_of::<PyBool>() {
        Some(if v.is_truthy().unwrap_or(false) { "true" } else { "false" }.into())
    } else if v.is_instance_of::<PyInt>() {
        // Any size: JSON's numbers have no limit (the reader then says which field overflows).
        Some(match v.str().ok().and_then(|s| s.to_str().ok().map(str::to_string)) {
            Some(digits) if digits.trim_start_matches('-').chars().all(|c| c.is_ascii_digit()) && !digits.is_empty() => digits,
            _ => repr_json(v),
        })
    } else if v.is_instance_of::<PyFloat>() {
        let x: f64 = v.extract().unwrap_or(f64::NAN);
        Some(if x.is_nan() {
            json_string("nan")
        } else if x.is_infinite() {
            json_string(if x > 0.0 { "inf" } else { "-inf" })
        } else {
            serde_json::to_string(&x).unwrap_or_else(|_| repr_json(v))
        })
    } else if let Ok(s) = v.cast::<PyString>() {
        Some(match s.to_str() {
            Ok(text) => json_string(text),
            // A str JSON cannot hold (a lone surrogate): its repr.
            Err(_) => repr_json(v),
        })
    } else if v.is_instance_of::<PyDict>() || v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        None
    } else {
        Some(repr_json(v))
    }
}

fn write_json(v: &Bound<'_, PyAny>, level: usize, out: &mut String) {
    if let Some(s) = scalar_json(v) {
        out.push_str(&s);
        return;
    }
    if level >= MAX_DEPTH {
        out.push_str(&repr_json(v));
        return;
    }
    let pad = " ".repeat(level + 1);
    if let Ok(d) = v.cast::<PyDict>() {
        if d.is_empty() {
            out.push_str("{}");
            return;
        }
        out.push_str("{\n");
        for (i, (k, x)) in d.iter().enumerate() {
            if i > 0 {
                out.push_str(",\n");
            }
            out.push_str(&pad);
            let key = match k.cast::<PyString>().ok().and_then(|s| s.to_str().ok().map(json_string)) {
                Some(key) => key,
                None => repr_json(&k),
            };
            out.push_str(&key);
            out.push_str(": ");
            write_json(&x, level + 1, out);
        }
        out.push('\n');
        out.push_str(&" ".repeat(level));
        out.push('}');
        return;
    }
    let items: Vec<Bound<'_, PyAny>> = match v.try_iter() {
        Ok(iter) => iter.filter_map(Result::ok).collect(),
        Err(_) => {
            out.push_str(&repr_json(v));
            return;
        }
    };
    if items.is_empty() {
        out.push_str("[]");
        return;
    }
    let scalars: Option<Vec<String>> = items.iter().map(scalar_json).collect();
    if let Some(scalars) = scalars {
        out.push('[');
        out.push_str(&scalars.join(", "));
        out.push(']');
        return;
    }
    out.push_str("[\n");
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&pad);
        write_json(x, level + 1, out);
    }
    out.push('\n');
    out.push_str(&" ".repeat(level));
    out.push(']');
}

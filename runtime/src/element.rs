//! Element types: the [`ElementType`] enum (defined in the leaf module `kinds`, so that errors
//! can name it), the Rust types that hold them ([`Element`]), their parsing, and their mapping
//! to PJRT buffer types.
//!
//! Transfers go through the C API with raw bytes (see `transfer.rs`), so every element type,
//! f16 and bf16 included, moves the same way.

use std::str::FromStr;

use half::{bf16, f16};
use pjrt::PrimitiveType;
use pjrt_sys::PJRT_Buffer_Type;

use crate::error::{Error, Result};
pub use crate::kinds::ElementType;

/// The element types' PJRT side: buffer type codes and the `pjrt` crate's primitive types.
impl ElementType {
    /// The PJRT buffer type code.
    pub(crate) fn to_pjrt(self) -> PJRT_Buffer_Type {
        self.primitive_type() as PJRT_Buffer_Type
    }

    /// The `pjrt` crate's primitive type.
    pub(crate) fn primitive_type(self) -> PrimitiveType {
        match self {
            ElementType::Bool => PrimitiveType::Pred,
            ElementType::I8 => PrimitiveType::S8,
            ElementType::I16 => PrimitiveType::S16,
            ElementType::I32 => PrimitiveType::S32,
            ElementType::I64 => PrimitiveType::S64,
            ElementType::U8 => PrimitiveType::U8,
            ElementType::F16 => PrimitiveType::F16,
            ElementType::BF16 => PrimitiveType::BF16,
            ElementType::F32 => PrimitiveType::F32,
            ElementType::F64 => PrimitiveType::F64,
            ElementType::C64 => PrimitiveType::C64,
            ElementType::C128 => PrimitiveType::C128,
        }
    }

    /// The element type for a PJRT buffer type code, or an error naming the code.
    pub(crate) fn from_pjrt(code: PJRT_Buffer_Type) -> Result<ElementType> {
        ElementType::ALL
            .into_iter()
            .find(|t| t.to_pjrt() == code)
            .ok_or_else(|| {
                let name = PrimitiveType::try_from(code)
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_else(|_| format!("PJRT buffer type code {code}"));
                Error::UnsupportedElementType(name)
            })
    }
}

impl FromStr for ElementType {
    type Err = Error;

    /// Parses [`ElementType::name`] or [`ElementType::mlir_name`] spellings.
    fn from_str(s: &str) -> Result<ElementType> {
        ElementType::ALL
            .into_iter()
            .find(|t| t.name() == s || t.mlir_name() == s)
            .ok_or_else(|| {
                let valid: Vec<&str> = ElementType::ALL.iter().map(|t| t.name()).collect();
                Error::UnsupportedElementType(format!("`{s}` (valid: {})", valid.join(", ")))
            })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that holds one element of an [`ElementType`] (f32, f64, i64, i32, i16, i8, u8,
/// bool, `half::f16`, `half::bf16`). Sealed: the runtime's byte layout depends on it.
pub trait Element: Copy + sealed::Sealed + 'static {
    /// The element type this Rust type holds.
    const TYPE: ElementType;
    /// Appends the little-endian bytes of `self`.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads one element from the first [`ElementType::byte_size`] little-endian bytes
    /// (missing bytes read as zero).
    fn read_le(bytes: &[u8]) -> Self;
    /// The value as f32 (`true` = 1.0; large integers round).
    fn to_f32(self) -> f32;
}

macro_rules! impl_element_num {
    ($t:ty, $variant:ident, $n:literal, |$v:ident| $to_f32:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ElementType = ElementType::$variant;
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let mut raw = [0u8; $n];
                let k = bytes.len().min($n);
                raw[..k].copy_from_slice(&bytes[..k]);
                <$t>::from_le_bytes(raw)
            }
            fn to_f32(self) -> f32 {
                let $v = self;
                $to_f32
            }
        }
    };
}

impl_element_num!(f32, F32, 4, |v| v);
impl_element_num!(f64, F64, 8, |v| v as f32);
impl_element_num!(i64, I64, 8, |v| v as f32);
impl_element_num!(i32, I32, 4, |v| v as f32);
impl_element_num!(i16, I16, 2, |v| f32::from(v));
impl_element_num!(i8, I8, 1, |v| f32::from(v));
impl_element_num!(u8, U8, 1, |v| f32::from(v));
impl_element_num!(f16, F16, 2, |v| v.to_f32());
impl_element_num!(bf16, BF16, 2, |v| v.to_f32());

impl sealed::Sealed for bool {}
impl Element for bool {
    const TYPE: ElementType = ElementType::Bool;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    /// Any non-zero byte reads as `true`.
    fn read_le(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|b| *b != 0)
    }
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for t in ElementType::ALL {
            assert_eq!(t.name().parse::<ElementType>().ok(), Some(t));
            assert_eq!(t.mlir_name().parse::<ElementType>().ok(), Some(t));
        }
        assert!("c32".parse::<ElementType>().is_err());
    }

    #[test]
    fn pjrt_codes_round_trip() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::from_pjrt(t.to_pjrt()).ok(), Some(t));
        }
        let u32_code = PrimitiveType::U32 as PJRT_Buffer_Type;
        let msg = ElementType::from_pjrt(u32_code)
            .err()
            .map(|e| e.to_string());
        assert!(msg.unwrap_or_default().contains("U32"));
    }
}

//! The small value types every other runtime module names, errors included: device kinds and element types.
//!
//! A leaf: this module uses no other module of the crate, so that `error.rs` can carry these
//! types in its variants while `device.rs`, `element.rs` and `plugin.rs` return those errors,
//! and the modules still depend on each other one way only:
//! `kinds` ← `error` ← `element`, `plugin` ← `device`.
//! What needs an error or PJRT (parsing, the PJRT type codes) lives with the rest of each type:
//! [`DeviceKind`]'s parsing in `device.rs`, [`ElementType`]'s in `element.rs`. Both types are
//! public through those modules (`device::DeviceKind`, `element::ElementType`) and the crate
//! root, as before.

use std::fmt;

/// The kind of accelerator a PJRT plugin drives (serialized as its lowercase name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// The XLA CPU plugin (`xla-cpu-pjrt`).
    Cpu,
    /// An NVIDIA GPU through JAX's CUDA plugin (`jax-cuda13-pjrt` / `jax-cuda12-pjrt`).
    Cuda,
    /// A Cloud TPU through `libtpu`.
    Tpu,
}

impl DeviceKind {
    /// Every device kind, in the order error messages list them.
    pub const ALL: [DeviceKind; 3] = [DeviceKind::Cpu, DeviceKind::Cuda, DeviceKind::Tpu];

    /// The lowercase name (`cpu`, `cuda`, `tpu`), as parsed by [`std::str::FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Tpu => "tpu",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The element types the runtime moves between host and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// `i1` / PRED, stored as one byte (0 or 1).
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Complex of two `f32` (real first), as `std::complex<float>`.
    C64,
    /// Complex of two `f64` (real first).
    C128,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 12] = [
        ElementType::Bool,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::U8,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::F64,
        ElementType::C64,
        ElementType::C128,
    ];

    /// Bytes per element in a host tensor (bool takes one byte).
    pub fn byte_size(self) -> usize {
        match self {
            ElementType::Bool | ElementType::I8 | ElementType::U8 => 1,
            ElementType::I16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::I32 | ElementType::F32 => 4,
            ElementType::I64 | ElementType::F64 | ElementType::C64 => 8,
            ElementType::C128 => 16,
        }
    }

    /// The short name (`bool`, `i8`, ..., `bf16`, `f32`), as parsed by [`std::str::FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            ElementType::Bool => "bool",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::U8 => "u8",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::C64 => "c64",
            ElementType::C128 => "c128",
        }
    }

    /// The MLIR/StableHLO spelling inside `tensor<...>` (`i1`, `ui8`, `bf16`, ...).
    pub fn mlir_name(self) -> &'static str {
        match self {
            ElementType::Bool => "i1",
            ElementType::U8 => "ui8",
            ElementType::C64 => "complex<f32>",
            ElementType::C128 => "complex<f64>",
            other => other.name(),
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    /// The circle this module exists to break: a `crate::` path outside comments here would
    /// let `error.rs` (which uses this module) depend on a module that returns its errors.
    #[test]
    fn kinds_and_error_use_no_other_module_but_kinds() {
        for (file, text, allowed) in [
            ("kinds.rs", include_str!("kinds.rs"), &[][..]),
            ("error.rs", include_str!("error.rs"), &["crate::kinds::"][..]),
        ] {
            let code = text.split("#[cfg(test)]").next().unwrap_or(text);
            for (n, line) in code.lines().enumerate() {
                let line = line.trim_start();
                if line.starts_with("//") {
                    continue;
                }
                let mut rest = line;
                while let Some(i) = rest.find("crate::") {
                    let path = &rest[i..];
                    assert!(
                        allowed.iter().any(|a| path.starts_with(a)),
                        "{file}:{}: `{line}` uses another module of the crate",
                        n + 1
                    );
                    rest = &path["crate::".len()..];
                }
            }
        }
    }
}

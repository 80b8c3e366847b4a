//! Tensor files (safetensors), memory-mapped: weights and references are never copied on import.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use fxhlo_ir::{DType, TensorType};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};

use crate::{Error, Result};

/// A borrowed tensor: its type and its little-endian, row-major bytes inside the mapped file.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    pub bytes: &'a [u8],
}

impl TensorView<'_> {
    /// The tensor's IR type.
    pub fn tensor_type(&self) -> TensorType {
        TensorType::new(self.dtype, self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
    }
}

struct Entry {
    dtype: DType,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// A memory-mapped safetensors file with its header parsed and checked.
pub struct TensorFile {
    path: PathBuf,
    map: Option<Mmap>,
    entries: BTreeMap<String, Entry>,
}

impl TensorFile {
    /// Maps and validates `path`. Every tensor's dtype must be one fxhlo supports.
    pub fn open(path: &Path) -> Result<TensorFile> {
        let io = |source| Error::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // Mapping an empty file fails on Linux; an empty file is malformed anyway.
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the file is opened read-only; a concurrent writer could change the bytes
            // under us, which safetensors' own loaders accept as well.
            Some(unsafe { Mmap::map(&file) }.map_err(io)?)
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        let bad = |message: String| Error::Weights { path: path.to_path_buf(), message };
        let (header, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
        let base = 8 + header;
        let mut entries = BTreeMap::new();
        for (name, info) in meta.tensors() {
            let dtype = from_safetensors(info.dtype)
                .ok_or_else(|| bad(format!("tensor `{name}` has dtype {:?}, which fxhlo does not support", info.dtype)))?;
            let (s, e) = info.data_offsets;
            entries.insert(name, Entry { dtype, shape: info.shape.clone(), start: base + s, end: base + e });
        }
        Ok(TensorFile { path: path.to_path_buf(), map, entries })
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tensor named `name`, if present.
    pub fn get(&self, name: &str) -> Option<TensorView<'_>> {
        let e = self.entries.get(name)?;
        let bytes = self.map.as_deref()?.get(e.start..e.end)?;
        Some(TensorView { dtype: e.dtype, shape: &e.shape, bytes })
    }

    /// The address range of the memory map (`None` for an empty file): every [`TensorView`]'s
    /// bytes lie inside it, which shows that tensors are borrowed from the file, never copied.
    pub fn mapped_range(&self) -> Option<std::ops::Range<usize>> {
        let map = self.map.as_deref()?;
        let start = map.as_ptr() as usize;
        Some(start..start + map.len())
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(|s| s.as_str())
    }
}

fn from_safetensors(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::F64 => DType::F64,
        Dtype::F32 => DType::F32,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::I64 => DType::I64,
        Dtype::I32 => DType::I32,
        Dtype::I16 => DType::I16,
        Dtype::I8 => DType::I8,
        Dtype::U8 => DType::U8,
        Dtype::BOOL => DType::Bool,
        Dtype::C64 => DType::C64,
        _ => return None,
    })
}

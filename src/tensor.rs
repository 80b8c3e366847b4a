//! Conversions between the IR's dtypes and the runtime's element types and host tensors.

use fxhlo_frontend::TensorView;
use fxhlo_ir::DType;
use fxhlo_runtime::{ElementType, HostTensor};

use crate::{Error, Result};

/// The runtime element type of an IR dtype (the two enums cover the same set).
pub fn element_type(d: DType) -> ElementType {
    match d {
        DType::F64 => ElementType::F64,
        DType::F32 => ElementType::F32,
        DType::F16 => ElementType::F16,
        DType::BF16 => ElementType::BF16,
        DType::I64 => ElementType::I64,
        DType::I32 => ElementType::I32,
        DType::I16 => ElementType::I16,
        DType::I8 => ElementType::I8,
        DType::U8 => ElementType::U8,
        DType::Bool => ElementType::Bool,
        DType::C64 => ElementType::C64,
        DType::C128 => ElementType::C128,
    }
}

/// A host tensor holding a copy of a mapped tensor's bytes (PJRT needs owned host data).
pub fn host_tensor(view: &TensorView<'_>) -> Result<HostTensor> {
    let dims: Vec<i64> = view.shape.iter().map(|&d| d as i64).collect();
    HostTensor::new(element_type(view.dtype), dims, view.bytes.to_vec()).map_err(Error::from)
}

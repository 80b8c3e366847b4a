//! The emitter: builds StableHLO operations in generic form into one block with melior.
//!
//! StableHLO is not an upstream MLIR dialect, so ops are built by name with
//! `OperationBuilder` and their attributes are built as values (see [`crate::attr`]); the
//! context allows unregistered dialects. The PJRT plugin verifies the module fully when it
//! compiles it.

use std::collections::HashMap;

use fxhlo_ir::{DType, Scalar, TensorType, ValueRef};
use melior::ir::attribute::Attribute;
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{IntegerType, RankedTensorType, ShapedTypeLike};
use melior::ir::{Block, Identifier, Location, Type, TypeLike, Value, ValueLike};
use melior::Context;

use crate::attr::{self, ComparisonDirection, ComparisonType};
use crate::{Error, Result};

/// An op's attributes: names and values.
pub type Attrs<'n, 'c> = [(&'n str, Attribute<'c>)];

/// State while lowering one graph: the MLIR context, the function body, and the MLIR value
/// of every IR value lowered so far.
pub struct Emitter<'c, 'a> {
    pub ctx: &'c Context,
    pub block: &'a Block<'c>,
    values: HashMap<ValueRef, Value<'c, 'a>>,
    /// The node being lowered, for error messages.
    pub node: String,
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// An emitter appending to `block`.
    pub fn new(ctx: &'c Context, block: &'a Block<'c>) -> Self {
        Emitter { ctx, block, values: HashMap::new(), node: String::new() }
    }

    /// Records the MLIR value of an IR value.
    pub fn bind(&mut self, v: ValueRef, value: Value<'c, 'a>) {
        self.values.insert(v, value);
    }

    /// The MLIR value of an already lowered IR value.
    pub fn value(&self, v: ValueRef) -> Result<Value<'c, 'a>> {
        self.values.get(&v).copied().ok_or_else(|| self.internal("operand was not lowered before its use"))
    }

    /// An internal error naming the current node.
    pub fn internal(&self, message: impl Into<String>) -> Error {
        Error::Internal { node: self.node.clone(), message: message.into() }
    }

    /// The MLIR `tensor<...>` type of an IR tensor type.
    pub fn tensor_type(&self, t: &TensorType) -> Type<'c> {
        tensor_type(self.ctx, t)
    }

    /// Appends `name(operands) {attrs} -> results` and returns its first result.
    pub fn op(&self, name: &str, loc: Location<'c>, operands: &[Value<'c, 'a>], result: &TensorType, attrs: &Attrs<'_, 'c>) -> Result<Value<'c, 'a>> {
        self.op_typed(name, loc, operands, &[self.tensor_type(result)], attrs, Vec::new()).map(|v| v[0])
    }

    /// Appends an op with several results (or none) and returns them all.
    pub fn op_n(
        &self,
        name: &str,
        loc: Location<'c>,
        operands: &[Value<'c, 'a>],
        results: &[TensorType],
        attrs: &Attrs<'_, 'c>,
        regions: Vec<melior::ir::Region<'c>>,
    ) -> Result<Vec<Value<'c, 'a>>> {
        let types: Vec<Type<'c>> = results.iter().map(|t| self.tensor_type(t)).collect();
        self.op_typed(name, loc, operands, &types, attrs, regions)
    }

    /// [`Emitter::op_n`] with the MLIR result types given directly (types the IR has no
    /// dtype for, such as the unsigned integers of `rng_bit_generator`).
    pub fn op_typed(
        &self,
        name: &str,
        loc: Location<'c>,
        operands: &[Value<'c, 'a>],
        types: &[Type<'c>],
        attrs: &Attrs<'_, 'c>,
        regions: Vec<melior::ir::Region<'c>>,
    ) -> Result<Vec<Value<'c, 'a>>> {
        let attrs: Vec<(Identifier<'c>, Attribute<'c>)> = attrs.iter().map(|&(k, v)| (Identifier::new(self.ctx, k), v)).collect();
        let op = OperationBuilder::new(name, loc)
            .add_operands(operands)
            .add_results(types)
            .add_attributes(&attrs)
            .add_regions_vec(regions)
            .build()
            .map_err(|e| self.internal(format!("building {name}: {e}")))?;
        let op = self.block.append_operation(op);
        (0..types.len())
            .map(|i| op.result(i).map(Into::into).map_err(|e| self.internal(format!("{name} result {i}: {e}"))))
            .collect()
    }

    /// `v` converted from `from` to element type `to` (no op when equal).
    pub fn convert(&self, v: Value<'c, 'a>, from: &TensorType, to: DType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        if from.dtype == to {
            return Ok(v);
        }
        self.op("stablehlo.convert", loc, &[v], &TensorType::new(to, from.shape.clone()), &[])
    }

    /// `v` reshaped to `to` (no op when the shapes are equal).
    pub fn reshape(&self, v: Value<'c, 'a>, from: &TensorType, to: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        if from.shape == to.shape {
            return Ok(v);
        }
        self.op("stablehlo.reshape", loc, &[v], to, &[])
    }

    /// `v` (of type `ty`) transposed by `perm`: result dim `i` is `ty`'s dim `perm[i]`.
    pub fn transpose(&self, v: Value<'c, 'a>, ty: &TensorType, perm: &[usize], loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let attr: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        self.op("stablehlo.transpose", loc, &[v], &fxhlo_ir::layout::permuted(ty, perm), &[("permutation", attr::i64s(self.ctx, &attr))])
    }

    /// `stablehlo.iota` of type `ty` counting along `dim`.
    pub fn iota(&self, ty: &TensorType, dim: usize, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.op("stablehlo.iota", loc, &[], ty, &[("iota_dimension", attr::i64_attr(self.ctx, dim as i64))])
    }

    /// `stablehlo.broadcast_in_dim` of `v` to `out`: operand dim `i` becomes result dim `dims[i]`.
    pub fn broadcast_in_dim(&self, v: Value<'c, 'a>, dims: &[i64], out: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.op("stablehlo.broadcast_in_dim", loc, &[v], out, &[("broadcast_dimensions", attr::i64s(self.ctx, dims))])
    }

    /// `values` joined along `dim` into `out`.
    pub fn concatenate(&self, values: &[Value<'c, 'a>], dim: usize, out: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.op("stablehlo.concatenate", loc, values, out, &[("dimension", attr::i64_attr(self.ctx, dim as i64))])
    }

    /// `stablehlo.slice` of `v`: `start..limit` by `strides` in every dim, of type `out`.
    pub fn slice(&self, v: Value<'c, 'a>, start: &[i64], limit: &[i64], strides: &[i64], out: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let ctx = self.ctx;
        let attrs = [("start_indices", attr::i64s(ctx, start)), ("limit_indices", attr::i64s(ctx, limit)), ("strides", attr::i64s(ctx, strides))];
        self.op("stablehlo.slice", loc, &[v], out, &attrs)
    }

    /// `stablehlo.pad` of `v` with the scalar `fill`: `low` and `high` elements at each dim's
    /// ends and `interior` between its elements.
    #[allow(clippy::too_many_arguments)]
    pub fn pad(
        &self,
        v: Value<'c, 'a>,
        fill: Value<'c, 'a>,
        low: &[i64],
        high: &[i64],
        interior: &[i64],
        out: &TensorType,
        loc: Location<'c>,
    ) -> Result<Value<'c, 'a>> {
        let ctx = self.ctx;
        let attrs = [("edge_padding_low", attr::i64s(ctx, low)), ("edge_padding_high", attr::i64s(ctx, high)), ("interior_padding", attr::i64s(ctx, interior))];
        self.op("stablehlo.pad", loc, &[v, fill], out, &attrs)
    }

    /// `stablehlo.reverse` of `v` (of type `ty`) along `dims`.
    pub fn reverse(&self, v: Value<'c, 'a>, dims: &[i64], ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.op("stablehlo.reverse", loc, &[v], ty, &[("dimensions", attr::i64s(self.ctx, dims))])
    }

    /// A `stablehlo.constant` of type `ty` holding `value`.
    pub fn constant(&self, value: Attribute<'c>, ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.op("stablehlo.constant", loc, &[], ty, &[("value", value)])
    }

    /// An i64 constant of type `ty` holding `values`, row-major.
    pub fn constant_i64(&self, values: &[i64], ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.constant(attr::i64_elements(self.ctx, ty, values), ty, loc)
    }

    /// Elementwise comparison of two equally shaped values.
    ///
    /// The comparison type is always explicit: without it XLA's CPU compiler was seen treating
    /// an i64 `LT` against constants as unsigned (`-2 < 0` false).
    pub fn compare(&self, dir: ComparisonDirection, a: Value<'c, 'a>, b: Value<'c, 'a>, shape: &[i64], loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let ty = TensorType::new(DType::Bool, shape.to_vec());
        // The element type as a value (no printing): bool and unsigned integers compare
        // unsigned, other integers signed, everything else (floats, complex) as floats.
        let elem = RankedTensorType::try_from(a.r#type())
            .map_err(|e| self.internal(format!("compare of a non-tensor: {e}")))?
            .element();
        let kind = match IntegerType::try_from(elem) {
            Ok(int) if int.width() == 1 || int.is_unsigned() => ComparisonType::Unsigned,
            Ok(_) => ComparisonType::Signed,
            Err(_) => ComparisonType::Float,
        };
        self.op("stablehlo.compare", loc, &[a, b], &ty, &[("comparison_direction", dir.attr(self.ctx)), ("compare_type", kind.attr(self.ctx))])
    }

    /// `maximum` (`max`) or `minimum` of two values of type `t`, NaN from either operand
    /// propagating as in PyTorch: XLA's CPU `maximum` drops a NaN second operand (seen:
    /// `maximum([1, nan], [nan, 2])` gave `[1, nan]`), so NaN is selected explicitly.
    pub fn max_min(&self, max: bool, a: Value<'c, 'a>, b: Value<'c, 'a>, t: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let name = if max { "stablehlo.maximum" } else { "stablehlo.minimum" };
        let mut v = self.op(name, loc, &[a, b], t, &[])?;
        if t.dtype.is_float() {
            // `a` last, so that where both are NaN the first operand's NaN is the result.
            for x in [b, a] {
                let nan = self.compare(ComparisonDirection::Ne, x, x, &t.shape, loc)?;
                v = self.op("stablehlo.select", loc, &[nan, x, v], t, &[])?;
            }
        }
        Ok(v)
    }

    /// A constant tensor of type `ty` with every element `value`.
    pub fn splat(&self, value: Scalar, ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let value = attr::splat(self.ctx, value, ty).map_err(|m| self.internal(m))?;
        self.constant(value, ty, loc)
    }

    /// A constant tensor of type `ty` holding `bytes` (dense, row-major, little-endian; bool
    /// one byte per element): a frozen weight. The attribute is built from the bytes directly
    /// (one copy into the context, no text): weights are hundreds of megabytes.
    pub fn dense(&self, bytes: &[u8], ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let want = ty.size_bytes();
        if bytes.len() != want {
            return Err(self.internal(format!("a constant of type {ty} needs {want} bytes, got {}", bytes.len())));
        }
        if ty.dtype == DType::Bool {
            // MLIR packs i1 raw buffers eight to a byte; bytes as u8 compared with 0 need no
            // repacking and XLA folds the comparison.
            let as_u8 = TensorType::new(DType::U8, ty.shape.clone());
            let v = self.dense(bytes, &as_u8, loc)?;
            let zero = self.splat(Scalar::Int(0), &as_u8, loc)?;
            return self.compare(ComparisonDirection::Ne, v, zero, &ty.shape, loc);
        }
        let value = attr::raw_elements(self.tensor_type(ty), bytes)
            .ok_or_else(|| self.internal(format!("MLIR refused {} bytes as a dense {ty}", bytes.len())))?;
        self.constant(value, ty, loc)
    }

    /// Broadcasts `v` of type `from` to `to` with numpy rules (trailing dims aligned); returns
    /// `v` itself when the types already match.
    pub fn broadcast(&self, v: Value<'c, 'a>, from: &TensorType, to: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        if from.shape == to.shape {
            return Ok(v);
        }
        let lead = to.rank().checked_sub(from.rank()).ok_or_else(|| self.internal(format!("cannot broadcast {from} to {to}")))?;
        let dims: Vec<i64> = (0..from.rank()).map(|i| (lead + i) as i64).collect();
        self.broadcast_in_dim(v, &dims, &TensorType::new(from.dtype, to.shape.clone()), loc)
    }
}

/// The MLIR element type of a dtype (`i1` for bool, `ui8` for u8, signless otherwise).
pub fn element_type(ctx: &Context, d: DType) -> Type<'_> {
    match d {
        DType::F64 => Type::float64(ctx),
        DType::F32 => Type::float32(ctx),
        DType::F16 => Type::float16(ctx),
        DType::BF16 => Type::bfloat16(ctx),
        DType::I64 => IntegerType::new(ctx, 64).into(),
        DType::I32 => IntegerType::new(ctx, 32).into(),
        DType::I16 => IntegerType::new(ctx, 16).into(),
        DType::I8 => IntegerType::new(ctx, 8).into(),
        DType::U8 => IntegerType::unsigned(ctx, 8).into(),
        DType::Bool => IntegerType::new(ctx, 1).into(),
        DType::C64 => complex(Type::float32(ctx)),
        DType::C128 => complex(Type::float64(ctx)),
    }
}

/// `complex<part>`, which melior has no constructor for.
fn complex(part: Type<'_>) -> Type<'_> {
    // SAFETY: `mlirComplexTypeGet` takes any float type, which `part` is.
    unsafe { Type::from_raw(mlir_sys::mlirComplexTypeGet(part.to_raw())) }
}

/// The MLIR `tensor<...>` type of an IR tensor type.
pub fn tensor_type<'c>(ctx: &'c Context, t: &TensorType) -> Type<'c> {
    let dims: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    RankedTensorType::new(&dims, element_type(ctx, t.dtype), None).into()
}

/// The MLIR text of a tensor type (`tensor<2x3xf32>`), for reading modules (tests look for
/// a declared type in the printed module); codegen builds types as values.
pub fn mlir_type_text(t: &TensorType) -> String {
    let elem = match t.dtype {
        DType::Bool => "i1",
        DType::U8 => "ui8",
        DType::C64 => "complex<f32>",
        DType::C128 => "complex<f64>",
        d => d.name(),
    };
    let mut s = String::from("tensor<");
    for d in &t.shape {
        s.push_str(&format!("{d}x"));
    }
    s.push_str(elem);
    s.push('>');
    s
}

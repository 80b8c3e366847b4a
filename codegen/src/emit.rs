//! The emitter: builds StableHLO operations in generic form into one block with melior.
//!
//! StableHLO is not an upstream MLIR dialect, so ops are built by name with
//! `OperationBuilder` and their attributes parsed from text (the context allows unregistered
//! dialects). The PJRT plugin verifies the module fully when it compiles it.

use std::collections::HashMap;

use fxhlo_ir::{DType, Scalar, TensorType, ValueRef};
use melior::ir::attribute::Attribute;
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{IntegerType, RankedTensorType, ShapedTypeLike};
use melior::ir::{Block, Identifier, Location, Type, TypeLike, Value, ValueLike};
use melior::Context;

use crate::{Error, Result};

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

    /// Parses an attribute from MLIR text (e.g. `array<i64: 1, 0>`).
    pub fn attr(&self, text: &str) -> Result<Attribute<'c>> {
        Attribute::parse(self.ctx, text).ok_or_else(|| self.internal(format!("cannot parse attribute `{text}`")))
    }

    /// Appends `name(operands) {attrs} -> results` and returns its first result.
    pub fn op(
        &self,
        name: &str,
        loc: Location<'c>,
        operands: &[Value<'c, 'a>],
        result: &TensorType,
        attrs: &[(&str, String)],
    ) -> Result<Value<'c, 'a>> {
        self.op_typed(name, loc, operands, &[self.tensor_type(result)], attrs, Vec::new()).map(|v| v[0])
    }

    /// Appends an op with several results (or none) and returns them all.
    pub fn op_n(
        &self,
        name: &str,
        loc: Location<'c>,
        operands: &[Value<'c, 'a>],
        results: &[TensorType],
        attrs: &[(&str, String)],
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
        attrs: &[(&str, String)],
        regions: Vec<melior::ir::Region<'c>>,
    ) -> Result<Vec<Value<'c, 'a>>> {
        let mut parsed = Vec::with_capacity(attrs.len());
        for (k, v) in attrs {
            parsed.push((Identifier::new(self.ctx, k), self.attr(v)?));
        }
        self.op_attrs(name, loc, operands, types, parsed, regions)
    }

    /// Appends an op whose attributes are already built (typed, not parsed from text) and
    /// returns its results.
    pub fn op_attrs(
        &self,
        name: &str,
        loc: Location<'c>,
        operands: &[Value<'c, 'a>],
        types: &[Type<'c>],
        attrs: Vec<(Identifier<'c>, Attribute<'c>)>,
        regions: Vec<melior::ir::Region<'c>>,
    ) -> Result<Vec<Value<'c, 'a>>> {
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
        self.op("stablehlo.transpose", loc, &[v], &fxhlo_ir::layout::permuted(ty, perm), &[("permutation", i64s(&attr))])
    }

    /// Elementwise comparison (`EQ`, `NE`, `LT`, `LE`, `GT`, `GE`) of two equally shaped values.
    ///
    /// The comparison type is always explicit: without it XLA's CPU compiler was seen treating
    /// an i64 `LT` against constants as unsigned (`-2 < 0` false).
    pub fn compare(&self, dir: &str, a: Value<'c, 'a>, b: Value<'c, 'a>, shape: &[i64], loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let ty = TensorType::new(DType::Bool, shape.to_vec());
        // The element type as a value (no printing): bool and unsigned integers compare
        // unsigned, other integers signed, everything else (floats, complex) as floats.
        let elem = RankedTensorType::try_from(a.r#type())
            .map_err(|e| self.internal(format!("compare of a non-tensor: {e}")))?
            .element();
        let kind = match IntegerType::try_from(elem) {
            Ok(int) if int.width() == 1 || int.is_unsigned() => "UNSIGNED",
            Ok(_) => "SIGNED",
            Err(_) => "FLOAT",
        };
        self.op(
            "stablehlo.compare",
            loc,
            &[a, b],
            &ty,
            &[
                ("comparison_direction", format!("#stablehlo<comparison_direction {dir}>")),
                ("compare_type", format!("#stablehlo<comparison_type {kind}>")),
            ],
        )
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
                let nan = self.compare("NE", x, x, &t.shape, loc)?;
                v = self.op("stablehlo.select", loc, &[nan, x, v], t, &[])?;
            }
        }
        Ok(v)
    }

    /// A constant tensor of type `ty` with every element `value`.
    pub fn splat(&self, value: Scalar, ty: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let literal = literal(value, ty.dtype);
        let text = format!("dense<{literal}> : {}", mlir_type_text(ty));
        self.op("stablehlo.constant", loc, &[], ty, &[("value", text)])
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
            return self.compare("NE", v, zero, &ty.shape, loc);
        }
        let r#type = self.tensor_type(ty);
        // SAFETY: `mlirDenseElementsAttrRawBufferGet` copies the bytes; it returns a null
        // attribute for a buffer that does not fit the type, checked before use.
        let attr = unsafe {
            Attribute::from_option_raw(mlir_sys::mlirDenseElementsAttrRawBufferGet(
                r#type.to_raw(),
                bytes.len(),
                bytes.as_ptr().cast(),
            ))
        }
        .ok_or_else(|| self.internal(format!("MLIR refused {} bytes as a dense {ty}", bytes.len())))?;
        self.op_attrs("stablehlo.constant", loc, &[], &[r#type], vec![(Identifier::new(self.ctx, "value"), attr)], Vec::new())
            .map(|v| v[0])
    }

    /// Broadcasts `v` of type `from` to `to` with numpy rules (trailing dims aligned); returns
    /// `v` itself when the types already match.
    pub fn broadcast(&self, v: Value<'c, 'a>, from: &TensorType, to: &TensorType, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        if from.shape == to.shape {
            return Ok(v);
        }
        let lead = to.rank().checked_sub(from.rank()).ok_or_else(|| self.internal(format!("cannot broadcast {from} to {to}")))?;
        let dims: Vec<String> = (0..from.rank()).map(|i| (lead + i).to_string()).collect();
        let target = TensorType::new(from.dtype, to.shape.clone());
        self.op("stablehlo.broadcast_in_dim", loc, &[v], &target, &[("broadcast_dimensions", i64_array(&dims))])
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
        // melior has no constructor for `complex<...>`; the spelling is fixed, so it parses.
        DType::C64 => Type::parse(ctx, "complex<f32>").unwrap_or_else(|| Type::float32(ctx)),
        DType::C128 => Type::parse(ctx, "complex<f64>").unwrap_or_else(|| Type::float64(ctx)),
    }
}

/// The MLIR `tensor<...>` type of an IR tensor type.
pub fn tensor_type<'c>(ctx: &'c Context, t: &TensorType) -> Type<'c> {
    let dims: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    RankedTensorType::new(&dims, element_type(ctx, t.dtype), None).into()
}

/// `array<i64: ...>` from integers.
pub fn i64s(items: &[i64]) -> String {
    let items: Vec<String> = items.iter().map(|d| d.to_string()).collect();
    i64_array(&items)
}

/// `dense<[[lo, hi], ...]> : tensor<Nx2xi64>` padding attribute.
pub fn padding_attr(pads: &[(i64, i64)]) -> String {
    let rows: Vec<String> = pads.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
    if pads.is_empty() {
        return "dense<> : tensor<0x2xi64>".into();
    }
    format!("dense<[{}]> : tensor<{}x2xi64>", rows.join(", "), pads.len())
}

/// `array<i64: ...>` from already formatted items.
pub fn i64_array(items: &[String]) -> String {
    if items.is_empty() {
        "array<i64>".to_string()
    } else {
        format!("array<i64: {}>", items.join(", "))
    }
}

/// The MLIR text of a tensor type (`tensor<2x3xf32>`).
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

/// An MLIR literal of `value` converted to `dtype`, as PyTorch converts a scalar argument.
/// Non-finite floats are written as hex bit patterns, the only form MLIR accepts for them.
fn literal(value: Scalar, dtype: DType) -> String {
    let v = value.as_f64();
    if dtype.is_complex() {
        // A real scalar as a complex literal: `(re, im)`, each part in the parts' type.
        let part = dtype.real_part();
        return format!("({}, {})", literal(value, part), literal(Scalar::Int(0), part));
    }
    match dtype {
        DType::Bool => (v != 0.0).to_string(),
        d if !d.is_float() => match value {
            Scalar::Int(i) => i.to_string(),
            _ => (v.trunc() as i64).to_string(),
        },
        // `{:.17e}` always has a decimal point (MLIR requires one) and round-trips f64.
        _ if v.is_finite() => format!("{v:.17e}"),
        DType::F64 => format!("0x{:016X}", v.to_bits()),
        DType::F32 => format!("0x{:08X}", (v as f32).to_bits()),
        DType::F16 => format!("0x{:04X}", half::f16::from_f64(v).to_bits()),
        _ => format!("0x{:04X}", half::bf16::from_f64(v).to_bits()),
    }
}

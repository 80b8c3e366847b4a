//! Typed MLIR attributes: builtin ones through melior's constructors, StableHLO's (and Shardy's)
//! as small Rust values turned into attributes directly, never parsed from text.
//!
//! StableHLO and Shardy are not linked into fxhlo (the context allows unregistered dialects),
//! so their attributes are MLIR *opaque* attributes: a dialect namespace and the attribute's
//! body, made with `mlirOpaqueAttrGet`. That is exactly what the parser made of the same text
//! (`#stablehlo<precision HIGHEST>` is namespace `stablehlo`, body `precision HIGHEST`), so the
//! module prints the same and the PJRT plugin, which registers the dialects, reads them as
//! before. The body of an opaque attribute is text by definition; each type below writes its
//! own in StableHLO's printed form.

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::attribute::{
    ArrayAttribute, BoolAttribute, DenseElementsAttribute, DenseI64ArrayAttribute, FloatAttribute, IntegerAttribute,
};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, Type, TypeLike};
use melior::{Context, StringRef};

use crate::emit::{element_type, tensor_type};

/// `value : i64`.
pub fn i64_attr(ctx: &Context, value: i64) -> Attribute<'_> {
    IntegerAttribute::new(IntegerType::new(ctx, 64).into(), value).into()
}

/// `value : i32`.
pub fn i32_attr(ctx: &Context, value: i32) -> Attribute<'_> {
    IntegerAttribute::new(IntegerType::new(ctx, 32).into(), value.into()).into()
}

/// `true` / `false`.
pub fn bool_attr(ctx: &Context, value: bool) -> Attribute<'_> {
    BoolAttribute::new(ctx, value).into()
}

/// `array<i64: ...>` (dimension lists, window sizes, strides).
pub fn i64s<'c>(ctx: &'c Context, items: &[i64]) -> Attribute<'c> {
    DenseI64ArrayAttribute::new(ctx, items).into()
}

/// `dense<[...]> : tensor<...xi64>` of type `ty` (an i64 tensor type) holding `values`, row-major.
pub fn i64_elements<'c>(ctx: &'c Context, ty: &TensorType, values: &[i64]) -> Attribute<'c> {
    DenseElementsAttribute::i64_values(tensor_type(ctx, ty), values).into()
}

/// `dense<[[lo, hi], ...]> : tensor<Nx2xi64>`: the (low, high) padding of each dim.
pub fn padding<'c>(ctx: &'c Context, pads: &[(i64, i64)]) -> Attribute<'c> {
    let flat: Vec<i64> = pads.iter().flat_map(|&(lo, hi)| [lo, hi]).collect();
    i64_elements(ctx, &TensorType::new(DType::I64, vec![pads.len() as i64, 2]), &flat)
}

/// `dense<[...]>` of float type `ty` holding `values`, each rounded to the element type as MLIR
/// rounds a float literal (to nearest, ties to even), or why it cannot be built.
pub fn float_elements<'c>(ctx: &'c Context, ty: &TensorType, values: &[f64]) -> Result<Attribute<'c>, String> {
    if !ty.dtype.is_float() {
        return Err(format!("a float constant of type {ty}"));
    }
    let elem = element_type(ctx, ty.dtype);
    let items: Vec<Attribute<'c>> = values.iter().map(|&v| FloatAttribute::new(ctx, elem, v).into()).collect();
    DenseElementsAttribute::new(tensor_type(ctx, ty), &items).map(Into::into).map_err(|e| format!("{ty}: {e}"))
}

/// A dense elements attribute of type `ty` with every element `value`, converted to `ty`'s dtype
/// as PyTorch converts a scalar argument (floats truncate toward zero into integers, non-zero
/// is true), or why it cannot be: an integer that does not fit the dtype.
pub fn splat<'c>(ctx: &'c Context, value: Scalar, ty: &TensorType) -> Result<Attribute<'c>, String> {
    let shaped = tensor_type(ctx, ty);
    let v = value.as_f64();
    let bytes = match ty.dtype {
        // MLIR reads a one-byte i1 buffer of 0x00 or 0xFF as a splat.
        DType::Bool => vec![if v != 0.0 { 0xFF } else { 0 }],
        // A real scalar as a complex one: (value, 0) in the parts' type.
        DType::C64 => [(v as f32).to_le_bytes(), 0f32.to_le_bytes()].concat(),
        DType::C128 => [v.to_le_bytes(), 0f64.to_le_bytes()].concat(),
        // MLIR's own rounding of a double to the float type, as its parser applies to a literal.
        DType::F64 | DType::F32 | DType::F16 | DType::BF16 => {
            let element = FloatAttribute::new(ctx, element_type(ctx, ty.dtype), v).into();
            return Ok(DenseElementsAttribute::splat(shaped, element).into());
        }
        DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
            let i = match value {
                Scalar::Int(i) => i,
                Scalar::Float(_) | Scalar::Bool(_) => v.trunc() as i64,
            };
            let bits = 8 * ty.dtype.size_bytes() as u32;
            // The values MLIR accepts as an integer literal of this width: a signless integer
            // reads `-2^(w-1) ..= 2^w - 1`, an unsigned one `0 ..= 2^w - 1`.
            let (lo, hi) = if ty.dtype == DType::U8 { (0, (1i128 << bits) - 1) } else { (-(1i128 << (bits - 1)), (1i128 << bits) - 1) };
            if !(lo..=hi).contains(&(i as i128)) {
                return Err(format!("{i} does not fit {}", ty.dtype));
            }
            i.to_le_bytes()[..ty.dtype.size_bytes()].to_vec()
        }
    };
    raw_elements(shaped, &bytes).ok_or_else(|| format!("MLIR refused a splat of {ty}"))
}

/// A dense elements attribute of `shaped` type from its raw little-endian bytes (one element:
/// a splat), copied into the context; `None` where the bytes do not fit the type.
pub fn raw_elements<'c>(shaped: Type<'c>, bytes: &[u8]) -> Option<Attribute<'c>> {
    // SAFETY: `mlirDenseElementsAttrRawBufferGet` copies the bytes; it returns a null attribute
    // for a buffer that does not fit the type, which `from_option_raw` turns into `None`.
    unsafe {
        Attribute::from_option_raw(mlir_sys::mlirDenseElementsAttrRawBufferGet(
            shaped.to_raw(),
            bytes.len(),
            bytes.as_ptr().cast(),
        ))
    }
}

/// The opaque attribute `#<dialect><body>` of an unregistered dialect: what the parser makes of
/// `#dialect<body>` or `#dialect.body`.
pub fn opaque<'c>(ctx: &'c Context, dialect: &str, body: &str) -> Attribute<'c> {
    // SAFETY: every argument is a valid handle or a string MLIR copies into the context.
    unsafe {
        Attribute::from_raw(mlir_sys::mlirOpaqueAttrGet(
            ctx.to_raw(),
            StringRef::new(dialect).to_raw(),
            body.len() as isize,
            body.as_ptr().cast(),
            Type::none(ctx).to_raw(),
        ))
    }
}

fn stablehlo<'c>(ctx: &'c Context, body: &str) -> Attribute<'c> {
    opaque(ctx, "stablehlo", body)
}

/// `[1, 2]`: a dimension list as StableHLO prints it inside its attributes.
fn list(dims: &[i64]) -> String {
    let items: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `stablehlo.convolution`'s dimension numbers: where the batch, feature and spatial dims sit
/// in the input, the kernel and the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvDimensions {
    pub input_batch: i64,
    pub input_feature: i64,
    pub input_spatial: Vec<i64>,
    pub kernel_input_feature: i64,
    pub kernel_output_feature: i64,
    pub kernel_spatial: Vec<i64>,
    pub output_batch: i64,
    pub output_feature: i64,
    pub output_spatial: Vec<i64>,
}

impl ConvDimensions {
    /// `#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>`: each tensor's dims in
    /// order, named by role (spatial dims by their index), StableHLO's compact form.
    pub fn attr<'c>(&self, ctx: &'c Context) -> Attribute<'c> {
        let input = roles(&[(self.input_batch, "b"), (self.input_feature, "f")], &self.input_spatial);
        let kernel = roles(&[(self.kernel_output_feature, "o"), (self.kernel_input_feature, "i")], &self.kernel_spatial);
        let output = roles(&[(self.output_batch, "b"), (self.output_feature, "f")], &self.output_spatial);
        stablehlo(ctx, &format!("conv<{input}x{kernel}->{output}>"))
    }
}

/// `[b, f, 0, 1]`: the role of each dim of a tensor with the `named` dims and `spatial` ones
/// (a dim named nowhere shows as `?`, which the plugin rejects).
fn roles(named: &[(i64, &str)], spatial: &[i64]) -> String {
    let mut names = vec!["?".to_string(); named.len() + spatial.len()];
    let spatial_names: Vec<(i64, String)> = spatial.iter().enumerate().map(|(i, &d)| (d, i.to_string())).collect();
    for (d, name) in named.iter().map(|&(d, n)| (d, n.to_string())).chain(spatial_names) {
        if let Some(slot) = usize::try_from(d).ok().and_then(|d| names.get_mut(d)) {
            *slot = name;
        }
    }
    format!("[{}]", names.join(", "))
}

/// `stablehlo.dot_general`'s dimension numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotDimensions {
    pub lhs_batching: Vec<i64>,
    pub rhs_batching: Vec<i64>,
    pub lhs_contracting: Vec<i64>,
    pub rhs_contracting: Vec<i64>,
}

impl DotDimensions {
    /// `#stablehlo.dot<lhs_batching_dimensions = [0], ...>`, empty lists left out as StableHLO
    /// prints them.
    pub fn attr<'c>(&self, ctx: &'c Context) -> Attribute<'c> {
        let fields = [
            ("lhs_batching_dimensions", &self.lhs_batching),
            ("rhs_batching_dimensions", &self.rhs_batching),
            ("lhs_contracting_dimensions", &self.lhs_contracting),
            ("rhs_contracting_dimensions", &self.rhs_contracting),
        ];
        let set: Vec<String> = fields.iter().filter(|(_, d)| !d.is_empty()).map(|(name, d)| format!("{name} = {}", list(d))).collect();
        stablehlo(ctx, &format!("dot<{}>", set.join(", ")))
    }
}

/// `stablehlo.gather`'s dimension numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherDimensions {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub index_vector_dim: i64,
}

impl GatherDimensions {
    /// `#stablehlo.gather<offset_dims = [..], collapsed_slice_dims = [..], start_index_map = [..],
    /// index_vector_dim = n>`, every field written.
    pub fn attr<'c>(&self, ctx: &'c Context) -> Attribute<'c> {
        let lists = [("offset_dims", &self.offset_dims), ("collapsed_slice_dims", &self.collapsed_slice_dims), ("start_index_map", &self.start_index_map)];
        stablehlo(ctx, &index_numbers("gather", lists, self.index_vector_dim))
    }
}

/// `stablehlo.scatter`'s dimension numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterDimensions {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
    pub index_vector_dim: i64,
}

impl ScatterDimensions {
    /// `#stablehlo.scatter<update_window_dims = [..], inserted_window_dims = [..],
    /// scatter_dims_to_operand_dims = [..], index_vector_dim = n>`, every field written.
    pub fn attr<'c>(&self, ctx: &'c Context) -> Attribute<'c> {
        let lists = [
            ("update_window_dims", &self.update_window_dims),
            ("inserted_window_dims", &self.inserted_window_dims),
            ("scatter_dims_to_operand_dims", &self.scatter_dims_to_operand_dims),
        ];
        stablehlo(ctx, &index_numbers("scatter", lists, self.index_vector_dim))
    }
}

/// `kind<a = [..], b = [..], c = [..], index_vector_dim = n>`: gather's and scatter's
/// dimension numbers, every list written even when empty.
fn index_numbers(kind: &str, lists: [(&str, &Vec<i64>); 3], index_vector_dim: i64) -> String {
    let fields: Vec<String> = lists.iter().map(|(name, dims)| format!("{name} = {}", list(dims))).collect();
    format!("{kind}<{}, index_vector_dim = {index_vector_dim}>", fields.join(", "))
}

/// StableHLO enum attributes: `#stablehlo<kind CASE>`, one Rust enum each.
macro_rules! stablehlo_enums {
    ($($(#[$doc:meta])* $name:ident = $kind:literal { $($variant:ident = $case:literal),+ $(,)? })+) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            /// The case as StableHLO spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $case),+
                }
            }

            #[doc = concat!("`#stablehlo<", $kind, " ...>`.")]
            pub fn attr(self, ctx: &Context) -> Attribute<'_> {
                stablehlo(ctx, &format!("{} {}", $kind, self.name()))
            }
        }
    )+};
}

stablehlo_enums! {
    /// `stablehlo.compare`'s direction.
    ComparisonDirection = "comparison_direction" { Eq = "EQ", Ne = "NE", Lt = "LT", Le = "LE", Gt = "GT", Ge = "GE" }
    /// How `stablehlo.compare` orders its operands.
    ComparisonType = "comparison_type" { NoType = "NOTYPE", Float = "FLOAT", TotalOrder = "TOTALORDER", Signed = "SIGNED", Unsigned = "UNSIGNED" }
    /// An operand's precision in `dot_general` and `convolution`.
    Precision = "precision" { Default = "DEFAULT", High = "HIGH", Highest = "HIGHEST" }
    /// `stablehlo.rng_bit_generator`'s algorithm.
    RngAlgorithm = "rng_algorithm" { Default = "DEFAULT", ThreeFry = "THREE_FRY", Philox = "PHILOX" }
    /// `stablehlo.fft`'s kind.
    FftType = "fft_type" { Fft = "FFT", Ifft = "IFFT", Rfft = "RFFT", Irfft = "IRFFT" }
    /// `stablehlo.triangular_solve`'s operation on `a`.
    Transpose = "transpose" { NoTranspose = "NO_TRANSPOSE", Transpose = "TRANSPOSE", Adjoint = "ADJOINT" }
}

/// `[#stablehlo<precision P>, ...]`: the `precision_config` of a product, one per operand.
pub fn precision_config<'c>(ctx: &'c Context, precisions: &[Precision]) -> Attribute<'c> {
    let items: Vec<Attribute<'c>> = precisions.iter().map(|p| p.attr(ctx)).collect();
    ArrayAttribute::new(ctx, &items).into()
}

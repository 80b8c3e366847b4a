//! Codegen's typed attributes (`fxhlo_codegen::attr`) are the very attributes MLIR's parser
//! makes of the text codegen used to write, so building them as values changes no module: each
//! is compared (uniqued attribute and printed form) with the parse of its text.

use fxhlo::codegen::attr::{self, ComparisonDirection, ComparisonType, ConvDimensions, DotDimensions, FftType};
use fxhlo::codegen::attr::{GatherDimensions, Precision, RngAlgorithm, ScatterDimensions, Transpose};
use fxhlo::codegen::InputShardings;
use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::Attribute;
use melior::Context;

/// A context like codegen's: StableHLO and Shardy unregistered, so their attributes are opaque.
fn context() -> Context {
    let ctx = Context::new();
    ctx.set_allow_unregistered_dialects(true);
    ctx
}

/// `typed` is the attribute MLIR parses from `text`, and prints the same.
fn same(ctx: &Context, typed: Attribute, text: &str) {
    let parsed = Attribute::parse(ctx, text).unwrap_or_else(|| panic!("`{text}` does not parse"));
    assert_eq!(typed.to_string(), parsed.to_string(), "{text}");
    assert_eq!(typed, parsed, "{text}");
}

#[test]
fn builtin_attributes_equal_their_parsed_text() {
    let ctx = context();
    same(&ctx, attr::i64_attr(&ctx, 3), "3 : i64");
    same(&ctx, attr::i64_attr(&ctx, -1), "-1 : i64");
    same(&ctx, attr::i32_attr(&ctx, 8), "8 : i32");
    same(&ctx, attr::bool_attr(&ctx, true), "true");
    same(&ctx, attr::bool_attr(&ctx, false), "false");
    same(&ctx, attr::i64s(&ctx, &[]), "array<i64>");
    same(&ctx, attr::i64s(&ctx, &[1, 0, -2]), "array<i64: 1, 0, -2>");
    same(&ctx, attr::padding(&ctx, &[]), "dense<> : tensor<0x2xi64>");
    same(&ctx, attr::padding(&ctx, &[(0, 0), (1, 2)]), "dense<[[0, 0], [1, 2]]> : tensor<2x2xi64>");
    same(&ctx, attr::padding(&ctx, &[(1, 1)]), "dense<[[1, 1]]> : tensor<1x2xi64>");
    let i64t = |shape: Vec<i64>| TensorType::new(DType::I64, shape);
    same(&ctx, attr::i64_elements(&ctx, &i64t(vec![3]), &[0, 2, 4]), "dense<[0, 2, 4]> : tensor<3xi64>");
    same(&ctx, attr::i64_elements(&ctx, &i64t(vec![2]), &[5, 5]), "dense<[5, 5]> : tensor<2xi64>");
    same(&ctx, attr::i64_elements(&ctx, &i64t(vec![0]), &[]), "dense<> : tensor<0xi64>");
    same(&ctx, attr::i64_elements(&ctx, &i64t(vec![2, 2]), &[0, 1, 1, 2]), "dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>");
    let f = |d| TensorType::new(d, vec![2, 2]);
    let values = [0.1, 1.0 / 3.0, 0.5, 0.75];
    let text = |ty: &str| {
        let v: Vec<String> = values.iter().map(|v| format!("{v:.17e}")).collect();
        format!("dense<[[{}, {}], [{}, {}]]> : tensor<2x2x{ty}>", v[0], v[1], v[2], v[3])
    };
    same(&ctx, attr::float_elements(&ctx, &f(DType::F32), &values).unwrap(), &text("f32"));
    same(&ctx, attr::float_elements(&ctx, &f(DType::F64), &values).unwrap(), &text("f64"));
    same(&ctx, attr::float_elements(&ctx, &f(DType::F32), &[0.25; 4]).unwrap(), "dense<2.5e-01> : tensor<2x2xf32>");
    assert!(attr::float_elements(&ctx, &f(DType::I64), &values).is_err());
}

/// The splat text codegen wrote before (the reference): `dense<literal> : tensor<...>`, the
/// literal converted to the dtype as PyTorch converts a scalar, non-finite floats in hex.
fn splat_text(value: Scalar, ty: &TensorType) -> String {
    fn literal(value: Scalar, dtype: DType) -> String {
        let v = value.as_f64();
        if dtype.is_complex() {
            let part = dtype.real_part();
            return format!("({}, {})", literal(value, part), literal(Scalar::Int(0), part));
        }
        match dtype {
            DType::Bool => (v != 0.0).to_string(),
            d if !d.is_float() => match value {
                Scalar::Int(i) => i.to_string(),
                _ => (v.trunc() as i64).to_string(),
            },
            _ if v.is_finite() => format!("{v:.17e}"),
            DType::F64 => format!("0x{:016X}", v.to_bits()),
            DType::F32 => format!("0x{:08X}", (v as f32).to_bits()),
            DType::F16 => format!("0x{:04X}", half::f16::from_f64(v).to_bits()),
            _ => format!("0x{:04X}", half::bf16::from_f64(v).to_bits()),
        }
    }
    format!("dense<{}> : {}", literal(value, ty.dtype), fxhlo::codegen::mlir_type_text(ty))
}

#[test]
fn splats_equal_the_text_codegen_wrote_before() {
    let ctx = context();
    let floats = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        1.0 / 3.0,
        65504.0,
        1e-8,
        // Halfway between two f16 (1 + 2^-11) and two bf16 (1 + 2^-8) values, and just above.
        1.0 + 2f64.powi(-11),
        1.0 + 2f64.powi(-11) + 2f64.powi(-40),
        1.0 + 2f64.powi(-8),
        1.0 + 2f64.powi(-8) + 2f64.powi(-40),
        1e300,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let shapes: [&[i64]; 3] = [&[], &[2, 3], &[0, 3]];
    let mut checked = 0;
    for shape in shapes {
        for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16, DType::C64, DType::C128] {
            let ty = TensorType::new(dtype, shape.to_vec());
            for &v in &floats {
                same(&ctx, attr::splat(&ctx, Scalar::float(v), &ty).unwrap(), &splat_text(Scalar::float(v), &ty));
                checked += 1;
            }
        }
        for dtype in [DType::I64, DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool] {
            let ty = TensorType::new(dtype, shape.to_vec());
            let bits = 8 * dtype.size_bytes() as u32;
            let mut values = vec![Scalar::Int(0), Scalar::Int(1), Scalar::Bool(true), Scalar::Bool(false), Scalar::float(2.7), Scalar::float(f64::NAN)];
            if dtype == DType::I64 {
                values.extend([Scalar::Int(i64::MIN), Scalar::Int(i64::MAX), Scalar::Int(-7)]);
            } else if dtype == DType::U8 {
                values.push(Scalar::Int(255));
            } else if dtype != DType::Bool {
                // Signless integers read -2^(w-1) ..= 2^w - 1.
                values.extend([Scalar::Int(-(1 << (bits - 1))), Scalar::Int((1 << bits) - 1), Scalar::float(-2.7)]);
            }
            for value in values {
                same(&ctx, attr::splat(&ctx, value, &ty).unwrap(), &splat_text(value, &ty));
                checked += 1;
            }
        }
        // What the parser refused is refused.
        for (dtype, bad) in [(DType::I8, -129), (DType::I8, 256), (DType::U8, -1), (DType::I32, 1 << 32)] {
            let ty = TensorType::new(dtype, shape.to_vec());
            assert!(Attribute::parse(&ctx, &splat_text(Scalar::Int(bad), &ty)).is_none());
            assert!(attr::splat(&ctx, Scalar::Int(bad), &ty).is_err(), "{bad} as {dtype}");
        }
    }
    assert!(checked > 300);
}

#[test]
fn stablehlo_attributes_equal_their_parsed_text() {
    let ctx = context();
    let conv = |n: usize, transposed: bool| {
        let spatial: Vec<i64> = (2..2 + n as i64).collect();
        let i = if transposed { 0 } else { 1 };
        ConvDimensions {
            input_batch: 0,
            input_feature: 1,
            input_spatial: spatial.clone(),
            kernel_input_feature: i,
            kernel_output_feature: 1 - i,
            kernel_spatial: spatial.clone(),
            output_batch: 0,
            output_feature: 1,
            output_spatial: spatial,
        }
    };
    same(&ctx, conv(2, false).attr(&ctx), "#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>");
    same(&ctx, conv(1, true).attr(&ctx), "#stablehlo.conv<[b, f, 0]x[i, o, 0]->[b, f, 0]>");
    same(&ctx, conv(3, false).attr(&ctx), "#stablehlo.conv<[b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2]>");
    let nhwc = ConvDimensions {
        input_batch: 0,
        input_feature: 3,
        input_spatial: vec![1, 2],
        kernel_input_feature: 2,
        kernel_output_feature: 3,
        kernel_spatial: vec![0, 1],
        output_batch: 0,
        output_feature: 3,
        output_spatial: vec![1, 2],
    };
    same(&ctx, nhwc.attr(&ctx), "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>");

    let mm = DotDimensions { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDimensions::default() };
    same(&ctx, mm.attr(&ctx), "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>");
    let bmm = DotDimensions { lhs_batching: vec![0], rhs_batching: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1] };
    same(
        &ctx,
        bmm.attr(&ctx),
        "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>",
    );

    let gather = GatherDimensions { offset_dims: vec![], collapsed_slice_dims: vec![0, 1], start_index_map: vec![0, 1], index_vector_dim: 2 };
    same(&ctx, gather.attr(&ctx), "#stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>");
    let scatter = ScatterDimensions { update_window_dims: vec![1], inserted_window_dims: vec![0], scatter_dims_to_operand_dims: vec![0], index_vector_dim: 1 };
    same(
        &ctx,
        scatter.attr(&ctx),
        "#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>",
    );

    use ComparisonDirection as D;
    for (d, name) in [(D::Eq, "EQ"), (D::Ne, "NE"), (D::Lt, "LT"), (D::Le, "LE"), (D::Gt, "GT"), (D::Ge, "GE")] {
        same(&ctx, d.attr(&ctx), &format!("#stablehlo<comparison_direction {name}>"));
    }
    use ComparisonType as T;
    for (t, name) in [(T::NoType, "NOTYPE"), (T::Float, "FLOAT"), (T::TotalOrder, "TOTALORDER"), (T::Signed, "SIGNED"), (T::Unsigned, "UNSIGNED")] {
        same(&ctx, t.attr(&ctx), &format!("#stablehlo<comparison_type {name}>"));
    }
    same(&ctx, Precision::Default.attr(&ctx), "#stablehlo<precision DEFAULT>");
    same(&ctx, attr::precision_config(&ctx, &[Precision::Highest; 2]), "[#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]");
    same(&ctx, RngAlgorithm::ThreeFry.attr(&ctx), "#stablehlo<rng_algorithm THREE_FRY>");
    for (f, name) in [(FftType::Fft, "FFT"), (FftType::Ifft, "IFFT"), (FftType::Rfft, "RFFT"), (FftType::Irfft, "IRFFT")] {
        same(&ctx, f.attr(&ctx), &format!("#stablehlo<fft_type {name}>"));
    }
    same(&ctx, Transpose::NoTranspose.attr(&ctx), "#stablehlo<transpose NO_TRANSPOSE>");
}

#[test]
fn shardy_attributes_equal_their_parsed_text() {
    let ctx = context();
    let s = InputShardings { devices: 4, split: Default::default() };
    same(&ctx, s.mesh_attr(&ctx), r#"#sdy.mesh<["tp"=4]>"#);
    same(&ctx, s.sharding_attr(&ctx, Some(1), 3), r#"#sdy.sharding<@mesh, [{}, {"tp"}, {}]>"#);
    same(&ctx, s.sharding_attr(&ctx, Some(0), 1), r#"#sdy.sharding<@mesh, [{"tp"}]>"#);
    same(&ctx, s.sharding_attr(&ctx, None, 2), "#sdy.sharding<@mesh, [{}, {}]>");
    same(&ctx, s.sharding_attr(&ctx, None, 0), "#sdy.sharding<@mesh, []>");
}

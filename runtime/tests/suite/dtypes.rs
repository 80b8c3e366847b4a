//! Every element type: host -> device -> host round trips, and through tiny executables.

use fxhlo_runtime::{ElementType, HostTensor};
use half::{bf16, f16};

use super::{binary_module, cpu_client, run_mlir};

/// A complex tensor (`c64` or `c128`) of (real, imaginary) pairs, as its little-endian bytes.
fn complex(t: ElementType, dims: &[i64], parts: &[(f64, f64)]) -> HostTensor {
    let bytes: Vec<u8> = parts
        .iter()
        .flat_map(|&(re, im)| match t {
            ElementType::C64 => [(re as f32).to_le_bytes(), (im as f32).to_le_bytes()].concat(),
            _ => [re.to_le_bytes(), im.to_le_bytes()].concat(),
        })
        .collect();
    HostTensor::new(t, dims.to_vec(), bytes).expect("complex tensor")
}

/// A 2x3 tensor of awkward values for each element type (extremes, negative zero, NaN).
fn sample(t: ElementType) -> HostTensor {
    let dims = [2i64, 3];
    let r = match t {
        ElementType::Bool => HostTensor::from_bool(dims, &[true, false, false, true, true, false]),
        ElementType::I8 => HostTensor::from_i8(dims, &[i8::MIN, -1, 0, 1, 42, i8::MAX]),
        ElementType::I16 => HostTensor::from_i16(dims, &[i16::MIN, -300, 0, 1, 12345, i16::MAX]),
        ElementType::I32 => {
            HostTensor::from_i32(dims, &[i32::MIN, -70000, 0, 1, 1 << 30, i32::MAX])
        }
        ElementType::I64 => {
            HostTensor::from_i64(dims, &[i64::MIN, -(1 << 40), 0, 1, 1 << 53, i64::MAX])
        }
        ElementType::U8 => HostTensor::from_u8(dims, &[0, 1, 127, 128, 200, 255]),
        ElementType::F16 => HostTensor::from_f16(
            dims,
            &[
                f16::MIN,
                f16::from_f32(-0.0),
                f16::from_f32(0.1),
                f16::MIN_POSITIVE_SUBNORMAL,
                f16::NAN,
                f16::MAX,
            ],
        ),
        ElementType::BF16 => HostTensor::from_bf16(
            dims,
            &[
                bf16::MIN,
                bf16::from_f32(-0.0),
                bf16::from_f32(0.1),
                bf16::from_f32(3.0e38),
                bf16::NAN,
                bf16::MAX,
            ],
        ),
        ElementType::F32 => HostTensor::from_f32(
            dims,
            &[f32::MIN, -0.0, 0.1, f32::EPSILON, f32::NAN, f32::INFINITY],
        ),
        ElementType::F64 => HostTensor::from_f64(
            dims,
            &[f64::MIN, -0.0, 0.1, f64::EPSILON, f64::NAN, f64::MAX],
        ),
        ElementType::C64 | ElementType::C128 => Ok(complex(
            t,
            &dims,
            &[(1.5, -0.0), (f64::NAN, 2.0), (-3.25, f64::INFINITY), (0.1, 0.2), (0.0, 0.0), (-1.0, 1e30)],
        )),
    };
    r.expect("sample tensor")
}

#[test]
fn every_type_round_trips_through_the_device() {
    let client = cpu_client();
    for t in ElementType::ALL {
        let host = sample(t);
        let buf = client
            .upload(&host)
            .unwrap_or_else(|e| panic!("upload {t}: {e}"));
        assert_eq!(buf.element_type(), t);
        assert_eq!(buf.dims(), vec![2, 3]);
        let back = buf
            .to_host()
            .unwrap_or_else(|e| panic!("download {t}: {e}"));
        // Byte equality: NaN payloads and -0.0 must survive too.
        assert_eq!(back, host, "{t}");
    }
}

#[test]
fn scalars_and_empty_tensors_round_trip() {
    let client = cpu_client();
    for host in [
        HostTensor::scalar(true),
        HostTensor::scalar(-7i16),
        HostTensor::scalar(bf16::from_f32(2.5)),
        HostTensor::from_f32([0, 4], &[]).unwrap(),
        HostTensor::from_i64([3, 0], &[]).unwrap(),
    ] {
        let back = client
            .upload(&host)
            .and_then(|b| b.to_host())
            .expect("round trip");
        assert_eq!(back, host);
    }
}

#[test]
fn bool_upload_normalizes_nonzero_bytes() {
    let client = cpu_client();
    let host = HostTensor::new(ElementType::Bool, [3], vec![0, 2, 255]).unwrap();
    let back = client
        .upload(&host)
        .and_then(|b| b.to_host())
        .expect("round trip");
    assert_eq!(back.bytes, vec![0, 1, 1]);
}

/// `a + b` (bool: `a and b`) on the device, compared with the same computed here.
#[test]
fn every_type_through_an_executable() {
    let client = cpu_client();
    for t in ElementType::ALL {
        let (op, a, b, want): (&str, HostTensor, HostTensor, HostTensor) = match t {
            ElementType::Bool => {
                let (x, y) = ([true, true, false, false], [true, false, true, false]);
                let w: Vec<bool> = x.iter().zip(&y).map(|(p, q)| *p && *q).collect();
                (
                    "and",
                    HostTensor::from_bool([4], &x).unwrap(),
                    HostTensor::from_bool([4], &y).unwrap(),
                    HostTensor::from_bool([4], &w).unwrap(),
                )
            }
            ElementType::F16 => {
                let x: Vec<f16> = [1.5f32, -2.0, 0.25, 1000.0].map(f16::from_f32).to_vec();
                let y: Vec<f16> = [2.25f32, 0.5, -0.125, 24.0].map(f16::from_f32).to_vec();
                let w: Vec<f16> = x
                    .iter()
                    .zip(&y)
                    .map(|(p, q)| f16::from_f32(p.to_f32() + q.to_f32()))
                    .collect();
                (
                    "add",
                    HostTensor::from_f16([4], &x).unwrap(),
                    HostTensor::from_f16([4], &y).unwrap(),
                    HostTensor::from_f16([4], &w).unwrap(),
                )
            }
            ElementType::BF16 => {
                let x: Vec<bf16> = [1.5f32, -2.0, 0.25, 1.0e30].map(bf16::from_f32).to_vec();
                let y: Vec<bf16> = [2.25f32, 0.5, -0.125, 1.0e30].map(bf16::from_f32).to_vec();
                let w: Vec<bf16> = x
                    .iter()
                    .zip(&y)
                    .map(|(p, q)| bf16::from_f32(p.to_f32() + q.to_f32()))
                    .collect();
                (
                    "add",
                    HostTensor::from_bf16([4], &x).unwrap(),
                    HostTensor::from_bf16([4], &y).unwrap(),
                    HostTensor::from_bf16([4], &w).unwrap(),
                )
            }
            _ => {
                // Small integers: exact in every numeric type, no overflow in i8/u8.
                let x = [1.0f64, 2.0, 30.0, 100.0];
                let y = [4.0f64, 0.0, 7.0, 27.0];
                let make = |v: &[f64]| -> HostTensor {
                    match t {
                        ElementType::I8 => HostTensor::from_i8(
                            [4],
                            &v.iter().map(|x| *x as i8).collect::<Vec<_>>(),
                        ),
                        ElementType::I16 => HostTensor::from_i16(
                            [4],
                            &v.iter().map(|x| *x as i16).collect::<Vec<_>>(),
                        ),
                        ElementType::I32 => HostTensor::from_i32(
                            [4],
                            &v.iter().map(|x| *x as i32).collect::<Vec<_>>(),
                        ),
                        ElementType::I64 => HostTensor::from_i64(
                            [4],
                            &v.iter().map(|x| *x as i64).collect::<Vec<_>>(),
                        ),
                        ElementType::U8 => HostTensor::from_u8(
                            [4],
                            &v.iter().map(|x| *x as u8).collect::<Vec<_>>(),
                        ),
                        ElementType::F32 => HostTensor::from_f32(
                            [4],
                            &v.iter().map(|x| *x as f32).collect::<Vec<_>>(),
                        ),
                        _ => HostTensor::from_f64([4], v),
                    }
                    .unwrap()
                };
                let w: Vec<f64> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
                if matches!(t, ElementType::C64 | ElementType::C128) {
                    // Imaginary parts of the opposite sign: both parts must add.
                    let pairs = |v: &[f64]| -> Vec<(f64, f64)> { v.iter().map(|&r| (r, -r / 2.0)).collect() };
                    ("add", complex(t, &[4], &pairs(&x)), complex(t, &[4], &pairs(&y)), complex(t, &[4], &pairs(&w)))
                } else {
                    ("add", make(&x), make(&y), make(&w))
                }
            }
        };
        let out = run_mlir(&client, &binary_module(op, "4", t.mlir_name()), &[a, b]);
        assert_eq!(out.len(), 1, "{t}");
        assert_eq!(out[0], want, "{t}: got {:?}", out[0].to_f32_vec());
    }
}

#[test]
fn convert_f32_to_half_types_and_compare_to_bool() {
    let client = cpu_client();
    let mlir = r#"
func.func @main(%a: tensor<5xf32>, %b: tensor<5xf32>) -> (tensor<5xbf16>, tensor<5xf16>, tensor<5xi1>) {
  %0 = stablehlo.convert %a : (tensor<5xf32>) -> tensor<5xbf16>
  %1 = stablehlo.convert %a : (tensor<5xf32>) -> tensor<5xf16>
  %2 = stablehlo.compare GT, %a, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
  return %0, %1, %2 : tensor<5xbf16>, tensor<5xf16>, tensor<5xi1>
}
"#;
    let a = [1.0f32 / 3.0, -2.7182817, 65504.0, 1.0e-3, 123.456];
    let b = [0.0f32, 0.0, 70000.0, 1.0e-3, 100.0];
    let out = run_mlir(
        &client,
        mlir,
        &[
            HostTensor::from_f32([5], &a).unwrap(),
            HostTensor::from_f32([5], &b).unwrap(),
        ],
    );
    assert_eq!(out[0].element_type, ElementType::BF16);
    assert_eq!(out[1].element_type, ElementType::F16);
    assert_eq!(out[2].element_type, ElementType::Bool);
    assert_eq!(
        out[0].to_vec::<bf16>().unwrap(),
        a.map(bf16::from_f32).to_vec()
    );
    assert_eq!(
        out[1].to_vec::<f16>().unwrap(),
        a.map(f16::from_f32).to_vec()
    );
    let gt: Vec<bool> = a.iter().zip(&b).map(|(x, y)| x > y).collect();
    assert_eq!(out[2].to_vec::<bool>().unwrap(), gt);
    assert_eq!(
        out[2].to_f32_vec(),
        gt.iter()
            .map(|g| if *g { 1.0 } else { 0.0 })
            .collect::<Vec<f32>>()
    );
}

/// The raw byte paths: an upload of the wrong byte length and a download into a destination
/// of the wrong size are errors that name the sizes; the right sizes round-trip.
#[test]
fn byte_transfers_check_sizes() {
    let client = cpu_client();
    let bytes: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let err = client.upload_bytes(ElementType::F32, &[4], &bytes).err().map(|e| e.to_string());
    assert!(err.as_deref().unwrap_or("").contains("needs 16 bytes, got 12"), "{err:?}");
    let buf = client.upload_bytes(ElementType::F32, &[3], &bytes).expect("upload");
    assert_eq!(buf.byte_size().ok(), Some(12));
    let mut small = [0u8; 8];
    let err = buf.copy_into(&mut small).err().map(|e| e.to_string());
    assert!(err.as_deref().unwrap_or("").contains("needs a 12-byte destination, got 8"), "{err:?}");
    let mut out = [0u8; 12];
    buf.copy_into(&mut out).expect("download");
    assert_eq!(out.to_vec(), bytes);
}

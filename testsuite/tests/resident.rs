//! Resident weights through the facade (what the Python bridge uses): uploaded once, kept
//! while the stamp of their source matches, uploaded again when it changes.

use fxhlo::runtime::HostTensor;
use fxhlo::{ResidentWeights, WeightStamp};
use fxhlo_ir::{DType, InputKind, Op, TensorType, ValueRef};

use crate::support::{cpu, Builder};

#[test]
fn weights_are_uploaded_once_and_again_when_their_stamp_changes() {
    // y = x @ w with a parameter w.
    let mut b = Builder::new("resident");
    let x = b.input("x", DType::F32, &[1, 2]);
    let w = ValueRef::first(b.g.add_input("w", InputKind::Parameter, Some("w".into()), TensorType::new(DType::F32, vec![2, 2]), None));
    let y = b.op(Op::Mm, &[x, w], None);
    let g = b.finish(&[y]);
    let session = cpu();
    let compiled = session.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    let mut weights = ResidentWeights::new(2);
    let x = HostTensor::from_f32([1, 2], &[1.0, 2.0]).unwrap();
    let w1 = HostTensor::from_f32([2, 2], &[1.0, 0.0, 0.0, 1.0]).unwrap();
    let w2 = HostTensor::from_f32([2, 2], &[2.0, 0.0, 0.0, 2.0]).unwrap();
    let stamp = |version| Some(WeightStamp { identity: 1, data_ptr: 0x1000, version });
    for _ in 0..5 {
        let out = compiled.run_resident(&session, &mut weights, &[(&x, None), (&w1, stamp(0))]).unwrap();
        // [1, 2] @ I = [1, 2].
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }
    assert_eq!(weights.kept(), 1, "five calls with one stamp upload the weight once");
    // An in-place write bumps the version: uploaded again, and the new values are used.
    let out = compiled.run_resident(&session, &mut weights, &[(&x, None), (&w2, stamp(1))]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(weights.kept(), 2);
    // No stamp (no version counter): uploaded on every call, never kept.
    compiled.run_resident(&session, &mut weights, &[(&x, None), (&w1, None)]).unwrap();
    assert_eq!(weights.kept(), 2);
}

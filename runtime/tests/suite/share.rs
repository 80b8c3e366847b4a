//! Memory shared with the device instead of copied (`Client::share_to`, `into_shared`): on the
//! CPU plugin a host allocation is the device memory, so the executable reads the caller's
//! bytes in place and the owner lives until the plugin lets go of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fxhlo_runtime::{ElementType, Lent, MemoryKind};

use super::{binary_module, cpu_client};

/// 64 bytes, 64-byte aligned (as PyTorch aligns its CPU allocations).
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Host memory with 64-byte alignment, and a flag set when it is dropped.
struct Owned {
    data: Vec<Line>,
    dropped: Arc<AtomicBool>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn lent(values: &[f32], offset_bytes: usize, dropped: Arc<AtomicBool>) -> Lent {
    let mut owned = Owned { data: (0..values.len() / 16 + 2).map(|_| Line([0; 64])).collect(), dropped };
    let base = owned.data.as_mut_ptr() as *mut u8;
    // SAFETY: the storage holds `values.len() * 4 + 64` bytes at least, `offset_bytes` < 64.
    let ptr = unsafe { base.add(offset_bytes) };
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr() as *const u8, ptr, values.len() * 4) };
    Lent {
        element_type: ElementType::F32,
        dims: vec![values.len() as i64],
        ptr,
        memory: MemoryKind::Host,
        stream: 0,
        owner: Box::new(owned),
    }
}

#[test]
fn a_host_allocation_is_read_in_place_and_released_when_the_plugin_is_done() {
    let client = cpu_client();
    assert_eq!(client.memory_kind(0), Some(MemoryKind::Host));
    let exe = client.compile(binary_module("add", "8", "f32").as_str()).expect("compile");
    let a: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let dropped = Arc::new(AtomicBool::new(false));
    let lent = lent(&a, 0, dropped.clone());
    let ptr = lent.ptr;
    let shared = match client.share_to(0, lent).expect("share") {
        Ok(b) => b,
        Err(_) => panic!("an aligned host allocation must be shared on the CPU plugin"),
    };
    let out = exe.run(&[&shared, &shared]).expect("run");
    let want: Vec<f32> = a.iter().map(|x| x + x).collect();
    assert_eq!(out[0].to_host().expect("download").to_vec::<f32>().expect("f32"), want);
    // In place: a write to the caller's memory is what the next run reads.
    // SAFETY: the owner is alive (the buffer holds it) and 8 f32s long.
    unsafe { *(ptr as *mut f32) = 100.0 };
    let out = exe.run(&[&shared, &shared]).expect("run");
    assert_eq!(out[0].to_host().expect("download").to_vec::<f32>().expect("f32")[0], 200.0);
    assert!(!dropped.load(Ordering::SeqCst), "the owner must live as long as the buffer");
    drop(shared);
    drop(out);
    assert!(dropped.load(Ordering::SeqCst), "destroying the buffer releases the owner");
}

#[test]
fn memory_the_device_cannot_view_is_given_back_with_its_owner() {
    let client = cpu_client();
    let dropped = Arc::new(AtomicBool::new(false));
    // 16 bytes past an aligned start: below the plugin's alignment.
    let given = client.share_to(0, lent(&[1.0; 4], 16, dropped.clone())).expect("share");
    let back = given.err().expect("an unaligned pointer is not shared");
    assert!(!dropped.load(Ordering::SeqCst));
    // Another device's memory is given back as well.
    let other = Lent { memory: MemoryKind::Cuda(0), ..back };
    assert!(client.share_to(0, other).expect("share").is_err());
    assert!(dropped.load(Ordering::SeqCst), "the owner goes with the last Lent");
}

#[test]
fn an_output_is_lent_in_host_memory() {
    let client = cpu_client();
    let exe = client.compile(binary_module("multiply", "4", "f32").as_str()).expect("compile");
    let a = fxhlo_runtime::HostTensor::from_f32([4], &[1.0, 2.0, 3.0, 4.0]).expect("tensor");
    let buf = client.upload(&a).expect("upload");
    let out = exe.run(&[&buf, &buf]).expect("run").pop().expect("one output");
    let shared = match out.into_shared(client.memory_kind(0)).expect("share") {
        Ok(s) => s,
        Err(_) => panic!("a CPU output is in host memory"),
    };
    assert_eq!((shared.memory(), shared.len()), (MemoryKind::Host, 16));
    // SAFETY: 4 f32s at `data()` while `shared` lives.
    let got = unsafe { std::slice::from_raw_parts(shared.data() as *const f32, 4) };
    assert_eq!(got, &[1.0, 4.0, 9.0, 16.0]);
    // No memory another library can address: handed back.
    let again = exe.run(&[&buf, &buf]).expect("run").pop().expect("one output");
    assert!(again.into_shared(None).expect("share").is_err());
}

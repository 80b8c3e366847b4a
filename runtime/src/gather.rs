//! Strided views made dense on the host, for devices whose memory is host memory (the CPU
//! plugin): the view is gathered once, in tiles, into an allocation the plugin can view
//! ([`crate::share::SHARE_ALIGNMENT`]), and that allocation becomes the device buffer.
//!
//! Why not let the plugin gather (`PJRT_Client_BufferFromHostBuffer` with byte strides)? The
//! CPU plugin copies a strided view after the call returns, one buffer at a time, and the
//! first execution that reads the buffer waits for it: BERT-base's linear weights, transposed
//! into the layout XLA's CPU kernels take (`device-layout`), made the first call's execution
//! 0.7-0.9 s longer than a steady one (340 MB). Gathered here, on as many threads as the
//! machine has cores ([`crate::Client::upload_views_to`]), the copy is done when the upload
//! returns.

use crate::error::Result;
use crate::share::{Lent, MemoryKind, SHARE_ALIGNMENT};
use crate::transfer::{check_strided, dense_len};
use crate::view::HostView;

/// Side of the square tiles a transpose copies (elements): 32x32 f32 is 4 KiB per tile.
const TILE: usize = 32;

/// One line of memory with the alignment plugins need to view it.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; SHARE_ALIGNMENT]);

/// An allocation of host memory aligned for plugins to view it.
struct Aligned {
    lines: Vec<Line>,
}

impl Aligned {
    fn zeroed(len: usize) -> Aligned {
        Aligned { lines: vec![Line([0; SHARE_ALIGNMENT]); len.div_ceil(SHARE_ALIGNMENT)] }
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.lines.as_mut_ptr() as *mut u8
    }
}

/// Whether `view` is worth gathering on the host: strided (a dense view is shared or copied
/// as it is) and large enough that the plugin's own copy would show.
pub(crate) fn worth_gathering(view: &HostView<'_>) -> bool {
    const MIN_BYTES: usize = 64 * 1024;
    view.byte_strides.as_ref().is_some_and(|s| *s != view.dense_strides()) && view.bytes.len() >= MIN_BYTES
}

/// `view` made dense (row-major in its own dims) in a new aligned allocation, lent as host
/// memory: what a plugin whose device memory is host memory views without a copy.
pub(crate) fn gather(view: &HostView<'_>) -> Result<Lent> {
    let strides = view.strides();
    check_strided(view.element_type, &view.dims, &strides, view.bytes.len())?;
    let len = dense_len(view.element_type, &view.dims)?;
    let mut dst = Aligned::zeroed(len.max(1));
    let out = dst.as_mut_ptr();
    let dims: Vec<usize> = view.dims.iter().map(|&d| d as usize).collect();
    let strides: Vec<usize> = strides.iter().map(|&s| s as usize).collect();
    if len > 0 {
        // SAFETY: `check_strided` proved every element of the view is inside `view.bytes`
        // (non-negative strides), and `dst` holds the `len` bytes of the dense result.
        unsafe {
            match view.element_type.byte_size() {
                1 => copy::<u8>(view.bytes.as_ptr(), out, &dims, &strides),
                2 => copy::<u16>(view.bytes.as_ptr(), out, &dims, &strides),
                4 => copy::<u32>(view.bytes.as_ptr(), out, &dims, &strides),
                8 => copy::<u64>(view.bytes.as_ptr(), out, &dims, &strides),
                _ => copy::<u128>(view.bytes.as_ptr(), out, &dims, &strides),
            }
        }
    }
    Ok(Lent {
        element_type: view.element_type,
        dims: view.dims.clone(),
        ptr: out,
        memory: MemoryKind::Host,
        stream: 0,
        owner: Box::new(dst),
    })
}

/// Copies the strided tensor at `src` (`dims`, byte `strides`) dense into `dst`, elements of
/// type `T`: the last two dims in square tiles (so a transpose reads and writes whole cache
/// lines), every outer index in turn.
///
/// SAFETY: every element of the view is readable at `src`; `dst` is writable for the dense
/// size; `T` has the element's size.
unsafe fn copy<T: Copy>(src: *const u8, dst: *mut u8, dims: &[usize], strides: &[usize]) {
    let dst = dst as *mut T;
    let rank = dims.len();
    let (rows, cols, row_stride, col_stride) = match rank {
        0 => (1, 1, 0, 0),
        1 => (1, dims[0], 0, strides[0]),
        _ => (dims[rank - 2], dims[rank - 1], strides[rank - 2], strides[rank - 1]),
    };
    let outer_dims = &dims[..rank.saturating_sub(2)];
    let outer_strides = &strides[..rank.saturating_sub(2)];
    let outer: usize = outer_dims.iter().product();
    let mut index = vec![0usize; outer_dims.len()];
    for o in 0..outer {
        let base: usize = index.iter().zip(outer_strides).map(|(i, s)| i * s).sum();
        // SAFETY (the pointer arithmetic below): in bounds of the view and of `dst`, as the
        // function's contract says.
        let plane = unsafe { dst.add(o * rows * cols) };
        for r0 in (0..rows).step_by(TILE) {
            for c0 in (0..cols).step_by(TILE) {
                for r in r0..(r0 + TILE).min(rows) {
                    let line = unsafe { src.add(base + r * row_stride) };
                    let out = unsafe { plane.add(r * cols) };
                    for c in c0..(c0 + TILE).min(cols) {
                        unsafe { *out.add(c) = std::ptr::read_unaligned(line.add(c * col_stride) as *const T) };
                    }
                }
            }
        }
        // The next outer index, last dim fastest.
        for k in (0..index.len()).rev() {
            index[k] += 1;
            if index[k] < outer_dims[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::HostTensor;

    fn dense_values(lent: &Lent, n: usize) -> Vec<f32> {
        // SAFETY: the lent allocation holds `n` f32s and lives as long as `lent`.
        unsafe { std::slice::from_raw_parts(lent.ptr as *const f32, n) }.to_vec()
    }

    #[test]
    fn a_gathered_view_equals_the_permuted_tensor_and_is_aligned() {
        // Sizes the tiles do not divide; rank 2 (a linear weight), rank 4 (a convolution
        // kernel in XLA's layout) and rank 1 (a strided slice).
        for (dims, perm) in [(vec![37i64, 70], vec![1usize, 0]), (vec![5, 3, 33, 34], vec![2, 3, 1, 0]), (vec![100], vec![0])] {
            let n: i64 = dims.iter().product();
            let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let t = HostTensor::from_f32(dims.clone(), &values).expect("tensor");
            let want = t.permuted(&perm).expect("permuted").to_f32_vec();
            let view = t.view().and_then(|v| v.permuted(&perm)).expect("view");
            let lent = gather(&view).expect("gather");
            assert_eq!(lent.ptr as usize % SHARE_ALIGNMENT, 0);
            assert_eq!(lent.dims, view.dims);
            assert_eq!(dense_values(&lent, n as usize), want, "dims {dims:?} perm {perm:?}");
        }
        let t = HostTensor::from_f32([6, 4], &(0..24).map(|i| i as f32).collect::<Vec<_>>()).expect("tensor");
        let shard = t.view().and_then(|v| v.shard(1, 2, 1)).expect("shard");
        let lent = gather(&shard).expect("gather");
        assert_eq!(dense_values(&lent, 12), vec![2.0, 3.0, 6.0, 7.0, 10.0, 11.0, 14.0, 15.0, 18.0, 19.0, 22.0, 23.0]);
    }

    #[test]
    fn a_view_reaching_past_its_bytes_is_an_error() {
        let t = HostTensor::from_f32([2, 2], &[1.0, 2.0, 3.0, 4.0]).expect("tensor");
        let mut view = t.view().expect("view");
        view.byte_strides = Some(vec![16, 4]);
        assert!(gather(&view).is_err());
    }
}

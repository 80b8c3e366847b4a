//! Resident weights: parameters, buffers and constants uploaded once and kept on the device
//! between calls of one executable, uploaded again only when the tensor they came from changed.
//!
//! The caller says what "changed" means with a [`WeightStamp`] per weight and call: the source
//! object's identity, its data pointer and its version counter (PyTorch's `_version`, bumped by
//! every in-place write). A weight without a version counter (an inference-mode tensor) has no
//! stamp and is uploaded on every call. The kept slot also holds an `owner` value (the Python
//! tensor, say) so that the object stays alive and its identity cannot be reused by another.
//! Used by the Python bridge; the CLI and Rust callers get the same behaviour.
//!
//! It also keeps, per input, the last view a call made of lent host memory ([`LentView`]):
//! a view is only an address, a type and dims, so the next call that lends the same memory
//! reads it through the same view instead of asking the plugin for a new one (on the CPU
//! plugin making and destroying a view costs about a third of a small graph's execution).

use std::any::Any;

use fxhlo_runtime::{DeviceBuffer, ElementType};

/// What a kept weight was uploaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightStamp {
    /// The source object's identity (an address the `owner` keeps alive).
    pub identity: usize,
    /// The address of its data.
    pub data_ptr: usize,
    /// Its version counter.
    pub version: i64,
}

struct Slot {
    stamp: WeightStamp,
    buffer: DeviceBuffer,
    /// Keeps the source object alive (and so its identity unique) while the slot holds it.
    _owner: Box<dyn Any>,
}

/// Which host memory a kept view reads: the same address, type and dims make the same view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LentView {
    /// The address of the first element.
    pub ptr: usize,
    /// The element type.
    pub element_type: ElementType,
    /// The dims, outermost first (dense row-major).
    pub dims: Vec<i64>,
}

/// The weights one executable keeps on one session's device, a slot per input, and the views
/// of lent host memory its last call made. Thread-bound, like the device buffers it holds.
#[derive(Default)]
pub struct ResidentWeights {
    slots: Vec<Option<Slot>>,
    views: Vec<Option<(LentView, DeviceBuffer)>>,
    kept: u64,
}

impl ResidentWeights {
    /// Empty slots for an executable of `inputs` inputs.
    pub fn new(inputs: usize) -> ResidentWeights {
        ResidentWeights { slots: (0..inputs).map(|_| None).collect(), views: (0..inputs).map(|_| None).collect(), kept: 0 }
    }

    /// Input `i`'s kept buffer when it was uploaded from a tensor with exactly this stamp.
    pub fn hit(&self, i: usize, stamp: Option<WeightStamp>) -> Option<&DeviceBuffer> {
        let stamp = stamp?;
        self.slots.get(i)?.as_ref().filter(|s| s.stamp == stamp).map(|s| &s.buffer)
    }

    /// Keeps `buffer` as input `i`'s, uploaded from the tensor `stamp` describes; `owner` keeps
    /// that tensor alive. Replaces what the slot held.
    pub fn keep(&mut self, i: usize, stamp: WeightStamp, buffer: DeviceBuffer, owner: Box<dyn Any>) {
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(Slot { stamp, buffer, _owner: owner });
            self.kept += 1;
        }
    }

    /// How many weights were kept (uploaded for keeping) since this was made.
    pub fn kept(&self) -> u64 {
        self.kept
    }

    /// Input `i`'s kept buffer, whatever it was uploaded from.
    pub fn buffer(&self, i: usize) -> Option<&DeviceBuffer> {
        self.slots.get(i)?.as_ref().map(|s| &s.buffer)
    }

    /// Whether input `i`'s kept view reads exactly the memory at `ptr` of this type and dims.
    pub fn view_hit(&self, i: usize, ptr: usize, element_type: ElementType, dims: &[i64]) -> bool {
        matches!(self.views.get(i), Some(Some((m, _))) if m.ptr == ptr && m.element_type == element_type && m.dims == dims)
    }

    /// Keeps `buffer`, a view of `memory` owning nothing, as input `i`'s view (replacing the
    /// one before). The view holds no reference to the memory's owner: it is used again only
    /// by a call that lends this very memory, and so keeps it alive itself.
    pub fn keep_view(&mut self, i: usize, memory: LentView, buffer: DeviceBuffer) {
        if let Some(slot) = self.views.get_mut(i) {
            *slot = Some((memory, buffer));
        }
    }

    /// Input `i`'s kept view.
    pub fn view(&self, i: usize) -> Option<&DeviceBuffer> {
        self.views.get(i)?.as_ref().map(|(_, b)| b)
    }
}

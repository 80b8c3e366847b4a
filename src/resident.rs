//! Resident weights: parameters, buffers and constants uploaded once and kept on the device
//! between calls of one executable, uploaded again only when the tensor they came from changed.
//!
//! The caller says what "changed" means with a [`WeightStamp`] per weight and call: the source
//! object's identity, its data pointer and its version counter (PyTorch's `_version`, bumped by
//! every in-place write). A weight without a version counter (an inference-mode tensor) has no
//! stamp and is uploaded on every call. The kept slot also holds an `owner` value (the Python
//! tensor, say) so that the object stays alive and its identity cannot be reused by another.
//! Used by the Python bridge; the CLI and Rust callers get the same behaviour.

use std::any::Any;

use fxhlo_runtime::DeviceBuffer;

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

/// The weights one executable keeps on one session's device, a slot per input. Thread-bound,
/// like the device buffers it holds.
#[derive(Default)]
pub struct ResidentWeights {
    slots: Vec<Option<Slot>>,
    kept: u64,
}

impl ResidentWeights {
    /// Empty slots for an executable of `inputs` inputs.
    pub fn new(inputs: usize) -> ResidentWeights {
        ResidentWeights { slots: (0..inputs).map(|_| None).collect(), kept: 0 }
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
}

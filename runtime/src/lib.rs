//! fxhlo's runtime: find a PJRT plugin, compile StableHLO text on it, move tensors, run, and
//! (de)serialize executables.
//!
//! ```no_run
//! use fxhlo_runtime::{Client, DeviceKind, HostTensor, Target};
//! # fn main() -> fxhlo_runtime::Result<()> {
//! let client = Client::new(&Target::resolve(DeviceKind::Cpu)?)?;
//! let exe = client.compile(
//!     "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
//!        %0 = stablehlo.add %a, %a : tensor<2xf32>
//!        return %0 : tensor<2xf32>
//!      }",
//! )?;
//! let a = client.upload(&HostTensor::from_f32([2], &[1.0, 2.0])?)?;
//! let out = exe.run(&[&a])?;
//! assert_eq!(out[0].to_host()?.to_f32_vec(), vec![2.0, 4.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Built on the `pjrt` 0.2.0 crate over fxhlo's own `pjrt-sys` (bindings generated from the
//! installed plugin's header). Clients, executables and device buffers are not `Send`.
//! Environment variables: see [`mod@env`].

pub mod aot;
pub mod buffer;
pub mod client;
pub mod device;
pub mod device_buffer;
pub mod element;
pub mod env;
pub mod error;
pub mod executable;
mod gather;
pub mod host;
mod kinds;
pub mod plugin;
pub mod share;
pub mod signature;
mod transfer;
pub mod view;

pub use aot::{AotCompiler, AotExecutable, CostAnalysis, TopologyInfo};
pub use buffer::HostTensor;
pub use client::Client;
pub use device::{cuda_preflight, tpu_preflight, DeviceKind, Target, TargetName};
pub use device_buffer::DeviceBuffer;
pub use element::{Element, ElementType};
pub use env::EnvConfig;
pub use error::{Error, Result};
pub use executable::{CompileOptions, Executable, Program, ProgramSignature};
pub use signature::Signature;
/// The half-precision types [`HostTensor::from_f16`] / [`HostTensor::from_bf16`] take.
pub use half::{bf16, f16};
pub use share::{Lent, MemoryKind};
pub use transfer::SharedBuffer;
pub use view::HostView;

#[cfg(test)]
pub(crate) mod test_util {
    //! Temporary folders for unit tests (removed on drop).
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static COUNTER: AtomicUsize = AtomicUsize::new(0);

    /// A fresh folder under the system temp dir.
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new(tag: &str) -> TempDir {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("fxhlo-runtime-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::create_dir_all(&dir);
            TempDir(dir)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

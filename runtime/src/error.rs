//! The runtime's error type: plugin discovery and loading, PJRT failures, bad tensors.

use std::path::PathBuf;

// Only the leaf `kinds`: the modules that return these errors all use this one, so it must
// not use them back.
use crate::kinds::{DeviceKind, ElementType};

/// `Result` with the runtime's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in `fxhlo-runtime`.
///
/// Messages name the file, device or operation involved and, where the user can fix it, what
/// to do. Errors reported by the PJRT plugin carry the plugin's own message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A device name that is not one of [`DeviceKind::ALL`].
    #[error("unknown device `{0}`: valid devices are cpu, cuda, tpu, and tpu:<topology> (such as \
             tpu:v6e:2x2) to compile ahead of time for TPU chips this machine does not have")]
    UnknownDevice(String),

    /// The plugin path does not exist (or is not a file).
    #[error("PJRT plugin `{}` does not exist{origin}", path.display())]
    PluginMissing {
        /// The path that was tried.
        path: PathBuf,
        /// Where the path came from, e.g. " (set by FXHLO_PJRT_PLUGIN)"; may be empty.
        origin: String,
    },

    /// The file exists but is not a PJRT plugin (not a shared library, or no `GetPjrtApi`).
    #[error("`{}` is not a PJRT plugin: {reason}", path.display())]
    NotAPlugin {
        /// The file.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },

    /// A PJRT plugin whose C API version the bindings cannot drive safely.
    #[error(
        "PJRT plugin `{}` implements PJRT C API {found}, but fxhlo's bindings were generated \
         from {expected}: {reason}",
        path.display()
    )]
    IncompatiblePlugin {
        /// The plugin.
        path: PathBuf,
        /// The plugin's `major.minor`.
        found: String,
        /// The header's `major.minor`.
        expected: String,
        /// What to do about it.
        reason: String,
    },

    /// Discovery found no plugin for the device.
    #[error(
        "no PJRT plugin for device `{device}` found (looked for {wanted} in: {searched}). \
         Run scripts/setup.sh{install}, or set FXHLO_PJRT_PLUGIN to the plugin's .so"
    )]
    PluginNotFound {
        /// The device asked for.
        device: DeviceKind,
        /// The relative plugin paths looked for, joined.
        wanted: String,
        /// The folders searched, joined (or a sentence saying none was found).
        searched: String,
        /// Extra install advice for the device (may be empty).
        install: String,
    },

    /// `tpu` was asked for on a machine without TPU device nodes.
    #[error(
        "no TPU found on this machine: none of the TPU device nodes ({dev}/accel*, {dev}/vfio/<n>) \
         exist, and creating a TPU client without a TPU hangs for minutes. To build TPU \
         executables on this machine, compile ahead of time for a topology instead (target \
         `tpu:v6e:2x2`: `fxhlo compile <bundle> --target tpu:v6e:2x2 -o <file>`); otherwise use \
         another device, or set FXHLO_TPU_FORCE=1 to skip this check",
        dev = dev.display()
    )]
    NoTpu {
        /// The folder searched (`/dev`, or `FXHLO_DEV_DIR`).
        dev: PathBuf,
    },

    /// `cuda` was asked for on a machine without an NVIDIA GPU.
    #[error(
        "no NVIDIA GPU found on this machine: none of its device nodes ({dev}/nvidia0, \
         {dev}/nvidia1, ..., or {dev}/dxg under WSL) exist. Use a machine with an NVIDIA GPU and \
         its driver, or another device (`cpu`; for TPUs without one, compile ahead of time with \
         target `tpu:v6e:2x2`)",
        dev = dev.display()
    )]
    NoGpu {
        /// The folder searched (`/dev`, or `FXHLO_DEV_DIR`).
        dev: PathBuf,
    },

    /// The plugin refused to create a client.
    #[error("creating a PJRT client from `{}` failed: {message}", plugin.display())]
    ClientCreate {
        /// The plugin.
        plugin: PathBuf,
        /// The plugin's message.
        message: String,
    },

    /// The plugin cannot describe the topology asked for (an unknown chip or shape).
    #[error("the plugin cannot describe the topology `{topology}`: {message}. Topologies look like \
             v6e:2x2, v5e:2x2, v5p:2x2x1, v4:2x2x1 (chip generation, then the chips along each axis)")]
    Topology {
        /// The topology asked for.
        topology: String,
        /// The plugin's message.
        message: String,
    },

    /// PJRT compilation failed (bad MLIR, unsupported op, ...).
    #[error("PJRT compile failed: {message}")]
    Compile {
        /// The plugin's message.
        message: String,
    },

    /// Deserializing a serialized executable failed.
    #[error("loading a serialized executable failed: {message}")]
    Deserialize {
        /// The plugin's message.
        message: String,
    },

    /// Serializing an executable failed.
    #[error("serializing the executable failed: {message}")]
    Serialize {
        /// The plugin's message.
        message: String,
    },

    /// Running an executable failed (wrong arguments, runtime error).
    #[error("execution failed: {message}")]
    Execute {
        /// The plugin's message.
        message: String,
    },

    /// A host/device copy failed.
    #[error("{direction} transfer failed: {message}")]
    Transfer {
        /// "host-to-device" or "device-to-host".
        direction: &'static str,
        /// The plugin's message.
        message: String,
    },

    /// A host tensor whose dims, element type and byte length disagree.
    #[error("invalid tensor: {0}")]
    InvalidTensor(String),

    /// A device buffer of an element type the runtime does not handle.
    #[error("unsupported element type: {0}")]
    UnsupportedElementType(String),

    /// A typed read of a tensor of another element type.
    #[error("element type mismatch: the tensor holds {actual}, {requested} was asked for")]
    TypeMismatch {
        /// The tensor's type.
        actual: ElementType,
        /// The type asked for.
        requested: ElementType,
    },

    /// A buffer or executable used with a client other than the one that made it.
    #[error("{0} belongs to another client")]
    ForeignObject(&'static str),

    /// Any other PJRT failure (the operation and the plugin's message).
    #[error("PJRT {operation} failed: {message}")]
    Pjrt {
        /// What was being done.
        operation: &'static str,
        /// The plugin's (or the `pjrt` crate's) message.
        message: String,
    },
}

/// Runs `f`, turning a panic into [`Error::Pjrt`].
///
/// `pjrt` 0.2.0 `expect`s on plugin errors in several infallible-looking calls (plugin
/// initialization, platform name, executable serialization, ...). A plugin error there must not
/// take the caller down, so those calls go through this guard. The panic hook still prints the
/// message to stderr.
pub(crate) fn guard<T>(operation: &'static str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic inside the pjrt crate".to_string());
        Error::Pjrt { operation, message }
    })
}

//! Device kinds (their parsing; the enum is in the leaf module `kinds`), compile/run targets
//! (device + plugin), and the TPU and GPU preflights.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::env::{EnvConfig, FXHLO_TPU_FORCE};
use crate::error::{Error, Result};
pub use crate::kinds::DeviceKind;
use crate::plugin;

impl FromStr for DeviceKind {
    type Err = Error;

    /// Parses `cpu`, `cuda` or `tpu` (any case, surrounding spaces ignored); the error lists
    /// the valid names.
    fn from_str(s: &str) -> Result<DeviceKind> {
        let wanted = s.trim();
        DeviceKind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| Error::UnknownDevice(s.to_string()))
    }
}

/// A target as users name it: a device kind, and for ahead-of-time compilation a topology of
/// that device (`cpu`, `cuda`, `tpu`, `tpu:v6e:2x2`). Serialized as that text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TargetName {
    /// The device kind.
    pub device: DeviceKind,
    /// The topology to compile for without the device (`v6e:2x2`); `None` runs on a local
    /// device.
    pub topology: Option<String>,
}

impl TargetName {
    /// Whether this names a topology to compile for ahead of time (no device runs it here).
    pub fn is_ahead_of_time(&self) -> bool {
        self.topology.is_some()
    }
}

impl From<DeviceKind> for TargetName {
    fn from(device: DeviceKind) -> TargetName {
        TargetName { device, topology: None }
    }
}

impl Default for TargetName {
    fn default() -> TargetName {
        DeviceKind::Cpu.into()
    }
}

impl FromStr for TargetName {
    type Err = Error;

    /// Parses `cpu`, `cuda`, `tpu` or `tpu:<topology>` (only TPUs have topologies to compile
    /// for); the error says what is accepted.
    fn from_str(s: &str) -> Result<TargetName> {
        let (device, topology) = match s.trim().split_once(':') {
            Some((d, t)) => (d, Some(t.trim())),
            None => (s.trim(), None),
        };
        let device: DeviceKind = device.parse().map_err(|_| Error::UnknownDevice(s.to_string()))?;
        match topology {
            None => Ok(device.into()),
            Some(t) if device == DeviceKind::Tpu && !t.is_empty() && !t.chars().any(char::is_whitespace) => {
                Ok(TargetName { device, topology: Some(t.to_string()) })
            }
            Some(_) => Err(Error::UnknownDevice(s.to_string())),
        }
    }
}

impl TryFrom<String> for TargetName {
    type Error = Error;
    fn try_from(s: String) -> Result<TargetName> {
        s.parse()
    }
}

impl From<TargetName> for String {
    fn from(t: TargetName) -> String {
        t.to_string()
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.topology {
            Some(t) => write!(f, "{}:{t}", self.device),
            None => f.write_str(self.device.as_str()),
        }
    }
}

/// What to compile for and run on: a device kind and the PJRT plugin that drives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The device kind.
    pub device: DeviceKind,
    /// Path of the PJRT plugin shared library.
    pub plugin: PathBuf,
    /// A device topology for ahead-of-time compilation without the device (e.g. TPU `v6e:2x2`).
    /// [`Target::resolve`] leaves it `None`; [`crate::Client::new`] ignores it.
    pub topology: Option<String>,
}

impl Target {
    /// A target for `device` with an explicit plugin path (no discovery, no checks yet: the
    /// plugin is checked when a [`crate::Client`] is created from it).
    pub fn new(device: DeviceKind, plugin: impl Into<PathBuf>) -> Target {
        Target {
            device,
            plugin: plugin.into(),
            topology: None,
        }
    }

    /// Finds the plugin for `device` from the process environment: `FXHLO_PJRT_PLUGIN` if set,
    /// otherwise the device's plugin in the virtual environments and Python site-packages
    /// folders described in [`crate::plugin`]. The error says what was searched and what to do.
    pub fn resolve(device: DeviceKind) -> Result<Target> {
        Target::resolve_in(device, &EnvConfig::from_env())
    }

    /// The target for an ahead-of-time compile of `name` (which has a topology): the device's
    /// plugin, found as [`Target::resolve`] finds it, without the device preflight (no client
    /// is created for it).
    pub fn resolve_ahead_of_time(name: &TargetName, env: &EnvConfig) -> Result<Target> {
        let plugin = plugin::discover(name.device, env)?;
        Ok(Target { device: name.device, plugin, topology: name.topology.clone() })
    }

    /// [`Target::resolve`] with explicit settings instead of the process environment.
    pub fn resolve_in(device: DeviceKind, env: &EnvConfig) -> Result<Target> {
        // Without a TPU, "no TPU here" is the answer the user needs, whether or not libtpu is
        // installed.
        match device {
            DeviceKind::Tpu => tpu_preflight(env)?,
            DeviceKind::Cuda => cuda_preflight(env)?,
            DeviceKind::Cpu => {}
        }
        let plugin = plugin::discover(device, env)?;
        tracing::debug!(%device, plugin = %plugin.display(), "resolved PJRT target");
        Ok(Target::new(device, plugin))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.device, self.plugin.display())?;
        if let Some(topology) = &self.topology {
            write!(f, " topology {topology}")?;
        }
        Ok(())
    }
}

/// Where TPU device nodes live unless [`EnvConfig::dev_dir`] says otherwise.
const DEV: &str = "/dev";

/// Fails at once unless this machine has a TPU (or `FXHLO_TPU_FORCE` says to skip the check).
///
/// `libtpu` creates a client on a machine without a TPU by querying the cloud metadata server,
/// 30 times per key, which takes many minutes before it fails. A TPU VM exposes its chips as
/// `/dev/accel*` (v2-v4) or `/dev/vfio/<n>` (v5e and later; `/dev/vfio/vfio` is the VFIO
/// control node present on any machine with VFIO and does not count). The folder looked in is
/// `env.dev_dir` (`FXHLO_DEV_DIR`), `/dev` by default: tests pass a folder of their
/// own, so that they do not depend on the machine they run on.
pub fn tpu_preflight(env: &EnvConfig) -> Result<()> {
    if env.tpu_force {
        tracing::debug!("{FXHLO_TPU_FORCE} set: skipping the TPU preflight");
        return Ok(());
    }
    let dev = env.dev_dir.clone().unwrap_or_else(|| PathBuf::from(DEV));
    let nodes = tpu_device_nodes(&dev);
    if nodes.is_empty() {
        return Err(Error::NoTpu { dev });
    }
    tracing::debug!(?nodes, "TPU device nodes found");
    Ok(())
}

/// Fails at once unless this machine has an NVIDIA GPU: its device nodes `/dev/nvidia<n>`
/// (or `/dev/dxg`, how WSL exposes a GPU). Without one the CUDA plugin would fail later with a
/// driver message that does not say what is missing. Looks in `env.dev_dir` like
/// [`tpu_preflight`].
pub fn cuda_preflight(env: &EnvConfig) -> Result<()> {
    let dev = env.dev_dir.clone().unwrap_or_else(|| PathBuf::from(DEV));
    let nodes = gpu_device_nodes(&dev);
    if nodes.is_empty() {
        return Err(Error::NoGpu { dev });
    }
    tracing::debug!(?nodes, "GPU device nodes found");
    Ok(())
}

/// The NVIDIA GPU device nodes under `dev`: `nvidia<n>` (not `nvidiactl`, `nvidia-uvm`, which
/// a driver without a GPU may leave), or `dxg`.
pub(crate) fn gpu_device_nodes(dev: &Path) -> Vec<PathBuf> {
    let mut nodes: Vec<PathBuf> = std::fs::read_dir(dev)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let gpu = name
                .strip_prefix("nvidia")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            gpu || name == "dxg"
        })
        .map(|e| e.path())
        .collect();
    nodes.sort();
    nodes
}

/// The TPU device nodes under `dev` (normally `/dev`), sorted.
pub(crate) fn tpu_device_nodes(dev: &Path) -> Vec<PathBuf> {
    let mut nodes: Vec<PathBuf> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dev) {
        nodes.extend(
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("accel"))
                .map(|e| e.path()),
        );
    }
    if let Ok(entries) = std::fs::read_dir(dev.join("vfio")) {
        nodes.extend(
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name() != "vfio")
                .map(|e| e.path()),
        );
    }
    nodes.sort();
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for kind in DeviceKind::ALL {
            assert_eq!(kind.to_string().parse::<DeviceKind>().ok(), Some(kind));
        }
        assert_eq!(" CUDA ".parse::<DeviceKind>().ok(), Some(DeviceKind::Cuda));
    }

    #[test]
    fn target_names_parse_and_print() {
        for text in ["cpu", "cuda", "tpu", "tpu:v6e:2x2", "tpu:v5p:2x2x1"] {
            let name: Option<TargetName> = text.parse().ok();
            assert_eq!(name.map(|n| n.to_string()).as_deref(), Some(text));
        }
        let aot: Option<TargetName> = "tpu:v6e:2x2".parse().ok();
        assert_eq!(aot.as_ref().map(|n| n.device), Some(DeviceKind::Tpu));
        assert_eq!(aot.and_then(|n| n.topology).as_deref(), Some("v6e:2x2"));
        for bad in ["cpu:v6e:2x2", "tpu:", "gpu", "tpu:v6e 2x2"] {
            assert!(bad.parse::<TargetName>().is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_device_lists_valid_ones() {
        let err = "gpu".parse::<DeviceKind>().err().map(|e| e.to_string());
        let msg = err.unwrap_or_default();
        assert!(msg.contains("`gpu`"), "{msg}");
        assert!(msg.contains("cpu, cuda, tpu"), "{msg}");
    }

    #[test]
    fn tpu_nodes_ignore_the_vfio_control_node() {
        let dev = crate::test_util::TempDir::new("tpu-nodes");
        std::fs::create_dir_all(dev.path().join("vfio")).ok();
        std::fs::write(dev.path().join("vfio/vfio"), b"").ok();
        std::fs::write(dev.path().join("null"), b"").ok();
        assert!(tpu_device_nodes(dev.path()).is_empty());

        std::fs::write(dev.path().join("vfio/0"), b"").ok();
        std::fs::write(dev.path().join("accel0"), b"").ok();
        let nodes = tpu_device_nodes(dev.path());
        assert_eq!(
            nodes,
            vec![dev.path().join("accel0"), dev.path().join("vfio/0")]
        );
    }

    #[test]
    fn preflight_looks_in_the_configured_folder() {
        let dev = crate::test_util::TempDir::new("tpu-preflight");
        let env = EnvConfig {
            dev_dir: Some(dev.path().to_path_buf()),
            ..EnvConfig::default()
        };
        let err = tpu_preflight(&env).err();
        assert!(matches!(&err, Some(Error::NoTpu { dev: d }) if d == dev.path()), "{err:?}");
        std::fs::write(dev.path().join("accel0"), b"").ok();
        assert!(tpu_preflight(&env).is_ok());
    }

    #[test]
    fn gpu_nodes_are_numbered_nvidia_nodes_or_dxg() {
        let dev = crate::test_util::TempDir::new("gpu-nodes");
        for name in ["nvidiactl", "nvidia-uvm", "nvidia-modeset", "null"] {
            std::fs::write(dev.path().join(name), b"").ok();
        }
        assert!(gpu_device_nodes(dev.path()).is_empty());
        let env = EnvConfig {
            dev_dir: Some(dev.path().to_path_buf()),
            ..EnvConfig::default()
        };
        assert!(matches!(cuda_preflight(&env), Err(Error::NoGpu { .. })));
        std::fs::write(dev.path().join("nvidia0"), b"").ok();
        std::fs::write(dev.path().join("nvidia1"), b"").ok();
        assert_eq!(
            gpu_device_nodes(dev.path()),
            vec![dev.path().join("nvidia0"), dev.path().join("nvidia1")]
        );
        assert!(cuda_preflight(&env).is_ok());
    }

    #[test]
    fn preflight_respects_force() {
        let env = EnvConfig {
            tpu_force: true,
            ..EnvConfig::default()
        };
        assert!(tpu_preflight(&env).is_ok());
    }
}

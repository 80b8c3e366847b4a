//! Ahead-of-time compilation for a device this machine does not have: a plugin's topology
//! description stands in for the devices (`libtpu` describes `v6e:2x2` and friends without a
//! TPU) and `PJRT_Compile` turns StableHLO into a serialized executable for it, with XLA's
//! cost analysis. No client is created, so nothing waits for hardware.
//!
//! The TPU compiler can crash on valid programs; callers that must survive that run this in a
//! child process (`fxhlo aot-worker`, see the facade's `aot` module).

use std::collections::BTreeMap;
use std::time::Instant;

use pjrt_sys::{PJRT_Executable, PJRT_TopologyDescription};

use crate::device::Target;
use crate::error::{Error, Result};
use crate::executable::{mlir_program, CompileOptions, Program};
use crate::plugin::{self, RawApi};

/// Environment the TPU plugin needs to describe a topology on a machine without a TPU: without
/// it `libtpu` asks the cloud metadata server, 30 times per key, for many minutes. The
/// ahead-of-time worker process is started with it set.
pub const TPU_SKIP_MDS_QUERY: (&str, &str) = ("TPU_SKIP_MDS_QUERY", "1");

/// Environment that lets several ahead-of-time workers run at once: libtpu otherwise takes
/// `/tmp/libtpu_lockfile` at initialization (guarding the chips, which a topology compile never
/// touches) and every other process fails with "Internal error when accessing libtpu
/// multi-process lockfile".
pub const ALLOW_MULTIPLE_LIBTPU_LOAD: (&str, &str) = ("ALLOW_MULTIPLE_LIBTPU_LOAD", "1");

/// A plugin's description of a device topology, ready to compile for it.
pub struct AotCompiler {
    raw: RawApi,
    topology: *mut PJRT_TopologyDescription,
    target: Target,
    info: TopologyInfo,
}

impl Drop for AotCompiler {
    fn drop(&mut self) {
        if let Some(f) = self.raw.table().PJRT_TopologyDescription_Destroy {
            let mut args = pjrt_sys::PJRT_TopologyDescription_Destroy_Args::new();
            args.topology = self.topology;
            // SAFETY: the topology is ours and destroyed exactly once.
            let _ = self.raw.check(unsafe { f(&mut args) });
        }
    }
}

impl std::fmt::Debug for AotCompiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AotCompiler")
            .field("target", &self.target)
            .field("topology", &self.info)
            .finish_non_exhaustive()
    }
}

/// What an ahead-of-time compile gives: the plugin's serialized executable and XLA's cost
/// analysis of it.
#[derive(Debug, Clone)]
pub struct AotExecutable {
    /// The serialized executable (what `PJRT_Executable_DeserializeAndLoad` takes on a machine
    /// with the device).
    pub bytes: Vec<u8>,
    /// XLA's cost model figures.
    pub cost: CostAnalysis,
}

/// XLA's cost analysis of an executable: every numeric property the plugin reports (`flops`,
/// `transcendentals`, `bytes accessed`, `optimal_seconds`, per-operand byte counts, ...).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostAnalysis {
    /// Property name → value, sorted by name.
    pub properties: BTreeMap<String, f64>,
}

impl CostAnalysis {
    /// A property, if the plugin reported it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.properties.get(name).copied()
    }

    /// Floating-point operations (a multiply-add counts two).
    pub fn flops(&self) -> Option<f64> {
        self.get("flops")
    }

    /// Transcendental operations (`exp`, `log`, `tanh`, ...).
    pub fn transcendentals(&self) -> Option<f64> {
        self.get("transcendentals")
    }

    /// Bytes read and written from device memory.
    pub fn bytes_accessed(&self) -> Option<f64> {
        self.get("bytes accessed")
    }

    /// The cost model's time estimate in seconds; `None` where it has none (XLA reports a
    /// negative value for "unknown").
    pub fn optimal_seconds(&self) -> Option<f64> {
        self.get("optimal_seconds").filter(|s| *s >= 0.0)
    }
}

impl AotCompiler {
    /// Loads `target`'s plugin and describes its topology (`target.topology`, e.g. `v6e:2x2`).
    /// An unknown topology is [`Error::Topology`] with the plugin's message.
    pub fn new(target: &Target) -> Result<AotCompiler> {
        let name = target.topology.clone().ok_or_else(|| Error::Topology {
            topology: String::new(),
            message: format!("target {target} has no topology to compile for"),
        })?;
        let plugin = plugin::load(&target.plugin)?;
        let raw = plugin.raw;
        let start = Instant::now();
        let fail = |message: String| Error::Topology { topology: name.clone(), message };
        let api = raw.table();
        let create = api
            .PJRT_TopologyDescription_Create
            .ok_or_else(|| fail("the plugin cannot describe topologies (no PJRT_TopologyDescription_Create)".into()))?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_Create_Args::new();
        args.topology_name = name.as_ptr().cast();
        args.topology_name_size = name.len();
        // SAFETY: the name outlives the call; no options.
        raw.check(unsafe { create(&mut args) }).map_err(fail)?;
        if args.topology.is_null() {
            return Err(fail("the plugin returned no topology".into()));
        }
        // Owned from here: dropped (destroyed) on every early return below.
        let mut compiler = AotCompiler { raw, topology: args.topology, target: target.clone(), info: TopologyInfo::default() };
        // SAFETY: the topology was just created by this plugin and lives as long as `compiler`.
        compiler.info = unsafe { TopologyInfo::read(raw, compiler.topology) }.map_err(fail)?;
        tracing::debug!(
            topology = %name,
            info = ?compiler.info,
            elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
            "described topology"
        );
        Ok(compiler)
    }

    /// The target compiled for.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// What the topology description says (platform, version, devices, layout).
    pub fn info(&self) -> &TopologyInfo {
        &self.info
    }

    /// The platform name the topology reports (`tpu`).
    pub fn platform_name(&self) -> &str {
        &self.info.platform_name
    }

    /// The platform version the topology reports (for libtpu: the chip, `TFRT TPU v6 lite`).
    pub fn platform_version(&self) -> &str {
        &self.info.platform_version
    }

    /// Devices (chips) in the topology.
    pub fn device_count(&self) -> usize {
        self.info.device_count
    }

    /// Compiles StableHLO text for the topology and serializes the executable. A rejected
    /// program is [`Error::Compile`] with the plugin's message.
    pub fn compile<'p>(&self, program: impl Into<Program<'p>>, options: &CompileOptions) -> Result<AotExecutable> {
        let program = program.into();
        let start = Instant::now();
        let api = self.raw.table();
        let compile_error = |message: String| Error::Compile { message };
        let compile = api.PJRT_Compile.ok_or_else(|| compile_error("the plugin does not implement PJRT_Compile".into()))?;
        let encoded = options.to_pjrt().encode();
        let mlir = program.code;
        let program = mlir_program(mlir);
        let mut args = pjrt_sys::PJRT_Compile_Args::new();
        args.topology = self.topology;
        args.program = &program;
        args.compile_options = encoded.as_ptr().cast();
        args.compile_options_size = encoded.len();
        // SAFETY: live topology; program, format and options outlive the call; no client.
        self.raw.check(unsafe { compile(&mut args) }).map_err(compile_error)?;
        if args.executable.is_null() {
            return Err(compile_error("the plugin returned no executable".into()));
        }
        let exe = OwnedExecutable { raw: self.raw, ptr: args.executable };
        let bytes = exe.serialize().map_err(|message| Error::Serialize { message })?;
        let cost = exe.cost_analysis().unwrap_or_else(|message| {
            tracing::warn!(%message, "the plugin gives no cost analysis");
            CostAnalysis::default()
        });
        tracing::debug!(
            topology = ?self.target.topology,
            mlir_bytes = mlir.len(),
            executable_bytes = bytes.len(),
            elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
            "compiled ahead of time"
        );
        Ok(AotExecutable { bytes, cost })
    }
}

/// What a PJRT topology description says about the devices an executable is compiled for,
/// read the same way from a topology described by name (ahead of time, [`AotCompiler`]) and
/// from a live client's own topology ([`crate::Client::topology`]): the compile cache keys a
/// TPU target by these fields, so that an executable compiled ahead of time for `v6e:2x2` is
/// the entry a client on a v6e 2x2 slice looks up.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopologyInfo {
    /// `PJRT_TopologyDescription_PlatformName` (`tpu`).
    pub platform_name: String,
    /// `PJRT_TopologyDescription_PlatformVersion` (libtpu: the chip, `TFRT TPU v6 lite`).
    pub platform_version: String,
    /// Devices in the topology (every chip of the slice, not only this host's).
    pub device_count: usize,
    /// The distinct `PJRT_DeviceDescription_Kind`s, sorted (`TPU v6 lite`).
    pub device_kinds: Vec<String>,
    /// The layout: one more than the largest of the devices' `coords` attribute in each
    /// dimension (`[2, 2, 1]` for `v6e:2x2`); empty where the plugin gives no coordinates.
    pub bounds: Vec<i64>,
}

impl TopologyInfo {
    /// Reads `topology` through `raw`'s functions; a function the plugin lacks is an error
    /// naming it, except the device attributes (then `bounds` is empty).
    ///
    /// # Safety
    /// `topology` must be a live topology description of `raw`'s plugin.
    pub(crate) unsafe fn read(raw: RawApi, topology: *mut PJRT_TopologyDescription) -> std::result::Result<TopologyInfo, String> {
        let api = raw.table();
        let name = api.PJRT_TopologyDescription_PlatformName.ok_or("no PJRT_TopologyDescription_PlatformName")?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_PlatformName_Args::new();
        args.topology = topology;
        raw.check(name(&mut args))?;
        let platform_name = text(args.platform_name, args.platform_name_size);
        let version = api.PJRT_TopologyDescription_PlatformVersion.ok_or("no PJRT_TopologyDescription_PlatformVersion")?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_PlatformVersion_Args::new();
        args.topology = topology;
        raw.check(version(&mut args))?;
        let platform_version = text(args.platform_version, args.platform_version_size);
        let describe = api
            .PJRT_TopologyDescription_GetDeviceDescriptions
            .ok_or("no PJRT_TopologyDescription_GetDeviceDescriptions")?;
        let mut args = pjrt_sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        args.topology = topology;
        raw.check(describe(&mut args))?;
        let devices: &[*mut pjrt_sys::PJRT_DeviceDescription] =
            if args.descriptions.is_null() { &[] } else { std::slice::from_raw_parts(args.descriptions, args.num_descriptions) };
        let mut kinds = std::collections::BTreeSet::new();
        let mut bounds: Vec<i64> = Vec::new();
        for &device in devices {
            if let Some(kind) = api.PJRT_DeviceDescription_Kind {
                let mut args = pjrt_sys::PJRT_DeviceDescription_Kind_Args::new();
                args.device_description = device;
                raw.check(kind(&mut args))?;
                kinds.insert(text(args.device_kind, args.device_kind_size));
            }
            for (i, c) in device_coords(raw, device).into_iter().enumerate() {
                match bounds.get_mut(i) {
                    Some(b) => *b = (*b).max(c + 1),
                    None => bounds.push(c + 1),
                }
            }
        }
        Ok(TopologyInfo { platform_name, platform_version, device_count: devices.len(), device_kinds: kinds.into_iter().collect(), bounds })
    }

    /// The layout as text: `2x2x1`, or `-` without coordinates.
    pub fn layout(&self) -> String {
        if self.bounds.is_empty() {
            return "-".to_string();
        }
        self.bounds.iter().map(i64::to_string).collect::<Vec<_>>().join("x")
    }
}

/// The `coords` attribute of a device description (an int64 list), empty when absent.
///
/// # Safety
/// `device` must be a live device description of `raw`'s plugin.
unsafe fn device_coords(raw: RawApi, device: *mut pjrt_sys::PJRT_DeviceDescription) -> Vec<i64> {
    let Some(f) = raw.table().PJRT_DeviceDescription_Attributes else { return Vec::new() };
    let mut args = pjrt_sys::PJRT_DeviceDescription_Attributes_Args::new();
    args.device_description = device;
    if raw.check(f(&mut args)).is_err() || args.attributes.is_null() {
        return Vec::new();
    }
    for a in std::slice::from_raw_parts(args.attributes, args.num_attributes) {
        let list = a.type_ == pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64List;
        if list && text(a.name, a.name_size) == "coords" && !a.__bindgen_anon_1.int64_array_value.is_null() {
            return std::slice::from_raw_parts(a.__bindgen_anon_1.int64_array_value, a.value_size).to_vec();
        }
    }
    Vec::new()
}

/// `len` bytes at `ptr` as text (lossy); empty for a null pointer.
///
/// # Safety
/// `ptr` must be null or valid for `len` bytes.
unsafe fn text(ptr: *const std::ffi::c_char, len: usize) -> String {
    if ptr.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(ptr.cast::<u8>(), len)).into_owned()
}

/// A compiled, unloaded executable (destroyed on drop).
pub(crate) struct OwnedExecutable {
    raw: RawApi,
    ptr: *mut PJRT_Executable,
}

impl Drop for OwnedExecutable {
    fn drop(&mut self) {
        if let Some(f) = self.raw.table().PJRT_Executable_Destroy {
            let mut args = pjrt_sys::PJRT_Executable_Destroy_Args::new();
            args.executable = self.ptr;
            // SAFETY: ours, destroyed exactly once.
            let _ = self.raw.check(unsafe { f(&mut args) });
        }
    }
}

impl OwnedExecutable {
    /// The unloaded executable of the loaded executable `loaded` (a reference of its own,
    /// destroyed on drop).
    pub(crate) fn of_loaded(raw: RawApi, loaded: *mut pjrt_sys::PJRT_LoadedExecutable) -> std::result::Result<OwnedExecutable, String> {
        let f = raw.table().PJRT_LoadedExecutable_GetExecutable.ok_or("no PJRT_LoadedExecutable_GetExecutable")?;
        let mut args = pjrt_sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        args.loaded_executable = loaded;
        // SAFETY: live loaded executable; the plugin returns a new reference the caller owns.
        raw.check(unsafe { f(&mut args) })?;
        if args.executable.is_null() {
            return Err("the plugin returned no executable".into());
        }
        Ok(OwnedExecutable { raw, ptr: args.executable })
    }

    /// The plugin's serialization (an error, never a panic, where the plugin refuses: the
    /// `pjrt` crate's `serialize` panics then).
    pub(crate) fn serialize(&self) -> std::result::Result<Vec<u8>, String> {
        let f = self.raw.table().PJRT_Executable_Serialize.ok_or("no PJRT_Executable_Serialize")?;
        let mut args = pjrt_sys::PJRT_Executable_Serialize_Args::new();
        args.executable = self.ptr;
        // SAFETY: live executable; the bytes stay valid until the deleter runs below.
        self.raw.check(unsafe { f(&mut args) })?;
        let bytes = if args.serialized_bytes.is_null() {
            Vec::new()
        } else {
            // SAFETY: the plugin returned `serialized_bytes_size` bytes.
            unsafe { std::slice::from_raw_parts(args.serialized_bytes.cast::<u8>(), args.serialized_bytes_size) }.to_vec()
        };
        if let (Some(delete), false) = (args.serialized_executable_deleter, args.serialized_executable.is_null()) {
            // SAFETY: frees the serialization exactly once, after the copy above.
            unsafe { delete(args.serialized_executable) };
        }
        if bytes.is_empty() {
            return Err("the plugin serialized the executable to nothing".into());
        }
        Ok(bytes)
    }

    fn cost_analysis(&self) -> std::result::Result<CostAnalysis, String> {
        let f = self.raw.table().PJRT_Executable_GetCostAnalysis.ok_or("no PJRT_Executable_GetCostAnalysis")?;
        let mut args = pjrt_sys::PJRT_Executable_GetCostAnalysis_Args::new();
        args.executable = self.ptr;
        // SAFETY: live executable; the properties are owned by it.
        self.raw.check(unsafe { f(&mut args) })?;
        let mut properties = BTreeMap::new();
        if !args.properties.is_null() {
            // SAFETY: `num_properties` entries at `properties`.
            for p in unsafe { std::slice::from_raw_parts(args.properties, args.num_properties) } {
                // SAFETY: the name is `name_size` bytes; the union member read matches `type_`.
                let name = unsafe { text(p.name, p.name_size) };
                let value = unsafe {
                    match p.type_ {
                        pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64 => p.__bindgen_anon_1.int64_value as f64,
                        pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kFloat => f64::from(p.__bindgen_anon_1.float_value),
                        _ => continue,
                    }
                };
                properties.insert(name, value);
            }
        }
        Ok(CostAnalysis { properties })
    }
}

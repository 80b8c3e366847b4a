//! A PJRT client for one target: compiles MLIR, loads serialized executables, uploads tensors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::buffer::HostTensor;
use crate::view::HostView;
use crate::device::{cuda_preflight, tpu_preflight, DeviceKind, Target};
use crate::device_buffer::DeviceBuffer;
use crate::element::ElementType;
use crate::env::EnvConfig;
use crate::error::{guard, Error, Result};
use crate::executable::{self, CompileOptions, Executable, Program};
use crate::plugin::{self, RawApi};
use crate::share::{Lent, MemoryKind};

/// Source of [`Client`] ids, so buffers and executables can be checked against their owner.
static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

/// A PJRT client: a loaded plugin (`pjrt::Api`) and a client on it (`pjrt::Client`).
///
/// **Not `Send`/`Sync`**: `pjrt` 0.2.0 builds its client on `Rc`, and every [`Executable`]
/// and [`DeviceBuffer`] holds a reference to it. Use one client per thread (each compiles and
/// runs independently), or one owner thread that serves requests over a channel. Loading the
/// plugin is shared process-wide, so extra clients are cheap.
pub struct Client {
    target: Target,
    client: pjrt::Client,
    raw: RawApi,
    /// The raw client and its addressable devices (never empty; uploads go to the first
    /// unless a partitioned run says otherwise), for [`Client::upload_bytes`].
    raw_client: *mut pjrt_sys::PJRT_Client,
    devices: Vec<*mut pjrt_sys::PJRT_Device>,
    id: u64,
    api_version: (i32, i32),
    platform_name: String,
    platform_version: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("target", &self.target)
            .field("platform", &self.platform_name)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

/// The `PJRT_Client_Create` options fxhlo passes for `device`.
///
/// CPU: one device. fxhlo runs every executable on the client's first device, and the XLA CPU
/// plugin otherwise makes four and sizes its intra-op thread pool to at least the device
/// count: on a 2-core machine four pool threads and the caller fought over two cores (measured:
/// BERT-style encoder 15.8 -> 11.6 ms, ResNet-18 b1 52 -> 43 ms with one device). Other
/// plugins reject options they do not know, so they get none.
///
/// `cpu_devices` asks the CPU plugin for that many devices instead (SPMD runs over N devices).
fn client_options(device: DeviceKind, cpu_devices: usize) -> Vec<(&'static str, i64)> {
    match device {
        DeviceKind::Cpu => vec![("cpu_device_count", cpu_devices.max(1) as i64)],
        DeviceKind::Cuda | DeviceKind::Tpu => Vec::new(),
    }
}

impl Client {
    /// Loads the target's plugin and creates a client.
    ///
    /// For `tpu`, [`tpu_preflight`] runs first, so a machine without a TPU fails at once
    /// instead of hanging in `libtpu`; for `cuda`, [`cuda_preflight`]. Errors: the plugin file is missing, is not a PJRT
    /// plugin, has an incompatible C API version, or the plugin refuses to create a client.
    pub fn new(target: &Target) -> Result<Client> {
        Client::new_in(target, &EnvConfig::from_env())
    }

    /// [`Client::new`] with explicit settings (only the preflight's `tpu_force` and
    /// `dev_dir` are used).
    pub fn new_in(target: &Target, env: &EnvConfig) -> Result<Client> {
        Client::with_devices(target, env, 1)
    }

    /// [`Client::new_in`] with at least `devices` addressable devices: the CPU plugin is asked
    /// for that many; other plugins have the machine's, and fewer than `devices` is an error.
    pub fn with_devices(target: &Target, env: &EnvConfig, devices: usize) -> Result<Client> {
        match target.device {
            DeviceKind::Tpu => tpu_preflight(env)?,
            DeviceKind::Cuda => cuda_preflight(env)?,
            DeviceKind::Cpu => {}
        }
        let plugin = plugin::load(&target.plugin)?;
        let start = Instant::now();
        let create_error = |message: String| Error::ClientCreate {
            plugin: target.plugin.clone(),
            message,
        };
        let raw_client = plugin
            .raw
            .create_client(&client_options(target.device, devices))
            .map_err(create_error)?;
        // `wrap` takes ownership: the client is destroyed when the last `pjrt::Client` drops.
        let client = pjrt::Client::wrap(&plugin.api, raw_client);
        let all = plugin.raw.devices(raw_client).map_err(create_error)?;
        if all.len() < devices {
            return Err(create_error(format!(
                "{devices} devices were asked for, the plugin has {}",
                all.len()
            )));
        }
        let platform_name = guard("platform name", || client.platform_name().into_owned())?;
        let platform_version = guard("platform version", || {
            client.platform_version().into_owned()
        })?;
        tracing::debug!(
            target = %target,
            platform = %platform_name,
            version = %platform_version,
            elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
            "created PJRT client"
        );
        if !platform_name.eq_ignore_ascii_case(target.device.as_str()) {
            tracing::warn!(
                device = %target.device,
                platform = %platform_name,
                "the plugin's platform is not the device asked for"
            );
        }
        Ok(Client {
            target: target.clone(),
            client,
            raw: plugin.raw,
            raw_client,
            devices: all,
            id: NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed),
            api_version: plugin.version,
            platform_name,
            platform_version,
        })
    }

    /// The target this client was created for.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The plugin's platform name (`cpu`, `cuda`, `tpu`).
    pub fn platform_name(&self) -> String {
        self.platform_name.clone()
    }

    /// The plugin's platform version string.
    pub fn platform_version(&self) -> String {
        self.platform_version.clone()
    }

    /// How many devices the client addresses (fxhlo runs on the first; on the CPU plugin it
    /// asks for exactly one, see `client_options`).
    pub fn addressable_device_count(&self) -> usize {
        self.devices.len()
    }

    /// What the client's own topology description says (`PJRT_Client_TopologyDescription`),
    /// read as the ahead-of-time compiler reads a topology it describes by name: the fields
    /// the compile cache keys a TPU target by, so that a TPU VM finds what was compiled for
    /// its slice elsewhere. An error where the plugin has no such description.
    pub fn topology(&self) -> Result<crate::aot::TopologyInfo> {
        let fail = |message: String| Error::Pjrt { operation: "PJRT_Client_TopologyDescription", message };
        let f = self
            .raw
            .table()
            .PJRT_Client_TopologyDescription
            .ok_or_else(|| fail("the plugin does not implement it".into()))?;
        let mut args = pjrt_sys::PJRT_Client_TopologyDescription_Args::new();
        args.client = self.raw_client;
        // SAFETY: live client; the topology is owned by the client (never destroyed here).
        self.raw.check(unsafe { f(&mut args) }).map_err(fail)?;
        if args.topology.is_null() {
            return Err(fail("the plugin returned no topology".into()));
        }
        // SAFETY: the client's live topology, of this plugin.
        unsafe { crate::aot::TopologyInfo::read(self.raw, args.topology) }.map_err(fail)
    }

    /// The PJRT C API version the plugin implements, `(major, minor)`.
    pub fn api_version(&self) -> (i32, i32) {
        self.api_version
    }

    /// Compiles StableHLO (MLIR text, or a [`Program`] of bytecode) with default options (one
    /// replica, one partition).
    pub fn compile<'p>(&self, program: impl Into<Program<'p>>) -> Result<Executable> {
        self.compile_with_options(program, &CompileOptions::default())
    }

    /// Compiles StableHLO (MLIR text, or a [`Program`] of bytecode) into an executable loaded
    /// on this client's devices. A rejected program gives [`Error::Compile`] with the
    /// plugin's message.
    pub fn compile_with_options<'p>(&self, program: impl Into<Program<'p>>, options: &CompileOptions) -> Result<Executable> {
        let program = program.into();
        let start = Instant::now();
        let encoded = options.to_pjrt().encode();
        let loaded = self
            .raw
            .compile(self.raw_client, program.code, &encoded)
            .map_err(|message| Error::Compile { message })?;
        tracing::debug!(
            platform = %self.platform_name,
            mlir_bytes = program.code.len(),
            elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
            "compiled MLIR"
        );
        // With several partitions/replicas the parameters are per-shard shapes, not `@main`'s.
        let single_device = options.num_partitions == 1 && options.num_replicas == 1;
        let signature = if single_device { program.resolve_signature() } else { None };
        Executable::new(&self.client, loaded, self.raw, self.id, signature)
    }

    /// Deserializes an executable made by [`Executable::serialize`] (with a compatible plugin)
    /// and loads it on this client.
    pub fn load_serialized(&self, bytes: &[u8]) -> Result<Executable> {
        let start = Instant::now();
        let (signature, bytes) = executable::unwrap(bytes)?;
        let loaded = self
            .raw
            .deserialize_and_load(self.raw_client, bytes)
            .map_err(|message| Error::Deserialize { message })?;
        tracing::debug!(
            bytes = bytes.len(),
            elapsed_ms = start.elapsed().as_secs_f64() * 1e3,
            "loaded serialized executable"
        );
        Executable::new(&self.client, loaded, self.raw, self.id, signature)
    }

    /// Copies a host tensor to this client's first device (the tensor is validated first).
    pub fn upload(&self, t: &HostTensor) -> Result<DeviceBuffer> {
        self.upload_permuted(t, None)
    }

    /// [`Client::upload`] of `t` permuted by `perm` (the device tensor's dim `i` is `t`'s dim
    /// `perm[i]`, what [`HostTensor::permuted`] gives), gathered by the plugin while it copies
    /// instead of being made dense in that order first.
    pub fn upload_permuted(&self, t: &HostTensor, perm: Option<&[usize]>) -> Result<DeviceBuffer> {
        self.upload_permuted_to(0, t, perm)
    }

    /// [`Client::upload_permuted`] to the addressable device `device` (0 is the first).
    pub fn upload_permuted_to(&self, device: usize, t: &HostTensor, perm: Option<&[usize]>) -> Result<DeviceBuffer> {
        self.upload_view_to(device, &t.view()?.in_layout(perm)?)
    }

    /// Slice `index` of `t` split along `dim` into `parts` equal slices (a tensor-parallel
    /// shard), to the addressable device `device`: a strided view of `t`, so the plugin reads
    /// the slice while copying and nothing is copied on the host first.
    pub fn upload_shard_to(&self, device: usize, t: &HostTensor, dim: usize, parts: usize, index: usize) -> Result<DeviceBuffer> {
        self.upload_view_to(device, &t.view()?.shard(dim, parts, index)?)
    }

    /// Copies a strided view of host memory to the addressable device `device`; the plugin
    /// gathers the elements into its own layout as it copies (see [`HostView`]). Where the
    /// device's memory is host memory (the CPU plugin), a large strided view is gathered here
    /// instead, in tiles, into memory the device then views.
    pub fn upload_view_to(&self, device: usize, view: &HostView<'_>) -> Result<DeviceBuffer> {
        let target = self.device(device)?;
        let host = self.memory_kind(device) == Some(MemoryKind::Host);
        let ptr = upload_raw(self.raw, self.raw_client, target, host, view)?;
        Ok(self.wrap(ptr, view.element_type, view.dims.clone()))
    }

    /// Addressable device `device` (0 is the first), or an error naming how many there are.
    fn device(&self, device: usize) -> Result<*mut pjrt_sys::PJRT_Device> {
        self.devices.get(device).copied().ok_or_else(|| {
            Error::InvalidTensor(format!("device {device} does not exist: the client has {}", self.devices.len()))
        })
    }

    /// Takes ownership of a raw buffer this client's plugin made.
    fn wrap(&self, ptr: *mut pjrt_sys::PJRT_Buffer, element_type: ElementType, dims: Vec<i64>) -> DeviceBuffer {
        DeviceBuffer::new(pjrt::Buffer::wrap(&self.client, ptr), ptr, element_type, dims, self.raw, self.id)
    }

    /// The memory addressable device `device` computes on, as another library names it: host
    /// memory for the CPU plugin, the CUDA device of that ordinal for the CUDA plugin; `None`
    /// where no other library can address it (a TPU).
    pub fn memory_kind(&self, device: usize) -> Option<MemoryKind> {
        let &d = self.devices.get(device)?;
        match self.target.device {
            DeviceKind::Cpu => Some(MemoryKind::Host),
            DeviceKind::Cuda => self.raw.local_hardware_id(d).map(MemoryKind::Cuda),
            DeviceKind::Tpu => None,
        }
    }

    /// A buffer on the addressable device `device` that is a view of `lent`'s memory: no copy,
    /// the executable reads (and PyTorch may keep writing) the same memory. `Ok(Err(lent))`
    /// gives it back when this device cannot address it (other memory, or less aligned than
    /// [`crate::share::SHARE_ALIGNMENT`]): the caller copies it instead.
    pub fn share_to(&self, device: usize, lent: Lent) -> Result<std::result::Result<DeviceBuffer, Lent>> {
        if self.memory_kind(device) != Some(lent.memory) || !crate::share::shareable(lent.ptr) {
            return Ok(Err(lent));
        }
        let (element_type, dims) = (lent.element_type, lent.dims.clone());
        let ptr = self.raw.view_of_memory(self.raw_client, self.devices[device], lent)?;
        Ok(Ok(self.wrap(ptr, element_type, dims)))
    }

    /// [`Client::upload_view_to`] of every view in `views`, on up to as many threads as the
    /// machine has cores when there is enough to copy (a model's weights on its first call):
    /// gathering a permuted view (a weight in the layout the device's kernels take) runs at
    /// memory speed on one core, so it scales with cores. The buffers come back in the
    /// order of `views`; the first error, if any, after every upload has finished (the
    /// buffers made are destroyed).
    pub fn upload_views_to(&self, device: usize, views: &[HostView<'_>]) -> Result<Vec<DeviceBuffer>> {
        /// Below this many bytes in all, one thread: starting threads would cost more.
        const PARALLEL_BYTES: usize = 8 << 20;
        /// The machine's cores, read once: `available_parallelism` reads cgroup files on every
        /// call (tens of µs, more than a small graph's whole call).
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let total: usize = views.iter().map(|v| v.bytes.len()).sum();
        // The size first: the core count is not even asked for a small graph's call.
        let threads = if views.len() < 2 || total < PARALLEL_BYTES {
            1
        } else {
            (*CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))).min(views.len())
        };
        if threads < 2 {
            return views.iter().map(|v| self.upload_view_to(device, v)).collect();
        }
        let target = self.device(device)?;
        /// The raw handles a worker needs: the C API is thread-safe, and the client and device
        /// outlive the scope below.
        #[derive(Clone, Copy)]
        struct Handles(RawApi, *mut pjrt_sys::PJRT_Client, *mut pjrt_sys::PJRT_Device);
        // SAFETY: see above; the pointers are only passed to the plugin's thread-safe calls.
        unsafe impl Send for Handles {}
        unsafe impl Sync for Handles {}
        /// A buffer made on a worker, owned by the caller once the scope ends.
        struct Made(Result<*mut pjrt_sys::PJRT_Buffer>);
        // SAFETY: a raw buffer handed from the worker to the caller, used by one at a time.
        unsafe impl Send for Made {}
        let host = self.memory_kind(device) == Some(MemoryKind::Host);
        let handles = Handles(self.raw, self.raw_client, target);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut made: Vec<Option<Made>> = (0..views.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let (next, handles) = (&next, &handles);
                    scope.spawn(move || {
                        let Handles(raw, client, device) = *handles;
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(v) = views.get(i) else { break };
                            mine.push((i, Made(upload_raw(raw, client, device, host, v))));
                        }
                        mine
                    })
                })
                .collect();
            for worker in workers {
                // A worker that panicked leaves its slots empty: reported below.
                for (i, m) in worker.join().unwrap_or_default() {
                    made[i] = Some(m);
                }
            }
        });
        let mut buffers = Vec::with_capacity(views.len());
        let mut first_error = None;
        for (slot, v) in made.into_iter().zip(views) {
            match slot.map(|m| m.0) {
                Some(Ok(ptr)) => buffers.push(self.wrap(ptr, v.element_type, v.dims.clone())),
                Some(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                None => {
                    first_error.get_or_insert(Error::Transfer { direction: "host-to-device", message: "an upload thread panicked".into() });
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(buffers),
        }
    }

    /// Copies a dense row-major tensor, given as its bytes, to this client's first device.
    /// The bytes are read once, during the call (no staging copy): the caller may reuse them
    /// as soon as this returns. `bytes.len()` must be the dense size of `dims`. Booleans are
    /// one byte each and must be 0 or 1.
    pub fn upload_bytes(&self, element_type: ElementType, dims: &[i64], bytes: &[u8]) -> Result<DeviceBuffer> {
        self.upload_strided(element_type, dims, None, bytes)
    }

    /// [`Client::upload_bytes`] of a strided view: with `byte_strides`, element `i` is at
    /// `sum(i[k] * byte_strides[k])` in `bytes`, and the plugin gathers it into its own layout
    /// as it copies (one pass, instead of making the view dense first). Checked to stay inside
    /// `bytes`.
    pub fn upload_strided(
        &self,
        element_type: ElementType,
        dims: &[i64],
        byte_strides: Option<&[i64]>,
        bytes: &[u8],
    ) -> Result<DeviceBuffer> {
        self.upload_strided_to(0, element_type, dims, byte_strides, bytes)
    }

    /// [`Client::upload_strided`] to the addressable device `device` (0 is the first).
    pub fn upload_strided_to(
        &self,
        device: usize,
        element_type: ElementType,
        dims: &[i64],
        byte_strides: Option<&[i64]>,
        bytes: &[u8],
    ) -> Result<DeviceBuffer> {
        let ptr = self.raw.buffer_from_host(self.raw_client, self.device(device)?, element_type, dims, byte_strides, bytes)?;
        Ok(self.wrap(ptr, element_type, dims.to_vec()))
    }
}

/// One view uploaded to `device`: where the device's memory is host memory (`host`: the CPU
/// plugin) and the view is strided and large, gathered on the host into memory the plugin views
/// (the plugin's own strided copy runs after the call returns and the next execution waits for
/// it: see the gather module); else copied by the plugin. Callable from any thread (the C API
/// is thread-safe): [`Client::upload_views_to`]'s workers and [`Client::upload_view_to`].
fn upload_raw(
    raw: RawApi,
    client: *mut pjrt_sys::PJRT_Client,
    device: *mut pjrt_sys::PJRT_Device,
    host: bool,
    view: &HostView<'_>,
) -> Result<*mut pjrt_sys::PJRT_Buffer> {
    if host && crate::gather::worth_gathering(view) {
        return crate::gather::gather(view).and_then(|lent| raw.view_of_memory(client, device, lent));
    }
    raw.buffer_from_host(client, device, view.element_type, &view.dims, view.byte_strides.as_deref(), &view.bytes)
}

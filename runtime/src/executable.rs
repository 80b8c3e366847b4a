//! Loaded executables: compile options, running on device buffers, serialization.

use std::time::Instant;

use pjrt_sys::{PJRT_Buffer, PJRT_Client, PJRT_LoadedExecutable};
use smallvec::SmallVec;

use crate::device_buffer::DeviceBuffer;
use crate::element::ElementType;
use crate::error::{guard, Error, Result};
use crate::plugin::RawApi;
use crate::signature::Signature;

/// Options for [`crate::Client::compile_with_options`]; the defaults match `compile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileOptions {
    /// Replicas (data-parallel copies); 1 by default.
    pub num_replicas: i64,
    /// Partitions (SPMD shards); 1 by default. [`Executable::run`] runs single-device
    /// executables only; more partitions compile but need a multi-device run.
    pub num_partitions: i64,
    /// Partition with SPMD when `num_partitions > 1`.
    pub use_spmd_partitioning: bool,
    /// Partition with Shardy (from `sdy.sharding` annotations and an `sdy.mesh`) instead of
    /// GSPMD's `mhlo.sharding` (XLA is retiring GSPMD propagation).
    pub use_shardy_partitioner: bool,
    /// XLA writes the HLO it compiles (before and after its optimizations, as text) into this
    /// folder (`xla_dump_to`, `xla_dump_hlo_as_text`). Sent as option overrides, which the
    /// plugin applies over its default debug options: the executable is the one it would
    /// build without them.
    pub xla_dump_to: Option<std::path::PathBuf>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            num_replicas: 1,
            num_partitions: 1,
            use_spmd_partitioning: false,
            use_shardy_partitioner: false,
            xla_dump_to: None,
        }
    }
}

impl CompileOptions {
    /// One replica over `partitions` devices, partitioned by XLA's SPMD partitioner from the
    /// module's Shardy annotations (`partitions <= 1`: the defaults, one device).
    pub fn partitioned(partitions: usize) -> CompileOptions {
        CompileOptions {
            num_partitions: partitions.max(1) as i64,
            use_spmd_partitioning: partitions > 1,
            use_shardy_partitioner: partitions > 1,
            ..CompileOptions::default()
        }
    }

    /// The `pjrt` options (XLA `CompileOptionsProto`) these stand for.
    pub(crate) fn to_pjrt(&self) -> pjrt::CompileOptions {
        let mut options = pjrt::CompileOptions::new();
        if let Some(build) = options.proto_mut().executable_build_options.as_mut() {
            build.num_replicas = self.num_replicas;
            build.num_partitions = self.num_partitions;
            build.use_spmd_partitioning = self.use_spmd_partitioning;
            build.use_shardy_partitioner = self.use_shardy_partitioner;
        }
        if let Some(dir) = &self.xla_dump_to {
            use pjrt_sys::protos::xla::option_override_proto::Value;
            use pjrt_sys::protos::xla::OptionOverrideProto;
            let overrides = &mut options.proto_mut().env_option_overrides;
            let mut set = |name: &str, value: Value| {
                overrides.insert(name.to_string(), OptionOverrideProto { value: Some(value) });
            };
            set("xla_dump_to", Value::StringField(dir.to_string_lossy().into_owned()));
            set("xla_dump_hlo_as_text", Value::BoolField(true));
        }
        options
    }
}

/// A compiled program loaded on a [`crate::Client`]'s devices (not `Send`, like the client).
pub struct Executable {
    /// Owns the executable (destroys it on drop).
    loaded: pjrt::LoadedExecutable,
    /// `loaded`'s raw pointer: [`Executable::run`] calls the C API itself, because `pjrt`'s
    /// execute asks the plugin for the output count on every call (the CPU plugin rebuilds the
    /// HLO module's shapes and debug options for it: a third of a small call's time).
    ptr: *mut PJRT_LoadedExecutable,
    /// Results of `main`, asked once.
    num_outputs: usize,
    raw: RawApi,
    client_id: u64,
    signature: Option<Signature>,
    /// Whether the module may mark a parameter donated (`tf.aliasing_output`,
    /// `jax.buffer_donor`): then every run names all arguments non-donatable, so that none is
    /// consumed. Assumed until the loader says otherwise ([`Executable::set_may_donate`]): the
    /// plugin turns that list into a hash set on every run.
    may_donate: bool,
    /// Whether every run's outputs have the same element types and dims (static shapes, as
    /// all of fxhlo's modules: [`Executable::set_static_outputs`]): then they are read from the
    /// plugin on the first run only and kept in `output_types`.
    static_outputs: bool,
    output_types: std::cell::OnceCell<Vec<(ElementType, Vec<i64>)>>,
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable").finish_non_exhaustive()
    }
}

/// A program for the PJRT compiler: MLIR as text or as bytecode (PJRT's `mlir` format takes
/// either), and where `@main`'s parameter types come from, so that runs are checked against them.
#[derive(Debug, Clone, Copy)]
pub struct Program<'a> {
    /// What the plugin parses: MLIR text or bytecode.
    pub code: &'a [u8],
    /// `@main`'s parameters.
    pub signature: ProgramSignature<'a>,
}

/// Where a [`Program`]'s parameter types come from.
#[derive(Debug, Clone, Copy)]
pub enum ProgramSignature<'a> {
    /// Given by the caller, who built the module and knows its types (fxhlo's own lowering).
    Typed(&'a Signature),
    /// Read from custom-form MLIR text (a module from a file); unreadable text is not checked.
    FromText(&'a str),
    /// Not known: only the plugin checks the arguments.
    Unknown,
}

impl<'a> Program<'a> {
    /// Bytecode (or text) whose parameter types the caller gives.
    pub fn typed(code: &'a [u8], signature: &'a Signature) -> Program<'a> {
        Program { code, signature: ProgramSignature::Typed(signature) }
    }

    /// The signature to check runs against, when known.
    pub(crate) fn resolve_signature(&self) -> Option<Signature> {
        match self.signature {
            ProgramSignature::Typed(s) => Some(s.clone()),
            ProgramSignature::FromText(text) => Signature::from_mlir(text),
            ProgramSignature::Unknown => None,
        }
    }
}

impl<'a> From<&'a str> for Program<'a> {
    /// A program of MLIR text (its `@main` signature read from it).
    fn from(text: &'a str) -> Program<'a> {
        Program { code: text.as_bytes(), signature: ProgramSignature::FromText(text) }
    }
}

impl<'a> From<&'a String> for Program<'a> {
    fn from(text: &'a String) -> Program<'a> {
        Program::from(text.as_str())
    }
}

/// A `PJRT_Program` of MLIR text or bytecode; it points into `code`, which must outlive its
/// use.
pub(crate) fn mlir_program(code: &[u8]) -> pjrt_sys::PJRT_Program {
    const FORMAT: &str = "mlir";
    let mut program = pjrt_sys::PJRT_Program::new();
    program.code = code.as_ptr() as *mut std::ffi::c_char;
    program.code_size = code.len();
    program.format = FORMAT.as_ptr().cast();
    program.format_size = FORMAT.len();
    program
}

impl RawApi {
    /// `PJRT_Client_Compile` of MLIR text with encoded `CompileOptionsProto` bytes.
    pub(crate) fn compile(
        &self,
        client: *mut PJRT_Client,
        mlir: &[u8],
        options: &[u8],
    ) -> std::result::Result<*mut PJRT_LoadedExecutable, String> {
        let f = self.table().PJRT_Client_Compile.ok_or("the plugin does not implement PJRT_Client_Compile")?;
        let program = mlir_program(mlir);
        let mut args = pjrt_sys::PJRT_Client_Compile_Args::new();
        args.client = client;
        args.program = &program;
        args.compile_options = options.as_ptr().cast();
        args.compile_options_size = options.len();
        // SAFETY: `client` is live; program text, format and options outlive the call (the
        // plugin copies what it keeps).
        self.check(unsafe { f(&mut args) })?;
        if args.executable.is_null() {
            return Err("the plugin returned no executable".into());
        }
        Ok(args.executable)
    }

    /// `PJRT_Executable_DeserializeAndLoad` of a plugin's serialized executable.
    pub(crate) fn deserialize_and_load(
        &self,
        client: *mut PJRT_Client,
        bytes: &[u8],
    ) -> std::result::Result<*mut PJRT_LoadedExecutable, String> {
        let f = self
            .table()
            .PJRT_Executable_DeserializeAndLoad
            .ok_or("the plugin does not implement PJRT_Executable_DeserializeAndLoad")?;
        let mut args = pjrt_sys::PJRT_Executable_DeserializeAndLoad_Args::new();
        args.client = client;
        args.serialized_executable = bytes.as_ptr().cast();
        args.serialized_executable_size = bytes.len();
        // SAFETY: `client` is live and `bytes` outlives the call.
        self.check(unsafe { f(&mut args) })?;
        if args.loaded_executable.is_null() {
            return Err("the plugin returned no executable".into());
        }
        Ok(args.loaded_executable)
    }

    /// Runs `exe` with one argument list per device (`args[d]` for device `d`; one list for a
    /// single-device executable), none donated (named so where the module `may_donate`), and
    /// waits until it is done. Returns `num_outputs` buffers per device, device after device in
    /// one list. A single-device call allocates only that list (and the non-donation indices
    /// where the module may donate), as before partitioned runs existed: it is the hot path.
    fn execute(
        &self,
        exe: *mut PJRT_LoadedExecutable,
        args: &[&[*mut PJRT_Buffer]],
        num_outputs: usize,
        may_donate: bool,
    ) -> std::result::Result<Vec<*mut PJRT_Buffer>, String> {
        let f = self
            .table()
            .PJRT_LoadedExecutable_Execute
            .ok_or("the plugin does not implement PJRT_LoadedExecutable_Execute")?;
        let num_args = args.first().map_or(0, |a| a.len());
        if args.iter().any(|a| a.len() != num_args) {
            return Err("every device needs the same number of arguments".into());
        }
        // Every argument named non-donatable where the module may donate one (an empty list
        // does not allocate: fxhlo's modules donate nothing, and this is the hot path).
        let keep: Vec<i64> = if may_donate { (0..num_args as i64).collect() } else { Vec::new() };
        let mut options = pjrt_sys::PJRT_ExecuteOptions::new();
        if may_donate {
            options.non_donatable_input_indices = keep.as_ptr();
            options.num_non_donatable_input_indices = keep.len();
        }
        let mut outputs: Vec<*mut PJRT_Buffer> = vec![std::ptr::null_mut(); num_outputs * args.len()];
        // Per-device lists: on the stack for one device, else in vectors.
        let (one_arg, one_out, mut one_done);
        let (many_args, many_outs, mut many_done): (Vec<_>, Vec<_>, Vec<_>);
        let (argument_lists, output_lists, done): (&[*const *mut PJRT_Buffer], &[*mut *mut PJRT_Buffer], &mut [*mut pjrt_sys::PJRT_Event]) =
            if args.len() == 1 {
                one_arg = [args[0].as_ptr()];
                one_out = [outputs.as_mut_ptr()];
                one_done = [std::ptr::null_mut()];
                (&one_arg, &one_out, &mut one_done)
            } else {
                many_args = args.iter().map(|a| a.as_ptr()).collect();
                many_outs = outputs.chunks_mut(num_outputs.max(1)).map(|o| o.as_mut_ptr()).collect();
                many_done = vec![std::ptr::null_mut(); args.len()];
                (&many_args, &many_outs, &mut many_done)
            };
        let mut call = pjrt_sys::PJRT_LoadedExecutable_Execute_Args::new();
        call.executable = exe;
        call.options = &mut options;
        call.num_devices = args.len();
        call.num_args = num_args;
        call.argument_lists = argument_lists.as_ptr();
        call.output_lists = output_lists.as_ptr();
        // The outputs' ready events say when the execution is done (they are its end): the
        // completion events are asked for only where there is no output to wait on. (Asking
        // for them costs the CPU plugin a future per call, a tenth of a small graph's call.)
        if num_outputs == 0 {
            call.device_complete_events = done.as_mut_ptr();
        }
        // SAFETY: `exe` and every argument buffer are live on one client; there is one argument
        // list of `num_args` and one output list of `num_outputs` entries (the output count the
        // plugin reported for `exe`) per device, and one event slot per device, all outliving
        // the call.
        self.check(unsafe { f(&mut call) })?;
        let mut finished = Ok(());
        for &event in done.iter() {
            let r = self.await_event(event);
            if finished.is_ok() {
                finished = r;
            }
        }
        if outputs.iter().any(|p| p.is_null()) {
            for &p in outputs.iter().filter(|p| !p.is_null()) {
                self.destroy_buffer(p);
            }
            return Err(finished.err().unwrap_or_else(|| {
                "the plugin returned fewer outputs than the executable has".into()
            }));
        }
        // Done when this returns (the outputs are read at once, and the inputs' memory may be
        // the caller's): without completion events, through the outputs.
        if finished.is_ok() && done.iter().any(|e| e.is_null()) {
            finished = outputs.iter().try_for_each(|&p| self.await_ready(p));
        }
        if let Err(message) = finished {
            for &p in &outputs {
                self.destroy_buffer(p);
            }
            return Err(message);
        }
        Ok(outputs)
    }
}

impl Executable {
    /// Takes ownership of the raw `ptr`, a loaded executable of `client`.
    pub(crate) fn new(
        client: &pjrt::Client,
        ptr: *mut PJRT_LoadedExecutable,
        raw: RawApi,
        client_id: u64,
        signature: Option<Signature>,
    ) -> Result<Executable> {
        let loaded = pjrt::LoadedExecutable::wrap(client, ptr);
        let num_outputs = guard("executable outputs", || loaded.executable().num_outputs())?;
        Ok(Executable {
            loaded,
            ptr,
            num_outputs,
            raw,
            client_id,
            signature,
            may_donate: true,
            static_outputs: false,
            output_types: std::cell::OnceCell::new(),
        })
    }

    /// Says that every run's outputs have the same element types and dims (a module without
    /// dynamic shapes): the plugin is asked for them on the first run only (two calls per
    /// output per run otherwise).
    pub fn set_static_outputs(&mut self, static_outputs: bool) {
        self.static_outputs = static_outputs;
    }

    /// Says whether the module may mark a parameter donated; one that does not (fxhlo's own
    /// modules never do) runs without the non-donation list.
    pub fn set_may_donate(&mut self, may_donate: bool) {
        self.may_donate = may_donate;
    }

    /// Runs on one device with `args` (in the order of the `main` function's parameters) and
    /// waits for the results, one buffer per result of `main`. The arguments are not donated.
    ///
    /// Wrong argument counts, element types or shapes give [`Error::Execute`]: checked here
    /// against `@main`'s signature when it is known (see [`crate::signature`]; the CPU plugin
    /// itself only checks count and byte size), otherwise by the plugin.
    pub fn run(&self, args: &[&DeviceBuffer]) -> Result<Vec<DeviceBuffer>> {
        // Timed only for the trace: a clock read is a noticeable share of a small graph's call.
        let start = tracing::enabled!(tracing::Level::TRACE).then(Instant::now);
        if let Some(signature) = &self.signature {
            signature.check(args)?;
        }
        let ptrs = self.raw_args(args)?;
        let outputs = self
            .raw
            .execute(self.ptr, &[ptrs.as_slice()], self.num_outputs, self.may_donate)
            .map_err(|message| Error::Execute { message })?;
        let results = self.wrap_outputs(outputs)?;
        tracing::trace!(
            args = args.len(),
            results = results.len(),
            elapsed_us = start.map_or(0.0, |s| s.elapsed().as_secs_f64() * 1e6),
            "ran executable"
        );
        Ok(results)
    }

    /// Runs a partitioned (SPMD) executable: `args[d]` are device `d`'s arguments (each its
    /// shard of a split parameter, or the whole of a replicated one), one list per partition,
    /// uploaded to that device. Returns each device's results.
    pub fn run_partitioned(&self, args: &[Vec<&DeviceBuffer>]) -> Result<Vec<Vec<DeviceBuffer>>> {
        let ptrs = args.iter().map(|list| self.raw_args(list)).collect::<Result<Vec<_>>>()?;
        let lists: Vec<&[*mut PJRT_Buffer]> = ptrs.iter().map(|p| p.as_slice()).collect();
        let outputs = self
            .raw
            .execute(self.ptr, &lists, self.num_outputs, self.may_donate)
            .map_err(|message| Error::Execute { message })?;
        let mut results = self.wrap_outputs(outputs)?.into_iter();
        Ok((0..args.len()).map(|_| results.by_ref().take(self.num_outputs).collect()).collect())
    }

    /// The raw buffers of `args`, which must belong to this executable's client.
    fn raw_args(&self, args: &[&DeviceBuffer]) -> Result<SmallVec<[*mut PJRT_Buffer; 8]>> {
        args.iter()
            .map(|arg| {
                if arg.client_id() == self.client_id {
                    Ok(arg.raw_ptr())
                } else {
                    Err(Error::ForeignObject("an argument buffer"))
                }
            })
            .collect()
    }

    /// Takes ownership of raw output buffers: every one is wrapped (owned) before any can
    /// fail, so none leaks.
    fn wrap_outputs(&self, outputs: Vec<*mut PJRT_Buffer>) -> Result<Vec<DeviceBuffer>> {
        let client = self.loaded.client();
        let owned: SmallVec<[pjrt::Buffer; 4]> = outputs.into_iter().map(|p| pjrt::Buffer::wrap(client, p)).collect();
        let known = self.output_types.get().filter(|t| t.len() == owned.len());
        let wrapped = owned
            .into_iter()
            .enumerate()
            .map(|(i, b)| DeviceBuffer::from_output(b, &self.raw, self.client_id, known.map(|t| &t[i])))
            .collect::<Result<Vec<_>>>()?;
        if self.static_outputs && known.is_none() {
            let _ = self.output_types.set(wrapped.iter().map(|b| (b.element_type(), b.dims().to_vec())).collect());
        }
        Ok(wrapped)
    }

    /// The executable's bytes, for [`crate::Client::load_serialized`] with the same plugin.
    ///
    /// Format: when the signature of `@main` is known, an envelope `FXHLOEXE`, version byte
    /// `1`, u32 little-endian length, the signature text, then the plugin's serialized
    /// executable; otherwise the plugin's bytes alone. `load_serialized` accepts both.
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let payload = crate::aot::OwnedExecutable::of_loaded(self.raw, self.ptr)
            .and_then(|exe| exe.serialize())
            .map_err(|message| Error::Serialize { message })?;
        Ok(match &self.signature {
            Some(signature) => wrap(&signature.encode(), &payload),
            None => payload,
        })
    }
}

/// First bytes of a serialized executable with a signature envelope.
const MAGIC: &[u8; 8] = b"FXHLOEXE";
/// The envelope layout version.
const ENVELOPE_VERSION: u8 = 1;

/// `MAGIC, version, u32 LE len, signature, payload`.
fn wrap(signature: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 5 + signature.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(ENVELOPE_VERSION);
    out.extend_from_slice(&(signature.len() as u32).to_le_bytes());
    out.extend_from_slice(signature.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// Splits serialized bytes into the signature (if enveloped) and the plugin's payload.
pub(crate) fn unwrap(bytes: &[u8]) -> Result<(Option<Signature>, &[u8])> {
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return Ok((None, bytes));
    };
    let bad = |what: &str| Error::Deserialize {
        message: format!("fxhlo executable envelope: {what}"),
    };
    let (&version, rest) = rest.split_first().ok_or_else(|| bad("truncated"))?;
    if version != ENVELOPE_VERSION {
        return Err(bad(&format!(
            "version {version}, this runtime reads {ENVELOPE_VERSION}"
        )));
    }
    let (len, rest) = rest.split_at_checked(4).ok_or_else(|| bad("truncated"))?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let (text, payload) = rest.split_at_checked(len).ok_or_else(|| bad("truncated"))?;
    let text = std::str::from_utf8(text).map_err(|_| bad("signature is not UTF-8"))?;
    let signature = Signature::decode(text).ok_or_else(|| bad("unreadable signature"))?;
    Ok((Some(signature), payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip() {
        let bytes = wrap("f32[2];i1[]", b"payload");
        let (sig, payload) = unwrap(&bytes).unwrap_or((None, b""));
        assert_eq!(sig.map(|s| s.encode()).as_deref(), Some("f32[2];i1[]"));
        assert_eq!(payload, b"payload");
        let (sig, payload) = unwrap(b"raw pjrt").unwrap_or((None, b""));
        assert!(sig.is_none());
        assert_eq!(payload, b"raw pjrt");
        for bad in [&bytes[..9], &bytes[..12], b"FXHLOEXE\x02rest"] {
            assert!(unwrap(bad).is_err());
        }
    }
}

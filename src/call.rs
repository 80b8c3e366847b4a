//! Calling a [`Compiled`] graph: the one call path of the CLI, Rust users and the Python bridge.
//! A call checks its arguments against the signature, gives the device the user inputs, keeps
//! weights resident on the device (given again only when their [`WeightStamp`] changes), adds
//! the bound parameters, runs, and takes the index checks off the outputs. An argument in
//! memory the device addresses (a dense CPU tensor on the CPU plugin, a CUDA tensor on the
//! CUDA plugin: [`CallArgs::lend`]) is shared, the buffer a view of it; any other is uploaded. The caller says where
//! each argument's memory is through [`CallArgs`], read lazily: a resident weight is not read at
//! all. The two halves, [`Compiled::prepare`] (uploads) and [`Call::execute`] (runs), are
//! separate so that a caller can run without holding a lock it needs for reading (Python's GIL).

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fxhlo_frontend::Bundle;
use fxhlo_ir::InputKind;
use fxhlo_runtime::{DeviceBuffer, ElementType, Executable, HostTensor, HostView, Lent, MemoryKind};
use smallvec::SmallVec;

use crate::cache::Tier;
use crate::pipeline::{InputSignature, Lowered};
use crate::resident::{LentView, ResidentWeights, WeightStamp};
use crate::session::Session;
use crate::tensor::{element_type, host_tensor};
use crate::{Error, Result};

/// A compiled graph loaded on one session's device: the executable, the module it came from
/// (shared: another thread loads the same module from it) and its signature.
pub struct Compiled {
    /// What was lowered: the module, its key, its parameters and index checks. Any thread may
    /// hold it; [`Session::load`] makes a `Compiled` of it on another session.
    pub lowered: Arc<Lowered>,
    /// The executable, loaded on the session's client.
    pub executable: Executable,
    /// The inputs the caller passes, in calling order.
    pub inputs: Vec<InputSignature>,
    /// The executable's parameters whose values the compile bound (large frozen weights the
    /// `hoist-large-constants` pass made parameters), with their positions among its
    /// parameters.
    pub bound: Vec<(usize, InputSignature)>,
    /// The bound values on the device, one list per device: uploaded once, when loaded.
    pub bound_buffers: Vec<Vec<DeviceBuffer>>,
    /// Where the executable came from: `None` when PJRT compiled it, else the cache tier.
    pub cached: Option<Tier>,
    /// Time spent in the passes and codegen (zero when loaded from a [`Lowered`]).
    pub codegen_time: Duration,
    /// Time spent in the PJRT compiler, or loading the executable from the cache.
    pub compile_time: Duration,
    /// Calls prepared so far, counted up to 2 (the second call on the CPU plugin counts its
    /// page faults: `fault_hint`).
    pub(crate) calls: AtomicU64,
}

/// The arguments of one call, in the order of [`Compiled::inputs`], read only when needed.
pub trait CallArgs {
    /// How many there are.
    fn count(&self) -> usize;

    /// Input `i`'s stamp when the session may keep it on the device (a weight): while the
    /// stamp stays the same it is not read again. `None`: uploaded on every call.
    fn stamp(&self, i: usize, sig: &InputSignature) -> Result<Option<WeightStamp>>;

    /// Input `i`'s memory, for an upload (checked against `sig` by the call).
    fn view(&self, i: usize, sig: &InputSignature) -> Result<Arg<'_>>;

    /// Input `i`'s memory lent to the device without a copy, when the caller can lend it: a
    /// dense tensor of `sig`'s type in memory the session's device may address (checked by
    /// the call; memory it cannot address is copied through [`CallArgs::view`]). The lent
    /// memory's `owner` may be left empty (`Box::new(())`): the arguments outlive the call,
    /// and where the device may read the memory after the call returns (a buffer kept for
    /// later calls, or work still queued on a stream) the call asks [`CallArgs::owner`]. The
    /// default lends nothing.
    fn lend(&self, _i: usize, _sig: &InputSignature) -> Result<Option<Lent>> {
        Ok(None)
    }

    /// What keeps input `i`'s source alive while the session or the device holds on to its
    /// memory (a kept weight, so that the identity in its stamp cannot be reused by another
    /// object; a view the device may read after the call returns).
    fn owner(&self, _i: usize) -> Box<dyn Any + Send> {
        Box::new(())
    }
}

/// One argument's memory: a view, and whatever must live while it is read.
pub struct Arg<'a> {
    /// The view of the input as the graph sees it (its logical dims).
    pub view: HostView<'a>,
    /// Keeps the memory of `view` alive (a temporary copy of the caller's tensor, say).
    pub keep: Option<Box<dyn Keep + 'a>>,
}

/// Anything an [`Arg`] holds only to keep it alive until its upload is done.
pub trait Keep {}
impl<T> Keep for T {}

impl CallArgs for &[(&HostTensor, Option<WeightStamp>)] {
    fn count(&self) -> usize {
        self.len()
    }

    fn stamp(&self, i: usize, _sig: &InputSignature) -> Result<Option<WeightStamp>> {
        Ok(self.get(i).and_then(|(_, s)| *s))
    }

    fn view(&self, i: usize, sig: &InputSignature) -> Result<Arg<'_>> {
        let (t, _) = self.get(i).ok_or_else(|| Error::Input(format!("no argument for input `{}`", sig.name)))?;
        Ok(Arg { view: t.view()?, keep: None })
    }
}

/// Where a call's input is on the device.
enum Input {
    /// A buffer made for this call (uploaded, or a view of lent memory the plugin owns).
    Fresh(DeviceBuffer),
    /// A weight kept on the device ([`ResidentWeights::buffer`]).
    Kept,
    /// A kept view of lent host memory ([`ResidentWeights::view`]).
    View,
}

/// A call whose inputs are on the device, ready to run ([`Compiled::prepare`]).
pub struct Call<'c> {
    compiled: &'c Compiled,
    weights: &'c ResidentWeights,
    /// Per device, per input: where it is.
    inputs: Vec<Vec<Input>>,
    /// The arguments outlive the call: the memory read through kept views (which hold no
    /// owner) stays alive until the execution is done.
    _args: std::marker::PhantomData<&'c dyn CallArgs>,
    /// Parameters, buffers and constants uploaded by this call (kept for the next ones when
    /// they have a stamp).
    pub weight_uploads: u64,
    /// User inputs uploaded by this call.
    pub input_uploads: u64,
    /// Parameters, buffers and constants this call gave the device as views of the caller's
    /// memory (no copy; kept for the next calls like uploaded ones).
    pub weight_shares: u64,
    /// User inputs this call gave the device as views of the caller's memory (no copy).
    pub input_shares: u64,
    /// Of those, the ones read through the view the call before made of the same memory.
    pub views_reused: u64,
    /// Whether this call counts the page faults of its execution (`fault_hint`).
    probe_faults: bool,
}

impl Compiled {
    /// The graph's name.
    pub fn graph(&self) -> &str {
        &self.lowered.graph
    }

    /// Checks `args` against the signature and gives the device what it does not hold: user
    /// inputs every call, weights (with a stamp) when `weights` holds no buffer of that
    /// stamp; each shared where the caller lends memory the device addresses, else uploaded
    /// (the uploads of one call together, on several threads when there is much to copy: a
    /// model's weights on its first call). With a tensor-parallel plan, device `d` gets the
    /// `d`-th slice of each split input and all of the others, uploaded every call (no
    /// residency across devices yet).
    pub fn prepare<'c>(&'c self, session: &Session, weights: &'c mut ResidentWeights, args: &'c dyn CallArgs) -> Result<Call<'c>> {
        if args.count() != self.inputs.len() {
            return Err(Error::Input(format!(
                "graph `{}` takes {} inputs, got {}",
                self.graph(),
                self.inputs.len(),
                args.count()
            )));
        }
        let devices = self.bound_buffers.len().max(1);
        let client = session.client();
        let mut inputs: Vec<Vec<Input>> = (0..devices).map(|_| Vec::with_capacity(self.inputs.len())).collect();
        let (mut weight_uploads, mut input_uploads, mut weight_shares, mut input_shares, mut views_reused) = (0, 0, 0, 0, 0);
        // One device: the inputs to copy, uploaded together after the loop.
        let mut pending: Vec<(usize, Option<WeightStamp>, Arg<'_>)> = Vec::new();
        for (i, sig) in self.inputs.iter().enumerate() {
            let stamp = if devices == 1 { args.stamp(i, sig)? } else { None };
            if weights.hit(i, stamp).is_some() {
                inputs[0].push(Input::Kept);
                continue;
            }
            if let Some((input, reused)) = share(session, sig, devices, args, stamp.is_none(), weights, i)? {
                views_reused += u64::from(reused);
                if sig.kind == InputKind::UserInput {
                    input_shares += 1;
                } else {
                    weight_shares += 1;
                }
                match (stamp, input) {
                    (Some(stamp), Input::Fresh(buffer)) => {
                        weights.keep(i, stamp, buffer, args.owner(i));
                        inputs[0].push(Input::Kept);
                    }
                    (_, input) => inputs[0].push(input),
                }
                continue;
            }
            let arg = args.view(i, sig)?;
            check(sig, arg.view.element_type, &arg.view.dims)?;
            if sig.kind == InputKind::UserInput {
                input_uploads += 1;
            } else {
                weight_uploads += 1;
            }
            if devices == 1 {
                // Uploaded together below (in parallel when there is much to copy).
                inputs[0].push(Input::Kept);
                pending.push((i, stamp, arg));
                continue;
            }
            // Several devices: each gets its slice of a split input, or all of it.
            for (d, list) in inputs.iter_mut().enumerate() {
                let view = match sig.split {
                    Some(dim) => arg.view.clone().shard(dim, devices, d)?,
                    None => arg.view.clone(),
                };
                list.push(Input::Fresh(client.upload_view_to(d, &view.in_layout(sig.layout.as_deref())?)?));
            }
        }
        let views = pending
            .iter()
            .map(|(i, _, arg)| arg.view.clone().in_layout(self.inputs[*i].layout.as_deref()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let buffers = client.upload_views_to(0, &views)?;
        drop(views);
        for ((i, stamp, arg), buffer) in pending.into_iter().zip(buffers) {
            // The upload has read the memory: whatever kept it alive may go.
            drop(arg);
            match stamp {
                // A stamp only comes with one device: its buffer is kept for the next calls.
                Some(stamp) => weights.keep(i, stamp, buffer, args.owner(i)),
                None => inputs[0][i] = Input::Fresh(buffer),
            }
        }
        // The second call: the first faults its memory in whatever the allocator does.
        // Counted up to 2 only, without a read-modify-write: an atomic increment per call
        // costs more than the rest of this check.
        let calls = self.calls.load(Ordering::Relaxed);
        if calls < 2 {
            self.calls.store(calls + 1, Ordering::Relaxed);
        }
        let probe_faults = calls == 1 && session.target().device == fxhlo_runtime::DeviceKind::Cpu;
        Ok(Call { compiled: self, weights, inputs, _args: std::marker::PhantomData, weight_uploads, input_uploads, weight_shares, input_shares, views_reused, probe_faults })
    }

    /// [`Compiled::prepare`] and [`Call::execute`]: the outputs on the device.
    pub fn call<'c>(&'c self, session: &Session, weights: &'c mut ResidentWeights, args: &'c dyn CallArgs) -> Result<Vec<DeviceBuffer>> {
        self.prepare(session, weights, args)?.execute()
    }

    /// Runs on host tensors given in calling order (every input of [`Compiled::inputs`],
    /// weights included; not the bound ones), the outputs copied to the host.
    pub fn run(&self, session: &Session, args: &[HostTensor]) -> Result<Vec<HostTensor>> {
        let unkept: Vec<(&HostTensor, Option<WeightStamp>)> = args.iter().map(|a| (a, None)).collect();
        self.run_resident(session, &mut ResidentWeights::new(args.len()), &unkept)
    }

    /// [`Compiled::run`] keeping weights on the device: each argument comes with the
    /// [`WeightStamp`] of the tensor it was read from (`None`: a user input, or a weight without
    /// a version, uploaded every call). The stamps' identities are the caller's to choose: the
    /// address of a tensor it keeps alive while `weights` lives, for instance.
    pub fn run_resident(
        &self,
        session: &Session,
        weights: &mut ResidentWeights,
        args: &[(&HostTensor, Option<WeightStamp>)],
    ) -> Result<Vec<HostTensor>> {
        let outputs = self.call(session, weights, &args)?;
        outputs.iter().map(|b| b.to_host().map_err(Error::from)).collect()
    }

    /// Runs with inputs from a bundle: weights from `weights.safetensors`, user inputs from the
    /// reference file (`input.<name>`).
    pub fn run_bundle(&self, session: &Session, bundle: &Bundle) -> Result<Vec<HostTensor>> {
        let mut args = Vec::with_capacity(self.inputs.len());
        for sig in &self.inputs {
            let view = match &sig.weight {
                Some(key) => bundle.weights.as_ref().and_then(|w| w.get(key)),
                None => bundle.reference.as_ref().and_then(|r| r.get(&format!("input.{}", sig.name))),
            };
            let view = view.ok_or_else(|| {
                Error::Input(format!(
                    "{}: no tensor for input `{}` (user inputs come from reference.safetensors as `input.{}`)",
                    bundle.dir.display(),
                    sig.name,
                    sig.name
                ))
            })?;
            args.push(host_tensor(&view)?);
        }
        self.run(session, &args)
    }

    /// The executable's parameters on `device`: the caller's buffers with the bound ones at
    /// their positions.
    pub fn parameters<'b>(&'b self, caller: &[&'b DeviceBuffer], device: usize) -> Result<Vec<&'b DeviceBuffer>> {
        let bound = self.bound_buffers.get(device).map(Vec::as_slice).unwrap_or_default();
        if bound.len() != self.bound.len() {
            return Err(Error::Input(format!("internal: device {device} holds {} of {} bound inputs", bound.len(), self.bound.len())));
        }
        Ok(with_bound(caller, self.bound.iter().map(|(p, _)| *p).zip(bound)))
    }
}

impl Call<'_> {
    /// Runs the executable and takes the index checks off its outputs (an error naming the
    /// node if one failed). With several devices, device 0's (replicated) outputs.
    pub fn execute(self) -> Result<Vec<DeviceBuffer>> {
        let c = self.compiled;
        let (outputs, _) = match self.inputs.as_slice() {
            [one] => {
                let one = device_parameters(c, self.weights, 0, one)?;
                crate::fault_hint::watch(self.probe_faults, c.graph(), || c.executable.run(&one))
            }
            all => {
                let all = all
                    .iter()
                    .enumerate()
                    .map(|(d, list)| device_parameters(c, self.weights, d, list).map(|p| p.to_vec()))
                    .collect::<Result<Vec<_>>>()?;
                crate::fault_hint::watch(self.probe_faults, c.graph(), || {
                    c.executable.run_partitioned(&all).map(|o| o.into_iter().next().unwrap_or_default())
                })
            }
        };
        let mut outputs = outputs?;
        c.lowered.checks.strip(c.graph(), &mut outputs, |b| Ok(b.to_host()?.bytes.iter().any(|&x| x != 0)))?;
        Ok(outputs)
    }
}

/// Device `d`'s parameters for a call whose inputs are `list`: each input's buffer, with the
/// bound ones at their places.
fn device_parameters<'a>(c: &'a Compiled, weights: &'a ResidentWeights, d: usize, list: &'a [Input]) -> Result<SmallVec<[&'a DeviceBuffer; 8]>> {
    let refs = list
        .iter()
        .enumerate()
        .map(|(i, input)| match input {
            Input::Fresh(buffer) => Some(buffer),
            Input::Kept => weights.buffer(i),
            Input::View => weights.view(i),
        })
        .collect::<Option<SmallVec<_>>>()
        .ok_or_else(|| Error::Input("internal: an input has no device buffer".into()))?;
    if c.bound.is_empty() {
        return Ok(refs);
    }
    Ok(c.parameters(&refs, d)?.into())
}

/// Input `i` as a device buffer viewing the memory `args` lend, when the device reads the input
/// as the caller holds it (one device, no shard, no device layout) and can address that
/// memory; `None`: copy. Host memory that is ready (no stream to wait for) and not kept as a
/// weight (`unkept`) is read through the view `weights` keeps for input `i` (the flag says it
/// was reused), made anew only when the memory differs from the last call's; such a view owns
/// nothing (the arguments outlive the call). Any other view owns [`CallArgs::owner`].
fn share(
    session: &Session,
    sig: &InputSignature,
    devices: usize,
    args: &dyn CallArgs,
    unkept: bool,
    weights: &mut ResidentWeights,
    i: usize,
) -> Result<Option<(Input, bool)>> {
    if devices != 1 || sig.split.is_some() || sig.layout.is_some() {
        return Ok(None);
    }
    let Some(mut lent) = args.lend(i, sig)? else { return Ok(None) };
    check(sig, lent.element_type, &lent.dims)?;
    // A view of memory that a stream still writes would wait for that stream's work as it was
    // when the view was made, so only ready host memory is read through a kept view.
    if !unkept || lent.memory != MemoryKind::Host || lent.stream != 0 {
        lent.owner = args.owner(i);
        return Ok(session.client().share_to(0, lent)?.ok().map(|b| (Input::Fresh(b), false)));
    }
    let reused = weights.view_hit(i, lent.ptr as usize, lent.element_type, &lent.dims);
    if !reused {
        let memory = LentView { ptr: lent.ptr as usize, element_type: lent.element_type, dims: lent.dims.clone() };
        match session.client().share_to(0, lent)? {
            Ok(buffer) => weights.keep_view(i, memory, buffer),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some((Input::View, reused)))
}

/// An error unless an argument of `element` and `dims` (a view, or lent memory) is what `sig`
/// says the caller passes.
fn check(sig: &InputSignature, element: ElementType, dims: &[i64]) -> Result<()> {
    if element != element_type(sig.ty.dtype) || dims != sig.ty.shape.as_slice() {
        return Err(Error::Input(format!("input `{}` expects {} but got {element}{dims:?}", sig.name, sig.ty)));
    }
    Ok(())
}

/// Splits an executable's parameters into the caller's inputs and the bound ones (those with
/// a [`InputSignature::value`]), each bound one with its position among the parameters.
pub fn split_bound(parameters: Vec<InputSignature>) -> (Vec<InputSignature>, Vec<(usize, InputSignature)>) {
    let mut inputs = Vec::with_capacity(parameters.len());
    let mut bound = Vec::new();
    for (i, p) in parameters.into_iter().enumerate() {
        match p.value {
            Some(_) => bound.push((i, p)),
            None => inputs.push(p),
        }
    }
    (inputs, bound)
}

/// The executable's parameters in order: `caller`'s in their order, with each bound `(position,
/// value)` placed at its position (positions ascending, as [`split_bound`] gives them).
pub fn with_bound<T: Copy>(caller: &[T], bound: impl IntoIterator<Item = (usize, T)>) -> Vec<T> {
    let mut out = Vec::with_capacity(caller.len());
    let mut caller = caller.iter();
    for (position, b) in bound {
        while out.len() < position {
            match caller.next() {
                Some(c) => out.push(*c),
                None => break,
            }
        }
        out.push(b);
    }
    out.extend(caller);
    out
}

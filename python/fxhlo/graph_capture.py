"""The one capture path: Dynamo (whole graph, static shapes), then AOT Autograd with fxhlo's
decompositions (:func:`fxhlo.decompositions.decompositions`), then the legalizations
(:mod:`fxhlo.legalize`), for the torch.compile backend and :func:`fxhlo.export` alike, so a
model the backend compiles exports as the same graph.

* :func:`aot_capture` is everything after Dynamo. The backend (:func:`fxhlo.backend.fxhlo_backend`)
  calls it with its compiler; :func:`capture` with a recorder.
* :func:`capture` runs Dynamo itself, for the export, without ``torch._dynamo.reset()``: it
  compiles a function of its own with a code object of its own, so the entry Dynamo caches
  belongs to that code object alone (dropped when the capture ends), and every model the user
  compiled keeps its entries and does not recompile.
* :func:`classify` says what each graph input is (user input, parameter, buffer, constant)
  from the source object Dynamo recorded for it (:class:`InputOrigin`).
"""

from __future__ import annotations

import contextvars
import types
from dataclasses import dataclass, field

import torch

from . import _compat
from . import legalize as _legalize
from .decompositions import attention as _attention
from .decompositions import decompositions
from .errors import ExportError

_sources = _compat.sources


@dataclass(frozen=True)
class CapturedInput:
    """What one placeholder of the captured graph is bound to."""

    kind: str
    """``user_input``, ``parameter``, ``buffer`` or ``constant``; ``symbolic`` for a SymInt."""
    key: str | None
    """The fully qualified name of a parameter, buffer or tensor attribute; else None."""
    value: object
    """The real tensor Dynamo passed (or the SymInt / int for ``symbolic``)."""
    user_index: int | None = None
    """For user inputs: its position among the graph's user inputs (for messages)."""
    source: str | None = None
    """Where the input came from, for messages: Dynamo's name for its source
    (``L['self']._modules['fc']._parameters['weight']``)."""


@dataclass
class Capture:
    gm: torch.fx.GraphModule
    """The legalized AOT Autograd forward graph (core ATen)."""
    inputs: list
    """One :class:`CapturedInput` per placeholder of ``gm``, in order."""
    outputs: list | None
    """The compiled model's outputs on the example arguments, flattened (None when the
    capture did not run the model: the torch.compile backend)."""


# ---- after Dynamo ---------------------------------------------------------------------------


def aot_capture(gm: torch.fx.GraphModule, example_inputs, inputs: list, name: str, on_forward, legalizations=None):
    """Dynamo's graph ``gm`` through AOT Autograd with fxhlo's decompositions; the forward graph
    is legalized (:func:`fxhlo.legalize.run` of ``legalizations``, default all) and handed to
    ``on_forward(graph)`` (a :class:`fxhlo.legalize.Graph`), which returns the boxed callable
    that runs it; that callable comes back in the legalizations' wrappers. ``inputs`` are
    :func:`classify`'s. The backward, when autograd asks for one, runs in eager PyTorch."""

    forwards = []

    def fw_compiler(fw_gm, fw_inputs):
        graph = _legalize.run(fw_gm, inputs, name, legalizations)
        compiled = graph.wrap(on_forward(graph))
        forwards.append((compiled, len(fw_inputs), _compat.forward_metadata()))
        return compiled

    # Attention before AOT Autograd: the dispatcher would pick a device's kernel below the
    # decomposition table (fxhlo.decompositions.attention).
    _attention.intercept(gm)
    wrapped = _compat.aot_autograd(
        fw_compiler=fw_compiler,
        bw_compiler=_eager_backward,
        decompositions=decompositions(),
    )(gm, example_inputs)
    return _direct(forwards, example_inputs) or wrapped


def _direct(forwards: list, example_inputs):
    """The compiled forward itself, called without AOT Autograd's runtime wrappers, when those
    wrappers would do nothing for this graph: one inference graph taking Dynamo's arguments as
    they are (no duplicates merged, no effect tokens or RNG state added), mutating no input and
    returning no alias (:func:`fxhlo._compat.plain_runtime`). The wrappers cost more per call
    than a small graph's execution (measured on a one-element ``x + 1``: see docs/benchmarks.md);
    anything they would change keeps them. None: keep the wrappers."""
    if len(forwards) != 1:
        return None
    compiled, arity, meta = forwards[0]
    if arity != len(example_inputs) or not _compat.plain_runtime(meta):
        return None
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs):
        return None
    # A compiled graph with nothing to add around its executable hands over the executable.
    positional = getattr(compiled, "positional", None)
    native = positional() if positional is not None else None
    if native is not None:
        return native

    def direct(*args):
        return compiled(list(args))

    return direct


def _eager_backward(bw_gm: torch.fx.GraphModule, _inputs):
    # fxhlo compiles inference graphs; when autograd is on, the backward runs in PyTorch.
    return _compat.make_boxed_func(bw_gm.forward)


# ---- the export's Dynamo --------------------------------------------------------------------


@dataclass
class _Recording:
    """What :func:`capture` asked for and what its backend saw."""

    legalizations: tuple | None
    graphs: list = field(default_factory=list)
    """One :class:`fxhlo.legalize.Graph` per graph AOT Autograd accepted."""


_recording: contextvars.ContextVar = contextvars.ContextVar("fxhlo_capture")


def _recorder(gm: torch.fx.GraphModule, example_inputs):
    """The backend of :func:`capture`: one function for the life of the process (Dynamo keeps
    every backend it is given until a reset), recording into the current capture."""
    recording = _recording.get()
    seen = []

    def on_forward(graph):
        seen.append(graph)
        return _compat.make_boxed_func(graph.module.forward)

    compiled = aot_capture(gm, example_inputs, classify(gm, example_inputs), "capture", on_forward,
                           recording.legalizations)
    # Recorded only once AOT Autograd accepts the graph: when it raises a restart (e.g.
    # TensorifyScalarRestartAnalysis, for a 0-d f64 tensor input), Dynamo drops that graph
    # and calls the backend again.
    recording.graphs.extend(seen)
    return compiled


def _call(model, *example_args):
    return model(*example_args)


def capture(model, example_args, legalizations=None) -> Capture:
    """Captures ``model(*example_args)`` under ``torch.no_grad()`` as the torch.compile backend
    sees it: :func:`aot_capture` of Dynamo's one graph, the legalizations ``legalizations``
    (names; default all) applied, each placeholder bound by :func:`classify` (the model's own
    state keyed by its fully qualified names). Raises ExportError when Dynamo captures no graph
    or several, or when the graph needs fxhlo's runtime to mean what it does (it draws random
    numbers). Dynamo's caches are left as they were (see the module's doc)."""
    example_args = tuple(example_args)
    recording = _Recording(None if legalizations is None else tuple(legalizations))
    _legalize.select(recording.legalizations)  # an unknown name fails before Dynamo runs
    # `_call` with a code object of its own: Dynamo caches what it compiles on the code object.
    fn = types.FunctionType(_call.__code__.replace(), _call.__globals__, _call.__name__)
    token = _recording.set(recording)
    try:
        with torch.no_grad():
            outputs = _compat.compile_once(fn, _recorder)(model, *example_args)
    except Exception as e:
        inner = _compat.backend_error(e)
        if inner is e:
            raise
        raise inner from None  # the capture's own error, not Dynamo's wrapper around it
    finally:
        _recording.reset(token)
        _compat.forget_compiled(fn)
    if not recording.graphs:
        raise ExportError("Dynamo captured no graph: the model's forward computes nothing with tensors")
    if len(recording.graphs) != 1:
        raise ExportError(f"Dynamo captured {len(recording.graphs)} graphs; a trace holds exactly one")
    (graph,) = recording.graphs
    for wrapper in graph.wrappers:
        if wrapper.bundle_refusal is not None:
            raise ExportError(wrapper.bundle_refusal)
    return Capture(graph.module, graph.inputs, _compat.pytree.tree_leaves(outputs))


# ---- inputs ---------------------------------------------------------------------------------

# A module's containers: an item of ``_modules`` names a submodule, of ``_parameters`` a
# parameter, of ``_buffers`` a buffer (their names are the steps of a fully qualified name).
_CONTAINERS = {"_modules": None, "_parameters": "parameter", "_buffers": "buffer"}
# Sources that take an item of their base: a list index, a dict key.
_ITEMS = (_sources.GetItemSource, _sources.DictGetItemSource, _sources.DictSubclassGetItemSource)
# Sources that read an attribute of their base (``member``).
_ATTRS = (_sources.AttrSource, _sources.GenericAttrSource)


@dataclass(frozen=True)
class InputOrigin:
    """Where Dynamo found one input of its graph, read from the :mod:`torch._dynamo.source`
    object it recorded (the chain of ``.base`` links from the tensor back to a local or global
    of the compiled frame), never from the source's printed name."""

    root: str | None
    """The local or global the chain starts from (``self``, ``x``, ``table``); None when it
    starts elsewhere (a constant, a random value, ...)."""
    argument: bool
    """The root is an argument of the compiled frame (not a global or a closure cell)."""
    state: bool
    """Reached through a module (Dynamo wraps every module it walks through in an
    ``NNModuleSource``) or a module's parameter or buffer container."""
    path: tuple | None
    """The attribute names and items after the root, the module containers left out: the
    fully qualified name's steps (``("down_blocks", "0", "resnets", "0", "norm1", "weight")``);
    None when a step has no name fxhlo can write (a key known only by its position, a slice)."""
    container: str | None
    """``parameter`` or ``buffer`` when the last step is an item of a module's
    ``_parameters`` or ``_buffers``; ``param_or_buffer`` for Dynamo's ``ParamBufferSource``."""

    @classmethod
    def of(cls, source) -> InputOrigin:
        chain = []
        while isinstance(source, _sources.ChainedSource):
            chain.append(source)
            source = source.base
        if isinstance(source, _sources.LocalSource):
            root, argument = source.local_name, not source.is_derefed_cell_contents
        elif isinstance(source, _sources.GlobalSource):
            root, argument = source.global_name, False
        else:
            root, argument = None, False
        path, state, named = [], False, True
        container = None    # the module container the next item indexes
        in_dict = False     # the previous step was ``.__dict__``: the next item is an attribute
        last = None
        for step in reversed(chain):
            last = None
            if isinstance(step, _sources.NNModuleSource):
                state = True
                continue
            if isinstance(step, _ATTRS):
                in_dict = False
                if step.member == "__dict__":
                    in_dict = True
                elif step.member in _CONTAINERS:
                    container, state = step.member, True
                else:
                    path.append(step.member)
                    if isinstance(step, _sources.ParamBufferSource):
                        last, state = "param_or_buffer", True
                continue
            index = getattr(step, "index", None)
            if (isinstance(step, _ITEMS) and not isinstance(index, _sources.Source)
                    and not getattr(step, "index_is_slice", False)):
                if in_dict and index in _CONTAINERS:
                    container, state, in_dict = index, True, False
                    continue
                in_dict = False
                path.append(str(index))
                if container is not None:
                    last, container = _CONTAINERS[container], None
                continue
            named = False
        return cls(root, argument, state, tuple(path) if named else None, last)

    @property
    def user_input(self) -> bool:
        """An argument of the call, or an item or attribute of one that is not module state:
        ``L['x']``, ``L['args'][0]``, ``L['kwargs']['mask']``, a field of a dataclass argument."""
        return self.root is not None and self.argument and not self.state


def _weight_kind(origin: InputOrigin, value: torch.Tensor) -> str:
    if origin.container in ("parameter", "buffer"):
        return origin.container
    if isinstance(value, torch.nn.Parameter):
        return "parameter"
    return "buffer" if origin.container == "param_or_buffer" else "constant"


def classify(gm: torch.fx.GraphModule, example_inputs) -> list:
    """One :class:`CapturedInput` per placeholder of Dynamo's graph, from the
    source object Dynamo recorded for it (:class:`InputOrigin`): an argument of the call or an
    item of one is a user input; a module's ``_parameters`` or ``_buffers`` entry is a parameter
    or buffer; any other tensor a module holds, a global's or a closure cell's, is a constant
    (kept on the device like weights).

    Keys are fully qualified names: ``down_blocks.0.resnets.0.norm1.weight`` for the model's
    own state, whether Dynamo reached it as ``self.down_blocks``, through ``__dict__``,
    ``getattr``, a ``ModuleList``/``ModuleDict`` or a plain list of modules (``blocks.0...``).
    When module state comes from one argument (``self``, the model) its name is left out, so
    the keys are the model's own names, the exporter's; when it comes from several (a function
    of two models), each key starts with its argument's name, as a global's or a closure
    cell's always does (``table``, ``net.fc.weight``). Dynamo passes a tensor reached by two
    paths (tied weights) once, under the first. A step with no name (a dict key known only by
    position) leaves the key None: the trace then names the input after its placeholder."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    sources = [_compat.input_source(n) for n in placeholders]
    origins = [InputOrigin.of(s) for s in sources]
    state_arguments = {o.root for o, v in zip(origins, example_inputs)
                       if isinstance(v, torch.Tensor) and o.argument and o.state}
    inputs = []
    user_index = 0
    for value, origin, source in zip(example_inputs, origins, sources):
        if not isinstance(value, torch.Tensor):
            inputs.append(CapturedInput("symbolic", None, value))
            continue
        where = _compat.source_name(source)  # for messages only
        if origin.user_input:
            inputs.append(CapturedInput("user_input", None, value, user_index, where))
            user_index += 1
            continue
        key = None
        if origin.root is not None and origin.path is not None:
            prefix = () if origin.argument and len(state_arguments) == 1 else (origin.root,)
            key = ".".join(prefix + origin.path) or None
        inputs.append(CapturedInput(_weight_kind(origin, value), key, value, None, where))
    return inputs

"""The private PyTorch APIs fxhlo relies on, in one place, for every supported release.

fxhlo supports PyTorch 2.11 through 2.15 (``python/pyproject.toml``, ``docs/compat.md``). Each
name here is an underscore API of ``torch`` (or one under ``torch.fx.experimental``, or a
public one whose behaviour fxhlo depends on beyond its documentation) that a release may
rename or lack. When PyTorch changes one, this module is the one to change; code elsewhere
imports from here, and ``python/tests/test_compat.py`` checks each name on the installed
PyTorch (``scripts/test_torch_compat.sh <version>`` runs it on another release).

Dynamo and AOT Autograd
  * :func:`aot_autograd`, :func:`make_boxed_func`: AOT Autograd as a Dynamo backend, and the
    boxed calling convention of the callables its compilers return.
  * :data:`sources`, :func:`input_source`, :func:`source_name`: the ``torch._dynamo.source``
    classes, the source object Dynamo recorded for a placeholder of its graph (read by
    :class:`fxhlo.graph_capture.InputOrigin`) and its printed name.
  * :func:`assume_static_by_default`: whether Dynamo specializes sizes now.
  * :func:`compile_once`, :func:`forget_compiled`: Dynamo on a function with a given backend,
    and dropping what it cached for the function's code object.
  * :func:`backend_error`: the exception a backend raised, out of Dynamo's wrapper.
  * :func:`register_backend`: ``"fxhlo"`` in Dynamo's registry of backend names.
  * :func:`current_compile_id`, :func:`mutated_inputs`: what the compile in progress is
    (Dynamo's frame and compile numbers) and which of its inputs AOT Autograd found mutated.
  * :func:`forward_metadata`, :func:`plain_runtime`: what AOT Autograd found about the graph it
    hands the forward compiler (input mutations, output aliases, tokens, subclasses), and
    whether its runtime wrappers would leave the compiled forward's calling convention
    unchanged.

Ops and decompositions
  * :data:`OpOverload`, :data:`HigherOrderOperator`: the types of ops in an FX graph.
  * :func:`schema`: an op's schema (its qualified name, its arguments and their defaults).
  * :func:`aten_op`: an ATen op by name, None where this release lacks it (a decomposition
    for an op added later is skipped, not fatal).
  * :func:`core_aten_decompositions`, :func:`get_decompositions`, :data:`decomposition_table`:
    PyTorch's decomposition tables (``torch._decomp``).
  * :func:`has_composite_implicit_kernel`: the op decomposes by itself in the dispatcher.
  * :data:`while_loop`: the function form of the ``while_loop`` higher-order op, for loops in
    fxhlo's decompositions (it traces into ``torch.ops.higher_order.while_loop``).
  * :func:`make_fx`: tracing a function into an FX graph (``torch.fx.experimental``).

Fake tensors and symbolic shapes
  * :data:`FakeTensorMode`, :data:`ShapeEnv`: fake tensors (any device's, without the device), and
    the shape environment a fake mode traces higher-order ops with.
  * :func:`detect_fake_mode`: the fake mode of a graph's ``meta["val"]`` values.
  * :func:`shape_env`, :func:`runtime_assertions`, :func:`sym_expr`: the sizes' symbols and
    what Dynamo asserts of them at run time.
  * :func:`free_symbols`: the symbols a value's sizes depend on.
  * :func:`no_internal_overlap`: a view's elements occupy distinct memory.

Other
  * :data:`pytree`: flattening nested outputs (``tree_leaves``, ``tree_map``).
"""

from __future__ import annotations

import logging

import torch
import torch._dynamo
import torch._guards
from torch._decomp import core_aten_decompositions, decomposition_table, get_decompositions  # noqa: F401
from torch._dynamo import source as sources  # noqa: F401 - re-exported
from torch._dynamo.backends import registry as _registry
from torch._dynamo.backends.common import aot_autograd  # noqa: F401 - re-exported
from torch._dynamo.eval_frame import remove_from_cache
from torch._dynamo.exc import BackendCompilerFailed
from torch._functorch.aot_autograd import make_boxed_func  # noqa: F401 - re-exported
from torch._higher_order_ops import while_loop  # noqa: F401 - re-exported
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: F401 - re-exported
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: F401 - re-exported
from torch.fx.experimental.symbolic_shapes import ShapeEnv, free_symbols  # noqa: F401 - re-exported
from torch.utils import _pytree as pytree  # noqa: F401 - re-exported

_log = logging.getLogger(__name__)

OpOverload = torch._ops.OpOverload
HigherOrderOperator = torch._ops.HigherOrderOperator


# ---- Dynamo and AOT Autograd ----------------------------------------------------------------


def assume_static_by_default() -> bool:
    """Dynamo's ``assume_static_by_default`` as it is now: False inside a region compiled with
    ``dynamic=True`` (``torch.compile`` patches the setting for as long as the region runs, so
    a backend called from it sees the patched value)."""
    return torch._dynamo.config.assume_static_by_default


def compile_once(fn, backend):
    """``fn`` under Dynamo with ``backend``, whole-graph and static (``fullgraph=True,
    dynamic=False``). ``torch._dynamo.optimize`` rather than ``torch.compile``: Dynamo keeps
    every backend a compile region is made with for the life of the process (to reset it), and
    ``torch.compile`` wraps the backend in a new object each time, so a capture per export would
    leave one behind each; given ``backend`` itself, Dynamo keeps that one object once."""
    return torch._dynamo.optimize(backend, nopython=True, dynamic=False)(fn)


def forget_compiled(fn) -> None:
    """Drops every entry Dynamo cached on ``fn``'s code object (its compiled code and guards);
    entries on other code objects are left alone."""
    remove_from_cache(fn)


def backend_error(error: BaseException) -> BaseException:
    """The exception a backend raised, when ``error`` is Dynamo's wrapper around it
    (``BackendCompilerFailed``); else ``error`` itself."""
    if isinstance(error, BackendCompilerFailed) and error.inner_exception is not None:
        return error.inner_exception
    return error


def input_source(placeholder: torch.fx.Node):
    """The :data:`sources` object Dynamo recorded for a placeholder of its graph (where the
    input came from: ``L['self']._modules['fc']._parameters['weight']``); None where there is
    none (a graph Dynamo did not make)."""
    return getattr(placeholder.meta.get("grapharg"), "source", None)


def source_name(source) -> str | None:
    """Dynamo's printed name of a source (``L['x']``), for messages; a method in some
    releases, a property in others."""
    name = getattr(source, "name", None)
    return name() if callable(name) else name


def register_backend(name: str, compiler_fn) -> None:
    """Registers ``compiler_fn`` as Dynamo's backend ``name`` unless the name is taken: by an
    earlier registration, or by an entry point Dynamo found and is loading (it registers the
    function itself once the import that calls this returns; registering here would be a
    duplicate, which Dynamo refuses)."""
    if name in _registry._COMPILER_FNS or _registry._BACKENDS.get(name) is not None:
        return
    _registry.register_backend(compiler_fn=compiler_fn, name=name)


def current_compile_id() -> tuple[int, int] | None:
    """``(frame_id, frame_compile_id)`` of the Dynamo compile in progress; None outside one
    (or for a compile Dynamo gives no frame number)."""
    cid = torch._guards.CompileContext.current_compile_id()
    if cid is None or getattr(cid, "frame_id", None) is None:
        return None
    return cid.frame_id, cid.frame_compile_id


def mutated_inputs() -> set[int]:
    """Positions of the inputs of the graph AOT Autograd is compiling now whose data or
    metadata the graph mutates (from :func:`forward_metadata`); empty outside a compile."""
    meta = forward_metadata()
    return {i for i, info in enumerate(getattr(meta, "input_info", None) or [])
            if info.mutates_data or info.mutates_metadata}


def forward_metadata():
    """AOT Autograd's metadata of the forward graph being compiled (its
    ``ViewAndMutationMeta``), read from the tracing context while a forward compiler runs; None
    where this PyTorch does not keep it there."""
    context = torch._guards.TracingContext.try_get()
    return getattr(context, "fw_metadata", None)


def plain_runtime(meta) -> bool:
    """Whether AOT Autograd's runtime wrappers are the identity for a graph with ``meta``
    (:func:`forward_metadata`): no input mutated (data or metadata), every output a fresh
    tensor that needs no gradient (no alias of an input or of another output), no intermediate
    bases, effect tokens, functionalized RNG state or tensor subclasses. False when any field
    is missing: a PyTorch that describes the graph otherwise keeps the wrappers."""
    if meta is None:
        return False
    try:
        from torch._functorch._aot_autograd.schemas import OutputType

        return (
            not any(i.mutates_data or i.mutates_metadata for i in meta.input_info)
            and all(o.output_type == OutputType.non_alias and not o.requires_grad for o in meta.output_info)
            and meta.num_intermediate_bases == 0
            and not meta.tokens
            and not meta.is_rng_op_functionalized
            and getattr(meta, "num_graphsafe_rng_states", 0) == 0
            and not any(type(m).__name__ == "SubclassCreationMeta" for m in meta.subclass_inp_meta)
            and not any(type(m).__name__ == "SubclassCreationMeta" for m in meta.subclass_fw_graph_out_meta)
        )
    except (AttributeError, ImportError, TypeError):
        return False


# ---- ops and decompositions -----------------------------------------------------------------


def aten_op(name: str):
    """``torch.ops.aten.<name>``: an overload for ``"packet.overload"`` (``"round.decimals"``),
    the packet for a bare name (``"addmv"``). None when the installed PyTorch has no such op
    (an op added in a later release: its decomposition is skipped, logged at debug level)."""
    packet_name, _, overload = name.partition(".")
    try:
        packet = getattr(torch.ops.aten, packet_name)
        return getattr(packet, overload) if overload else packet
    except AttributeError:
        _log.debug("torch %s has no aten.%s: its decomposition is skipped", torch.__version__, name)
        return None


def schema(op):
    """``op``'s ``FunctionSchema``: ``name`` (``aten::add``), ``arguments`` (each with ``name``,
    ``type`` (printed ``Tensor``, ``number``, ...), ``has_default_value()``, ``default_value``,
    ``kwarg_only``); None for a target without one (a Python function, a higher-order op)."""
    return getattr(op, "_schema", None)


def has_composite_implicit_kernel(op) -> bool:
    """``op`` has a ``CompositeImplicitAutograd`` kernel: the dispatcher decomposes it into
    other ops by itself."""
    return op.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd)


# ---- fake tensors and symbolic shapes -------------------------------------------------------


def detect_fake_mode(values):
    """The fake tensor mode of ``values`` (a graph's ``meta["val"]`` tensors), or the one
    active now; None when there is none."""
    return torch._guards.detect_fake_mode(values)


def shape_env(fake_mode):
    """The symbolic shape environment of ``fake_mode``; None for a mode without one (static
    shapes) or for no mode."""
    return getattr(fake_mode, "shape_env", None)


def runtime_assertions(env) -> list:
    """The sympy expressions Dynamo asserts at run time about the symbols of ``env`` (deferred
    assertions such as ``Eq(u0 + u1 + u2, 6)`` for split sizes read with ``tolist()``), each
    with the substitutions ``env`` knows applied."""
    return [env.replace(ra.expr) for asserts in env.deferred_runtime_asserts.values() for ra in asserts]


def sym_expr(env, value: torch.SymInt):
    """The sympy expression of a ``SymInt``, with the substitutions ``env`` knows applied."""
    return env.replace(value.node.expr)


def no_internal_overlap(view: torch.Tensor) -> bool:
    """True when no two elements of ``view`` share memory (so it can be ``copy_``'d into);
    False when some do (``expand``'s stride 0, overlapping windows) or PyTorch cannot tell."""
    return torch._debug_has_internal_overlap(view) == 0


def size_stride_check():
    """PyTorch's C++ check of a tensor's sizes and strides, ``check(t, sizes, strides)``, raising
    AssertionError on a mismatch (what Inductor's generated code calls per input): one call
    where reading ``shape`` and ``is_contiguous()`` takes two and a tuple. None where this
    release lacks it (the bridge then reads them one by one)."""
    try:
        from torch._C._dynamo.guards import assert_size_stride
    except ImportError:
        return None
    return assert_size_stride

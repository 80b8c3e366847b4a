"""The private PyTorch APIs fxhlo's capture relies on, in one place.

Each name here is an underscore API of ``torch`` (or a public one whose behaviour fxhlo depends
on beyond its documentation) that the pinned PyTorch has and a later one may rename. When
PyTorch changes one, this module is the one to change; code elsewhere imports from here.

* :func:`aot_autograd`, :func:`make_boxed_func`: AOT Autograd as a Dynamo backend, and the
  boxed calling convention of the callables its compilers return.
* :data:`sources`: the ``torch._dynamo.source`` classes Dynamo records for each graph input
  (read by :class:`fxhlo.capture.InputOrigin`).
* :func:`assume_static_by_default`: whether Dynamo specializes sizes now (``dynamic=True``
  turns it off while a ``torch.compile`` region runs).
* :func:`compile_once`, :func:`forget_compiled`: Dynamo on a function with a given backend, and
  dropping what it cached for the function's code object (:func:`fxhlo.capture.capture`).
* :func:`backend_error`: the exception a backend raised, out of Dynamo's wrapper.
* :data:`OpOverload`: the type of an ATen (or ``torch.library``) op in an FX graph.
* :func:`forward_metadata`, :func:`plain_runtime`: what AOT Autograd found about the graph it
  hands the forward compiler (input mutations, output aliases, tokens, subclasses), and whether
  its runtime wrappers would leave the compiled forward's calling convention unchanged.
"""

from __future__ import annotations

import torch
import torch._dynamo
from torch._dynamo import source as sources  # noqa: F401 - re-exported
from torch._dynamo.backends.common import aot_autograd  # noqa: F401 - re-exported
from torch._dynamo.eval_frame import remove_from_cache
from torch._dynamo.exc import BackendCompilerFailed
from torch._functorch.aot_autograd import make_boxed_func  # noqa: F401 - re-exported

OpOverload = torch._ops.OpOverload


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

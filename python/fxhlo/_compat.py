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

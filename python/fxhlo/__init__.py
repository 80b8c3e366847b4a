"""fxhlo: a torch.compile backend that lowers FX graphs to StableHLO and runs them on PJRT.

``import fxhlo`` registers the Dynamo backend ``"fxhlo"``::

    torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)

(the package's ``torch_dynamo_backends`` entry point makes the name work without the import).
``fxhlo.export`` writes trace bundles for the ``fxhlo`` command-line tool.
"""

import os

# The XLA plugins log at INFO level to stderr (the CPU plugin, for one, logs the device count
# fxhlo asks for on every client); warnings and errors still show. Set before any plugin loads,
# and only when the user has not chosen a level.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from .backend import (OPTIONS, BackendOptions, CompiledGraph, ahead_of_time_compiles, compiled_graphs, fxhlo_backend,
                      register)
from .errors import (AheadOfTimeWarning, CompileError, DeviceError, ExecutionError, FallbackWarning, FxhloError, OptionsError,
                     UnsupportedOpsError)
from .export import Capture, CapturedInput, ExportError, capture, export

register()


def cache_stats() -> dict:
    """The compile cache's counters for this process: ``compiles`` (PJRT compiles done because
    the cache missed), ``memory_hits``, ``disk_hits``, ``misses_by_reason``, ``bytes_on_disk``,
    ``entries_on_disk``, and the cache's ``dir`` and ``mode`` (README, "Caching")."""
    from . import _native

    return _native.cache_stats()


def warmup(compiled, examples) -> dict:
    """Compiles ``compiled`` (a ``torch.compile(..., backend="fxhlo")`` model or function) for
    every input shape a service will see, so that no request waits for a compile: calls it once
    on each entry of ``examples`` (a tensor, or a tuple of arguments) under ``torch.no_grad()``
    and returns when all are ready. Shapes already in the cache (this process's or the disk's)
    load instead of compiling. Returns the change in :func:`cache_stats` counters over the
    warm-up (``compiles``, ``memory_hits``, ``disk_hits``).

    The shapes compile one after another: Dynamo captures graphs one at a time.
    """
    import torch

    before = cache_stats()
    with torch.no_grad():
        for args in examples:
            compiled(*(args if isinstance(args, (tuple, list)) else (args,)))
    after = cache_stats()
    return {k: after[k] - before[k] for k in ("compiles", "memory_hits", "disk_hits")}


__all__ = [
    "OPTIONS", "AheadOfTimeWarning", "BackendOptions", "Capture", "CapturedInput", "CompileError", "CompiledGraph", "DeviceError",
    "ExecutionError", "ExportError", "FallbackWarning", "FxhloError", "OptionsError", "UnsupportedOpsError",
    "ahead_of_time_compiles", "cache_stats", "capture", "compiled_graphs", "export", "fxhlo_backend", "register", "warmup",
]

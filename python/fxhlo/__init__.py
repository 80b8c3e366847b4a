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

from .backend import OPTIONS, BackendOptions, CompiledGraph, compiled_graphs, fxhlo_backend, register
from .errors import (CompileError, DeviceError, ExecutionError, FallbackWarning, FxhloError, OptionsError,
                     UnsupportedOpsError)
from .export import Capture, CapturedInput, ExportError, capture, export

register()


def cache_stats() -> dict:
    """The compile cache's counters for this process: ``compiles`` (PJRT compiles done because
    the cache missed), ``memory_hits``, ``disk_hits``, ``misses_by_reason``, ``bytes_on_disk``,
    ``entries_on_disk``, and the cache's ``dir`` and ``mode`` (README, "Caching")."""
    from . import _native

    return _native.cache_stats()


__all__ = [
    "OPTIONS", "BackendOptions", "Capture", "CapturedInput", "CompileError", "CompiledGraph", "DeviceError",
    "ExecutionError", "ExportError", "FallbackWarning", "FxhloError", "OptionsError", "UnsupportedOpsError",
    "cache_stats", "capture", "compiled_graphs", "export", "fxhlo_backend", "register",
]

"""fxhlo: a torch.compile backend that lowers FX graphs to StableHLO and runs them on PJRT.

``import fxhlo`` registers the Dynamo backend ``"fxhlo"``::

    torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)

(the package's ``torch_dynamo_backends`` entry point makes the name work without the import).
``fxhlo.export`` writes trace bundles for the ``fxhlo`` command-line tool.
"""

from .backend import OPTIONS, BackendOptions, CompiledGraph, compiled_graphs, fxhlo_backend, register
from .errors import (CompileError, DeviceError, ExecutionError, FallbackWarning, FxhloError, OptionsError,
                     UnsupportedOpsError)
from .export import Capture, CapturedInput, ExportError, capture, export

register()

__all__ = [
    "OPTIONS", "BackendOptions", "Capture", "CapturedInput", "CompileError", "CompiledGraph", "DeviceError",
    "ExecutionError", "ExportError", "FallbackWarning", "FxhloError", "OptionsError", "UnsupportedOpsError",
    "capture", "compiled_graphs", "export", "fxhlo_backend", "register",
]

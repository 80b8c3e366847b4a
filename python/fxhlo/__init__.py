"""fxhlo: a torch.compile backend that lowers FX graphs to StableHLO and runs them on PJRT.

This package holds the exporter (``fxhlo.export``) that writes trace bundles the Rust side reads.
"""

from .export import Capture, CapturedInput, ExportError, capture, export

__all__ = ["Capture", "CapturedInput", "ExportError", "capture", "export"]

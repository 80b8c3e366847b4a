"""The exceptions and warnings fxhlo raises. Every message names the option, op, node or input
involved and says what to do."""

from __future__ import annotations


class FxhloError(Exception):
    """Base class of fxhlo's errors."""


class OptionsError(FxhloError, ValueError):
    """A backend option that does not exist or has a value fxhlo does not take, or a
    ``torch.compile`` setting fxhlo refuses (``dynamic=True``, ``mode=...``)."""


class CompileError(FxhloError):
    """The graph could not be compiled (trace import, lowering or the PJRT compiler failed)."""


class UnsupportedOpsError(CompileError):
    """The graph uses ops fxhlo cannot lower. ``ops`` lists every one of them as
    ``(target, node, source)`` tuples, ``source`` being ``file:line`` or None; ``reasons`` says
    why for each, in the same order (``fxhlo has no lowering for <target>``, or what is wrong
    with the call's arguments)."""

    def __init__(self, message: str, ops=(), reasons=()):
        super().__init__(message)
        self.ops = [tuple(o) for o in ops]
        self.reasons = list(reasons)


class DeviceError(FxhloError):
    """The device asked for is not there (no PJRT plugin for it, or no such hardware)."""


class ExecutionError(FxhloError):
    """Running a compiled graph failed (inputs that do not match, a transfer or execution
    error in the PJRT plugin)."""


class ExportError(Exception):
    """The model cannot be expressed as an fxhlo trace (the message says why). Also
    ``fxhlo.export.ExportError``, where it was first defined."""


class FallbackWarning(UserWarning):
    """A graph runs in eager PyTorch instead of through fxhlo, wholly or in part
    (``fallback="eager"``, or a graph broken at a scalar read whose value must reach Python)."""


class AheadOfTimeWarning(UserWarning):
    """A graph was compiled ahead of time for a target this machine cannot run
    (``device="tpu:v6e:2x2"``): the executable is in the compile cache, and calls run in eager
    PyTorch here. Warned once per graph."""

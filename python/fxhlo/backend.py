"""The torch.compile backend: ``torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)``.

Dynamo hands the backend an FX graph and its real example inputs. The backend captures it
through :func:`fxhlo.graph_capture.aot_capture` (AOT Autograd with fxhlo's decompositions, then
the legalizations of :mod:`fxhlo.legalize`: the one capture path, which :func:`fxhlo.export`
takes too, so a graph compiled here and the same model exported to a bundle are the same trace),
writes the forward graph as a trace and compiles it in Rust (``fxhlo._native``: import, passes,
StableHLO, PJRT). The returned callable uploads user inputs on every call, keeps parameters and
buffers on the device (uploaded again only when PyTorch's version counter says they changed),
and returns torch tensors.

What PyTorch's own backends leave to the runtime wrapper stays there: AOT Autograd functionalizes
input mutations (the graph returns new values, the wrapper copies them back), regenerates outputs
that alias inputs or other outputs, and Dynamo rebuilds nested outputs, ``None`` and Python
values. This module makes the graph's outputs have the strides PyTorch expects, since the
wrapper may rebuild views from them.

Options (``torch.compile(..., options={...})``): see :data:`OPTIONS`. They are checked when Dynamo
first calls the backend (the first call of the compiled model), where the backend is handed
them: the hook Dynamo calls when ``torch.compile`` resolves a backend gets no arguments.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import os
import sys
import time
import traceback
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

from . import _compat
from . import export as _export
from . import graph_break as _graph_break
from . import graph_capture as _capture
from . import split as _split
from .errors import AheadOfTimeWarning, CompileError, FallbackWarning, OptionsError, UnsupportedOpsError

DEVICES = ("cpu", "cuda", "tpu")
FALLBACKS = ("error", "eager")
# `tpu:<topology>`: compile ahead of time for a TPU slice this machine does not have.
_TOPOLOGY = re.compile(r"tpu:[^\s:][^\s]*")

OPTIONS = {
    "device": f"where the graph runs: one of {', '.join(DEVICES)} (default cpu); or tpu:<topology> "
              "(tpu:v6e:2x2, tpu:v5e:2x2, tpu:v5p:2x2x1) to compile ahead of time for a TPU slice on "
              "any machine: the executable goes to the compile cache and calls run in eager PyTorch "
              "here, with one AheadOfTimeWarning per graph. Inputs and outputs stay torch tensors on "
              "the device they are on in PyTorch.",
    "freeze": "True to compile parameters and buffers into the executable as constants, so passes "
              "may fold them (default False). A frozen graph does not see later weight updates.",
    "dump": "which stages of each compiled graph to write for reading (docs/dumps.md): \"all\" (or "
            "True), or a comma list of stages (trace, import, passes, stablehlo, xla, dot) and pass "
            "names such as \"import,dce,stablehlo\"; each graph gets a folder <graph>-<key8>/ in "
            "dump_dir. A folder path (a str with a path separator, or a Path) is the older form: "
            "everything, into that folder (default: none, or the FXHLO_DUMP variable).",
    "dump_dir": "the folder dumps go to (default: FXHLO_DUMP_DIR, else ./fxhlo-dump); giving it "
                "alone dumps everything.",
    "check_indices": "True to raise IndexError when an index of embedding, indexing, gather, "
                     "index_select or scatter is out of range (default False: the device clamps it "
                     "to the nearest valid index, as XLA does on every device; see docs/ops.md).",
    "opt_level": "0 to run none of fxhlo's graph passes (XLA alone optimizes: the ablation "
                 "baseline), 1 to run the pipeline for the device: dce, unused-results, "
                 "channels-last (CPU plugin only: convolutions and the ops between them on "
                 "[N, H, W, C] tensors, the layout of XLA's CPU convolutions), pointwise-conv-dot "
                 "(CPU plugin only: 1x1 convolutions as matrix products), fold-constant-layouts, "
                 "depthwise-conv-taps "
                 "(CPU plugin only: XLA's CPU backend runs depthwise convolutions slowly), "
                 "channels-last-pooling, hoist-large-constants, device-layout; 2 (default) adds the "
                 "e-graph optimizer (eqsat, after unused-results; on the CPU plugin eqsat-layout, "
                 "whose channels-last rules take the channels-last pass's place) and, on the CPU "
                 "plugin, batch-blocks (attention's large scores in blocks), on TPUs attention-recompute "
                 "(attention's scores computed twice so that they stay on chip); see docs/optimizer.md.",
    "passes": "a list of pass names to run, in order, instead of opt_level's pipeline (an "
              "ablation or a reproduction: [] runs none); a name not registered is refused with the "
              "valid ones (default: none given).",
    "max_passes": "run only the first N passes of the pipeline, to bisect a miscompile to one pass "
                  "(default: all).",
    "fallback": "what to do with a graph fxhlo cannot compile: \"error\" (default) raises with "
                "every unsupported op; \"eager\" runs the ops fxhlo cannot compile (unsupported, "
                "random) in eager PyTorch and compiles the parts of the graph between them, each "
                "on its own (never frozen), with one warning per graph naming those ops; a graph "
                "rejected as a whole runs wholly in eager (a missing device still raises). Custom "
                "ops with a registered decomposition compile through it in either mode.",
}
"""Every option the backend takes, with what it does."""


@dataclass(frozen=True)
class BackendOptions:
    """The parsed ``options={...}`` of ``torch.compile``."""

    device: str = "cpu"
    freeze: bool = False
    dump: str | None = None
    fallback: str = "error"
    check_indices: bool = False
    # fxhlo._native.DEFAULT_OPT_LEVEL, written out so that importing fxhlo does not load the
    # extension (test_passes checks the two agree).
    opt_level: int = 2
    passes: tuple | None = None
    max_passes: int | None = None
    dump_dir: Path | None = None

    @property
    def ahead_of_time(self) -> bool:
        """The device is a TPU topology to compile for, not a device to run on."""
        return ":" in self.device

    def compile_options(self) -> str:
        """The options that change the executable, as the JSON of Rust's ``fxhlo::Options`` (one
        type for the CLI, Rust users and this backend). ``freeze`` travels as the frozen tensors
        themselves, ``dump`` and ``fallback`` never reach the compiler."""
        import json

        options = {"device": self.device, "check_indices": self.check_indices, "opt_level": self.opt_level}
        if self.passes is not None:
            options["passes"] = list(self.passes)
        if self.max_passes is not None:
            options["max_passes"] = self.max_passes
        return json.dumps(options)

    @classmethod
    def parse(cls, options) -> BackendOptions:
        """Checks every option; an unknown one or a bad value raises :class:`OptionsError`
        that lists the valid ones."""
        if options is None:
            return cls()
        if not isinstance(options, dict):
            raise OptionsError(f"fxhlo options must be a dict, got {type(options).__name__}")
        unknown = sorted(set(options) - set(OPTIONS), key=str)
        if unknown:
            valid = "\n".join(f"  {k}: {v}" for k, v in OPTIONS.items())
            raise OptionsError(f"unknown fxhlo option(s) {', '.join(map(repr, unknown))}; valid options are:\n{valid}")
        device = options.get("device", "cpu")
        if device not in DEVICES and not (isinstance(device, str) and _TOPOLOGY.fullmatch(device)):
            raise OptionsError(f"fxhlo option device={device!r}: valid devices are {', '.join(DEVICES)}, "
                               "or tpu:<topology> such as tpu:v6e:2x2 to compile ahead of time")
        freeze = options.get("freeze", False)
        if not isinstance(freeze, bool):
            raise OptionsError(f"fxhlo option freeze={freeze!r}: must be True or False")
        dump, dump_dir = _dump_options(options.get("dump"), options.get("dump_dir"))
        fallback = options.get("fallback", "error")
        if fallback not in FALLBACKS:
            raise OptionsError(f"fxhlo option fallback={fallback!r}: valid values are {', '.join(map(repr, FALLBACKS))}")
        check_indices = options.get("check_indices", False)
        if not isinstance(check_indices, bool):
            raise OptionsError(f"fxhlo option check_indices={check_indices!r}: must be True or False")
        from . import _native

        # The levels are Rust's (fxhlo_passes::MAX_OPT_LEVEL), checked here to fail before
        # anything is captured.
        opt_level = options.get("opt_level", _native.DEFAULT_OPT_LEVEL)
        if not isinstance(opt_level, int) or isinstance(opt_level, bool) or opt_level not in range(_native.MAX_OPT_LEVEL + 1):
            raise OptionsError(f"fxhlo option opt_level={opt_level!r}: valid levels are 0 to {_native.MAX_OPT_LEVEL}")
        passes = options.get("passes")
        if passes is not None:
            valid = _native.pass_names()
            if not isinstance(passes, (list, tuple)) or not all(isinstance(p, str) for p in passes):
                raise OptionsError(f"fxhlo option passes={passes!r}: must be a list of pass names ({', '.join(valid)})")
            unknown = [p for p in passes if p not in valid]
            if unknown:
                raise OptionsError(f"fxhlo option passes: unknown pass(es) {', '.join(map(repr, unknown))}; "
                                   f"valid passes: {', '.join(valid)}")
            passes = tuple(passes)
        max_passes = options.get("max_passes")
        if max_passes is not None and (not isinstance(max_passes, int) or isinstance(max_passes, bool) or max_passes < 0):
            raise OptionsError(f"fxhlo option max_passes={max_passes!r}: must be a non-negative integer")
        return cls(device, freeze, dump, fallback, check_indices, opt_level, passes, max_passes, dump_dir)


def _dump_options(dump, dump_dir) -> tuple:
    """``(filter, folder)`` of the ``dump`` and ``dump_dir`` options: ``(None, None)`` when
    neither is given (then ``FXHLO_DUMP`` decides, in Rust)."""
    if dump_dir is not None and not isinstance(dump_dir, (str, os.PathLike)):
        raise OptionsError(f"fxhlo option dump_dir={dump_dir!r}: must be a folder path (str or Path) or None")
    if dump is True:
        dump = "all"
    elif dump is False:
        dump = None
    elif isinstance(dump, os.PathLike) or (isinstance(dump, str) and ("/" in dump or os.sep in dump)):
        # The older form: a folder, every stage.
        if dump_dir is not None:
            raise OptionsError(f"fxhlo option dump={str(dump)!r} is a folder and dump_dir is given too: "
                               "give dump a filter (\"all\", or stage and pass names) and the folder as dump_dir")
        dump, dump_dir = "all", dump
    elif dump is not None and not isinstance(dump, str):
        raise OptionsError(f"fxhlo option dump={dump!r}: must be a filter (\"all\", or a comma list of stage and "
                           "pass names), True, or a folder path (str or Path), or None")
    if dump is None and dump_dir is not None:
        dump = "all"
    if dump is not None:
        from . import _native

        try:
            dump = _native.dump_filter(dump)
        except ValueError as e:
            raise OptionsError(f"fxhlo option dump={dump!r}: {e}") from None
    return dump, None if dump_dir is None else Path(dump_dir)


_DYNAMIC_REFUSED = ("fxhlo specializes shapes and does not compile dynamic graphs: use "
                    "torch.compile(..., backend=\"fxhlo\", dynamic=False)")


def _check_settings(options, mode) -> BackendOptions:
    """The parsed options; ``mode=...`` (Inductor's presets) is refused."""
    if mode is not None:
        raise OptionsError(f"torch.compile(mode={mode!r}) is not supported by fxhlo; use options={{...}} ({', '.join(OPTIONS)})")
    return BackendOptions.parse(options)


def _refuse_dynamic(gm, example_inputs) -> None:
    """Refuses ``torch.compile(..., dynamic=True)`` (Dynamo assumes nothing static while such a
    region runs) and a graph with symbolic sizes (``dynamic`` not given: Dynamo makes sizes
    symbolic once an input changed shape)."""
    if not _compat.assume_static_by_default():
        raise OptionsError(_DYNAMIC_REFUSED)
    symbolic = [type(v).__name__ for v in example_inputs if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))]
    shapes = [v for v in example_inputs if isinstance(v, torch.Tensor)
              and any(not isinstance(s, int) for s in v.shape)]
    if symbolic or shapes:
        raise OptionsError(
            "Dynamo passed fxhlo a graph with symbolic sizes (it does that when dynamic is not set "
            "and an input changed shape): fxhlo specializes shapes; use torch.compile(..., "
            "backend=\"fxhlo\", dynamic=False) so each shape compiles once"
        )


# ---- outputs --------------------------------------------------------------------------------


def _contiguous_strides(shape) -> list:
    strides, acc = [], 1
    for d in reversed(list(shape)):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


@dataclass(frozen=True)
class OutputLayout:
    """How fxhlo's results (contiguous CPU tensors) become the outputs PyTorch expects.

    ``fixes``: ``(index, size, stride, device)`` for an output with other strides (``None``
    when contiguous is right) or on another torch device (``None`` for the CPU): AOT Autograd
    may rebuild views of an output with ``as_strided``, so its strides must be PyTorch's.
    ``groups``: outputs that are views of one storage in PyTorch (``y`` and ``y.t()``), as
    ``(numel, dtype, device, [(index, size, stride, offset)])``: they are rebuilt as views of
    one new buffer so that they alias each other as they do in eager and in Inductor.
    """

    fixes: list
    groups: list

    @classmethod
    def of(cls, fw_gm: torch.fx.GraphModule) -> OutputLayout:
        from torch.multiprocessing.reductions import StorageWeakRef

        out = next(n for n in fw_gm.graph.nodes if n.op == "output")
        values = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
        vals = {}
        for i, v in enumerate(values):
            val = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
            if isinstance(val, torch.Tensor):
                vals[i] = val
        by_storage = {}
        for i, val in vals.items():
            by_storage.setdefault(StorageWeakRef(val.untyped_storage()), []).append(i)
        groups, grouped = [], set()
        for members in by_storage.values():
            dtypes = {vals[i].dtype for i in members}
            if len(members) < 2 or len(dtypes) != 1:
                continue
            first = vals[members[0]]
            numel = first.untyped_storage().nbytes() // first.element_size()
            views = [(i, tuple(vals[i].shape), tuple(vals[i].stride()), vals[i].storage_offset()) for i in members]
            groups.append((numel, first.dtype, first.device, views))
            grouped.update(members)
        fixes = []
        for i, val in vals.items():
            if i in grouped:
                continue
            stride = tuple(val.stride())
            if val.numel() <= 1 or list(stride) == _contiguous_strides(val.shape):
                stride = None
            device = None if val.device.type == "cpu" else val.device
            if stride is not None or device is not None:
                fixes.append((i, tuple(val.shape), stride, device))
        return cls(fixes, groups)

    def apply(self, outs: list) -> list:
        for i, size, stride, device in self.fixes:
            if stride is not None:
                base = torch.empty(_extent(size, stride), dtype=outs[i].dtype, device=device or "cpu")
                outs[i] = _write_view(base, size, stride, 0, outs[i])
            elif device is not None:
                outs[i] = outs[i].to(device)
        for numel, dtype, device, views in self.groups:
            base = torch.empty(numel, dtype=dtype, device=device)
            for i, size, stride, offset in views:
                # Views that overlap hold the same values, so the order of the writes is moot.
                outs[i] = _write_view(base, size, stride, offset, outs[i])
        return outs


def _extent(size, stride, offset: int = 0) -> int:
    """Elements of storage a view of ``size``/``stride`` from ``offset`` reaches."""
    if any(d == 0 for d in size):
        return offset
    return offset + 1 + sum((d - 1) * s for d, s in zip(size, stride))


def _write_view(base: torch.Tensor, size, stride, offset: int, src: torch.Tensor) -> torch.Tensor:
    """``base.as_strided(size, stride, offset)`` holding ``src``'s values. A view whose elements
    share memory (``expand``'s stride 0, overlapping windows) cannot be ``copy_``'d into, so its
    storage is written by index instead (elements that share a location hold equal values)."""
    view = base.as_strided(size, stride, offset)
    if _compat.no_internal_overlap(view):
        view.copy_(src)
        return view
    index = torch.full((), offset, dtype=torch.int64, device=base.device)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        index = index + (torch.arange(n, device=base.device) * s).reshape(shape)
    base.index_put_((index.reshape(-1),), src.to(base.device).reshape(-1))
    return view


# ---- compile --------------------------------------------------------------------------------

_graph_ids = itertools.count()


def _graph_name() -> str:
    """``fxhlo_<frame>_<compile>`` from Dynamo's compile id where there is one."""
    cid = _compat.current_compile_id()
    if cid is not None:
        return f"fxhlo_{cid[0]}_{cid[1]}"
    return f"fxhlo_graph{next(_graph_ids)}"


_compiled: list = []


def compiled_graphs() -> list:
    """The :class:`CompiledGraph` objects still alive, oldest first (for inspection and tests:
    ``g.executable.stats()``, ``g.executable.mlir``)."""
    alive = [g for g in (r() for r in _compiled) if g is not None]
    _compiled[:] = [weakref.ref(g) for g in alive]
    return alive


class CompiledGraph:
    """What the forward compiler returns: a boxed callable (AOT Autograd hands it a list of
    arguments) running one executable. ``executable`` is the ``fxhlo._native.Executable``."""

    _boxed_call = True

    def __init__(self, executable, constants: list, layout: OutputLayout, stages: dict | None = None):
        self.executable = executable
        self._constants = constants
        self._layout = layout
        #: Seconds spent in each stage of getting the executable: ``export_s`` (the trace built
        #: from the FX graph, in Python), then the native stages (``fxhlo._native.Executable.stages``:
        #: ``import_s``, ``lower_s``, ``load_s``, ``cached``, and ``passes``: each pass's time, node counts
        #: and summary).
        self.stages = stages or {}
        _compiled.append(weakref.ref(self))

    def __call__(self, args):
        if self._constants:
            args = [*args, *self._constants]
        outs = self.executable.run(args)
        if self._layout.fixes or self._layout.groups:
            outs = self._layout.apply(outs)
        return outs

    def positional(self):
        """A native callable taking Dynamo's positional arguments, when the executable takes
        them as they come (no constants appended, no output strides to fix): it runs without a
        Python frame (:func:`fxhlo.graph_capture._direct`) and keeps this object alive. None
        otherwise."""
        if self._constants or self._layout.fixes or self._layout.groups:
            return None
        from . import _native

        return _native.PositionalCall(self.executable, self)


def _compile_forward(opts: BackendOptions, name: str, graph):
    """The compiler of :func:`fxhlo.graph_capture.aot_capture`: the legalized forward graph
    (a :class:`fxhlo.legalize.Graph`) compiled, or on failure with ``fallback="eager"`` run in
    eager around the parts that compile."""
    gm = graph.module
    if not any(n.op == "call_function" for n in gm.graph.nodes):
        # Nothing to compute (`torch.broadcast_shapes`, a function returning its input or
        # constants): the graph's own forward returns what it returns.
        return _compat.make_boxed_func(gm.forward)
    try:
        if _graph_break.reads(gm):
            # A read whose value must reach Python (a size, a Python result): the graph breaks
            # there in either fallback mode, as Dynamo's own graph break for .item() would.
            return _graph_break.split(gm, functools.partial(_compile_part, opts, name), name)
        return _compile_trace(opts, name, gm, graph.inputs, opts.freeze)
    except (_export.ExportError, CompileError) as e:
        if isinstance(e, _export.ExportError):
            # One the exporter raised outside a trace's export (a node refused before the graph
            # is broken at its scalar reads); one from _compile_trace is dumped already.
            _dump_export_failure(opts, name, gm, e)
        # A missing device is not a graph fxhlo cannot compile: DeviceError always raises.
        if opts.fallback != "eager":
            if isinstance(e, CompileError):
                raise
            raise CompileError(f"graph {name}: {e}") from e
        return _fall_back(opts, name, gm, e)


def _compile_trace(opts: BackendOptions, name: str, gm: torch.fx.GraphModule, inputs: list, freeze: bool):
    """``gm`` written as a trace and compiled in Rust: a :class:`CompiledGraph` (or, for a
    TPU topology, the eager graph once the executable is in the compile cache). Raises
    ExportError or CompileError when fxhlo cannot compile it."""
    from . import _native

    start = time.perf_counter()
    try:
        cap = _export.Capture(gm, inputs, None)
        # The trace goes to Rust as the objects it is made of, read straight into the schema:
        # no JSON text on the way (the exporter's files are written with `to_json`).
        trace, _ = _export.trace_dict(cap, name, Path.cwd().resolve(), collect_weights=False)
    except _export.ExportError as e:
        _dump_export_failure(opts, name, gm, e)
        raise
    constants = [operator.attrgetter(n.target)(gm) for n in gm.graph.nodes
                 if n.op == "get_attr" and "fxhlo_subgraph" not in n.meta]
    frozen = _frozen(trace, inputs, constants) if freeze else None
    export_s = time.perf_counter() - start
    if opts.ahead_of_time:
        return _compile_ahead_of_time(opts, name, trace, frozen, gm)
    exe = _native.compile(trace, f"<{name}>", opts.compile_options(), opts.dump, frozen, opts.dump_dir)
    return CompiledGraph(exe, constants, OutputLayout.of(gm), {"export_s": export_s, **exe.stages})


def _describe_value(val) -> str:
    """A node's ``meta["val"]`` in a line: a tensor's dtype, shape and device, a sequence's
    items, anything else by its type and value."""
    if isinstance(val, torch.Tensor):
        shape = ", ".join(str(s) for s in val.shape)
        return f"{str(val.dtype).removeprefix('torch.')}[{shape}] on {val.device}"
    if isinstance(val, (list, tuple)):
        return "(" + ", ".join(_describe_value(v) for v in val) + ")"
    if val is None:
        return "no value"
    return f"{type(val).__name__} {val!r}"


def _target_text(target) -> str:
    """An FX node's target as text: an ATen overload's name, a function's qualified name."""
    if isinstance(target, (str, _compat.OpOverload)):
        return str(target)
    qualname = getattr(target, "__qualname__", None)
    if qualname is not None:
        return f"{getattr(target, '__module__', None) or '?'}.{qualname}"
    return repr(target)


def _fx_files(gm: torch.fx.GraphModule) -> list:
    """What describes ``gm`` in a dump: ``fx-graph.py`` (its code, as ``print_readable``
    writes it) and ``fx-nodes.txt`` (each node: name, op, target, the meta value's type)."""
    try:
        code = gm.print_readable(print_output=False)
    except Exception:  # noqa: BLE001 - a graph that cannot print itself still has its code
        code = gm.code
    lines = []
    for node in gm.graph.nodes:
        lines.append(f"{node.name}\t{node.op}\t{_target_text(node.target)}\t{_describe_value(node.meta.get('val'))}")
    return [("fx-graph.py", code), ("fx-nodes.txt", "name\top\ttarget\tmeta val\n" + "\n".join(lines) + "\n")]


def _dump_export_failure(opts: BackendOptions, name: str, gm: torch.fx.GraphModule, error: Exception) -> None:
    """With dumping on (``dump``, ``dump_dir`` or ``FXHLO_DUMP``), a graph the exporter refused
    (``error``, an ExportError: there is no trace) is written to ``<dump-dir>/<name>-<digest8>/``
    (the FX graph, its nodes, ``error.txt`` with the error and its traceback, the report), and
    ``error``'s message ends with ``dumped to <folder>`` (docs/dumps.md). Once per error; a
    dump that cannot be written is a warning, and the exporter's error is raised as it is."""
    if getattr(error, "fxhlo_dump", None) is not None:
        return
    from . import _native

    text = (f"{type(error).__name__}: {error}\n\nTraceback (most recent call last):\n"
            + "".join(traceback.format_tb(error.__traceback__)))
    try:
        folder = _native.dump_export_failure(name, _fx_files(gm), text, opts.dump, opts.dump_dir)
    except Exception as e:  # noqa: BLE001 - the export's error is the one to report
        warnings.warn(f"fxhlo: cannot write the dump of graph {name}, which the exporter refused: {e}", stacklevel=3)
        return
    error.fxhlo_dump = folder or ""
    if folder:
        message = str(error.args[0]) if error.args else ""
        error.args = (f"{message}\ndumped to {folder}", *error.args[1:])


def _fall_back(opts: BackendOptions, name: str, fw_gm: torch.fx.GraphModule, error: Exception):
    """``fallback="eager"``: the graph runs in eager PyTorch with the parts fxhlo can compile
    compiled (:mod:`fxhlo.split`), or wholly in eager when the error names no node (the PJRT
    compiler rejecting the graph) or when compiling ahead of time (calls run in eager here
    anyway). One FallbackWarning either way. Parts are never frozen: their inputs are whatever
    the eager graph hands them. The outputs keep PyTorch's layout: eager FX computes the graph's
    own outputs, and each part's :class:`CompiledGraph` gives its outputs their strides."""
    if not opts.ahead_of_time:
        part = functools.partial(_compile_part, opts, name)
        result = _split.split(fw_gm, error, part)
        if result is not None:
            warnings.warn(result.describe(name), FallbackWarning, stacklevel=3)
            return _compat.make_boxed_func(result.module.forward)
    what = ", ".join(sorted({t for t, _, _ in error.ops})) if isinstance(error, UnsupportedOpsError) else str(error)
    warnings.warn(f"fxhlo: graph {name} runs in eager PyTorch (fallback=\"eager\"): {what}",
                  FallbackWarning, stacklevel=3)
    return _compat.make_boxed_func(fw_gm.forward)


def _compile_part(opts: BackendOptions, name: str, gm: torch.fx.GraphModule, inputs: list, part: str):
    """One part of the graph ``name`` split by :func:`_fall_back`, compiled as a graph of its own
    (a part that draws random numbers takes the generator state the graph threads as an input)."""
    return _compile_trace(opts, f"{name}_{part}", gm, inputs, freeze=False)


_ahead_of_time: list[dict] = []


def ahead_of_time_compiles() -> list[dict]:
    """What each graph compiled ahead of time in this process (``device="tpu:<topology>"``)
    gave, oldest first: ``graph``, ``target``, ``key`` (the compile cache key, hex), ``size``
    (bytes of the executable), ``seconds``, ``cached`` (``"memory"``, ``"disk"`` or None when
    compiled now) and, when compiled now, ``cost`` (XLA's cost analysis: ``flops``,
    ``bytes accessed``, ``transcendentals``, ``optimal_seconds``, ...)."""
    return list(_ahead_of_time)


def _compile_ahead_of_time(opts: BackendOptions, name: str, trace: dict, frozen, fw_gm):
    """Compiles the graph for ``opts.device`` in a worker process (a crash of the TPU compiler
    raises CompileError, this process lives on) into the compile cache, and returns the eager
    graph for calls on this machine."""
    from . import _native

    # FXHLO_AOT_WORKER names another worker program (the `fxhlo` binary), as for the CLI.
    program = os.environ.get("FXHLO_AOT_WORKER")
    worker = ([program, "aot-worker"] if program
              else [sys.executable, str(Path(__file__).with_name("_aot_worker.py")), _native.__file__])
    result = _native.compile_ahead_of_time(trace, f"<{name}>", opts.compile_options(), worker, opts.dump, frozen,
                                           opts.dump_dir)
    _ahead_of_time.append(result)
    how = f"from the compile cache ({result['cached']} tier)" if result["cached"] else f"in {result['seconds']:.2f} s"
    warnings.warn(
        f"fxhlo: graph {name} compiled ahead of time for {result['target']} {how}: {result['size']} bytes, cache key "
        f"{result['key'][:16]}; this machine cannot run it, so calls run in eager PyTorch here "
        "(fxhlo.ahead_of_time_compiles() lists every such graph)", AheadOfTimeWarning, stacklevel=2)
    return _compat.make_boxed_func(fw_gm.forward)


def _frozen(trace: dict, inputs: list, constants: list) -> dict:
    """Trace input name -> tensor for every parameter, buffer and constant the graph does not
    mutate (a mutated buffer must stay an input: its new value comes back every call).
    ``constants`` are the graph's lifted tensor constants, trace inputs after the placeholders."""
    mutated = _compat.mutated_inputs()
    values = [inp.value for inp in inputs] + constants
    kinds = [inp.kind for inp in inputs] + ["constant"] * len(constants)
    return {spec["name"]: value for i, (spec, value, kind) in enumerate(zip(trace["inputs"], values, kinds))
            if kind != "user_input" and i not in mutated}


def fxhlo_backend(gm: torch.fx.GraphModule, example_inputs, options=None, **settings):
    """The Dynamo backend ``"fxhlo"``. ``options`` are described in :data:`OPTIONS`; they and
    the ``torch.compile`` settings are checked here, at Dynamo's first call (an unknown option
    or a bad value raises :class:`OptionsError` before anything is captured)."""
    opts = _check_settings(options, settings.get("mode"))
    _refuse_dynamic(gm, example_inputs)
    inputs = _capture.classify(gm, example_inputs)
    name = _graph_name()
    return _capture.aot_capture(gm, example_inputs, inputs, name, functools.partial(_compile_forward, opts, name))


def register() -> None:
    """Registers ``"fxhlo"`` with Dynamo (``import fxhlo`` does it; the package's
    ``torch_dynamo_backends`` entry point does it without the import)."""
    _compat.register_backend("fxhlo", fxhlo_backend)

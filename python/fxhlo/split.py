"""``fallback="eager"``: a graph fxhlo cannot compile whole runs in eager PyTorch, with every part
of it that fxhlo can compile compiled (what Inductor does with its fallback kernels and torch_xla
with its CPU fallback), rather than all of it in eager.

The nodes that must run in eager are the ones the compiler names (``UnsupportedOpsError.ops``)
and the ones the exporter refuses on their own (a random op, a value that is not a tensor, ...;
checked node by node, since the export stops at the first), and the ones taking a tensor whose
shape depends on a value read at run time (``Tensor.item()``, :mod:`fxhlo.graph_break`). The
other nodes are cut into maximal parts by PyTorch's ``CapabilityBasedPartitioner``, which never
merges two parts when that would make one both feed and consume an eager node (a cycle). Each part that computes something is
compiled like a whole graph, with every input a user input (no freezing: its inputs are whatever
the eager graph hands it), and the graph then runs in eager FX with the compiled parts called in
place of their nodes. A part holding ops the compiler refuses (possible after an export error,
which stops before the compiler sees the graph) is cut again around them; a part that fails for
a reason naming no node runs in eager, and the warning says so.

Before (``foo`` unsupported)::

    a = aten.addmm(b, x, w1t); f = mylib.foo(a); c = aten.addmm(b2, f, w2t); r = aten.relu(c)

After::

    (a,) = part0(b, x, w1t); f = mylib.foo(a); (r,) = part1(b2, f, w2t)
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import create_op_support
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from . import _compat
from . import export as _export
from .errors import CompileError, UnsupportedOpsError

PART_PREFIX = "part"
"""Submodule names of the parts in the split graph: ``part0``, ``part1``, ... in graph order."""


@dataclass
class Split:
    """A graph cut into eager nodes and compiled parts."""

    module: torch.fx.GraphModule
    """The graph, with each part a ``call_module`` node (compiled, or its eager sub-graph)."""
    eager_ops: dict
    """Op name -> why it runs in eager (the exporter's reason; None: fxhlo does not lower it)."""
    compiled: list
    """Names of the parts fxhlo compiled."""
    failed: dict
    """Name -> error of each part that did not compile (it runs in eager)."""

    def describe(self, name: str) -> str:
        """The one warning of the graph ``name``: the ops in eager, how many parts compiled."""
        ops = sorted(self.eager_ops)
        text = (f"fxhlo: graph {name}: {len(ops)} op(s) run in eager PyTorch (fallback=\"eager\"): "
                f"{', '.join(ops)}; {len(self.compiled)} part(s) compiled by fxhlo")
        for reason in sorted({r for r in self.eager_ops.values() if r is not None}):
            text += f"; {reason}"
        for part, error in self.failed.items():
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            text += f"; part {part} failed to compile and runs in eager PyTorch: {first}"
        return text


class _CompiledPart(torch.nn.Module):
    """A compiled part in place of its sub-graph: FX calls it with the part's inputs and reads
    its outputs by index (the parts always return a tuple)."""

    def __init__(self, compiled):
        super().__init__()
        self.compiled = compiled

    def forward(self, *args):
        return tuple(self.compiled(list(args)))


def split(gm: torch.fx.GraphModule, error: Exception, compile_part) -> Split | None:
    """``gm`` cut around the nodes that made ``error``, each part compiled with
    ``compile_part(sub_gm, inputs, part_name)`` (a boxed callable, or raises ExportError or
    CompileError). None when ``error`` names no node (a failure of the graph as a whole, such as
    the PJRT compiler rejecting it): the caller then runs the whole graph in eager.

    An export error stops at the first refused node, before the compiler sees the graph, so a
    part may still hold ops the compiler does not lower: they join the eager nodes and the graph
    is cut again, until every part compiles or fails for a reason that names no node."""
    refused = refused_nodes(gm, error)
    if not refused:
        return None
    calls = {n.name for n in gm.graph.nodes if n.op == "call_function"}
    while True:
        result = cut(gm, refused, compile_part)
        named = {node for e in result.failed.values() if isinstance(e, UnsupportedOpsError)
                 for _, node, _ in e.ops} & calls - refused.keys()
        if not named:
            return result
        refused.update(dict.fromkeys(named))


def cut(gm: torch.fx.GraphModule, refused: dict, compile_part) -> Split:
    """One cut of a copy of ``gm`` around ``refused`` (node name -> reason), its parts compiled;
    a part that fails stays in eager, with its error in ``failed``."""
    module = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    nodes = {n.name: n for n in module.graph.nodes}
    eager_ops = {}
    for name, reason in refused.items():
        eager_ops.setdefault(_op_name(nodes[name]), reason)
    parts = _partition(module, {nodes[name] for name in refused})
    fuse_by_partitions(module, [p.nodes for p in parts], prefix=PART_PREFIX, always_return_tuple=True)
    compiled, failed = [], {}
    for node in module.graph.nodes:
        if node.op != "call_module":
            continue
        sub = module.get_submodule(node.target)
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        inputs = [_export.CapturedInput("user_input", None, p.meta["val"], i, None) for i, p in enumerate(placeholders)]
        try:
            part = compile_part(sub, inputs, node.target)
        except (_export.ExportError, CompileError) as e:
            failed[node.target] = e
            continue
        setattr(module, node.target, _CompiledPart(part))
        compiled.append(node.target)
    module.recompile()
    return Split(module, eager_ops, compiled, failed)


def refused_nodes(gm: torch.fx.GraphModule, error: Exception) -> dict:
    """Node name -> why it must run in eager: the exporter's reason, or None for an op
    ``error`` (an :class:`UnsupportedOpsError`) names as one the compiler does not lower."""
    calls = {n.name for n in gm.graph.nodes if n.op == "call_function"}
    refused = {}
    if isinstance(error, UnsupportedOpsError):
        refused.update({name: None for _, name, _ in error.ops if name in calls})
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.name not in refused:
            reason = _export_refusal(node)
            if reason is not None:
                refused[node.name] = reason
    return refused


def _export_refusal(node: torch.fx.Node) -> str | None:
    """Why the exporter refuses ``node`` alone (its op, arguments or results), or None. Random
    draws are threaded by then (``rng-state``, :mod:`fxhlo.legalize`): a part that draws takes
    the generator state as one of its inputs, as any other value the graph hands it."""
    try:
        _export.node_spec(node, {})
    except _export.ExportError as e:
        return str(e)
    for a in node.all_input_nodes:
        if _symbolic(a.meta.get("val")):
            return (f"node {node.name} takes {a.name}, whose shape depends on a value read from a tensor "
                    f"({_shape(a.meta.get('val'))}): it runs where that value is known")
    return None


def depends_on_data(node: torch.fx.Node) -> bool:
    """``node``'s value, its shape or one of its arguments is a symbol of a value read from a
    tensor at run time (``Tensor.item()``, ``tolist()``): it can only run where that value is
    a Python number, in eager (fxhlo specializes shapes)."""
    return any(_symbolic(v) for v in (node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)))


def _symbolic(val) -> bool:
    if val is None or isinstance(val, (int, float, bool, str)):
        return False
    try:
        return bool(_compat.free_symbols(val))
    except (AssertionError, TypeError):  # a value free_symbols does not walk (a generator, ...)
        return False


def _shape(val) -> str:
    if isinstance(val, torch.Tensor):
        return f"shape {tuple(val.shape)}"
    if isinstance(val, (list, tuple)):
        return ", ".join(_shape(v) for v in val)
    return repr(val)


def _op_name(node: torch.fx.Node) -> str:
    if isinstance(node.target, _compat.OpOverload):
        return str(node.target)  # aten.add.Tensor, as the compiler names ops
    return getattr(node.target, "__name__", repr(node.target))


def _computes(node: torch.fx.Node) -> bool:
    """Worth compiling: an op other than a view or a tuple selection (a part of views only
    would copy what eager merely reinterprets)."""
    return (node.op == "call_function" and node.target is not operator.getitem
            and not getattr(node.target, "is_view", False))


def _partition(gm: torch.fx.GraphModule, refused: set) -> list:
    """The parts to compile, in graph order: maximal sets of call_function nodes not in
    ``refused``, with no path from one through an eager node back into it, each computing
    something."""
    support = create_op_support(lambda _, node: node.op == "call_function" and node not in refused)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    parts = [p for p in partitioner.propose_partitions() if any(_computes(n) for n in p.nodes)]
    return sorted(parts, key=lambda p: min(order[n] for n in p.nodes))

"""Legalizations: the rewrites that make AOT Autograd's forward graph a graph of tensors and ATen
ops that fxhlo writes as a trace, as one ordered list (:data:`LEGALIZATIONS`) that the
torch.compile backend and :func:`fxhlo.export` both run, through :func:`run`
(:func:`fxhlo.graph_capture.aot_capture` calls it for both).

A legalization changes the graph in place (:class:`Graph`: the GraphModule and what its
placeholders are bound to) and returns None, or a :class:`Wrapper` when the graph then needs a
step around it at run time (effect tokens passed around it, a random-number state fed to it).
The runner (:func:`run`) lints the graph after each one. A legalization never compiles, prints
or writes files.

Adding one is writing its function (a docstring with what it rewrites, before and after) and
putting one :class:`Legalization` entry in the list, where its reason says it belongs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import torch

from . import _compat
from . import custom_ops as _custom_ops
from . import effects as _effects
from . import item as _item
from . import rng as _rng
from .errors import CompileError

aten = torch.ops.aten


@dataclass(frozen=True)
class Wrapper:
    """A step around the compiled graph that a legalization asks for: ``wrap`` takes the boxed
    callable that runs the legalized graph (compiled, or in eager after a fallback) and returns
    the boxed callable that runs the graph AOT Autograd gave."""

    legalization: str
    """The name of the legalization that asked for it."""
    wrap: Callable
    bundle_refusal: str | None = None
    """Why a trace bundle cannot hold the legalized graph, which the ``fxhlo`` CLI runs without
    fxhlo's Python runtime and so without this wrapper (the random-number state); None when the
    graph computes the same without it (effect tokens only pass around the graph)."""


@dataclass
class Graph:
    """The forward graph being legalized."""

    module: torch.fx.GraphModule
    inputs: list
    """One :class:`fxhlo.graph_capture.CapturedInput` per placeholder once legalized. Before
    ``effect-tokens`` has run, AOT Autograd's token placeholders lead the graph and have none."""
    name: str = "graph"
    """The graph's name, for messages."""
    wrappers: list = field(default_factory=list)
    """The :class:`Wrapper` of each legalization that asked for one, in the list's order."""

    def wrap(self, compiled):
        """``compiled`` (the boxed callable of the legalized graph) in every wrapper, the first
        legalization's outermost: each undoes its own change to the calling convention, last
        change first."""
        for wrapper in reversed(self.wrappers):
            compiled = wrapper.wrap(compiled)
        return compiled


@dataclass(frozen=True)
class Legalization:
    """One entry of :data:`LEGALIZATIONS`."""

    name: str
    run: Callable[[Graph], Wrapper | None]
    why_here: str
    """Why it sits where it does in the list."""


# ---- the legalizations ----------------------------------------------------------------------


def effect_tokens(graph: Graph) -> Wrapper | None:
    """Drops the value checks AOT Autograd orders with effect tokens (``_linalg_check_errors``
    of ``linalg.cholesky``: a compiled graph cannot raise mid-graph) and then the token
    placeholders and outputs, which the wrapper passes around the compiled graph
    (:mod:`fxhlo.effects`).

    Then every placeholder left must be one of Dynamo's inputs (else CompileError: with autograd
    on, or an effect other than a check, AOT Autograd adds inputs Dynamo does not pass).

    Before: ``placeholder(token); with_effects(token, _linalg_check_errors, info); return (token_1, l)``.
    After: ``return (l,)``, the wrapper returning the token it was given."""
    tokens = _effects.strip(graph.module, len(graph.inputs))
    placeholders = [n for n in graph.module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(graph.inputs):
        raise CompileError(
            f"graph {graph.name}: AOT Autograd's forward graph has {len(placeholders)} inputs for Dynamo's "
            f"{len(graph.inputs)}; fxhlo compiles inference graphs (call the model under torch.no_grad())"
        )
    if not tokens:
        return None
    return Wrapper("effect-tokens", functools.partial(_effects.Threaded, tokens=tokens))


class _Resolved:
    """A boxed compiled graph whose inputs at ``positions`` are resolved first (their lazy
    conjugation or negation made real): see :func:`conj_neg_views`."""

    _boxed_call = True

    def __init__(self, inner, positions: tuple):
        self.inner = inner
        self.positions = positions

    def __call__(self, args):
        args = list(args)
        for i in self.positions:
            args[i] = args[i].resolve_conj().resolve_neg()
        return self.inner(args)


def conj_neg_views(graph: Graph) -> Wrapper | None:
    """Inputs that are conjugate or negative views (``z.conj()``: PyTorch only sets a bit, and
    the memory holds the values before conjugation) are resolved before the compiled graph
    reads them: the device reads memory, not bits. The graph is unchanged; the wrapper resolves
    the inputs at the positions whose example had a bit set, and Dynamo's guards (on the
    tensor's dispatch keys) keep every other tensor from reaching this graph.

    Before: ``conj(z) * 2`` read as ``z * 2``. After: ``z.resolve_conj()`` passed instead."""
    positions = tuple(
        i for i, inp in enumerate(graph.inputs)
        if isinstance(inp.value, torch.Tensor) and (inp.value.is_conj() or inp.value.is_neg())
    )
    if not positions:
        return None
    return Wrapper("conj-neg-views", functools.partial(_Resolved, positions=positions))


def custom_ops(graph: Graph) -> None:
    """Each call of a ``torch.library`` op that has a decomposition becomes the ATen ops it
    decomposes into, traced with fxhlo's table (:mod:`fxhlo.custom_ops`).

    Before: ``r = mylib.square_plus.default(a, b)``.
    After: ``mul = aten.mul.Tensor(a, a); r = aten.add.Tensor(mul, b)``."""
    _custom_ops.decompose(graph.module)


def scalars_as_tensors(graph: Graph) -> None:
    """A number read from a tensor and turned back into one (``torch.tensor(x.sum().item())``,
    or ``x.item()`` returned from a function: Dynamo writes ``scalar_tensor`` of
    ``_local_scalar_dense``) becomes the tensor reshaped to 0-d and converted, so the graph stays
    one of tensors. A number that feeds other ops is left, and refused by the export.

    Before: ``n = _local_scalar_dense(t); r = scalar_tensor(n, dtype=f32)``.
    After: ``v = view(t, []); r = _to_copy(v, dtype=f32)``."""
    gm = graph.module
    changed = False
    for node in list(gm.graph.nodes):
        if node.target is not aten._local_scalar_dense.default:
            continue
        users = list(node.users)
        if not users or any(u.target is not aten.scalar_tensor.default for u in users):
            continue
        source = node.args[0]
        for user in users:
            with gm.graph.inserting_before(user):
                view = gm.graph.call_function(aten.view.default, (source, []))
                view.meta["val"] = source.meta["val"].reshape(())
                dtype = user.kwargs.get("dtype") or torch.get_default_dtype()
                cast = gm.graph.call_function(aten._to_copy.default, (view,), {"dtype": dtype})
                cast.meta["val"] = user.meta["val"]
            user.replace_all_uses_with(cast)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()


def item_scalars(graph: Graph) -> Wrapper | None:
    """Every other number read from a tensor (``x.item()``, ``x.tolist()``) whose value stays in
    the graph (it feeds tensor ops, Python arithmetic or an assertion) becomes the 0-d tensor it
    was read from, cast as eager would cast the Python number (:mod:`fxhlo.item`). The graph's
    scalar assertions move to one extra boolean output, which the wrapper checks after each
    call (raising eager's message). Reads whose value must reach Python are left: the backend
    breaks the graph there (:mod:`fxhlo.graph_break`).
    Before: ``n = _local_scalar_dense(t); r = aten.mul.Tensor(x, n)``.
    After: ``r = aten.mul.Tensor(x, _to_copy(view(t, []), dtype=f32))``."""
    checks = _item.legalize(graph.module)
    if not checks:
        return None
    return Wrapper("item-scalars", functools.partial(_item.Checked, messages=checks),
                   bundle_refusal="its scalar assertions are checked after each call by fxhlo's Python runtime, "
                                  "which the fxhlo CLI does not have")


def complex_numbers(graph: Graph) -> None:
    """A Python complex number where the op takes a tensor (``z - 1j`` is
    ``aten.sub.Tensor(z, 1j)``, a wrapped number) becomes a 0-d complex tensor: the trace's
    scalars are real. Promotion is unchanged (a 0-d tensor, like a wrapped number, does not
    widen a dimensioned complex operand).

    Before: ``r = aten.sub.Tensor(z, 1j)``.
    After: ``re = full([], 0.0); im = full([], 1.0); c = complex(re, im); r = aten.sub.Tensor(z, c)``."""
    gm = graph.module
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, _compat.OpOverload):
            continue
        schema = _compat.schema(node.target).arguments
        args = list(node.args)
        for i, a in enumerate(args):
            if not isinstance(a, complex) or i >= len(schema) or str(schema[i].type) != "Tensor":
                continue
            val = node.meta.get("val")
            wide = isinstance(val, torch.Tensor) and val.dtype in (torch.complex128, torch.float64)
            part = torch.float64 if wide else torch.float32
            with gm.graph.inserting_before(node):
                re, im = (gm.graph.call_function(aten.full.default, ([], v), {"dtype": part}) for v in (a.real, a.imag))
                re.meta["val"] = torch.full([], a.real, dtype=part)
                im.meta["val"] = torch.full([], a.imag, dtype=part)
                z = gm.graph.call_function(aten.complex.default, (re, im))
                z.meta["val"] = torch.complex(re.meta["val"], im.meta["val"])
            args[i] = z
            changed = True
        node.args = tuple(args)
    if changed:
        gm.recompile()


def rng_state(graph: Graph) -> Wrapper | None:
    """A graph that draws random numbers (``fxhlo::random_bits``, what fxhlo's decompositions
    make of every random op) gets a generator-state input, last, threaded through its draws in
    order (:func:`fxhlo.rng.thread_state`); the wrapper feeds a new state on every call.

    Before: ``bits = fxhlo.random_bits.default([4], torch.int32)``.
    After: ``rng = fxhlo.rng_bit_generator.default(rng_state, [4], torch.int32); bits = getitem(rng, 1)``."""
    threaded = _rng.thread_state(graph.module)
    if threaded is None:
        return None
    refusal = _draw_description(graph.module) + (
        ": a trace must be deterministic (export in eval mode, and do not draw random numbers in forward)")
    graph.module = threaded
    graph.inputs.append(_rng.state_input(sum(i.kind == "user_input" for i in graph.inputs)))
    return Wrapper("rng-state", _rng.Seeded, bundle_refusal=refusal)


def _draw_description(gm: torch.fx.GraphModule) -> str:
    """The first draw of ``gm`` and the op it comes from, for the export's refusal."""
    for node in gm.graph.nodes:
        if node.target is _rng.RANDOM_BITS:
            origin = node.meta.get("original_aten")
            return f"node {node.name} draws random numbers" + (f" (from {origin}, a random op)" if origin else "")
    return "a control-flow branch or loop body of the graph draws random numbers"


# ---- the list -------------------------------------------------------------------------------

LEGALIZATIONS = (
    Legalization("effect-tokens", effect_tokens,
                 "first: AOT Autograd's token placeholders lead the graph, and every later step takes "
                 "the placeholders to be Dynamo's inputs (which this one checks)"),
    Legalization("conj-neg-views", conj_neg_views,
                 "after effect-tokens, which leaves the placeholders Dynamo's inputs, so that the positions "
                 "it resolves are theirs; anywhere before rng-state, which appends an input"),
    Legalization("custom-ops", custom_ops,
                 "before the rewrites of ATen calls: the ops a custom op decomposes into may need them "
                 "(a complex constant, a random draw)"),
    Legalization("scalars-as-tensors", scalars_as_tensors,
                 "after custom-ops, so that a number read inside a decomposed custom op is seen too"),
    Legalization("item-scalars", item_scalars,
                 "after scalars-as-tensors, which handles the reads turned straight back into tensors; "
                 "before complex-numbers and rng-state, so that the ops it adds are seen by them"),
    Legalization("complex-numbers", complex_numbers,
                 "after custom-ops, so that a complex constant inside a decomposed custom op is seen too"),
    Legalization("rng-state", rng_state,
                 "last: it threads every draw, including the ones custom-ops brought in, and adds the "
                 "last placeholder (the state), which no later step must take for one of Dynamo's inputs"),
)
"""Every legalization, in the order :func:`run` applies them."""

NAMES = tuple(leg.name for leg in LEGALIZATIONS)


def select(names=None) -> tuple:
    """The legalizations named ``names`` (None: all), in the list's order; an unknown name
    raises ValueError listing the valid ones."""
    if names is None:
        return LEGALIZATIONS
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise ValueError(f"unknown legalization(s) {', '.join(map(repr, unknown))}; valid: {', '.join(NAMES)}")
    return tuple(leg for leg in LEGALIZATIONS if leg.name in names)


def run(module: torch.fx.GraphModule, inputs, name: str, names=None) -> Graph:
    """Applies the legalizations (:func:`select` of ``names``, default all) in order to AOT
    Autograd's forward graph ``module`` of the graph ``name``, whose Dynamo inputs are ``inputs``
    (one :class:`fxhlo.graph_capture.CapturedInput` each), linting it after each."""
    graph = Graph(module, list(inputs), name)
    for legalization in select(names):
        wrapper = legalization.run(graph)
        graph.module.graph.lint()
        if wrapper is not None:
            graph.wrappers.append(wrapper)
    return graph

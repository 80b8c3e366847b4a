"""Random numbers in compiled graphs.

fxhlo's capture decomposes every random op (``rand``, ``randn``, ``dropout``, ``bernoulli``,
...; :mod:`fxhlo.decompositions.random`) into arithmetic on uniformly random bits drawn by one
op, ``fxhlo::random_bits(size, dtype)``. The last legalization (``rng-state``,
:mod:`fxhlo.legalize`) then gives the graph, with :func:`thread_state`, one more input, a generator state (``int64[2]``), and replaces each ``random_bits`` by
``fxhlo::rng_bit_generator(state, size, dtype)``, which returns the next state and the bits and
becomes ``stablehlo.rng_bit_generator`` (three-fry); the states chain through the graph in
order, so no two random ops of a graph draw the same bits. Draws inside ``while_loop`` bodies
and ``cond`` branches (rejection samplers are loops) get the state as one more carried value or
operand, which the subgraph returns advanced. The compiled graph's caller
(:class:`Seeded`) passes a fresh state on every call, drawn from PyTorch's default CPU
generator: two calls differ, and ``torch.manual_seed`` makes a run repeatable. fxhlo matches
eager PyTorch's distributions, not its bit stream (as Inductor and torch_xla do).

Before (``torch.rand(4)`` after the decompositions)::

    bits = fxhlo.random_bits.default([4], torch.int32); ...

After::

    rng_state = placeholder()
    rng = fxhlo.rng_bit_generator.default(rng_state, [4], torch.int32)
    bits = getitem(rng, 1); ...

Both ops also run in eager PyTorch: ``random_bits`` draws from the default generator,
``rng_bit_generator`` (in a graph that falls back to eager, or the eager part of a split graph,
which hands the state on to the parts that draw) from a generator seeded with the state.
"""

from __future__ import annotations

import contextlib
import copy
import operator
from collections.abc import Sequence

import torch

from . import _compat

STATE_NAME = "rng_state"
"""The name of the generator-state input a graph with random ops gets."""

_BITS_RANGE = {torch.int32: (-2**31, 2**31), torch.int64: (-2**63, 2**63 - 1)}


def _check_bits_dtype(dtype: torch.dtype) -> None:
    if dtype not in _BITS_RANGE:
        raise ValueError(f"fxhlo random bits are int32 or int64, not {dtype}")


@torch.library.custom_op("fxhlo::random_bits", mutates_args=(), tags=(torch.Tag.nondeterministic_seeded,))
def random_bits(size: Sequence[int], dtype: torch.dtype, device: torch.device | None = None) -> torch.Tensor:
    """Uniformly random bits (every value of ``dtype``, int32 or int64, equally likely)."""
    _check_bits_dtype(dtype)
    low, high = _BITS_RANGE[dtype]
    return torch.randint(low, high, list(size), dtype=dtype, device=device)


@random_bits.register_fake
def _(size, dtype, device=None):
    _check_bits_dtype(dtype)
    return torch.empty(list(size), dtype=dtype, device=device)


@torch.library.custom_op("fxhlo::rng_bit_generator", mutates_args=())
def rng_bit_generator(state: torch.Tensor, size: Sequence[int], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The next generator state and uniformly random bits of ``size`` drawn from ``state``
    (``int64[2]``). Compiled, it is ``stablehlo.rng_bit_generator``; this eager form draws
    from a generator seeded with the state (another stream, the same distribution)."""
    _check_bits_dtype(dtype)
    key, counter = (int(v) for v in state.cpu())
    generator = torch.Generator().manual_seed((key * 0x9E3779B97F4A7C15 + counter) % 2**64)
    low, high = _BITS_RANGE[dtype]
    bits = torch.randint(low, high, list(size), dtype=dtype, generator=generator).to(state.device)
    step = torch.zeros_like(state)
    step[1] = 1
    return state + step, bits


@rng_bit_generator.register_fake
def _(state, size, dtype):
    _check_bits_dtype(dtype)
    return torch.empty_like(state), torch.empty(list(size), dtype=dtype, device=state.device)


RANDOM_BITS = torch.ops.fxhlo.random_bits.default
RNG_BIT_GENERATOR = torch.ops.fxhlo.rng_bit_generator.default


def new_state() -> torch.Tensor:
    """A generator state drawn from PyTorch's default CPU generator (it advances it)."""
    return torch.randint(-2**63, 2**63 - 1, (2,), dtype=torch.int64)


def thread_state(gm: torch.fx.GraphModule) -> torch.fx.GraphModule | None:
    """A copy of ``gm`` with a last placeholder, :data:`STATE_NAME`, and its ``random_bits``
    calls replaced by ``rng_bit_generator`` calls chained from it, in graph order; None when
    ``gm`` draws no random numbers. ``gm`` itself is left as it is (the ``rng-state``
    legalization, :func:`fxhlo.legalize.rng_state`, replaces it by the copy).

    Draws inside control flow are threaded too (:func:`_thread_while`, :func:`_thread_cond`):
    the state enters a ``while_loop`` as one more carried value (each iteration draws new bits)
    and a ``cond`` as one more operand that each branch returns. Draws in a loop's condition
    are not threaded (its state could not leave it): the export refuses them."""
    calls = _draw_vals(gm)
    if not calls:
        return None
    gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    anchor = graph.inserting_after(placeholders[-1]) if placeholders else graph.inserting_before(next(iter(graph.nodes)))
    with anchor:
        state = graph.placeholder(STATE_NAME)
    fake_mode = _compat.detect_fake_mode(calls)
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        state_val = torch.empty(2, dtype=torch.int64)
    state.meta["val"] = state_val
    state = _thread(gm, state, state_val)
    if state.op != "placeholder" and not state.users:
        graph.erase_node(state)  # the last state: nothing draws after it
    graph.lint()
    gm.recompile()
    return gm


_WHILE_LOOP = torch.ops.higher_order.while_loop
_COND = torch.ops.higher_order.cond


def _subgraph(gm: torch.fx.GraphModule, node) -> torch.fx.GraphModule | None:
    """The GraphModule a ``get_attr`` node of ``gm`` fetches (a control-flow body), or None."""
    if not isinstance(node, torch.fx.Node) or node.op != "get_attr":
        return None
    value = operator.attrgetter(node.target)(gm)
    return value if isinstance(value, torch.fx.GraphModule) else None


def _draw_vals(gm: torch.fx.GraphModule) -> list:
    """The results (``meta["val"]``) of every ``random_bits`` call of ``gm`` and its subgraphs."""
    vals = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is RANDOM_BITS:
            vals.append(n.meta.get("val"))
        sub = _subgraph(gm, n)
        if sub is not None:
            vals.extend(_draw_vals(sub))
    return vals


def _draws(gm: torch.fx.GraphModule, attrs) -> bool:
    """Whether any of the subgraphs the ``get_attr`` nodes ``attrs`` fetch draws random bits."""
    return any(_draw_vals(sub) for sub in (_subgraph(gm, a) for a in attrs) if sub is not None)


def _thread(gm: torch.fx.GraphModule, state: torch.fx.Node, state_val) -> torch.fx.Node:
    """Chains the draws of ``gm`` (a private copy: it is changed in place) from ``state``, a
    node of its graph, in graph order; returns the state after the last draw."""
    graph = gm.graph
    for call in list(graph.nodes):
        if call.op != "call_function":
            continue
        if call.target is _WHILE_LOOP and _draws(gm, call.args[1:2]):
            state = _thread_while(gm, call, state, state_val)
            continue
        if call.target is _COND and _draws(gm, call.args[1:3]):
            state = _thread_cond(gm, call, state, state_val)
            continue
        if call.target is not RANDOM_BITS:
            continue
        size, dtype = call.args[0], call.args[1]
        with graph.inserting_before(call):
            rng = graph.call_function(RNG_BIT_GENERATOR, (state, size, dtype))
            rng.meta["val"] = (state_val, call.meta["val"])
            next_state = graph.call_function(operator.getitem, (rng, 0))
            next_state.meta["val"] = state_val
            bits = graph.call_function(operator.getitem, (rng, 1))
            bits.meta["val"] = call.meta["val"]
        for key in ("stack_trace", "source_fn_stack", "nn_module_stack"):
            if key in call.meta:
                rng.meta[key] = bits.meta[key] = call.meta[key]
        call.replace_all_uses_with(bits)
        graph.erase_node(call)
        state = next_state
    return state


def _own_subgraph(gm: torch.fx.GraphModule, call: torch.fx.Node, index: int) -> torch.fx.GraphModule:
    """A copy of the subgraph ``call.args[index]`` fetches, installed in ``gm`` under a new name
    for ``call`` alone (the original may be shared with ``gm``'s source, which must not change)."""
    attr = call.args[index]
    sub = _subgraph(gm, attr)
    own = torch.fx.GraphModule(sub, copy.deepcopy(sub.graph))
    name, i = f"{attr.target}_rng", 0
    while hasattr(gm, name):
        i += 1
        name = f"{attr.target}_rng{i}"
    gm.add_submodule(name, own)
    with gm.graph.inserting_before(call):
        new_attr = gm.graph.get_attr(name)
    new_attr.meta.update(attr.meta)
    args = list(call.args)
    args[index] = new_attr
    call.args = tuple(args)
    if not attr.users:
        gm.graph.erase_node(attr)
        if not any(n.op == "get_attr" and n.target == attr.target for n in gm.graph.nodes):
            gm.delete_submodule(attr.target)  # this copy's reference only; the source keeps its own
    return own


def _add_state_input(sub: torch.fx.GraphModule, position: int, state_val) -> torch.fx.Node:
    """A new placeholder of ``sub``, the ``position``-th."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    if position < len(placeholders):
        anchor = sub.graph.inserting_before(placeholders[position])
    else:
        anchor = sub.graph.inserting_after(placeholders[-1]) if placeholders else sub.graph.inserting_before()
    with anchor:
        node = sub.graph.placeholder(f"{STATE_NAME}_in")
    node.meta["val"] = state_val
    return node


def _return_state(sub: torch.fx.GraphModule, state: torch.fx.Node) -> None:
    """``sub`` returns ``state`` after its own results."""
    out = next(n for n in reversed(sub.graph.nodes) if n.op == "output")
    results = out.args[0]
    results = tuple(results) if isinstance(results, (tuple, list)) else (results,)
    out.args = ((*results, state),)
    sub.graph.lint()
    sub.recompile()


def _next_state(graph: torch.fx.Graph, call: torch.fx.Node, index: int, state_val) -> torch.fx.Node:
    """``call``'s result ``index``, the state it returns (``call`` returns one more value)."""
    val = call.meta.get("val")
    call.meta["val"] = (*(val if isinstance(val, (tuple, list)) else (val,)), state_val)
    with graph.inserting_after(call):
        next_state = graph.call_function(operator.getitem, (call, index))
    next_state.meta["val"] = state_val
    return next_state


def _thread_while(gm, call, state, state_val) -> torch.fx.Node:
    """``while_loop(cond, body, carried, additional)`` with the state carried last: the body
    takes it after the carried values, draws from it and returns the new state last, so every
    iteration draws new bits; the loop's last result is the state after the loop."""
    carried = tuple(call.args[2])
    cond = _own_subgraph(gm, call, 0)
    body = _own_subgraph(gm, call, 1)
    _add_state_input(cond, len(carried), state_val)  # unused: the condition takes the carried values
    inner = _add_state_input(body, len(carried), state_val)
    _return_state(body, _thread(body, inner, state_val))
    cond.graph.lint()
    cond.recompile()
    args = list(call.args)
    args[2] = (*carried, state)
    call.args = tuple(args)
    return _next_state(gm.graph, call, len(carried), state_val)


def _thread_cond(gm, call, state, state_val) -> torch.fx.Node:
    """``cond(pred, true_fn, false_fn, operands)`` with the state as a last operand, which each
    branch returns last (as it is, if that branch draws nothing)."""
    operands = tuple(call.args[3])
    for index in (1, 2):
        branch = _own_subgraph(gm, call, index)
        inner = _add_state_input(branch, len(operands), state_val)
        _return_state(branch, _thread(branch, inner, state_val))
    results = call.meta.get("val")
    count = len(results) if isinstance(results, (tuple, list)) else 1
    args = list(call.args)
    args[3] = (*operands, state)
    call.args = tuple(args)
    return _next_state(gm.graph, call, count, state_val)


def state_input(index: int):
    """The :class:`fxhlo.export.CapturedInput` of the state placeholder (``index``: its position
    among the user inputs)."""
    from .graph_capture import CapturedInput

    return CapturedInput("user_input", None, new_state(), index, "fxhlo's random-number generator state")


class Seeded:
    """A boxed compiled graph whose last input is a generator state: each call appends a new
    one (:func:`new_state`)."""

    _boxed_call = True

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, args):
        seeded = [*args, new_state()]
        if isinstance(args, list):
            args.clear()  # the boxed convention: the callee frees its arguments
        return self.inner(seeded)

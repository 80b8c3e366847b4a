"""Random numbers in compiled graphs.

fxhlo's capture decomposes every random op (``rand``, ``randn``, ``dropout``, ``bernoulli``,
...; :mod:`fxhlo.decompositions.random`) into arithmetic on uniformly random bits drawn by one
op, ``fxhlo::random_bits(size, dtype)``. Before a graph is compiled, :func:`thread_state`
gives it one more input, a generator state (``int64[2]``), and replaces each ``random_bits`` by
``fxhlo::rng_bit_generator(state, size, dtype)``, which returns the next state and the bits and
becomes ``stablehlo.rng_bit_generator`` (three-fry); the states chain through the graph in
order, so no two random ops of a graph draw the same bits. The compiled graph's caller
(:class:`Seeded`) passes a fresh state on every call, drawn from PyTorch's default CPU
generator: two calls differ, and ``torch.manual_seed`` makes a run repeatable. fxhlo matches
eager PyTorch's distributions, not its bit stream (as Inductor and torch_xla do).

Before (``torch.rand(4)`` after the decompositions)::

    bits = fxhlo.random_bits.default([4], torch.int32); ...

After::

    rng_state = placeholder()
    rng = fxhlo.rng_bit_generator.default(rng_state, [4], torch.int32)
    bits = getitem(rng, 1); ...

Both ops also run in eager PyTorch (a graph that falls back to eager, or the eager part of a
split graph): ``random_bits`` draws from the default generator, ``rng_bit_generator`` from a
generator seeded with the state.
"""

from __future__ import annotations

import contextlib
import copy
import operator
from collections.abc import Sequence

import torch

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
    ``gm`` draws no random numbers. ``gm`` itself is left as it is: if the copy does not
    compile, ``fallback="eager"`` runs ``gm``."""
    if not any(n.op == "call_function" and n.target is RANDOM_BITS for n in gm.graph.nodes):
        return None
    gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    graph = gm.graph
    calls = [n for n in graph.nodes if n.op == "call_function" and n.target is RANDOM_BITS]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    anchor = graph.inserting_after(placeholders[-1]) if placeholders else graph.inserting_before(next(iter(graph.nodes)))
    with anchor:
        state = graph.placeholder(STATE_NAME)
    fake_mode = torch._guards.detect_fake_mode([n.meta.get("val") for n in calls])
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        state_val = torch.empty(2, dtype=torch.int64)
    state.meta["val"] = state_val
    for call in calls:
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
    graph.erase_node(state)  # the last state: nothing draws after it
    graph.lint()
    gm.recompile()
    return gm


def state_input(index: int):
    """The :class:`fxhlo.export.CapturedInput` of the state placeholder (``index``: its position
    among the user inputs)."""
    from .export import CapturedInput

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

"""The graph PyTorch hands a backend for another device, without that device.

:func:`capture_for` runs fxhlo's capture (Dynamo, then :func:`fxhlo.graph_capture.aot_capture`
with fxhlo's decompositions and legalizations) with every graph input replaced by a fake tensor
on ``device`` (``torch._subclasses.fake_tensor.FakeTensorMode`` makes ``cuda`` tensors and gives
their CUDA metadata on a machine without a GPU): the ATen graph and metas are the ones a CUDA
run would produce, batch norm's ``f32[C]`` statistics and 16-bit layer norm's f32 statistics
included. The trace it returns compiles for the CPU plugin and runs on the real CPU inputs, so
a test can compare it with eager (:func:`run_trace`). Used by ``scripts/opinfo_sweep.py
--device cuda`` and by ``python/tests/test_device_variants.py``.

A fake device does not choose kernels the way the real one does: ``F.scaled_dot_product_attention``
falls back to its math form on fake CUDA tensors without a GPU. fxhlo intercepts that call
before the dispatcher anyway (``fxhlo.decompositions.attention``); the CUDA kernels themselves
(``_scaled_dot_product_efficient_attention``, ...) are reached by calling them directly.
"""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass
from pathlib import Path

import torch

from . import _compat
from . import graph_capture as _capture
from .export import trace_dict


@dataclass
class DeviceTrace:
    """One captured graph: the trace dict and weights (as :func:`fxhlo.export.trace_dict`
    gives them) and the real CPU tensors of its user inputs, by input name."""

    trace: dict
    weights: dict
    inputs: dict


class _Captured(Exception):
    """Raised by the capture's graph instead of running it."""


def _fake(mode, t, device: str):
    if not isinstance(t, torch.Tensor):
        return t
    with mode:
        return mode.from_tensor(t, static_shapes=True).to(device)


def capture_for(model, args, device: str = "cuda", name: str = "fake") -> DeviceTrace:
    """Captures ``model(*args)`` (real CPU tensors) as fxhlo's backend would see it with every
    tensor on ``device``, faked: Dynamo runs on the real tensors, AOT Autograd on fake ones."""
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, list(example_inputs)))

        def stop(*_):
            # The graph is not run: it may call kernels the CPU does not have (a model that
            # calls a CUDA attention kernel directly).
            raise _Captured

        return stop

    args = tuple(args)
    fn = types.FunctionType(_capture._call.__code__.replace(), _capture._call.__globals__, "_call")
    try:
        with torch.no_grad():
            _compat.compile_once(fn, backend)(model, *args)
    except _Captured:
        pass
    finally:
        _compat.forget_compiled(fn)
    if len(seen) != 1:
        raise RuntimeError(f"Dynamo captured {len(seen)} graphs; capture_for takes models of one graph")
    gm, real = seen[0]
    _move_factories(gm, torch.device(device))
    inputs = _capture.classify(gm, real)
    # With a shape environment, as Dynamo's own fake mode has: higher-order ops (the
    # while_loop of fxhlo's polynomial decompositions) trace through it.
    mode = _compat.FakeTensorMode(allow_non_fake_inputs=True, shape_env=_compat.ShapeEnv())
    fake = [_fake(mode, t, device) for t in real]
    graphs = []

    def on_forward(graph):
        graphs.append(graph)
        return _compat.make_boxed_func(graph.module.forward)

    with torch.no_grad(), _without_the_device(device):
        _capture.aot_capture(gm, fake, inputs, name, on_forward)
    (graph,) = graphs
    # The legalized graph's inputs hold the real tensors (classify's), so the weights are real.
    cap = _capture.Capture(graph.module, graph.inputs, None)
    trace, weights = trace_dict(cap, name, Path.cwd())
    user = {spec["name"]: inp.value for spec, inp in zip(trace["inputs"], graph.inputs) if inp.kind == "user_input"}
    return DeviceTrace(trace, weights, user)


@contextlib.contextmanager
def _without_the_device(device: str):
    """What AOT Autograd's tracing asks of the device for real, answered without it (for a
    device other than the CPU, while capturing):

    * The tracer computes a small tensor made of constants for real, outside the fake mode
      (``proxy_tensor.CONSTANT_NUMEL_LIMIT``, one element): ``torch.tensor([], device="cuda")``
      (transformers' KV cache starts each layer so) becomes a real CUDA copy, which fails
      without a driver. The folding is off: the graph's nodes are the same (the folded value is
      only kept beside them, for a later ``.item()``); a model that reads such a value while
      traced fails with PyTorch's data-dependent error instead.
    * Training batch norm's decomposition asks cuDNN the size of its reserve space (a uint8
      tensor for the backward, dropped from the forward graph): without a GPU the size is 0.
    * An op with no meta kernel (``geqrf``, ``histogram``) is run for real by the fake mode, on
      the tensors' device: without that device it runs on the CPU, and its results are fake
      tensors of the device with the CPU kernel's sizes and strides.
    """
    from torch._subclasses import fake_tensor
    from torch.fx.experimental import proxy_tensor

    if torch.device(device).type == "cpu":
        yield
        return
    # PyTorch internals, each looked up where it is (a release without one captures as before).
    before = getattr(proxy_tensor, "CONSTANT_NUMEL_LIMIT", None)
    reserve = getattr(torch._C, "_get_cudnn_batch_norm_reserve_space_size", None)
    fallback = getattr(fake_tensor, "run_fallback_kernel", None)
    there = torch.device(device)
    absent = there.type == "cuda" and not torch.cuda.is_available()
    if before is not None:
        proxy_tensor.CONSTANT_NUMEL_LIMIT = -1
    if absent and reserve is not None:
        torch._C._get_cudnn_batch_norm_reserve_space_size = lambda *_: 0
    if absent and fallback is not None:
        fake_tensor.run_fallback_kernel = _on_the_cpu(fallback, there)
    try:
        yield
    finally:
        if before is not None:
            proxy_tensor.CONSTANT_NUMEL_LIMIT = before
        if fallback is not None:
            fake_tensor.run_fallback_kernel = fallback
        if reserve is not None:
            torch._C._get_cudnn_batch_norm_reserve_space_size = reserve


def _on_the_cpu(fallback, device: torch.device):
    """``fake_tensor.run_fallback_kernel`` run with the inputs on the CPU, its new results
    made fake tensors of ``device`` again."""
    pytree = _compat.pytree
    cpu = torch.device("cpu")

    def run(fake_mode, func, flat_args, args_spec, error):
        moved = [(a, a.fake_device) for a in flat_args
                 if fake_mode.is_our_fake(a) and a.fake_device.type == device.type]
        for a, _ in moved:
            a.fake_device = cpu
        try:
            out = fallback(fake_mode, func, flat_args, args_spec, error)
        finally:
            for a, was in moved:
                a.fake_device = was
        convert = fake_mode.fake_tensor_converter

        def back(t):
            if not fake_mode.is_our_fake(t) or t.fake_device != cpu or any(t is a for a, _ in moved):
                return t
            meta = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
            return convert.from_meta_and_device(fake_mode, meta, device)

        return pytree.tree_map(back, out)

    return run


def _move_factories(gm: torch.fx.GraphModule, device: torch.device) -> None:
    """Dynamo ran on CPU tensors, so a tensor the model makes (``torch.arange(n,
    device=x.device)``) has the CPU baked in as a constant: such ``device=`` arguments (and
    ``.to(device)``) name ``device`` instead, as they would on it."""
    cpu = torch.device("cpu")

    def moved(a):
        return device if isinstance(a, torch.device) and a == cpu else (
            device.type if isinstance(a, str) and a == "cpu" else a)

    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            node.kwargs = {k: moved(v) if k == "device" else v for k, v in node.kwargs.items()}
            if node.op == "call_method" and node.target == "to":
                node.args = tuple(moved(a) for a in node.args)
    gm.recompile()


def run_trace(trace: dict, weights: dict, inputs: dict, origin: str = "<fake-device trace>") -> list:
    """Compiles ``trace`` for the CPU plugin and runs it on ``inputs`` (user inputs by name)
    and ``weights`` (the rest, by weights key); the outputs as CPU tensors."""
    from . import _native

    exe = _native.compile(trace, origin)
    args = [weights[spec["weight"]] if "weight" in spec else inputs[spec["name"]] for spec in trace["inputs"]]
    return list(exe.run(args))

"""Tensors shared with the device, not copied: on the CPU plugin a dense CPU tensor's storage is
the device buffer a call reads (user inputs every call, weights kept between calls), and the
outputs are PJRT buffers torch adopts (DLPack). The same code path shares CUDA tensors with the
CUDA plugin; these tests keep it exercised where there is no GPU."""

import gc
import weakref

import pytest

import torch

import fxhlo

from conftest import BufferCounter


def _compile(fn):
    compiled = torch.compile(fn, backend="fxhlo", fullgraph=True, dynamic=False)
    return compiled


def _last():
    return fxhlo.compiled_graphs()[-1].executable


def test_a_dense_cpu_input_is_read_in_place_not_copied():
    def f(a, b):
        return a * 2 + b

    compiled = _compile(f)
    a, b = torch.randn(64, 32), torch.randn(64, 32)
    got = compiled(a, b)
    err = (got - f(a, b)).abs().max().item()
    print(f"max abs error {err:.3g}; stats {_last().stats()}")
    assert err == 0.0
    stats = _last().stats()
    assert stats["input_shares"] == 2 and stats["input_uploads"] == 0, stats
    # The output is new memory: writing the input afterwards does not change it.
    want = got.clone()
    a.add_(1.0)
    assert torch.equal(got, want)


def test_an_input_the_device_cannot_view_is_copied_and_still_right():
    def f(a):
        return a + 1

    compiled = _compile(f)
    base = torch.randn(1030)
    # One element into the storage: 4-byte aligned, below the 64 bytes the CPU plugin views.
    x = base[1:1025]
    strided = torch.randn(2048)[::2]
    # (Dynamo specializes on strides: the strided input gets a graph of its own.)
    for t in (x, strided):
        got = compiled(t)
        err = (got - f(t)).abs().max().item()
        stats = _last().stats()
        print(f"max abs error {err:.3g}; stats {stats}")
        assert err == 0.0
        assert stats["input_uploads"] == 1 and stats["input_shares"] == 0, stats


def test_a_shared_weight_follows_the_parameter_in_place():
    # A weight kept on the device is a view of the parameter's storage: a write PyTorch's version
    # counter does not see (through `.data`) is still what the next call reads, as in eager. A
    # copy kept on the device would have gone stale.
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8)).eval()
    compiled = _compile(model)
    x = torch.randn(4, 16)
    with torch.no_grad():
        first = compiled(x)
        assert torch.allclose(first, model(x), atol=1e-5)
        exe = _last()
        kept = exe.stats()
        print(f"after the first call {kept}; inputs {exe.inputs}")
        assert kept["weight_shares"] >= 1, kept
        model[0].bias.data.add_(0.5)
        model[2].weight.data.mul_(2.0)
        second = compiled(x)
        err = (second - model(x)).abs().max().item()
        print(f"after an in-place write through .data: max abs error {err:.3g}; stats {exe.stats()}")
        assert err < 1e-5
        assert exe.stats()["weight_uploads"] == kept["weight_uploads"], "kept weights are not uploaded again"


def test_a_shared_input_lives_as_long_as_the_device_needs_it():
    def f(a):
        return a.sin()

    compiled = _compile(f)
    x = torch.randn(256)
    want = f(x)
    ref = weakref.ref(x)
    got = compiled(x)
    del x
    gc.collect()
    # The call is over: the device let go of the input, so it is freed with its last reference.
    assert ref() is None
    err = (got - want).abs().max().item()
    print(f"max abs error {err:.3g}")
    assert err < 1e-6
    # The output owns its buffer after everything else is gone.
    del compiled
    gc.collect()
    assert torch.isfinite(got).all() and (got - want).abs().max().item() < 1e-6


def test_an_input_read_through_its_kept_view_has_each_call_s_values():
    # A call that lends the memory the call before lent reads it through the same view (a view
    # is an address, a type and dims); what it reads is the memory as it is now.
    def f(a):
        return a * 3 - 1

    compiled = _compile(f)
    storage = torch.randn(4096)
    x = torch.randn(64, 32)
    same_shape = torch.randn(64, 32)
    # 64 bytes into the storage: aligned as the plugin needs, another address.
    offset = storage[16:16 + 2048].view(64, 32)
    calls = [("first call", x), ("same tensor", x), ("written in place", x.add_(2.5)), ("same tensor", x),
             ("another tensor", same_shape), ("a view into a storage", offset), ("the first again", x)]
    for what, t in calls:
        if what == "written in place":
            t = x
        got = compiled(t)
        err = (got - f(t)).abs().max().item()
        print(f"{what}: max abs error {err:.3g}; stats {_last().stats()}")
        # (XLA may fuse the multiply and subtract: one rounding fewer than eager.)
        assert err < 1e-5, what
    stats = _last().stats()
    # Reused where the memory was the same as the call before's: calls 2, 3 and 4.
    assert stats["input_shares"] == len(calls) and stats["views_reused"] == 3, stats


def test_a_kept_view_does_not_keep_its_tensor_alive():
    def f(a):
        return a.cos()

    compiled = _compile(f)
    x = torch.randn(512)
    compiled(x)
    compiled(x)
    assert _last().stats()["views_reused"] == 1
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None, "the view kept for the next call holds no reference to the tensor"
    y = torch.randn(512)
    err = (compiled(y) - y.cos()).abs().max().item()
    print(f"after the first input is gone: max abs error {err:.3g}")
    assert err < 1e-6


def test_a_conjugate_view_called_directly_is_copied_resolved():
    # Outside Dynamo (a compiled graph called by hand) nothing resolved the view beforehand:
    # the call copies it, and the copy holds the conjugated values.
    def f(a):
        return a * 2

    compiled = _compile(f)
    z = torch.randn(64, dtype=torch.complex64)
    compiled(z)
    graph = fxhlo.compiled_graphs()[-1]
    got = graph([z.conj()])[0]
    err = (got - f(z.conj())).abs().max().item()
    stats = graph.executable.stats()
    print(f"max abs error {err:.3g}; stats {stats}")
    assert err < 1e-6
    assert stats["input_uploads"] == 1, stats


# ---- the call without AOT Autograd's runtime wrappers ----------------------------------------


class _Taken(list):
    """Whether each graph was called directly; ``results``: what the capture returned."""

    def __init__(self):
        super().__init__()
        self.results = []


def _spy_direct(monkeypatch):
    """Records, per compiled graph, whether the capture returned the compiled forward itself
    (and, in ``.results``, what it returned)."""
    from fxhlo import graph_capture

    taken, original = _Taken(), graph_capture._direct

    def spy(forwards, example_inputs):
        result = original(forwards, example_inputs)
        taken.append(result is not None)
        taken.results.append(result)
        return result

    monkeypatch.setattr(graph_capture, "_direct", spy)
    return taken


@pytest.mark.parametrize("case", ["plain", "channels_last_output", "mutates_a_buffer", "returns_a_view_of_its_input",
                                  "needs_gradients"])
def test_the_wrappers_are_skipped_only_where_they_would_do_nothing(case, monkeypatch):
    # AOT Autograd's runtime wrappers write mutated inputs back, rebuild aliases and hook up
    # autograd. The capture calls the compiled forward directly only when they would do none
    # of it; each other case keeps them and still computes what eager does.
    taken = _spy_direct(monkeypatch)
    torch._dynamo.reset()
    x = torch.randn(3)
    if case == "plain":
        fn, eager = (lambda a: a.sin() + 1), (lambda a: a.sin() + 1)
    elif case == "channels_last_output":
        # Eager's output is channels-last: the call restrides it (a Python frame, no wrappers).
        x = torch.randn(1, 3, 8, 8).to(memory_format=torch.channels_last)
        w = torch.randn(4, 3, 3, 3)
        fn = eager = lambda a: torch.nn.functional.conv2d(a, w, padding=1)
    elif case == "mutates_a_buffer":
        fn, eager = BufferCounter(), BufferCounter()
    elif case == "returns_a_view_of_its_input":
        fn = eager = lambda a: (a.view(3, 1), a * 2)
    else:
        lin = torch.nn.Linear(3, 2)
        fn, eager = lin, lin
    compiled = torch.compile(fn, backend="fxhlo", fullgraph=True, dynamic=False)
    for _ in range(2):
        got, want = compiled(x), eager(x)
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        err = max((g - w).abs().max().item() for g, w in zip(got, want))
        print(f"{case}: max abs error {err:.3g}, direct call {taken}")
        assert err < (1e-5 if case == "channels_last_output" else 1e-6)
    assert taken == [case in ("plain", "channels_last_output")], taken
    if case == "channels_last_output":
        assert got[0].stride() == want[0].stride(), "the output has eager's strides"
        assert type(taken.results[-1]).__name__ != "PositionalCall"
    if case == "plain":
        # Nothing to do around the executable: Dynamo calls it without a Python frame between.
        graph = fxhlo.compiled_graphs()[-1]
        called = taken.results[-1]
        assert type(called).__name__ == "PositionalCall" and called.graph is graph, called
    if case == "returns_a_view_of_its_input":
        assert got[0]._base is x or got[0].data_ptr() == x.data_ptr(), "the view aliases the input, as in eager"
    if case == "needs_gradients":
        got[0].sum().backward()
        assert lin.weight.grad is not None


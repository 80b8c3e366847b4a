"""`fallback="eager"`: a graph with ops fxhlo cannot compile runs in eager PyTorch with the rest of
it compiled by fxhlo in parts; custom ops PyTorch can decompose compile whole; `fallback="error"`
raises. Every result is compared with eager."""

import warnings

import pytest
import torch
from torch import nn

import fxhlo

from conftest import compile_
from test_backend import assert_matches

# ---- custom ops -----------------------------------------------------------------------------

scale_rows_calls = 0


@torch.library.custom_op("fxhlo_test::scale_rows", mutates_args=())
def scale_rows(x: torch.Tensor) -> torch.Tensor:
    """Row i times i + 1: an op fxhlo does not know and PyTorch cannot decompose."""
    global scale_rows_calls
    scale_rows_calls += 1
    return x * torch.arange(1, x.shape[0] + 1, dtype=x.dtype).unsqueeze(1)


@scale_rows.register_fake
def _(x):
    return torch.empty_like(x)


_lib = torch.library.Library("fxhlo_test", "FRAGMENT")
torch.library.define("fxhlo_test::shifted_tanh", "(Tensor x, float shift) -> Tensor", lib=_lib)


@torch.library.impl("fxhlo_test::shifted_tanh", "CompositeImplicitAutograd", lib=_lib)
def _(x, shift):
    return torch.tanh(x) + shift


square_plus_calls = 0
torch.library.define("fxhlo_test::square_plus", "(Tensor x, Tensor y) -> Tensor", lib=_lib)


@torch.library.impl("fxhlo_test::square_plus", "CPU", lib=_lib)
def _(x, y):
    global square_plus_calls
    square_plus_calls += 1
    return x * x + y


@torch.library.register_fake("fxhlo_test::square_plus", lib=_lib)
def _(x, y):
    return torch.empty_like(x)


@pytest.fixture
def square_plus_decomposition():
    """`square_plus` with a decomposition in PyTorch's global table, for the test's duration."""
    from torch._decomp import decomposition_table, register_decomposition

    op = torch.ops.fxhlo_test.square_plus.default
    register_decomposition(op)(lambda x, y: x * x + y)
    yield op
    del decomposition_table[op]


# ---- helpers --------------------------------------------------------------------------------


class Sandwich(nn.Module):
    """Linear -> `middle` (run in eager by the fallback) -> Linear -> relu."""

    def __init__(self, middle):
        super().__init__()
        self.middle = middle
        self.fc1, self.fc2 = nn.Linear(6, 5), nn.Linear(5, 4)

    def forward(self, x):
        return torch.relu(self.fc2(self.middle(self.fc1(x))))


def new_graphs(before):
    """The compiled graphs created since `before` (a list that keeps the older ones alive)."""
    return [g for g in fxhlo.compiled_graphs() if not any(g is b for b in before)]


def fallback_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, fxhlo.FallbackWarning)]


# ---- tests ----------------------------------------------------------------------------------


def test_custom_op_runs_in_eager_and_the_rest_in_fxhlo():
    global scale_rows_calls
    model, x = Sandwich(scale_rows), torch.randn(3, 6)
    before = fxhlo.compiled_graphs()
    compiled = compile_(model, fallback="eager")
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scale_rows_calls = 0
        first = compiled(x)
        assert scale_rows_calls == 1, "the custom op runs in eager once per call"
        second = compiled(x)
        assert scale_rows_calls == 2, "the custom op runs in eager once per call"
        want = model(x)
    ours = fallback_warnings(caught)
    assert len(ours) == 1, ours
    assert "1 op(s) run in eager PyTorch" in ours[0] and "fxhlo_test.scale_rows.default" in ours[0], ours
    assert "2 part(s) compiled by fxhlo" in ours[0], ours
    assert_matches((first, second), (want, want), "Linear -> custom op -> Linear -> relu")
    parts = new_graphs(before)
    assert len(parts) == 2, f"{len(parts)} graphs compiled for the two parts"
    assert all(g.executable.stats()["calls"] == 2 for g in parts), [g.executable.stats() for g in parts]
    assert "maximum" in parts[1].executable.mlir, "the relu runs in the second part"


def test_a_part_returning_a_view_keeps_its_strides():
    def f(x):
        y = (x * 2).t()  # a view of a part's own result, returned from the graph and the part
        return scale_rows(y) + 1, y

    x = torch.randn(4, 3)
    before = fxhlo.compiled_graphs()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", fxhlo.FallbackWarning)
        got = compile_(f, fallback="eager")(x)
    want = f(x)
    assert len(new_graphs(before)) == 2, "the part before the custom op and the one after it"
    assert_matches(got, want, "part returning a transposed view")
    assert got[1].stride() == want[1].stride(), (got[1].stride(), want[1].stride())


def test_custom_op_with_a_composite_kernel_compiles_whole():
    def f(x):
        return torch.ops.fxhlo_test.shifted_tanh(x * 3, 0.5).exp()

    x = torch.randn(2, 5)
    before = fxhlo.compiled_graphs()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compile_(f, fallback="eager")(x)
    assert fallback_warnings(caught) == []
    assert_matches(got, f(x), "CompositeImplicitAutograd custom op")
    assert len(new_graphs(before)) == 1


def test_custom_op_with_a_registered_decomposition_compiles_whole(square_plus_decomposition):
    global square_plus_calls

    def f(x, y):
        return square_plus_decomposition(x.sin(), y) * 2

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    want = f(x, y)
    before = fxhlo.compiled_graphs()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        square_plus_calls = 0
        got = compile_(f)(x, y)
    assert fallback_warnings(caught) == [] and square_plus_calls == 0, "the op ran through its decomposition"
    assert_matches(got, want, "custom op with a decomposition")
    (graph,) = new_graphs(before)
    assert "fxhlo_test" not in graph.executable.mlir


def test_fallback_error_names_the_custom_op():
    with torch.no_grad(), pytest.raises(Exception) as info:
        compile_(Sandwich(scale_rows))(torch.randn(3, 6))
    assert isinstance(info.value.inner_exception, fxhlo.UnsupportedOpsError), info.value
    assert [t for t, _, _ in info.value.inner_exception.ops] == ["fxhlo_test.scale_rows.default"]
    # Every op the report lists says why.
    assert info.value.inner_exception.reasons == ["fxhlo has no lowering for fxhlo_test.scale_rows.default"]
    assert "fxhlo_test.scale_rows.default" in str(info.value)


def test_random_op_in_the_middle_compiles_and_repeats_under_a_seed():
    model, x = Sandwich(lambda h: h + torch.rand_like(h)), torch.randn(3, 6)
    before = fxhlo.compiled_graphs()
    compiled = compile_(model, fallback="eager")
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        first = compiled(x)  # compiles
        second = compiled(x)
        torch.manual_seed(0)
        again = compiled(x)
    assert fallback_warnings(caught) == []
    (graph,) = new_graphs(before)
    assert "stablehlo.rng_bit_generator" in graph.executable.mlir
    assert first.shape == (3, 4)
    assert torch.equal(first, again) and not torch.equal(first, second)


def test_custom_op_runs_in_eager_and_the_random_op_beside_it_compiles():
    # The compiler refuses the custom op; the part before it, which draws random numbers, gets
    # a generator state of its own and compiles.
    global scale_rows_calls
    model, x = Sandwich(lambda h: scale_rows(h + torch.rand_like(h)).sin()), torch.randn(3, 6)
    before = fxhlo.compiled_graphs()
    compiled = compile_(model, fallback="eager")
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x)  # compiles
        torch.manual_seed(1)
        scale_rows_calls = 0
        got = compiled(x)
        assert scale_rows_calls == 1
        torch.manual_seed(1)
        again = compiled(x)
    ours = fallback_warnings(caught)
    assert len(ours) == 1, ours
    assert "1 op(s) run in eager PyTorch" in ours[0] and "2 part(s) compiled by fxhlo" in ours[0], ours
    assert "fxhlo_test.scale_rows.default" in ours[0] and "rand" not in ours[0], ours
    assert got.shape == (3, 4) and torch.equal(got, again)
    parts = new_graphs(before)
    assert len(parts) == 2
    assert sum("stablehlo.rng_bit_generator" in g.executable.mlir for g in parts) == 1


def test_chunked_linear_cross_entropy_ops_compile_by_rule():
    # PyTorch's `torch_nn` custom ops behind F.linear_cross_entropy have no decomposition of
    # their own; fxhlo's rule (the unchunked definition) compiles them for inference.
    torch.manual_seed(0)
    x, w, b = torch.randn(6, 5), torch.randn(7, 5), torch.randn(7)
    target = torch.tensor([0, 3, 6, -100, 2, 1])
    # Registers the torch_nn ops; PyTorch before 2.13 has neither the module nor the ops.
    pytest.importorskip("torch.nn.modules.linear_cross_entropy", reason="this PyTorch has no F.linear_cross_entropy")
    ops = torch.ops.torch_nn

    def loss(x, w, b, target):
        mean = ops._linear_cross_entropy_batch_chunked(
            x, w, target, b, None, "mean", -100, 0.0, 2, "full", torch.float32, True, False, False, False
        )[0]
        each = ops._linear_cross_entropy_batch_chunked_no_reduction(x, w, target, b, None, -100, 2, "full", torch.float32)
        return mean, each

    with torch.no_grad():
        want = loss(x, w, b, target)
        with warnings.catch_warnings():
            warnings.simplefilter("error", fxhlo.FallbackWarning)  # no op may run in eager
            torch._dynamo.reset()
            got = torch.compile(loss, backend="fxhlo", fullgraph=True, dynamic=False)(x, w, b, target)
    for g, e in zip(got, want):
        print(f"linear_cross_entropy: max abs err {(g - e).abs().max().item():.3e}")
        torch.testing.assert_close(g, e)

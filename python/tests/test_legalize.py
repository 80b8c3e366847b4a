"""The legalizations (python/fxhlo/legalize.py), each alone on a tiny graph that needs exactly
it: the forward graph as the capture hands it to the legalizations (`fxhlo.capture(...,
legalizations=())`), then that one legalization, and what it changed. Plus the list itself."""

import operator

import pytest
import torch

import fxhlo
from fxhlo import legalize
from fxhlo._compat import make_boxed_func

from conftest import TORCH_RELEASE

aten = torch.ops.aten


def raw(fn, *args):
    """The forward graph of `fn(*args)` before any legalization, and its Dynamo inputs."""
    cap = fxhlo.capture(fn, args, legalizations=())
    return cap.gm, cap.inputs


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def placeholders(gm):
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def run_alone(name, gm, inputs):
    return legalize.run(gm, inputs, "test", [name])


def call(graph, *args):
    """The legalized graph run in eager inside its wrappers, on the graph's original inputs."""
    return graph.wrap(make_boxed_func(graph.module.forward))(list(args))


# ---- the list -------------------------------------------------------------------------------


def test_the_list_names_each_legalization_once_with_a_doc_and_a_reason():
    assert legalize.NAMES == ("effect-tokens", "conj-neg-views", "custom-ops", "scalars-as-tensors", "item-scalars",
                              "complex-numbers", "rng-state")
    for entry in legalize.LEGALIZATIONS:
        assert entry.run.__doc__ and "Before:" in entry.run.__doc__ and "After:" in entry.run.__doc__, entry.name
        assert entry.why_here, entry.name


def test_select_keeps_the_lists_order_and_refuses_unknown_names_listing_the_valid_ones():
    assert [e.name for e in legalize.select(["rng-state", "effect-tokens"])] == ["effect-tokens", "rng-state"]
    assert legalize.select(None) == legalize.LEGALIZATIONS
    with pytest.raises(ValueError, match=r"unknown legalization\(s\) 'rng'; valid: effect-tokens, conj-neg-views"):
        legalize.select(["rng"])
    with pytest.raises(ValueError, match="unknown legalization"):
        fxhlo.capture(lambda x: x + 1, (torch.ones(2),), legalizations=["rng"])


def test_a_graph_that_needs_none_is_left_as_it_is():
    gm, inputs = raw(lambda x: (x * 2).sin(), torch.randn(3))
    before = gm.code
    graph = legalize.run(gm, inputs, "test")
    assert graph.module.code == before and graph.wrappers == []


# ---- one test per legalization --------------------------------------------------------------


def test_effect_tokens_drops_the_check_and_passes_the_token_around():
    m = torch.randn(4, 4, dtype=torch.float64)
    m = m @ m.T + 4 * torch.eye(4, dtype=torch.float64)
    gm, inputs = raw(torch.linalg.cholesky, m)
    if torch.ops.higher_order.with_effects not in targets(gm):
        # PyTorch before 2.13 traces cholesky's check as a plain op (its graph needs no
        # legalization); the releases that thread it through an effect token are the ones this
        # test is for.
        assert TORCH_RELEASE < (2, 13), "a release from 2.13 on dropped the effect token of cholesky's check"
        pytest.skip(f"PyTorch {torch.__version__} threads no effect token through cholesky's check")
    assert len(placeholders(gm)) == len(inputs) + 1, "a token placeholder leads the graph"

    graph = run_alone("effect-tokens", gm, inputs)
    assert torch.ops.higher_order.with_effects not in targets(graph.module)
    assert len(placeholders(graph.module)) == len(inputs)
    (wrapper,) = graph.wrappers
    assert wrapper.legalization == "effect-tokens" and wrapper.bundle_refusal is None
    token = torch.empty(0)
    got_token, got = call(graph, token, m)
    assert got_token is token
    torch.testing.assert_close(got, torch.linalg.cholesky(m))


@pytest.fixture
def square_plus():
    """`fxhlo_legalize_test::square_plus`, an op with a CPU kernel and, for the test's duration, a
    decomposition in PyTorch's global table."""
    from torch._decomp import decomposition_table, register_decomposition

    lib = torch.library.Library("fxhlo_legalize_test", "FRAGMENT")
    lib.define("square_plus(Tensor x, Tensor y) -> Tensor")
    lib.impl("square_plus", lambda x, y: x * x + y, "CPU")
    torch.library.register_fake("fxhlo_legalize_test::square_plus", lambda x, y: torch.empty_like(x), lib=lib)
    op = torch.ops.fxhlo_legalize_test.square_plus.default
    register_decomposition(op)(lambda x, y: x * x + y)
    yield op
    del decomposition_table[op]
    lib._destroy()


def test_conj_neg_views_resolves_the_bits_its_example_inputs_had():
    # PyTorch conjugates and negates lazily (a bit on the tensor, the memory unchanged); the
    # device reads memory, so the wrapper resolves those inputs first. Plain inputs pass as they are.
    z = torch.randn(4, dtype=torch.complex64)
    gm, inputs = raw(lambda a, b: a * 2 + b, z.conj(), torch.randn(4, dtype=torch.complex64))
    before = gm.code
    graph = run_alone("conj-neg-views", gm, inputs)
    assert graph.module.code == before, "the graph is unchanged"
    [wrapper] = graph.wrappers
    seen = []

    def inner(args):
        seen.extend(args)
        return make_boxed_func(graph.module.forward)(args)

    b = torch.randn(4, dtype=torch.complex64)
    got = wrapper.wrap(inner)([z.conj(), b])
    want = z.conj() * 2 + b
    err = (got[0] - want).abs().max().item()
    print(f"max abs error {err:.3g}")
    assert err < 1e-6
    assert not seen[0].is_conj() and torch.equal(seen[0], z.conj().resolve_conj()), "resolved before the graph"
    assert seen[1] is b, "an input without a bit is passed as it is"
    # A negative view (the imaginary part of a conjugate) is resolved too.
    neg = torch._neg_view(torch.randn(3))
    gm, inputs = raw(lambda a: a + 1, neg)
    assert run_alone("conj-neg-views", gm, inputs).wrappers
    gm, inputs = raw(lambda a: a + 1, torch.randn(3))
    assert run_alone("conj-neg-views", gm, inputs).wrappers == []


def test_conjugate_and_negative_views_compile_to_eager_values():
    f = lambda a: a * 2 - 1  # noqa: E731
    for name, t in [("conjugate view", torch.randn(8, dtype=torch.complex64).conj()),
                    ("negative view", torch._neg_view(torch.randn(8))),
                    ("plain", torch.randn(8))]:
        torch._dynamo.reset()
        got = torch.compile(f, backend="fxhlo", fullgraph=True, dynamic=False)(t)
        err = (got - f(t)).abs().max().item()
        print(f"{name}: max abs error {err:.3g}")
        assert err < 1e-6, name


def test_custom_ops_become_the_aten_ops_they_decompose_into(square_plus):
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    gm, inputs = raw(lambda x, y: square_plus(x, y) * 2, x, y)
    assert square_plus in targets(gm)

    graph = run_alone("custom-ops", gm, inputs)
    assert square_plus not in targets(graph.module)
    assert all(t.namespace == "aten" for t in targets(graph.module)), targets(graph.module)
    assert graph.wrappers == []
    (got,) = call(graph, *(i.value for i in inputs))
    torch.testing.assert_close(got, (x * x + y) * 2)


def test_scalars_as_tensors_keeps_a_number_read_from_a_tensor_a_tensor():
    x = torch.randn(5)
    gm, inputs = raw(lambda x: torch.tensor(x.sum().item()), x)
    assert aten._local_scalar_dense.default in targets(gm) and aten.scalar_tensor.default in targets(gm)

    graph = run_alone("scalars-as-tensors", gm, inputs)
    assert aten._local_scalar_dense.default not in targets(graph.module)
    assert aten.scalar_tensor.default not in targets(graph.module)
    assert targets(graph.module)[-2:] == [aten.view.default, aten._to_copy.default]
    (got,) = call(graph, x)
    assert got.shape == () and got.dtype == torch.float32
    torch.testing.assert_close(got, x.sum())


def test_item_scalars_keep_a_number_feeding_tensor_ops_a_0d_tensor_and_check_assertions():
    x = torch.randn(4)
    n = torch.tensor(3, dtype=torch.int32)

    def fn(x, n):
        k = n.item()
        torch._check(k <= 5)
        return x * k

    gm, inputs = raw(fn, x, n)
    assert aten._local_scalar_dense.default in targets(gm)

    graph = run_alone("item-scalars", gm, inputs)
    assert aten._local_scalar_dense.default not in targets(graph.module)
    # The assertion became an output checked by the wrapper.
    assert [w.legalization for w in graph.wrappers] == ["item-scalars"]
    # Dynamo orders the placeholders its own way: call with what each is bound to.
    def args(n):
        return [n if i.value is inputs_n else i.value for i in inputs]

    inputs_n = next(i.value for i in inputs if i.value.dtype == torch.int32)
    (got,) = call(graph, *args(n))
    want = x * 3
    print(f"item-scalars: max abs error {(got - want).abs().max().item():.3g}")
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)
    with pytest.raises(RuntimeError, match="u0 <= 5"):
        call(graph, *args(torch.tensor(7, dtype=torch.int32)))


def test_complex_numbers_become_0d_complex_tensors():
    z = torch.randn(3, dtype=torch.complex64)
    gm, inputs = raw(lambda z: z - 1j, z)
    (sub,) = [n for n in gm.graph.nodes if n.target is aten.sub.Tensor]
    assert sub.args[1] == 1j

    graph = run_alone("complex-numbers", gm, inputs)
    (sub,) = [n for n in graph.module.graph.nodes if n.target is aten.sub.Tensor]
    constant = sub.args[1]
    assert constant.target is aten.complex.default
    assert [a.args[1] for a in constant.args] == [0.0, 1.0]
    assert [a.kwargs["dtype"] for a in constant.args] == [torch.float32, torch.float32]
    assert not any(isinstance(a, complex) for n in graph.module.graph.nodes for a in n.args)
    (got,) = call(graph, z)
    torch.testing.assert_close(got, z - 1j)


def test_rng_state_threads_a_state_input_through_the_draws():
    x = torch.randn(4, 3)
    gm, inputs = raw(lambda x: x + torch.rand_like(x) + torch.rand_like(x), x)
    random_bits = torch.ops.fxhlo.random_bits.default
    assert targets(gm).count(random_bits) == 2

    graph = run_alone("rng-state", gm, inputs)
    assert random_bits not in targets(graph.module)
    generators = [n for n in graph.module.graph.nodes if n.target is torch.ops.fxhlo.rng_bit_generator.default]
    state = placeholders(graph.module)[-1]
    assert state.name == "rng_state" and len(generators) == 2
    assert generators[0].args[0] is state, "the first draw takes the state input"
    second_state = generators[1].args[0]
    assert second_state.target is operator.getitem and second_state.args == (generators[0], 0), "the next draw takes the state the first returns"
    assert [i.kind for i in graph.inputs] == ["user_input", "user_input"] and len(graph.inputs) == len(inputs) + 1
    (wrapper,) = graph.wrappers
    assert "aten.rand_like.default" in wrapper.bundle_refusal
    # The wrapper feeds a new state drawn from PyTorch's generator on every call.
    torch.manual_seed(0)
    (first,) = call(graph, x)
    (second,) = call(graph, x)
    torch.manual_seed(0)
    (again,) = call(graph, x)
    assert torch.equal(first, again) and not torch.equal(first, second)
    assert ((first - x) >= 0).all() and ((first - x) < 2).all()

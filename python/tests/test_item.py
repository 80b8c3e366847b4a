"""``x.item()`` inside a compiled graph (``aten._local_scalar_dense``): a value that stays in the
graph becomes a 0-d tensor (dtypes promoted as eager promotes the Python number, Python's
arithmetic on it kept, assertions on it checked after the call); a value that must reach Python
breaks the graph there, with the default ``fallback="error"`` too. Hugging Face models that read
scalars (FlauBERT, XLM, JetMoE) from small configs compile and match eager."""

from __future__ import annotations

import math
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import fxhlo  # noqa: E402

from conftest import TORCH_RELEASE, compile_  # noqa: E402


def run(fn, *args, fallback=None):
    """``fn(*args)`` compiled by fxhlo: (result, the FallbackWarnings raised, the graphs fxhlo
    compiled for it)."""
    before = fxhlo.compiled_graphs()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compile_(fn, **({"fallback": fallback} if fallback else {}))(*args)
    graphs = [g for g in fxhlo.compiled_graphs() if not any(g is b for b in before)]
    return got, [str(w.message) for w in caught if issubclass(w.category, fxhlo.FallbackWarning)], graphs


def check(got, want, what: str) -> None:
    """Same structure, types, dtypes and shapes; numbers within assert_close's tolerances (NaN
    equal to NaN); prints the largest error."""
    worst = 0.0
    got, want = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got) == len(want), f"{what}: {len(got)} results vs eager's {len(want)}"
    for g, w in zip(got, want):
        if not isinstance(w, torch.Tensor):
            assert type(g) is type(w), f"{what}: {g!r} vs eager {w!r}"
            g, w = torch.tensor(g), torch.tensor(w)
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype} {list(g.shape)} vs eager {w.dtype} {list(w.shape)}"
        if g.numel():
            worst = max(worst, (g.double() - w.double()).abs().nan_to_num(0.0).max().item())
        torch.testing.assert_close(g, w, equal_nan=True, msg=lambda m: f"{what}: {m}")
    print(f"{what}: max abs error {worst:.3g}")


# ---- a value that stays in the graph: a 0-d tensor --------------------------------------------

# (tensor, the tensor whose .item() multiplies it): a Python number of a higher kind promotes to
# the default dtype (int * float -> float32), one of the same kind never widens (float16 * float
# -> float16, int32 * int -> int32), a 0-d tensor promotes with another 0-d tensor.
PROMOTIONS = {
    "f32*int": (torch.randn(4, 3), torch.tensor(7)),
    "f32*float": (torch.randn(4, 3), torch.tensor(0.3, dtype=torch.float64)),
    "f16*float": (torch.randn(4, 3).half(), torch.tensor(1.7)),
    "bf16*int": (torch.randn(4, 3).bfloat16(), torch.tensor(3)),
    "i32*int": (torch.arange(12, dtype=torch.int32).reshape(4, 3), torch.tensor(5)),
    "i64*float": (torch.arange(12).reshape(4, 3), torch.tensor(2.5)),
    "i32*float": (torch.arange(12, dtype=torch.int32).reshape(4, 3), torch.tensor(2.5, dtype=torch.float64)),
    "bool*int": (torch.tensor([[True, False, True]]), torch.tensor(4)),
    "bool*float": (torch.tensor([[True, False, True]]), torch.tensor(4.5)),
    "f32*bool": (torch.randn(4, 3), torch.tensor(True)),
    "0-d f32*int": (torch.tensor(1.5), torch.tensor(3)),
    "0-d i32*int": (torch.tensor(6, dtype=torch.int32), torch.tensor(3)),
}


@pytest.mark.parametrize("case", list(PROMOTIONS))
def test_item_times_a_tensor_promotes_as_in_eager(case):
    x, s = PROMOTIONS[case]

    def f(x, s):
        return x * s.item(), s.item() + x, x / s.item()

    want = f(x, s)
    got, warned, graphs = run(f, x, s)
    assert warned == [] and len(graphs) == 1, f"the graph compiled whole: {warned}"
    check(got, want, case)


def test_item_arithmetic_follows_python():
    n, v = torch.tensor([7, -3]), torch.tensor(-2.75)

    def f(x, n, v):
        a, b, r = n[0].item(), n[1].item(), v.item()
        ints = (a // b) * 100 + a % b * 10 + (-a) // 2 + abs(b) ** 2  # flooring // and %, as Python
        floats = a / 4 + r / 3 + r // 0.5 + r % 0.5 + float(a) * r
        rounded = math.floor(r) + math.ceil(r) + int(r) + max(a, b) + min(r, 0.25)
        return x * ints, x * floats, x + rounded, torch.where(x > 0, x, r)

    x = torch.randn(5)
    want = f(x, n, v)
    got, warned, graphs = run(f, x, n, v)
    assert warned == [] and len(graphs) == 1, warned
    check(got, want, "Python arithmetic on item()")
    (graph,) = graphs
    assert "f64" in graph.executable.mlir, "Python floats are doubles"


def test_item_as_a_scalar_argument_of_tensor_ops():
    def f(x, s):
        v = s.item()
        return x.clamp(min=v), torch.full((2, 3), v), x > v

    x, s = torch.randn(2, 3), torch.tensor(0.5)
    got, warned, graphs = run(f, x, s)
    assert warned == [] and len(graphs) == 1, warned
    check(got, f(x, s), "item() as clamp, full and comparison arguments")


@pytest.mark.xfail(TORCH_RELEASE < (2, 13), strict=True, raises=Exception,
                   reason="before PyTorch 2.13 the reference pow asks `exponent == 1.0` of the value read "
                          "(GuardOnDataDependentSymNode while Dynamo traces, before any backend runs)")
def test_item_as_an_exponent_and_a_base():
    def f(x, s):
        v = s.item()
        return x.clamp(min=-1.0) ** v, v ** x.abs()

    x, s = torch.randn(2, 3), torch.tensor(0.5)
    got, warned, graphs = run(f, x, s)
    assert warned == [] and len(graphs) == 1, warned
    check(got, f(x, s), "item() as pow's exponent and base")


def test_assertion_on_item_is_checked_after_the_call():
    def f(x, lengths):
        # XLM's `assert lengths.max().item() <= slen` (pytest rewrites asserts in this file into a
        # branch Dynamo cannot trace; both become the same _assert_scalar).
        torch._check(lengths.max().item() <= x.shape[1])
        return x * 2

    x = torch.randn(2, 8)
    compiled = compile_(f)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", fxhlo.FallbackWarning)
        check(compiled(x, torch.tensor([8, 3])), f(x, torch.tensor([8, 3])), "assertion that holds")
        with pytest.raises(RuntimeError, match="Runtime assertion failed"):
            compiled(x, torch.tensor([9, 3]))


# ---- a value that must reach Python: the graph breaks there -----------------------------------


def test_item_deciding_a_shape_breaks_the_graph():
    def f(x, n):
        return (x[: n.sum().item()] * 2).relu()

    x = torch.randn(6, 3)
    got, warned, graphs = run(f, x, torch.tensor([1, 2]))  # fallback="error", the default
    check(got, f(x, torch.tensor([1, 2])), "slice bound from item()")
    assert len(warned) == 1 and "breaks at 1 scalar read" in warned[0], warned
    assert graphs, "the sum before the read compiled"
    # Another value, another shape: the eager part slices by the new number.
    compiled = compile_(f)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", fxhlo.FallbackWarning)
        compiled(x, torch.tensor([1, 2]))
        check(compiled(x, torch.tensor([2, 3])), f(x, torch.tensor([2, 3])), "slice bound, second value")


def test_tolist_split_sizes_break_the_graph():
    def f(x, counts, w):
        pieces = (x * 3).split(counts.tolist())  # JetMoE's experts: data-dependent split sizes
        return torch.cat([p @ w[i] for i, p in enumerate(pieces)]).tanh()

    x, counts, w = torch.randn(6, 4), torch.tensor([1, 3, 2]), torch.randn(3, 4, 5)
    got, warned, graphs = run(f, x, counts, w)
    check(got, f(x, counts, w), "split sizes from tolist()")
    assert len(warned) == 1 and "breaks at 3 scalar read(s)" in warned[0], warned
    assert len(graphs) == 2, "the part before the split, and the one after the concatenation (its rows add up to 6)"


@pytest.mark.parametrize("what", ["int", "int * 2", "comparison", "float * 2"])
def test_item_returned_as_a_python_number(what):
    def f(x, n):
        v = n.sum().item()
        if what == "int * 2":
            v = v * 2
        elif what == "comparison":
            v = v > 2
        elif what == "float * 2":
            v = float(v) * 2
        return x + 1, v

    x, n = torch.randn(3), torch.tensor([1, 2])
    got, warned, graphs = run(f, x, n)
    check(got, f(x, n), f"item() returned: {what}")
    assert graphs, "x + 1 compiled"
    if what == "float * 2":
        # Dynamo returns a float as scalar_tensor(v) and reads the number from it: the graph
        # stays whole, as for a float item() returned as it is.
        assert warned == [] and len(graphs) == 1, warned
    else:
        assert len(warned) == 1 and "breaks at 1 scalar read" in warned[0], warned


def test_float_item_returned_compiles_whole():
    def f(x):
        return (x * 2).sum().item()  # Dynamo returns scalar_tensor(item): a 0-d tensor output

    x = torch.randn(4)
    got, warned, graphs = run(f, x)
    assert warned == [] and len(graphs) == 1
    assert isinstance(got, float) and math.isclose(got, f(x), rel_tol=1e-6)


@torch.library.custom_op("fxhlo_item_test::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    """An op fxhlo does not lower and PyTorch cannot decompose."""
    return x * 3


@triple.register_fake
def _(x):
    return torch.empty_like(x)


def test_break_with_an_unsupported_op_raises_unless_fallback_eager():
    def f(x, n):
        return triple(x + 1)[: n.sum().item()]

    x, n = torch.randn(6), torch.tensor([2, 2])
    with torch.no_grad(), pytest.raises(Exception) as info:
        compile_(f)(x, n)
    assert isinstance(info.value.inner_exception, fxhlo.UnsupportedOpsError), info.value
    torch._dynamo.reset()
    got, warned, _ = run(f, x, n, fallback="eager")
    check(got, f(x, n), "break and custom op, fallback=eager")
    assert len(warned) == 1 and "fxhlo_item_test.triple.default" in warned[0], warned


# ---- Hugging Face models that read scalars ---------------------------------------------------

SMALL = dict(vocab_size=128, max_position_embeddings=64, hidden_size=32, emb_dim=32, n_layers=2, n_heads=4,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, kv_channels=8,
             num_local_experts=4, num_experts_per_tok=2)
MODELS = {
    # class: (model type, how its graph holds the read)
    "FlaubertModel": ("flaubert", "whole"),             # assert lengths.max().item() <= slen
    "XLMModel": ("xlm", "whole"),
    "XLMWithLMHeadModel": ("xlm", "whole"),
    "JetMoeModel": ("jetmoe", "breaks"),                 # expert_size.tolist() -> split sizes
    "JetMoeForCausalLM": ("jetmoe", "breaks"),
}


@pytest.mark.parametrize("cls_name", list(MODELS))
def test_model_reading_scalars_compiles_and_matches_eager(cls_name):
    import transformers

    model_type, how = MODELS[cls_name]
    config = transformers.AutoConfig.for_model(model_type, **SMALL)
    torch.manual_seed(0)
    model = getattr(transformers, cls_name)(config).eval()
    ids = torch.randint(3, SMALL["vocab_size"], (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(input_ids=ids).to_tuple()[0]
    out, warned, graphs = run(model, ids)  # torch.compile(model, ...) as users write it
    got = out.to_tuple()[0]
    assert graphs, "nothing was compiled by fxhlo"
    if how == "whole":
        assert warned == [] and len(graphs) == 1, warned
    else:
        assert len(warned) == 1 and "scalar read" in warned[0], warned
    check(got, want, cls_name)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)

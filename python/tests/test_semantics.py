"""PyTorch semantics where XLA differs, through torch.compile: NaN in maximum/minimum, the ops
users write that decompose to nothing (`x.max()`, `fmax`, `fmin`, `copysign`), out-of-range
indices (clamped by default, an `IndexError` with ``check_indices``), and sizes no device can
hold (typed errors from the release extension, never an abort)."""

import json

import pytest
import torch

import fxhlo
from fxhlo import _native
from fxhlo.errors import CompileError

from conftest import COMMITTED, compile_, raises_options_error

NAN, INF = float("nan"), float("inf")


def same_as_eager(fn, *args, what, nan_sign=False):
    """Runs `fn` eagerly and through fxhlo; the results must be equal, NaN where eager has NaN
    and the sign of zeros included (the ops here are exact); with `nan_sign` also the sign of
    NaNs (which only copysign defines)."""
    want = fn(*args)
    got = compile_(fn)(*args)
    print(f"{what}: eager {want.tolist()}, fxhlo {got.tolist()}")
    assert got.dtype == want.dtype and got.shape == want.shape, what
    torch.testing.assert_close(got, want, atol=0, rtol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")
    if want.is_floating_point():
        signed = torch.ones_like(want, dtype=torch.bool) if nan_sign else ~want.isnan()
        assert torch.equal(torch.signbit(got)[signed], torch.signbit(want)[signed]), f"{what}: signs {got} vs {want}"


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_maximum_and_minimum_propagate_nan_from_either_side(op, dtype):
    a = torch.tensor([1.0, NAN, NAN, 3.0, -INF, 0.0], dtype=dtype)
    b = torch.tensor([NAN, 2.0, NAN, 4.0, 5.0, -0.0], dtype=dtype)
    # The NaN-free pair (3, 4) and the mixed-sign zeros are compared too; for 0.0 vs -0.0 the
    # sign is implementation-defined in both, so compare values only there.
    want, got = op(a, b), compile_(op)(a, b)
    print(f"{op.__name__} {dtype}: eager {want.tolist()}, fxhlo {got.tolist()}")
    torch.testing.assert_close(got, want, atol=0, rtol=0, equal_nan=True)


@pytest.mark.parametrize("op", [torch.fmax, torch.fmin])
def test_fmax_and_fmin_ignore_nan_unless_both_are(op):
    a = torch.tensor([1.0, NAN, NAN, 3.0, -INF])
    b = torch.tensor([NAN, 2.0, NAN, 4.0, 5.0])
    same_as_eager(op, a, b, what=op.__name__)
    ai, bi = torch.tensor([1, -7, 3]), torch.tensor([2, -9, 3])
    same_as_eager(op, ai, bi, what=f"{op.__name__} int64")


def test_copysign_copies_the_sign_bit():
    a = torch.tensor([1.5, -2.0, 0.0, 3.0, INF, NAN, 4.0])
    b = torch.tensor([-1.0, 2.0, -0.0, -0.0, -1.0, -1.0, NAN])
    same_as_eager(torch.copysign, a, b, what="copysign f32", nan_sign=True)
    same_as_eager(torch.copysign, a.double(), b.double(), what="copysign f64", nan_sign=True)
    # Integer operands give the default float dtype.
    same_as_eager(torch.copysign, torch.tensor([3, -4, 5]), torch.tensor([-1, 1, 0]), what="copysign int64")


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_full_max_and_min(reduction):
    x = torch.tensor([[3.0, -1.0, 7.5], [2.0, 9.25, -4.0]])
    fn = (lambda t: t.max()) if reduction == "max" else (lambda t: t.min())
    same_as_eager(fn, x, what=f"x.{reduction}()")
    same_as_eager(fn, torch.tensor([[1.0, NAN], [2.0, 3.0]]), what=f"x.{reduction}() with NaN")
    same_as_eager(fn, torch.tensor([4, -2, 11]), what=f"int x.{reduction}()")


@pytest.mark.parametrize("reduction", [torch.amax, torch.amin])
def test_reductions_over_a_dim_give_nan_for_rows_holding_one(reduction):
    # The NaN check sits outside the reduction body (the TPU compiler crashes on a select in
    # it): rows with a NaN anywhere, first, last or only, give NaN; the others their extreme.
    x = torch.tensor([[NAN, 1.0, 2.0], [1.0, 2.0, NAN], [3.0, -1.0, 0.5], [NAN, NAN, NAN], [-INF, INF, 0.0]])
    same_as_eager(lambda t: reduction(t, dim=1), x, what=f"{reduction.__name__}(dim=1)")
    same_as_eager(lambda t: reduction(t, dim=0, keepdim=True), x, what=f"{reduction.__name__}(dim=0, keepdim)")
    same_as_eager(lambda t: reduction(t, dim=1), x.bfloat16(), what=f"{reduction.__name__} bf16")


def test_softmax_of_rows_with_nan_or_inf_matches_eager():
    x = torch.tensor([[NAN, 1.0, 2.0], [1.0, 2.0, 3.0], [INF, 0.0, 1.0], [-INF, -INF, -INF]])
    same_as_eager(lambda t: torch.softmax(t, dim=1), x, what="softmax")
    same_as_eager(lambda t: torch.log_softmax(t, dim=1), x, what="log_softmax")


class Lookup(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, ids, x, rows):
        return self.emb(ids), x[rows], torch.gather(x, 1, rows.view(-1, 1).clamp(min=0) % 3)


def test_out_of_range_indices_clamp_by_default_and_raise_with_check_indices():
    torch.manual_seed(0)
    model = Lookup().eval()
    x = torch.randn(5, 3)
    good = (torch.tensor([0, 9, 3]), x, torch.tensor([0, -5, 4]))
    with torch.no_grad():
        want = model(*good)
        checked = compile_(model, check_indices=True)
        for g, w in zip(checked(*good), want):
            torch.testing.assert_close(g, w, atol=0, rtol=0)
        # Embedding index 10 of 10 rows: eager raises; with check_indices so does fxhlo, naming
        # the node; without it the device clamps to the last row (documented in docs/ops.md).
        bad_ids = (torch.tensor([0, 10, 3]), x, torch.tensor([0, 1, 2]))
        with pytest.raises(IndexError):
            model(*bad_ids)
        with pytest.raises(IndexError, match=r"node `embedding[^`]*` used an index out of range"):
            checked(*bad_ids)
        torch._dynamo.reset()
        clamped = compile_(model)(*bad_ids)[0]
        torch.testing.assert_close(clamped[1], model.emb.weight[9], atol=0, rtol=0)
        # Advanced indexing accepts [-5, 5) for 5 rows: -6 is out of range.
        bad_rows = (torch.tensor([0, 1, 2]), x, torch.tensor([0, -6, 4]))
        with pytest.raises(IndexError):
            model(*bad_rows)
        with pytest.raises(IndexError, match=r"node `index[^`]*` used an index out of range"):
            checked(*bad_rows)


def test_check_indices_must_be_a_bool():
    raises_options_error(compile_(lambda t: t + 1, check_indices="yes"), torch.ones(2), match="check_indices")


def _full_trace(size: int) -> bytes:
    """The MLP fixture's trace, returning `torch.full((size, size), 1.0)` instead."""
    trace = json.loads((COMMITTED / "mlp.fxt" / "graph.json").read_text())
    trace["nodes"].append({
        "name": "huge", "target": "aten.full.default",
        "args": [{"ints": [size, size]}, {"float": 1.0}], "kwargs": {"dtype": {"dtype": "f32"}},
        "meta": [{"dtype": "f32", "sizes": [size, size], "strides": [size, 1], "storage_offset": 0}],
    })
    trace["outputs"] = [{"tensor": "huge"}]
    return json.dumps(trace).encode()


def test_a_size_that_overflows_is_a_compile_error_naming_the_node():
    # 2^40 x 2^40 elements: the count wraps in 64 bits. The release extension aborted the
    # process here before ("Rust cannot catch foreign exceptions").
    with pytest.raises(CompileError, match=r"`huge` has type f32\[1099511627776,1099511627776\].*overflows"):
        _native.compile(_full_trace(1 << 40), "<huge>")


def test_a_size_no_device_can_allocate_is_a_typed_error():
    # 2^30 x 2^30 f32 is 4 EiB: representable, so it compiles; the run must fail with an
    # exception (the plugin's out-of-memory), not kill the interpreter.
    exe = _native.compile(_full_trace(1 << 30), "<huge>")
    args = [torch.zeros(s) for s in ([16, 8], [16], [2, 8], [4, 16], [4])]  # the MLP's inputs
    with pytest.raises(fxhlo.errors.ExecutionError, match="(?i)memory|allocat"):
        exe.run(args)

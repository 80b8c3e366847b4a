"""The orthogonal polynomials (``torch.special.*_polynomial_*``) compiled by fxhlo through the
rules of ``fxhlo.decompositions.polynomials``, against eager PyTorch: a grid of x (|x| == 1, the
shifted forms' x == 0 and x == 1, |x| > 1, next to +-1, NaN, inf) by integer degrees (negative,
0, 1, past the trigonometric shortcuts' thresholds, past Hermite's limit), float degrees that
truncate or do not convert, the scalar overloads and integer inputs."""

import warnings

import pytest
import torch

import fxhlo
from test_op_regressions import compiled

OPS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]

# Degrees: negative, the special 0 and 1, the recurrence, the trigonometric forms (n > 4, 6 or
# 8), and 129 past float Hermite's limit (128).
DEGREES = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 25, 60, 129]


def grid_x(dtype):
    torch.manual_seed(0)
    eps = torch.finfo(dtype).eps
    # |x| == 1, the shifted forms' 0 and 1, the floats next to +-1 (where V's and W's half-angle
    # tests against 1 are decided), |x| > 1, NaN and inf.
    special = [-1.0, 1.0, 0.0, 0.5, 1 - eps / 2, -1 + eps / 2, 1 - eps, -1 + eps, 1 + eps, 2 * eps, 1e-3,
               0.9999, -0.9999, 1.5, -1.5, 3.0, -3.0, 9.0, -9.0, float("nan"), float("inf"), float("-inf")]
    return torch.cat([
        torch.tensor(special, dtype=dtype),
        torch.linspace(-1.25, 1.25, 101, dtype=dtype),
        torch.empty(200, dtype=dtype).uniform_(-1, 1),
        torch.empty(60, dtype=dtype).uniform_(-3, 3),
    ])


def run(fn, *args):
    """``fn`` compiled by fxhlo (nothing may fall back to eager) and called on ``args``."""
    c = compiled(fn)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", fxhlo.FallbackWarning)
        return c(*args)


def check(what, fn, *args):
    want = fn(*args)
    got = run(fn, *args)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    both = torch.isfinite(want) & torch.isfinite(got)
    err = (got.double() - want.double())[both].abs()
    rel = err / want.double()[both].abs().clamp_min(1.0)
    print(f"{what}: {want.dtype}{list(want.shape)} "
          f"max abs err {err.max().item() if err.numel() else 0.0:.3e}, "
          f"max err / max(1, |eager|) {rel.max().item() if rel.numel() else 0.0:.3e}, "
          f"bitwise differences {(~((got == want) | (got.isnan() & want.isnan()))).sum().item()}")
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", OPS)
def test_grid_of_x_by_integer_degrees(name, dtype):
    op = getattr(torch.special, name)
    x = grid_x(dtype)[:, None]
    n = torch.tensor(DEGREES)[None, :]
    check(f"{name} {dtype}", op, x, n)


@pytest.mark.parametrize("name", OPS)
def test_float_degrees_truncate_and_nonfinite_degrees_give_zero(name):
    # Eager casts n to int64: 3.7 -> 3, -0.5 -> 0; NaN, inf and 1e30 give INT64_MIN (result 0).
    op = getattr(torch.special, name)
    x = torch.tensor([-0.9, -0.3, 0.0, 0.25, 0.5, 0.8, 1.0, 2.0])[:, None]
    n = torch.tensor([3.7, 9.99, -0.5, 0.99, 7.5, float("nan"), float("inf"), -float("inf"), 1e30])[None, :]
    check(f"{name} float n", op, x, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", OPS)
def test_scalar_overloads(name):
    op = getattr(torch.special, name)
    x = torch.linspace(-1.5, 1.5, 31)
    n = torch.tensor(DEGREES)
    check(f"{name} x_scalar", lambda n: op(0.3, n), n)
    check(f"{name} n_scalar", lambda x: op(x, 9), x)
    check(f"{name} n_scalar float", lambda x: op(x, 2.5), x)


@pytest.mark.slow
@pytest.mark.parametrize("name", OPS)
def test_integer_inputs_give_the_default_float(name):
    op = getattr(torch.special, name)
    x = torch.tensor([-3, -1, 0, 1, 2, 5])[:, None]
    n = torch.tensor([-1, 0, 1, 2, 3, 8, 10], dtype=torch.int32)[None, :]
    check(f"{name} int", op, x, n)
    check(f"{name} int x, float64 n", op, x, n.double())


def test_huge_degree_outside_the_interval_stops_at_nan():
    # |x| > 1: the recurrence overflows to NaN within a few hundred steps; eager's loop stops
    # there, and so must the compiled loop (it would otherwise run 10^15 steps).
    x = torch.tensor([1.5, -2.0, 3.0])
    n = torch.full((3,), 10**15)
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "legendre_polynomial_p",
                 "shifted_chebyshev_polynomial_w"):
        check(f"{name} n=1e15", getattr(torch.special, name), x, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_he", "legendre_polynomial_p"])
def test_layouts(name):
    # The loop carries 1-d state: any broadcast, stride or emptiness of the operands reshapes to it.
    op = getattr(torch.special, name)
    x = torch.linspace(-1.5, 1.5, 24).reshape(4, 6)
    n = torch.arange(-1, 11)
    cases = {
        "empty": (torch.empty(0, 1, 3), torch.empty(0, 10, 3)),
        "0-dim x": (torch.tensor(0.3), n),
        "0-dim": (torch.tensor(0.3), torch.tensor(9)),
        "expanded": (x[:, :1].expand(4, 6), n[:6]),
        "transposed": (x.t(), n[:4]),
        "size-1 dims": (x.reshape(4, 1, 6), torch.tensor([3, 9]).reshape(1, 2, 1)),
        "channels_last": (torch.linspace(-1.2, 1.2, 120).reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
                          torch.tensor(9.0)),
    }
    for what, (a, b) in cases.items():
        check(f"{name} {what}", op, a, b)

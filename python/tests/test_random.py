"""Random ops compiled by fxhlo (``stablehlo.rng_bit_generator`` fed a state drawn from
PyTorch's generator on every call; :mod:`fxhlo.rng`). They must match eager PyTorch's
distributions, not its numbers: continuous ones are compared with eager's samples by a
two-sample Kolmogorov-Smirnov test, discrete ones with their probabilities written out here,
and ranges, repeatability under ``torch.manual_seed`` and independence are checked directly."""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

import fxhlo
from test_op_regressions import compiled

N = 200_000


def fxhlo_only(fn):
    """``fn`` compiled by fxhlo, failing on any FallbackWarning (nothing may run in eager)."""
    c = compiled(fn)

    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("error", fxhlo.FallbackWarning)
            return c(*args)

    return run


def ks_statistic(a: torch.Tensor, b: torch.Tensor) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    a, b = a.double().flatten().sort().values, b.double().flatten().sort().values
    grid = torch.cat([a, b])
    cdf_a = torch.searchsorted(a, grid, right=True).double() / a.numel()
    cdf_b = torch.searchsorted(b, grid, right=True).double() / b.numel()
    return (cdf_a - cdf_b).abs().max().item()


def ks_bound(n: int, m: int, alpha: float = 1e-6) -> float:
    """The statistic's critical value at level ``alpha`` (asymptotic formula)."""
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def same_distribution(name, got, want):
    d, bound = ks_statistic(got, want), ks_bound(got.numel(), want.numel())
    print(f"{name}: KS statistic {d:.4f} (bound {bound:.4f}), mean {got.double().mean():.4f} "
          f"vs eager {want.double().mean():.4f}, std {got.double().std():.4f} vs {want.double().std():.4f}")
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    assert torch.isfinite(got).all()
    assert d < bound, f"{name}: fxhlo's samples do not follow eager's distribution"


CONTINUOUS = {
    "rand": lambda x: torch.rand(N, dtype=x.dtype),
    "randn": lambda x: torch.randn(N, dtype=x.dtype),
    "rand_like": lambda x: torch.rand_like(x),
    "randn_like": lambda x: torch.randn_like(x),
    "uniform_": lambda x: torch.empty(N, dtype=x.dtype).uniform_(-2, 5),
    "normal_": lambda x: torch.empty(N, dtype=x.dtype).normal_(1.5, 3.0),
    "normal(tensor, tensor)": lambda x: torch.normal(torch.zeros_like(x) + 2, torch.ones_like(x) * 0.5),
    "exponential_": lambda x: torch.empty(N, dtype=x.dtype).exponential_(2.5),
    "log_normal_": lambda x: torch.empty(N, dtype=x.dtype).log_normal_(0.0, 0.5),
    "cauchy_": lambda x: torch.empty(N, dtype=x.dtype).cauchy_(1.0, 2.0),
    "rrelu slopes": lambda x: F.rrelu(-torch.ones_like(x), 0.1, 0.4, training=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_distributions_match_eager(name, dtype):
    fn = CONTINUOUS[name]
    x = torch.zeros(N, dtype=dtype)
    torch.manual_seed(0)
    got = fxhlo_only(fn)(x)
    want = fn(x)
    same_distribution(f"{name} {dtype}", got, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_draws(dtype):
    """rand takes only as many bits as the significand holds: every value k 2^-m, never 1."""
    torch.manual_seed(0)
    got = fxhlo_only(lambda: torch.rand(N, dtype=dtype))()
    m = {torch.float16: 11, torch.bfloat16: 8}[dtype]
    k = got.double() * 2 ** m
    print(f"rand {dtype}: {torch.unique(got).numel()} distinct values of {2 ** m}, min {got.min()}, max {got.max()}")
    assert got.dtype == dtype and got.min() >= 0 and got.max() < 1
    assert torch.equal(k, k.round())
    same_distribution(f"rand {dtype}", got, torch.rand(N, dtype=dtype))
    z = fxhlo_only(lambda: torch.randn(N, dtype=dtype))()
    same_distribution(f"randn {dtype}", z, torch.randn(N, dtype=dtype))


def test_rand_stays_in_the_unit_interval():
    torch.manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        u = fxhlo_only(lambda: torch.rand(4 * N, dtype=dtype))()
        print(f"rand {dtype}: min {u.min().item():.3e}, max {1 - u.max().item():.3e} below 1")
        assert u.min() >= 0 and u.max() < 1


def frequencies_match(name, values: torch.Tensor, probabilities: dict):
    """Each value's frequency within 6 standard deviations of its probability."""
    n = values.numel()
    worst = 0.0
    for v, p in probabilities.items():
        freq = (values == v).sum().item() / n
        sigma = math.sqrt(p * (1 - p) / n)
        worst = max(worst, abs(freq - p) / max(sigma, 1e-12))
        assert abs(freq - p) <= 6 * sigma + 1e-12, f"{name}: value {v} frequency {freq:.5f}, probability {p:.5f}"
    covered = sum((values == v).sum().item() for v in probabilities)
    print(f"{name}: worst frequency {worst:.2f} sigma off, {n - covered} values outside the support")
    assert covered == n, f"{name}: {n - covered} values outside the support"


def test_discrete_distributions():
    torch.manual_seed(2)
    ints = fxhlo_only(lambda: torch.randint(3, 10, (N,)))()
    assert ints.dtype == torch.int64
    frequencies_match("randint(3, 10)", ints, {v: 1 / 7 for v in range(3, 10)})
    small = fxhlo_only(lambda x: torch.randint_like(x, 0, 4))(torch.zeros(N, dtype=torch.int32))
    assert small.dtype == torch.int32
    frequencies_match("randint_like(int32, 0, 4)", small, {v: 1 / 4 for v in range(4)})
    coins = fxhlo_only(lambda x: torch.bernoulli(x))(torch.full((N,), 0.3))
    frequencies_match("bernoulli(0.3)", coins, {0.0: 0.7, 1.0: 0.3})
    coins_p = fxhlo_only(lambda x: x.bernoulli(0.8))(torch.zeros(N, dtype=torch.float64))
    frequencies_match("bernoulli(p=0.8)", coins_p, {0.0: 0.2, 1.0: 0.8})
    trials = fxhlo_only(lambda x: x.clone().geometric_(0.4))(torch.zeros(N))
    p_geometric = {float(k): 0.6 ** (k - 1) * 0.4 for k in range(1, 40)}
    assert trials.min() >= 1
    frequencies_match("geometric(0.4)", trials.clamp(max=39), {**p_geometric, 39.0: 0.6 ** 38})


def test_random_integers_span_the_dtype():
    # Dynamo refuses `Tensor.random_`; the functional ATen op is what other captures hand over.
    torch.manual_seed(3)
    bytes_ = fxhlo_only(lambda x: torch.ops.aten.random.default(x))(torch.zeros(N, dtype=torch.uint8))
    frequencies_match("uint8 random_()", bytes_, {v: 1 / 256 for v in range(256)})
    wide = fxhlo_only(lambda x: torch.ops.aten.random.to(x, 2**40))(torch.zeros(N, dtype=torch.int64))
    full = fxhlo_only(lambda x: torch.ops.aten.random.default(x))(torch.zeros(N, dtype=torch.int64))
    print(f"int64 random_(to=2^40): max {wide.max().item()}; int64 random_(): max {full.max().item()}")
    assert wide.min() >= 0 and wide.max() < 2**40 and wide.max() > 2**39
    assert (wide < 2**39).double().mean().item() == pytest.approx(0.5, abs=0.01)
    assert full.min() >= 0 and full.max() > 2**62


def test_multinomial_draws_by_weight():
    torch.manual_seed(4)
    weights = torch.tensor([1.0, 0.0, 2.0, 5.0, 2.0])
    p = (weights / weights.sum()).tolist()
    rows = weights.expand(N // 4, 5).contiguous()
    firsts = fxhlo_only(lambda w: torch.multinomial(w, 3))(rows)
    assert firsts.shape == (N // 4, 3) and firsts.dtype == torch.int64
    # Without replacement: no category twice in a row, a zero weight never, the first by weight.
    assert (firsts != 1).all()
    assert (firsts[:, 0] != firsts[:, 1]).all() and (firsts[:, 1] != firsts[:, 2]).all()
    assert (firsts[:, 0] != firsts[:, 2]).all()
    frequencies_match("multinomial first draw", firsts[:, 0], {i: p[i] for i in range(5) if p[i] > 0})
    draws = fxhlo_only(lambda w: torch.multinomial(w, 8, replacement=True))(weights.expand(N // 8, 5).contiguous())
    frequencies_match("multinomial with replacement", draws, {i: p[i] for i in range(5) if p[i] > 0})


def test_randperm_is_a_uniform_permutation():
    torch.manual_seed(5)
    fn = fxhlo_only(lambda: torch.stack([torch.randperm(6) for _ in range(4)]))
    perms = torch.cat([fn() for _ in range(2500)])
    assert perms.dtype == torch.int64
    assert torch.equal(perms.sort(dim=1).values, torch.arange(6).expand_as(perms))
    # Where element 0 lands: uniform over the 6 positions.
    frequencies_match("randperm position of 0", (perms == 0).int().argmax(dim=1), {i: 1 / 6 for i in range(6)})


def test_dropout_keeps_and_scales_as_eager():
    torch.manual_seed(6)
    x = torch.randn(N)
    y = fxhlo_only(lambda x: F.dropout(x, 0.25, training=True))(x)
    kept = y != 0
    print(f"dropout(0.25): kept {kept.double().mean():.4f} (expect 0.75)")
    frequencies_match("dropout(0.25) kept", kept, {True: 0.75, False: 0.25})
    torch.testing.assert_close(y[kept], x[kept] / 0.75)
    torch.testing.assert_close(fxhlo_only(lambda x: F.dropout(x, 0.25, training=False))(x), x)
    torch.testing.assert_close(fxhlo_only(lambda x: F.dropout(x, 0.0, training=True))(x), x)
    # Channel dropout drops whole channels.
    planes = torch.randn(64, 32, 4, 4) + 10
    out = fxhlo_only(lambda x: F.dropout2d(x, 0.5, training=True))(planes)
    zero = (out == 0).flatten(2)
    assert (zero.all(2) | ~zero.any(2)).all()
    torch.testing.assert_close(out[~zero.all(2)], planes[~zero.all(2)] * 2)


def test_dropout_in_a_training_model():
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                                torch.nn.Linear(32, 4)).train()
    x = torch.randn(8, 16)
    with torch.no_grad():
        out = fxhlo_only(model)(x)
        eager_out = model(x)
    assert out.shape == eager_out.shape
    mlir = "\n".join(g.executable.mlir for g in fxhlo.compiled_graphs())
    assert "stablehlo.rng_bit_generator" in mlir
    # Without dropout (eval) the compiled model is eager's.
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(fxhlo_only(model)(x), model(x))


def test_manual_seed_repeats_a_run_and_calls_differ():
    fn = fxhlo_only(lambda x: (torch.rand(1000) + x, torch.randn(1000) * x))
    x = torch.ones(1000)
    torch.manual_seed(8)
    a = fn(x)
    b = fn(x)
    torch.manual_seed(8)
    c = fn(x)
    assert all(torch.equal(u, v) for u, v in zip(a, c)), "the same seed must repeat the run"
    assert not any(torch.equal(u, v) for u, v in zip(a, b)), "two calls must draw new numbers"


def test_draws_in_one_graph_are_independent():
    torch.manual_seed(9)
    u, v = fxhlo_only(lambda: (torch.rand(N), torch.rand(N)))()
    corr = torch.corrcoef(torch.stack([u, v]))[0, 1].item()
    print(f"correlation of two draws in one graph: {corr:.4f}")
    assert not torch.equal(u, v)
    assert abs(corr) < 6 / math.sqrt(N)

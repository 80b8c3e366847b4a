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


@pytest.mark.slow
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


# ---- rejection samplers (while_loop bodies that draw) ---------------------------------------


def support_matches(name, values: torch.Tensor, pmf: dict, tail: float = 1e-4):
    """``frequencies_match`` over the integer support ``pmf`` (value -> probability, covering
    all but a negligible mass), its two ends lumped into bins of probability ``tail`` or more
    (so that a value of probability 1e-9 seen once does not fail the 6-sigma rule). Values
    must be whole numbers inside the support's range."""
    ks = sorted(pmf)
    assert torch.equal(values, values.round()), f"{name}: values that are not whole numbers"
    assert values.min() >= ks[0], f"{name}: {values.min().item()} below the support"
    below = above = 0.0
    lo, hi = ks[0], ks[-1]
    for k in ks:
        below += pmf[k]
        if below >= tail:
            lo = k
            break
    for k in reversed(ks):
        above += pmf[k]
        if above >= tail:
            hi = k
            break
    probs = {float(k): pmf[k] for k in ks if lo < k < hi}
    probs[float(lo)] = sum(pmf[k] for k in ks if k <= lo)
    probs[float(hi)] = sum(pmf[k] for k in ks if k >= hi)
    frequencies_match(name, values.clamp(lo, hi), probs)


@pytest.mark.parametrize("alpha, dtype", [(0.3, torch.float32), (1.0, torch.float32), (4.5, torch.float32),
                                          (50.0, torch.float32), (0.3, torch.float64), (4.5, torch.float64)])
def test_standard_gamma_matches_eager(alpha, dtype):
    torch.manual_seed(10)
    x = torch.full((N,), alpha, dtype=dtype)
    before = len(fxhlo.compiled_graphs())
    got = fxhlo_only(lambda a: torch._standard_gamma(a))(x)
    same_distribution(f"_standard_gamma({alpha}) {dtype}", got, torch._standard_gamma(x))
    (graph,) = fxhlo.compiled_graphs()[before:]
    # The rejection loop draws inside the while body.
    assert "stablehlo.while" in graph.executable.mlir and "stablehlo.rng_bit_generator" in graph.executable.mlir


@pytest.mark.parametrize("concentration", [[0.5, 1.0, 3.0], [2.0, 0.2, 1.0, 7.0, 0.05]])
def test_sample_dirichlet_matches_eager(concentration):
    torch.manual_seed(11)
    k = len(concentration)
    a = torch.tensor(concentration).expand(N // k, k).contiguous()
    got = fxhlo_only(lambda a: torch._sample_dirichlet(a))(a)
    want = torch._sample_dirichlet(a)
    assert got.shape == a.shape and got.dtype == a.dtype
    torch.testing.assert_close(got.sum(-1), torch.ones(N // k))
    for j in range(k):  # each share is Beta(a_j, sum - a_j): compare the marginals
        same_distribution(f"_sample_dirichlet({concentration})[{j}]", got[:, j], want[:, j])


@pytest.mark.parametrize("rate", [0.5, 4.0, 30.0, 500.0])
def test_poisson_frequencies(rate):
    torch.manual_seed(12)
    got = fxhlo_only(lambda r: torch.poisson(r))(torch.full((N,), rate))
    assert got.dtype == torch.float32
    top = int(rate + 15 * math.sqrt(rate) + 30)
    pmf = {k: math.exp(k * math.log(rate) - rate - math.lgamma(k + 1)) for k in range(top)}
    support_matches(f"poisson({rate})", got, pmf)


@pytest.mark.parametrize("count, prob", [(10, 0.3), (1000, 0.02), (50, 0.9)])
def test_binomial_frequencies(count, prob):
    torch.manual_seed(13)
    got = fxhlo_only(lambda n, p: torch.binomial(n, p))(torch.full((N,), float(count)), torch.full((N,), prob))
    assert got.dtype == torch.float32 and got.max() <= count
    pmf = {k: math.comb(count, k) * prob ** k * (1 - prob) ** (count - k) for k in range(count + 1)}
    support_matches(f"binomial({count}, {prob})", got, pmf)


@pytest.mark.slow
def test_rejection_samplers_edge_cases_as_eager():
    torch.manual_seed(14)
    nan, inf = math.nan, math.inf
    # Gamma: alpha 0 and NaN give the smallest normal float (eager clamps), inf gives inf.
    alpha = torch.tensor([0.0, nan, inf, 1e-30])
    torch.testing.assert_close(fxhlo_only(lambda a: torch._standard_gamma(a))(alpha), torch._standard_gamma(alpha))
    # Dirichlet: an all-zero row is uniform, a zero alpha's share is the smallest float.
    rows = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 1.0], [inf, 1.0, 2.0]])
    got = fxhlo_only(lambda a: torch._sample_dirichlet(a))(rows)
    want = torch._sample_dirichlet(rows)
    torch.testing.assert_close(got[0], want[0])
    assert got[1, 0] == want[1, 0] == torch.finfo(torch.float32).tiny
    torch.testing.assert_close(got[2], want[2])
    # Poisson: rate 0 draws 0; float16 and float64 keep their dtype.
    rates = torch.tensor([0.0, 0.0, 3.0, 25.0])
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        out = fxhlo_only(lambda r: torch.poisson(r))(rates.to(dtype))
        assert out.dtype == dtype and out[:2].eq(0).all() and torch.equal(out, out.round())
    # Binomial: count 0 or prob 0 give 0, prob 1 the count, a NaN prob NaN.
    count = torch.tensor([0.0, 10.0, 10.0, 10.0, 7.0])
    prob = torch.tensor([0.3, 0.0, 1.0, nan, 1.0])
    got = fxhlo_only(lambda n, p: torch.binomial(n, p))(count, prob)
    torch.testing.assert_close(got, torch.binomial(count, prob), equal_nan=True)


def test_draws_inside_control_flow_are_new_each_time():
    """A while_loop body that draws gets new bits every iteration (the generator state is a
    carried value): the sum of 12 uniforms has mean 6 and variance 1, not 12 u (variance 12).
    A cond branch that draws does not repeat the draw after it."""
    from torch._higher_order_ops import while_loop

    def sum_of_uniforms(x, steps):
        def cond_fn(i, acc):
            return i < steps

        def body_fn(i, acc):
            return i + 1, acc + torch.rand_like(acc)

        return while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), x))[1]

    torch.manual_seed(15)
    s = fxhlo_only(sum_of_uniforms)(torch.zeros(N), torch.tensor(12))
    print(f"sum of 12 uniforms in a while_loop: mean {s.mean():.4f}, variance {s.var():.4f}")
    assert abs(s.mean().item() - 6) < 0.02 and abs(s.var().item() - 1) < 0.03

    def branch(x):
        y = torch.cond(x.sum() > 0, lambda v: v + torch.rand_like(v), lambda v: v - 1, (x,))
        return y, torch.rand_like(x)

    u, v = fxhlo_only(branch)(torch.full((N,), 1e-6))
    corr = torch.corrcoef(torch.stack([u, v]))[0, 1].item()
    print(f"cond branch draw vs the draw after it: correlation {corr:.4f}")
    assert abs(u.mean().item() - 0.5) < 0.01 and abs(corr) < 6 / math.sqrt(N)

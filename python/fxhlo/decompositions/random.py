"""Random ops written over uniformly random bits (``fxhlo::random_bits``, :mod:`fxhlo.rng`):
``rand``/``randn``/``randint`` and their ``_like`` forms, ``random``, ``uniform``, ``normal``,
``bernoulli``, ``native_dropout``, ``exponential``, ``geometric``, ``log_normal``, ``cauchy``,
``multinomial``, ``randperm``, ``rrelu_with_noise``, and the rejection samplers
``_standard_gamma``, ``_sample_dirichlet``, ``poisson`` and ``binomial``. Each draws from the
same distribution as eager PyTorch, not the same numbers.

A float in [0, 1) takes as many bits as the dtype's significand holds (53 for float64, 24 for
float32, 11 for float16, 8 for bfloat16), so every value is exact and none rounds up to 1. Ops
that take a logarithm or an inverse CDF use the midpoints ``(k + 1/2) 2^-m`` instead, which
are never 0 or 1.

The rejection samplers run eager's algorithms (ATen's ``sample_gamma``, ``sample_poisson``,
``sample_binomial``) on every element at once in a ``while_loop``: each round draws fresh bits
for all elements and keeps the first accepted value of each, until all have one. The loop body
draws inside a subgraph; :func:`fxhlo.rng.thread_state` carries the generator state through it.
They compute in float64 for float64 and float32 otherwise (eager: float64 always), with the
acceptance tests written as logs of ratios near 1 so that float32 keeps them accurate."""

from __future__ import annotations

import math

import torch

from .._compat import while_loop

from ..rng import random_bits

_SIGNIFICAND = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}


def _float_dtype(dtype) -> torch.dtype:
    return dtype if dtype is not None else torch.get_default_dtype()


def _unit(shape, dtype, device, open_interval: bool = False):
    """Uniform floats of ``dtype`` in [0, 1) (``open_interval``: in (0, 1)), computed in
    float64 for float64 and float32 otherwise."""
    if dtype not in _SIGNIFICAND:
        raise NotImplementedError(f"fxhlo draws random floats of {list(_SIGNIFICAND)}, not {dtype}")
    m = _SIGNIFICAND[dtype]
    wide = m > 31
    bits = random_bits(list(shape), torch.int64 if wide else torch.int32, device)
    work = torch.float64 if wide else torch.float32
    k = (bits & ((1 << m) - 1)).to(work)
    if open_interval:
        k = k + 0.5
    return k * (2.0 ** -m)


def _standard_normal(shape, dtype, device):
    """N(0, 1) by the inverse CDF, sqrt(2) erfinv(2u - 1), in float32 (float64 for float64)."""
    u = _unit(shape, dtype, device, open_interval=True)
    return math.sqrt(2.0) * torch.special.erfinv(2.0 * u - 1.0)


def _integers(shape, low: int, high: int, dtype, device):
    """Uniform integers in [low, high): 62 random bits modulo the range (bias below 2^-30 for
    any range under 2^32), 63 for a range past 2^62."""
    span = high - low
    if span <= 0:
        raise NotImplementedError(f"random integers need low < high, got [{low}, {high})")
    bits = random_bits(list(shape), torch.int64, device)
    if span == 1 << 64:  # every int64 (random_ from -2^63)
        return bits.to(dtype)
    if span == 1 << 63:  # random_() of an int64: [0, 2^63)
        return ((bits & ((1 << 63) - 1)) + low).to(dtype)
    if span > 1 << 63:
        raise NotImplementedError(f"random integers over [{low}, {high}): more than 2^63 values")
    bits = bits & ((1 << (63 if span > 1 << 62 else 62)) - 1)
    return (torch.remainder(bits, span) + low).to(dtype)


def _rand(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = _float_dtype(dtype)
    return _unit(size, dtype, device).to(dtype)


def _rand_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _rand(self.shape, dtype=dtype or self.dtype, device=device or self.device)


def _randn(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = _float_dtype(dtype)
    return _standard_normal(size, dtype, device).to(dtype)


def _randn_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _randn(self.shape, dtype=dtype or self.dtype, device=device or self.device)


def _randint(high, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _randint_low(0, high, size, dtype=dtype, device=device)


def _randint_low(low, high, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _integers(size, int(low), int(high), dtype or torch.int64, device)


def _randint_like(self, high, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _integers(self.shape, 0, int(high), dtype or self.dtype, device or self.device)


def _randint_like_low(self, low, high, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _integers(self.shape, int(low), int(high), dtype or self.dtype, device or self.device)


def _random_top(dtype) -> int:
    """``random_()``'s exclusive upper bound for ``dtype``: 2^digits for floats (every integer
    the dtype holds exactly), the dtype's max + 1 for integers, 2 for bool."""
    if dtype == torch.bool:
        return 2
    if dtype.is_floating_point:
        return 2 ** _SIGNIFICAND[dtype] + 1
    return torch.iinfo(dtype).max + 1


def _random(self, *, generator=None):
    return _integers(self.shape, 0, _random_top(self.dtype), self.dtype, self.device)


def _random_from(self, from_, to=None, *, generator=None):
    top = _random_top(self.dtype) if to is None else int(to)
    return _integers(self.shape, int(from_), top, self.dtype, self.device)


def _random_to(self, to, *, generator=None):
    return _integers(self.shape, 0, int(to), self.dtype, self.device)


def _uniform(self, from_=0.0, to=1.0, *, generator=None):
    u = _unit(self.shape, self.dtype, self.device)
    return (u * (to - from_) + from_).to(self.dtype)


def _normal_functional(self, mean=0.0, std=1.0, *, generator=None):
    z = _standard_normal(self.shape, self.dtype, self.device)
    return (z * std + mean).to(self.dtype)


def _normal_tensor_tensor(mean, std, *, generator=None):
    shape = torch.broadcast_shapes(mean.shape, std.shape)
    dtype = torch.promote_types(mean.dtype, std.dtype)
    z = _standard_normal(shape, dtype, mean.device)
    return (z * std + mean).to(dtype)


def _normal_tensor_float(mean, std=1.0, *, generator=None):
    z = _standard_normal(mean.shape, mean.dtype, mean.device)
    return (z * std + mean).to(mean.dtype)


def _normal_float_tensor(mean, std, *, generator=None):
    z = _standard_normal(std.shape, std.dtype, std.device)
    return (z * std + mean).to(std.dtype)


def _normal_float_float(mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = _float_dtype(dtype)
    z = _standard_normal(size, dtype, device)
    return (z * std + mean).to(dtype)


def _bernoulli_p(self, p=0.5, *, generator=None):
    dtype = self.dtype if self.dtype in _SIGNIFICAND else torch.float32
    return (_unit(self.shape, dtype, self.device) < p).to(self.dtype)


def _bernoulli_tensor(self, p, *, generator=None):
    dtype = p.dtype if p.dtype in _SIGNIFICAND else torch.float32
    return (_unit(self.shape, dtype, self.device) < p).to(self.dtype)


def _native_dropout(input, p: float, train):
    """Eager's ``native_dropout``: each element kept with probability 1 - p and scaled by
    1 / (1 - p); the mask says which were kept. Not training (or p = 0 in eval), the input."""
    if train is False:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    if p >= 1:
        return input * 0, torch.zeros_like(input, dtype=torch.bool)
    dtype = input.dtype if input.dtype in _SIGNIFICAND else torch.float32
    mask = _unit(input.shape, dtype, input.device) >= p
    return input * mask * (1.0 / (1.0 - p)), mask


def _exponential(self, lambd=1.0, *, generator=None):
    u = _unit(self.shape, self.dtype, self.device, open_interval=True)
    return (-torch.log(u) / lambd).to(self.dtype)


def _geometric(self, p, *, generator=None):
    """Trials to the first success: ceil(log(u) / log(1 - p)), at least 1."""
    work = torch.float64 if self.dtype == torch.float64 else torch.float32
    u = _unit(self.shape, work, self.device, open_interval=True)
    trials = torch.ceil(torch.log(u) / math.log1p(-p)).clamp(min=1)
    return trials.to(self.dtype)


def _log_normal(self, mean=1.0, std=2.0, *, generator=None):
    z = _standard_normal(self.shape, self.dtype, self.device)
    return torch.exp(z * std + mean).to(self.dtype)


def _cauchy(self, median=0.0, sigma=1.0, *, generator=None):
    u = _unit(self.shape, self.dtype, self.device, open_interval=True)
    return (median + sigma * torch.tan(math.pi * (u - 0.5))).to(self.dtype)


def _gumbel_keys(logits, shape):
    """``logits`` (broadcast to ``shape``) plus Gumbel noise, -log(-log(u)): the argmax of the
    sum is a draw from softmax(logits), the top k a draw of k without replacement."""
    work = torch.float64 if logits.dtype == torch.float64 else torch.float32
    u = _unit(shape, work, logits.device, open_interval=True)
    return logits.to(work) - torch.log(-torch.log(u))


def _multinomial(self, num_samples: int, replacement: bool = False, *, generator=None):
    """Categories drawn with probabilities proportional to the rows of ``self`` (1-D or 2-D):
    without replacement the top ``num_samples`` Gumbel keys, with it one Gumbel argmax per
    sample. A zero weight has key -inf and is never drawn."""
    logits = torch.log(self)
    if not replacement:
        return torch.topk(_gumbel_keys(logits, self.shape), num_samples, dim=-1).indices
    keys = _gumbel_keys(logits.unsqueeze(-2), (*self.shape[:-1], num_samples, self.shape[-1]))
    return torch.argmax(keys, dim=-1)


def _randperm(n, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    """A permutation of 0..n-1: the order that sorts n random 64-bit keys."""
    keys = random_bits([n], torch.int64, device)
    return torch.sort(keys, stable=True).indices.to(dtype or torch.int64)


def _rrelu_with_noise_functional(self, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """``rrelu`` with its noise: training, each element at or below 0 is scaled by a slope
    drawn from U(lower, upper), and ``noise`` returns the slopes (1 elsewhere); not training,
    the slope is (lower + upper) / 2 and ``noise`` is unchanged."""
    if not training:
        slope = (lower + upper) / 2
        return torch.where(self >= 0, self, self * slope), noise.clone()
    u = _unit(self.shape, self.dtype, self.device)
    slope = (u * (upper - lower) + lower).to(self.dtype)
    r = torch.where(self <= 0, slope, torch.ones_like(slope))
    return self * r, r.to(noise.dtype)


# ---- rejection samplers ----------------------------------------------------------------------

_MAX_ROUNDS = 1000
"""Every sampling loop stops after this many rounds (an element still without a value is NaN)
so that a device never spins forever. A valid input never gets near it: the rejection methods
accept with probability above 1/5 per round, and the counting methods (Knuth's, inversion) take
k + 1 rounds for a count k of mean below 10."""

_LOG_TINY_DOUBLE = math.log(torch.finfo(torch.float64).tiny)


def _work_dtype(dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _until_done(step, done, *values):
    """``step(done, *values) -> (done, *values)`` repeated in a ``while_loop`` while some element
    is not done (at most :data:`_MAX_ROUNDS` rounds); the final ``done`` and ``values``.
    ``step`` must return new tensors (a loop result may not alias its input)."""

    def cond_fn(i, done, *values):
        return (i < _MAX_ROUNDS) & ~done.all()

    def body_fn(i, done, *values):
        return (i + 1, *step(done, *values))

    rounds = torch.zeros((), dtype=torch.int64, device=done.device)
    return while_loop(cond_fn, body_fn, (rounds, done, *values))[1:]


def _stirling_tail(k):
    """``lgamma(k + 1) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]``: ATen's
    ``stirling_approx_tail`` (its table below 10, indexed by the truncated ``k``; the series
    above)."""
    table = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
             0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
             0.00925546218271273, 0.00833056343336287)
    kp1sq = (k + 1) * (k + 1)
    out = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    index = torch.floor(k)
    for i, value in enumerate(table):
        out = torch.where(index == i, value, out)
    return out


def _log_standard_gamma(alpha):
    """log of Gamma(alpha, 1) samples (``alpha`` float32 or float64) by eager's method:
    Marsaglia and Tsang's rejection for alpha >= 1, and Gamma(alpha + 1) U^(1/alpha) below 1.
    In logs, so that the small samples of a small alpha do not underflow (Dirichlet). Eager's
    edge cases follow from the same arithmetic: alpha 0 gives -inf, inf gives inf, NaN (and
    alpha below -2/3, where the constants are NaN) gives NaN."""
    shape, work, device = alpha.shape, alpha.dtype, alpha.device
    small = alpha < 1
    boost = torch.log(_unit(shape, work, device, open_interval=True)) / alpha
    boost = torch.where(small, boost, torch.zeros_like(boost))
    boost = torch.where(alpha == 0, -math.inf, boost)  # -0.0 too (log(u) / -0.0 is +inf)
    d = torch.where(small, alpha + 1, alpha) - 1.0 / 3.0
    c = 1 / torch.sqrt(9 * d)

    def step(done, log_v):
        x = _standard_normal(shape, work, device)
        u = _unit(shape, work, device, open_interval=True)
        y = 1 + c * x
        v = y * y * y
        xx = x * x
        # Not `y > 0`: a NaN y (NaN alpha) must be accepted by the first test, as in eager.
        accept = ~(y <= 0) & ((u < 1 - 0.0331 * xx * xx) | (torch.log(u) < 0.5 * xx + d * (1 - v + torch.log(v))))
        return done | accept, torch.where(done | ~accept, log_v, 3 * torch.log(y))

    done = torch.zeros(shape, dtype=torch.bool, device=device)
    _, log_v = _until_done(step, done, torch.full_like(alpha, math.nan))  # NaN past the round limit
    return boost + torch.log(d) + log_v


def _standard_gamma(self, generator=None):
    """Gamma(self, 1) samples, at least the dtype's smallest normal number (a NaN too), as
    eager clamps them."""
    sample = torch.exp(_log_standard_gamma(self.to(_work_dtype(self.dtype)))).to(self.dtype)
    tiny = torch.finfo(self.dtype).tiny
    return torch.where(sample > tiny, sample, tiny)


def _sample_dirichlet(self, generator=None):
    """Gamma samples normalized over the last dim, as a softmax of their logs. Eager draws the
    gammas in float64 and clamps them at float64's smallest normal, then clamps the shares to
    [tiny, largest float below 1] of the dtype (a NaN share, from an infinite alpha, to tiny)."""
    log_gamma = _log_standard_gamma(self.to(_work_dtype(self.dtype)))
    log_gamma = torch.where(log_gamma > _LOG_TINY_DOUBLE, log_gamma, _LOG_TINY_DOUBLE)
    share = torch.softmax(log_gamma, dim=-1).to(self.dtype)
    info = torch.finfo(self.dtype)
    share = torch.where(share > info.tiny, share, info.tiny)
    return torch.where(share < 1 - info.eps / 2, share, 1 - info.eps / 2)


def _poisson(self, generator=None):
    """Poisson(self) counts by eager's methods: Hoermann's transformed rejection (PTRS) for a
    rate of 10 or more, Knuth's product of uniforms below. The candidate k is kept as
    floor(rate) + delta so that k - rate is exact in float32, and the test against
    log(rate^k e^-rate / k!) uses Stirling's form with log1p((k + 1 - rate) / rate). Rate 0
    gives 0, infinity infinity; a negative or NaN rate (eager raises) gives NaN."""
    work = _work_dtype(self.dtype)
    lam = self.to(work)
    shape, device = lam.shape, lam.device
    big = lam >= 10
    known = ~(lam > 0) | torch.isinf(lam)  # 0, inf, negative, NaN: no draws
    known_value = torch.where(lam == 0, 0.0, torch.where(torch.isinf(lam) & (lam > 0), lam, math.nan))
    rate = torch.where(big & ~known, lam, 10.0)  # PTRS constants, finite everywhere
    b = 0.931 + 2.53 * torch.sqrt(rate)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = torch.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2)
    base = torch.floor(rate)
    frac = rate - base
    half_log_2pi_rate = 0.5 * torch.log(2 * math.pi * rate)
    enlam = torch.exp(-torch.where(big, 0.0, lam))  # Knuth's threshold

    def step(done, k, prod):
        u1 = _unit(shape, work, device, open_interval=True)
        v = _unit(shape, work, device, open_interval=True)
        # PTRS
        u = u1 - 0.5
        us = 0.5 - torch.abs(u)
        delta = torch.floor((2 * a / us + b) * u + frac + 0.43)
        cand = base + delta
        dev = delta - frac + 1  # k + 1 - rate
        log_f = -(cand + 0.5) * torch.log1p(dev / rate) + dev - half_log_2pi_rate - _stirling_tail(cand)
        lhs = torch.log(v) + log_inv_alpha - torch.log(a / (us * us) + b)
        sure = (us >= 0.07) & (v <= vr)
        maybe = (cand >= 0) & ~((us < 0.013) & (v > us))
        ptrs_accept = sure | (maybe & (lhs <= log_f))
        # Knuth: k counts the uniforms whose running product stays above e^-rate.
        prod = prod * u1
        more = prod > enlam
        accept = torch.where(big, ptrs_accept, ~more)
        k_new = torch.where(big, torch.where(accept, cand, k), torch.where(more, k + 1, k))
        return done | accept, torch.where(done, k, k_new), prod

    done, k, _ = _until_done(step, known, torch.zeros_like(lam), torch.ones_like(lam))
    k = torch.where(done, k, math.nan)  # past the round limit
    return torch.where(known, known_value, k).to(self.dtype)


def _binomial(count, prob, generator=None):
    """Binomial(count, prob) counts by eager's methods (``sample_binomial``): BTRS (Hormann's
    transformed rejection) where count * p >= 10, inversion by sums of geometric gaps
    otherwise, with p the smaller of prob and 1 - prob (the count of the other outcome is
    count minus the draw). BTRS's test against log(f(k) / f(m)) is written with log1p of ratios
    near 1 sharing one product p (n + 2), so float32 keeps it. Eager's edge cases: count <= 0
    or prob <= 0 give 0, prob >= 1 the count, a NaN prob NaN; a NaN or infinite count (eager
    loops forever) gives count * prob. The result has ``count``'s shape and dtype."""
    work = _work_dtype(count.dtype)
    n = count.to(work)
    prob = prob.to(work).expand(n.shape)
    shape, device = n.shape, n.device
    zero = (n <= 0) | (prob <= 0)
    full = ~zero & (prob >= 1)
    odd = ~zero & ~full & (torch.isnan(prob) | ~torch.isfinite(n))
    known = zero | full | odd
    known_value = torch.where(zero, 0.0, torch.where(full, n, n * prob))
    flip = prob > 0.5
    p = torch.where(known, 0.25, torch.where(flip, 1 - prob, prob))
    n = torch.where(known, 40.0, n)  # finite constants everywhere: known elements draw nothing
    q = 1 - p
    btrs = n * p >= 10
    # BTRS constants (ATen's btrs()).
    spq = torch.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    log_alpha = torch.log((2.83 + 5.1 / b) * spq)
    m = torch.floor((n + 1) * p)
    np2 = p * (n + 2)
    # (m + 1/2) log((m + 1) / (r (n - m + 1))) + the mode's Stirling tails; r = p / q.
    mode_term = ((m + 0.5) * torch.log1p((m + 1 - np2) / (p * (n - m + 1)))
                 + _stirling_tail(m) + _stirling_tail(n - m))
    log_q = torch.log1p(-p)  # inversion: gaps ceil(log(U) / log(1 - p))

    def step(done, k, gaps):
        u1 = _unit(shape, work, device, open_interval=True)
        v = _unit(shape, work, device, open_interval=True)
        # BTRS
        u = u1 - 0.5
        us = 0.5 - torch.abs(u)
        cand = torch.floor((2 * a / us + b) * u + c)
        inside = (cand >= 0) & (cand <= n)
        sure = (us >= 0.07) & (v <= vr)
        lhs = torch.log(v) + log_alpha - torch.log(a / (us * us) + b)
        bound = (mode_term + (n + 1) * torch.log1p((cand - m) / (n - cand + 1))
                 + (cand + 0.5) * torch.log1p((np2 - (cand + 1)) / (q * (cand + 1)))
                 - _stirling_tail(cand) - _stirling_tail(n - cand))
        btrs_accept = inside & (sure | (lhs <= bound))
        # Inversion: k counts the gaps whose running sum stays within n.
        gaps = gaps + torch.ceil(torch.log(u1) / log_q)
        more = ~(gaps > n)
        accept = torch.where(btrs, btrs_accept, ~more)
        k_new = torch.where(btrs, torch.where(accept, cand, k), torch.where(more, k + 1, k))
        return done | accept, torch.where(done, k, k_new), gaps

    done, k, _ = _until_done(step, known, torch.zeros_like(n), torch.zeros_like(n))
    k = torch.where(done, k, math.nan)  # past the round limit
    k = torch.where(flip, count.to(work) - k, k)
    return torch.where(known, known_value, k).to(count.dtype)


RULES = {
    "rand.default": _rand,
    "rand_like.default": _rand_like,
    "randn.default": _randn,
    "randn_like.default": _randn_like,
    "randint.default": _randint,
    "randint.low": _randint_low,
    "randint_like.default": _randint_like,
    "randint_like.low_dtype": _randint_like_low,
    "random.default": _random,
    "random.from": _random_from,
    "random.to": _random_to,
    "uniform.default": _uniform,
    "normal_functional.default": _normal_functional,
    "normal.Tensor_Tensor": _normal_tensor_tensor,
    "normal.Tensor_float": _normal_tensor_float,
    "normal.float_Tensor": _normal_float_tensor,
    "normal.float_float": _normal_float_float,
    "bernoulli.p": _bernoulli_p,
    "bernoulli.Tensor": _bernoulli_tensor,
    "native_dropout.default": _native_dropout,
    "exponential.default": _exponential,
    "geometric.default": _geometric,
    "log_normal.default": _log_normal,
    "cauchy.default": _cauchy,
    "multinomial.default": _multinomial,
    "randperm.default": _randperm,
    "rrelu_with_noise_functional.default": _rrelu_with_noise_functional,
    "_standard_gamma.default": _standard_gamma,
    "_sample_dirichlet.default": _sample_dirichlet,
    "poisson.default": _poisson,
    "binomial.default": _binomial,
}

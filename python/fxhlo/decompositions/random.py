"""Random ops written over uniformly random bits (``fxhlo::random_bits``, :mod:`fxhlo.rng`):
``rand``/``randn``/``randint`` and their ``_like`` forms, ``random``, ``uniform``, ``normal``,
``bernoulli``, ``native_dropout``, ``exponential``, ``geometric``, ``log_normal``, ``cauchy``,
``multinomial``, ``randperm`` and ``rrelu_with_noise``. Each draws from the same
distribution as eager PyTorch, not the same numbers.

A float in [0, 1) takes as many bits as the dtype's significand holds (53 for float64, 24 for
float32, 11 for float16, 8 for bfloat16), so every value is exact and none rounds up to 1. Ops
that take a logarithm or an inverse CDF use the midpoints ``(k + 1/2) 2^-m`` instead, which
are never 0 or 1."""

from __future__ import annotations

import math

import torch

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
}

"""Integer number theory written in ATen ops fxhlo lowers: ``gcd`` and ``lcm`` by Euclid's
algorithm, unrolled to the longest run its dtype allows (so every input gets eager's answer)."""

from __future__ import annotations

import torch

# Euclid's algorithm takes the most steps on consecutive Fibonacci numbers: the largest pair
# below 2^(bits-1) needs this many remainders (F(93) > 2^63 > F(92), and so on).
_EUCLID_STEPS = {torch.int64: 92, torch.int32: 46, torch.int16: 23, torch.int8: 11, torch.uint8: 13}


def _gcd(a, b):
    # eager: a, b = |a|, |b|; while a != 0: a, b = b % a, a; return b.
    a, b = torch.broadcast_tensors(a.abs(), b.abs())
    for _ in range(_EUCLID_STEPS.get(a.dtype, 92)):
        live = a != 0
        a, b = torch.where(live, b % torch.where(live, a, torch.ones_like(a)), a), torch.where(live, a, b)
    return b


def _lcm(a, b):
    g = _gcd(a, b)
    zero = g == 0
    return torch.where(zero, torch.zeros_like(g), (a // torch.where(zero, torch.ones_like(g), g) * b).abs())


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
    "gcd.default": _gcd,
    "lcm.default": _lcm,
}

"""Helpers the Cephes ports (:mod:`.bessel`, :mod:`.special`) share: eager's input promotion
and the roundings Math.h's loops make."""

from __future__ import annotations

import torch


def as_float(x):
    """``x`` as a floating tensor: integers and bool promote to the default dtype, as eager's
    unary float ops do."""
    return x if x.is_floating_point() else x.to(torch.get_default_dtype())


def opmath(fn):
    """A one-tensor rule computing ``fn`` as eager's CPU kernel does: integer and bool inputs
    promoted to the default float dtype, float16/bfloat16 computed in float32 and rounded back."""

    def rule(self):
        x = as_float(self)
        if x.dtype in (torch.float16, torch.bfloat16):
            return fn(x.float()).to(x.dtype)
        return fn(x)

    rule.__name__ = fn.__name__
    rule.__doc__ = fn.__doc__
    return rule


def rdiv(c: float, x):
    """``c / x`` rounded once (``c / tensor`` is ``reciprocal(tensor) * c`` in PyTorch, rounded
    twice)."""
    return torch.full_like(x, c) / x


def polevl(z, coefficients):
    """Cephes ``polevl``, Horner's rule for ``coefficients[0] z^n + ... + coefficients[n]`` as
    Math.h's loops write it (``acc = acc * z + c`` from ``acc = 0``; the first step is exactly
    ``coefficients[0]``)."""
    acc = z * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        acc = acc * z + c
    return acc

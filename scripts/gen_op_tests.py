"""Regenerates the per-op numerical fixtures testsuite/fixtures/ops/ (one bundle per Core ATen op).

Run from the repository root with the project's venv:
    .venv/bin/python scripts/gen_op_tests.py [--out DIR] [--jobs N] [--check-compiled] [OP ...]

The op list is read from the installed torch: every OpOverload of ``torch.ops.aten`` tagged
``torch.Tag.core`` (found through the registered schemas). Each op either gets a bundle
``<op>_<overload>.fxt`` whose graph applies it to several samples (shapes with size-1,
broadcast, 0-d and empty dims, attribute variants, every dtype PyTorch supports for it among
f64 f32 f16 bf16 i64 i32 bool, mixed dtypes for type promotion) and returns every result, or an
exclusion with its reason.

``manifest.json`` lists every core op, sorted by name::

    {"op": "aten.add.Tensor", "bundle": "add_Tensor.fxt" or null, "dtypes": ["f32", ...],
     "samples": 28, "targets": ["aten.add.Tensor"], "excluded": null or "<reason>",
     "dropped": ["<sample>: <why>", ...],
     "cases": [{"sample": "f32[3,4], f32[3,4]", "outputs": [0, 1]}, ...]}

``dtypes`` are those of the samples' tensor inputs (of the results for creation ops),
``targets`` the ATen ops the exported graph holds (decompositions may replace the op),
``dropped`` the samples left out (an eager failure: a dtype PyTorch does not support for the op;
a capture failure; a nondeterministic eager result), ``cases`` which graph outputs (a half-open
range) each sample produces.

Inputs are drawn from a generator seeded by the op's name, so the output is deterministic and
the same with any ``--jobs``. Naming OPs writes only their bundles and leaves the manifest alone.
"""

# OpModule comes first: every node's source location is its op call line in OpModule.forward, and
# keeping it at the top means that editing the sample tables does not move it.
import argparse
import json
import math
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import torch


# Kinds of template entries: (key, kind, value), key None for a positional argument.
CONST, TENSOR, TENSORS, NEW = 0, 1, 2, 3


class OpModule(torch.nn.Module):
    """Applies one op to every sample; returns all results (or those in ``keep``), flattened, as
    one tuple. A sample's template holds (keyword or None, kind, value): a constant, the index of
    a tensor argument of forward, a list of such indices (-1 for None), or (shape, dtype) of an
    ``out=`` buffer."""

    def __init__(self, op, templates):
        super().__init__()
        self.op = op
        self.templates = templates

    def forward(self, *tensors):
        outs = []
        for template, keep in self.templates:
            args, kwargs = [], {}
            for key, kind, v in template:
                if kind == TENSOR:
                    v = tensors[v]
                elif kind == TENSORS:
                    v = [None if i < 0 else tensors[i] for i in v]
                elif kind == NEW:
                    v = torch.empty(v[0], dtype=v[1])
                if key is None:
                    args.append(v)
                else:
                    kwargs[key] = v
            r = self.op(*args, **kwargs)
            r = r if isinstance(r, (tuple, list)) else (r,)
            outs.extend(r if keep is None else [r[i] for i in keep])
        return tuple(outs)


import fxhlo  # noqa: E402
from fxhlo.export import dtype_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OPS_DIR = ROOT / "testsuite" / "fixtures" / "ops"
MANIFEST = "manifest.json"

aten = torch.ops.aten
inf, nan = math.inf, math.nan
F64, F32, F16, BF16 = torch.float64, torch.float32, torch.float16, torch.bfloat16
I64, I32, B = torch.int64, torch.int32, torch.bool
FLOATS = [F32, F64, F16, BF16]
INTS = [I64, I32]
ALL = FLOATS + INTS + [B]
NUMERIC = FLOATS + INTS


# ---- the op list and the exclusions ---------------------------------------------------------


def core_ops() -> list:
    """Every OpOverload of torch.ops.aten tagged core, sorted by name. The overloads come from
    the registered schemas: ``dir(torch.ops.aten)`` only lists the packets loaded so far."""
    names = sorted({(s.name.split("::")[1], s.overload_name or "default")
                    for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")})
    ops = []
    for name, overload in names:
        op = getattr(getattr(torch.ops.aten, name), overload)
        if torch.Tag.core in op.tags:
            ops.append(op)
    return sorted(ops, key=str)


BACKWARD = "backward op: autograd only, never in an inference graph"
RANDOM = "random op: values depend on the RNG state (tagged nondeterministic_seeded)"
SYMBOLIC = "returns a symbolic value about sizes or strides (SymInt, SymBool), not a tensor"
SCALAR = "returns a Python scalar (Tensor.item()), not a tensor: the capture makes it a SymFloat"
DYNAMIC = "data-dependent output shape: the capture gives it a symbolic (unbacked) size"
FFT = "fft op: complex dtypes, which fxhlo does not support"
TRAINING_BN = ("training-mode batch norm: mutates running_mean/running_var (even with training=False "
               "the capture counts them as mutated inputs); captured as _native_batch_norm_legit_functional")
EMPTY = "uninitialized values: no reference to compare with (empty*)"
IN_PLACE = "in-place op: mutates its input (a trace cannot express it), and growing leaves uninitialized values"
NO_SAMPLES = "no samples defined in scripts/gen_op_tests.py (new in this torch?)"

EXCLUDED = {
    "aten._local_scalar_dense.default": SCALAR,
    "aten.nonzero.default": DYNAMIC,
    "aten._fft_c2r.default": FFT,
    "aten._fft_r2c.default": FFT,
    "aten._native_batch_norm_legit.default": TRAINING_BN,
    "aten.resize_.default": IN_PLACE,
}


def exclusion(op) -> str | None:
    name = str(op)
    short = op._schema.name.split("::")[-1]
    if name in EXCLUDED:
        return EXCLUDED[name]
    if "backward" in short:
        return BACKWARD
    if torch.Tag.nondeterministic_seeded in op.tags:
        return RANDOM
    if short.startswith("sym_"):
        return SYMBOLIC
    if short.startswith("empty"):
        return EMPTY
    if short.startswith("_fft"):
        return FFT
    return None


# ---- samples --------------------------------------------------------------------------------


class New:
    """A sample argument: a fresh ``torch.empty`` that forward makes (an ``out=`` buffer)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = list(shape), dtype


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    keep: tuple | None = None
    """The results the graph returns (default: all)."""

    def only(self, *results):
        self.keep = results
        return self

    def tensors(self) -> list:
        """The tensor arguments, in order (inside tensor lists too)."""
        out = []
        for v in list(self.args) + list(self.kwargs.values()):
            if isinstance(v, torch.Tensor):
                out.append(v)
            elif isinstance(v, (list, tuple)):
                out += [x for x in v if isinstance(x, torch.Tensor)]
        return out

    def template(self, start: int) -> tuple:
        """The OpModule template, numbering the tensors from ``start``."""
        n = start
        entries = [(None, v) for v in self.args] + list(self.kwargs.items())
        out = []
        for key, v in entries:
            if isinstance(v, torch.Tensor):
                out.append((key, TENSOR, n))
                n += 1
            elif isinstance(v, New):
                out.append((key, NEW, (v.shape, v.dtype)))
            elif isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
                ids = []
                for x in v:
                    assert x is None or isinstance(x, torch.Tensor), x
                    ids.append(-1 if x is None else n)
                    n += x is not None
                out.append((key, TENSORS, ids))
            else:
                out.append((key, CONST, v))
        return tuple(out), self.keep

    def describe(self) -> str:
        parts = [_describe(a) for a in self.args]
        parts += [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        if self.keep is not None:
            parts.append(f"results {list(self.keep)}")
        return ", ".join(parts)


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"{dtype_name(x.dtype)}[{','.join(map(str, x.shape))}]"
    if isinstance(x, New):
        return f"out={dtype_name(x.dtype)}[{','.join(map(str, x.shape))}]"
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(_describe(y) for y in x) + "]"
    if isinstance(x, torch.dtype):
        return dtype_name(x)
    if isinstance(x, torch.memory_format):
        return str(x).replace("torch.", "")
    return repr(x)


def S(*args, **kwargs) -> Sample:
    return Sample(args, kwargs)


class Rand:
    """Inputs drawn from a generator seeded by the op's name."""

    def __init__(self, name: str):
        self.g = torch.Generator().manual_seed(zlib.crc32(name.encode()))

    def u(self, shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=self.g, dtype=F64)

    def t(self, shape, dtype=F32, lo=-2.0, hi=2.0):
        """Values in [lo, hi]: uniform for floats, integers for integer dtypes, 0/1 for bool."""
        if dtype.is_floating_point:
            return self.u(shape, lo, hi).to(dtype)
        if dtype == B:
            return torch.rand(shape, generator=self.g) < 0.5
        ilo, ihi = math.ceil(lo), math.floor(hi)
        return torch.randint(ilo, ihi + 1, shape, generator=self.g).to(dtype)

    def nz(self, shape, dtype=F32, lo=0.5, hi=2.0):
        """Non-zero values with magnitude in [lo, hi] (1 to ceil(hi) for integers), either sign."""
        if dtype == B:
            return torch.ones(shape, dtype=B)
        sign = torch.where(torch.rand(shape, generator=self.g) < 0.5, -1, 1)
        if dtype.is_floating_point:
            return (sign * self.u(shape, lo, hi)).to(dtype)
        return (sign * torch.randint(1, math.ceil(hi) + 1, shape, generator=self.g)).to(dtype)

    def grid(self, shape, dtype=F32, lo=-2.0, hi=2.0, step=0.5):
        """Multiples of ``step`` in [lo, hi]: values repeat, so comparisons see ties."""
        if not dtype.is_floating_point:
            return self.t(shape, dtype, lo, hi)
        n = round((hi - lo) / step)
        return (lo + step * torch.randint(0, n + 1, shape, generator=self.g)).to(dtype)

    def distinct(self, shape, dtype=F32):
        """Pairwise distinct values (no ties for sort, topk, arg-max...), exact in f16 and bf16."""
        n = math.prod(shape)
        v = torch.randperm(n, generator=self.g) - n // 2
        if dtype.is_floating_point:
            return (v.to(F64) * 0.25).reshape(shape).to(dtype)
        return v.reshape(shape).to(dtype)

    def idx(self, shape, n, dtype=I64, lo=0):
        return torch.randint(lo, n, shape, generator=self.g).to(dtype)

    def uidx(self, k, n, dtype=I64):
        """k distinct indices in [0, n)."""
        return torch.randperm(n, generator=self.g)[:k].to(dtype)

    def rows_uidx(self, rows, k, n, dtype=I64):
        """[rows, k] indices, each row k distinct values in [0, n)."""
        return torch.stack([self.uidx(k, n, dtype) for _ in range(rows)])


def T(values, dtype=F32):
    return torch.tensor(values, dtype=F64).to(dtype) if dtype.is_floating_point else torch.tensor(values, dtype=dtype)


NONFINITE = [inf, -inf, nan, 0.0, -0.0, 1.5, -2.25]
HALVES = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.49999997, -3.7, 3.7, 7.5]


def int_range(lo, hi):
    return math.ceil(lo) <= math.floor(hi)


# An op name (without "aten.") -> builder(r, name) returning its samples.
BUILDERS = {}


def samples(*names):
    def deco(fn):
        for n in names:
            assert n not in BUILDERS, n
            BUILDERS[n] = fn
        return fn
    return deco


# -- elementwise unary --

UNARY = {  # op: (lo, hi, special values for an extra f32 sample, candidate dtypes)
    "abs.default": (-2, 2, NONFINITE, ALL),
    "acos.default": (-0.95, 0.95, None, ALL),
    "acosh.default": (1.05, 3, None, ALL),
    "asin.default": (-0.95, 0.95, None, ALL),
    "asinh.default": (-3, 3, None, ALL),
    "atan.default": (-3, 3, None, ALL),
    "atanh.default": (-0.95, 0.95, None, ALL),
    "ceil.default": (-3, 3, HALVES + NONFINITE, ALL),
    "floor.default": (-3, 3, HALVES + NONFINITE, ALL),
    "round.default": (-3, 3, HALVES + NONFINITE, ALL),
    "trunc.default": (-3, 3, HALVES + NONFINITE, ALL),
    "cos.default": (-4, 4, None, ALL),
    "sin.default": (-4, 4, None, ALL),
    "tan.default": (-1.2, 1.2, None, ALL),
    "cosh.default": (-3, 3, None, ALL),
    "sinh.default": (-3, 3, None, ALL),
    "tanh.default": (-3, 3, None, ALL),
    "erf.default": (-2, 2, None, ALL),
    "exp.default": (-3, 3, None, ALL),
    "expm1.default": (-1, 1, [1e-4, -1e-4, 1e-7, 0.0], ALL),
    "log.default": (0.05, 4, None, ALL),
    "log10.default": (0.05, 4, None, ALL),
    "log2.default": (0.05, 4, None, ALL),
    "log1p.default": (-0.9, 3, [1e-4, -1e-4, 1e-7, 0.0], ALL),
    "sqrt.default": (0, 4, None, ALL),
    "rsqrt.default": (0.05, 4, None, ALL),
    "neg.default": (-3, 3, NONFINITE, ALL),
    "sigmoid.default": (-5, 5, None, ALL),
    "sign.default": (-2, 2, NONFINITE, ALL),
    "relu.default": (-2, 2, NONFINITE, ALL),
    "isinf.default": (-2, 2, NONFINITE, ALL),
    "isnan.default": (-2, 2, NONFINITE, ALL),
    "logical_not.default": (-2, 2, NONFINITE, ALL),
    "bitwise_not.default": (-8, 8, None, INTS + [B]),
}


@samples(*UNARY)
def unary(r, name):
    lo, hi, special, dtypes = UNARY[name]
    main = dtypes[0]
    out = [S(r.t(shape, main, lo, hi)) for shape in ([3, 4], [2, 1, 3], [], [0, 3], [1])]
    for dt in dtypes[1:]:
        if dt == B and not (lo <= 0 and hi >= 1):
            continue  # 0 or 1 lies outside the domain
        if dt in INTS and not int_range(lo, hi):
            continue
        out.append(S(r.t([2, 3], dt, lo, hi)))
    if special:
        out.append(S(T(special, F32)))
        out.append(S(T(special, F16)))
    return out


@samples("reciprocal.default")
def reciprocal(r, name):
    out = [S(r.nz(shape, F32, 0.25, 3)) for shape in ([3, 4], [2, 1, 3], [], [0, 3])]
    out += [S(r.nz([2, 3], dt, 0.25, 3)) for dt in (F64, F16, BF16, I64, I32, B)]
    return out


# -- elementwise binary --


@dataclass
class Dom:
    """A value domain for one operand: [lo, hi] (floats), [ilo, ihi] (integers); nonzero draws
    magnitudes in [lo, hi] with either sign; step > 0 draws multiples of step (ties)."""

    lo: float = -2.0
    hi: float = 2.0
    ilo: int | None = None
    ihi: int | None = None
    nonzero: bool = False
    step: float = 0.0

    def make(self, r: Rand, shape, dtype):
        if self.nonzero:
            return r.nz(shape, dtype, self.lo, self.hi if dtype.is_floating_point else (self.ihi or self.hi))
        if dtype.is_floating_point:
            if self.step:
                return r.grid(shape, dtype, self.lo, self.hi, self.step)
            return r.t(shape, dtype, self.lo, self.hi)
        lo = self.ilo if self.ilo is not None else self.lo
        hi = self.ihi if self.ihi is not None else self.hi
        return r.t(shape, dtype, lo, hi)


BINARY_SHAPES = [([3, 4], [3, 4]), ([3, 1], [1, 4]), ([2, 3, 4], [4]), ([], [2, 3]), ([2, 3], []),
                 ([], []), ([0, 4], [1, 4]), ([1, 1], [3, 1])]
# A 0-d f64 tensor input costs Dynamo a restart of its analysis (TensorifyScalarRestartAnalysis),
# so the 0-d operands here are f32 or integers.
MIXED = [(I64, F32, [2, 3], [2, 3]), (F16, F32, [2, 3], []), (I32, I64, [3], [2, 3]), (B, F32, [2, 3], [2, 3]),
         (BF16, F16, [2, 3], [2, 3]), (I64, F32, [2, 3], []), (F64, F32, [2, 3], []), (I32, I64, [2, 3], []),
         (F16, I64, [2, 3], [2, 3]), (B, I32, [2, 3], [2, 3])]


def binary_samples(r, lhs: Dom, rhs: Dom, dtypes, mixed=MIXED, kwargs=None, extra=()):
    kwargs = kwargs or {}
    main = dtypes[0]
    out = [S(lhs.make(r, a, main), rhs.make(r, b, main), **kwargs) for a, b in BINARY_SHAPES]
    out += [S(lhs.make(r, [2, 3], dt), rhs.make(r, [2, 3], dt), **kwargs) for dt in dtypes[1:]]
    out += [S(lhs.make(r, sa, da), rhs.make(r, sb, db), **kwargs) for da, db, sa, sb in mixed
            if da in dtypes and db in dtypes]
    for e in extra:
        out.append(e(r) if callable(e) else e)
    return out


NZ = Dom(0.5, 3, ihi=4, nonzero=True)
TIES = Dom(-2, 2, step=0.5)
NAN_PAIR = lambda r: S(T([nan, 1.0, nan, -inf, 2.0, 0.0]), T([0.5, nan, nan, 1.0, inf, -0.0]))  # noqa: E731


@samples("add.Tensor")
def add_tensor(r, name):
    d = Dom()
    return binary_samples(r, d, d, ALL, extra=[
        S(r.t([3, 4]), r.t([4]), alpha=2.5), S(r.t([2, 3], I64, -5, 5), r.t([2, 3], I64, -5, 5), alpha=-3),
        S(r.t([2, 3], F16), r.t([2, 3], F16), alpha=0.5), S(r.t([2, 3], I32, -5, 5), r.t([2, 3], F32), alpha=2)])


@samples("sub.Tensor")
def sub_tensor(r, name):
    d = Dom()
    mixed = [m for m in MIXED if B not in m[:2] or m[0] != m[1]]
    return binary_samples(r, d, d, NUMERIC, mixed, extra=[
        S(r.t([3, 4]), r.t([3, 1]), alpha=1.5), S(r.t([2, 3], I64, -5, 5), r.t([2, 3], I64, -5, 5), alpha=3),
        S(r.t([2, 3], B), r.t([2, 3], F32)), S(r.t([2, 3], BF16), r.t([2, 3], BF16), alpha=-2)])


@samples("mul.Tensor")
def mul_tensor(r, name):
    d = Dom()
    return binary_samples(r, d, d, ALL)


@samples("div.Tensor")
def div_tensor(r, name):
    return binary_samples(r, Dom(ilo=-6, ihi=6), NZ, ALL)


@samples("div.Tensor_mode")
def div_tensor_mode(r, name):
    lhs = Dom(-6, 6, ilo=-9, ihi=9)
    out = []
    for mode in (None, "trunc", "floor"):
        out += binary_samples(r, lhs, NZ, ALL, mixed=[m for m in MIXED if B not in m[:2]][:4],
                              kwargs={"rounding_mode": mode})
    return out


@samples("atan2.default")
def atan2(r, name):
    d = Dom(-3, 3)
    signed_zeros = S(T([0.0, -0.0, 0.0, -0.0, 1.0, -1.0]), T([0.0, 0.0, -0.0, -0.0, 0.0, -0.0]))
    return binary_samples(r, d, d, ALL, extra=[signed_zeros])


@samples("atan2.out")
def atan2_out(r, name):
    d = Dom(-3, 3)
    return [S(d.make(r, [3, 4], F32), d.make(r, [3, 4], F32), out=New([3, 4], F32)),
            S(d.make(r, [3, 1], F32), d.make(r, [1, 4], F32), out=New([3, 4], F32)),
            S(d.make(r, [2, 3], F64), d.make(r, [2, 3], F64), out=New([2, 3], F64)),
            S(d.make(r, [2, 3], F16), d.make(r, [2, 3], F16), out=New([2, 3], F16)),
            S(d.make(r, [2, 3], I64), d.make(r, [2, 3], I64), out=New([2, 3], F32)),
            S(d.make(r, [2, 3], F16), d.make(r, [2, 3], F32), out=New([2, 3], F32)),
            S(d.make(r, [], F32), d.make(r, [], F32), out=New([], F32))]


@samples("maximum.default", "minimum.default")
def max_min(r, name):
    return binary_samples(r, TIES, TIES, ALL, extra=[NAN_PAIR])


@samples("pow.Tensor_Tensor")
def pow_tt(r, name):
    base, exp = Dom(0.5, 2, ilo=0, ihi=3), Dom(-2, 2, ilo=0, ihi=3)
    mixed = [(I64, F32, [2, 3], [2, 3]), (F32, I64, [2, 3], [2, 3]), (F16, F32, [2, 3], []), (I32, I64, [3], [2, 3]),
             (BF16, F16, [2, 3], [2, 3]), (F32, F64, [2, 3], [])]
    return binary_samples(r, base, exp, ALL, mixed, extra=[
        S(T([0.0, 0.0, 2.0, -2.0, 1.0, -1.5]), T([0.0, 2.0, -1.0, 3.0, nan, 2.0])),
        S(T([-3, -2, -1, 2, 3, -1], I64), T([3, 2, 0, 1, 2, 5], I64))])  # negative integer bases


@samples("fmod.Tensor", "remainder.Tensor")
def fmod_remainder(r, name):
    lhs = Dom(-6, 6, ilo=-9, ihi=9)
    return binary_samples(r, lhs, NZ, ALL, mixed=[m for m in MIXED if B not in m[:2]])


@samples("bitwise_and.Tensor", "bitwise_or.Tensor", "bitwise_xor.Tensor")
def bitwise_tensor(r, name):
    d = Dom(-9, 9)
    mixed = [(I32, I64, [3], [2, 3]), (B, I64, [2, 3], [2, 3]), (I32, I64, [2, 3], []), (B, I32, [2, 3], [])]
    return binary_samples(r, d, d, INTS + [B], mixed)


@samples("logical_and.default", "logical_or.default", "logical_xor.default")
def logical(r, name):
    d = Dom(-1, 1, step=0.5)
    return binary_samples(r, d, d, ALL, extra=[NAN_PAIR])


@samples("eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor")
def compare_tensor(r, name):
    return binary_samples(r, TIES, TIES, ALL, extra=[NAN_PAIR])


# -- binary with a Scalar --


def scalar_samples(r, dom: Dom, dtypes, scalars, kwargs=None):
    """Each dtype with each scalar of a fitting kind; odd shapes with the first scalar."""
    kwargs = kwargs or {}
    out = []
    for dt in dtypes:
        for s in scalars:
            if isinstance(s, bool) and dt != B and dt not in INTS:
                continue
            if isinstance(s, float) and dt == B:
                continue
            out.append(S(dom.make(r, [2, 3], dt), s, **kwargs))
    s0 = scalars[0]
    main = dtypes[0]
    out += [S(dom.make(r, shape, main), s0, **kwargs) for shape in ([], [0, 3], [2, 1, 3])]
    return out


@samples("add.Scalar", "sub.Scalar")
def add_sub_scalar(r, name):
    dts = ALL if name.startswith("add") else NUMERIC
    out = scalar_samples(r, Dom(), dts, [2, 1.5, -0.25])
    return out + [S(r.t([2, 3]), 1.5, alpha=2), S(r.t([2, 3], I64), 3, alpha=-2), S(r.t([2, 3], F16), 0.5, alpha=1.5)]


@samples("mul.Scalar")
def mul_scalar(r, name):
    return scalar_samples(r, Dom(), ALL, [3, -1.5, True, 0])


@samples("div.Scalar")
def div_scalar(r, name):
    return scalar_samples(r, Dom(ilo=-6, ihi=6), ALL, [2, -1.5, 3, 0.25])


@samples("div.Scalar_mode")
def div_scalar_mode(r, name):
    out = []
    for mode in (None, "trunc", "floor"):
        out += scalar_samples(r, Dom(-6, 6, ilo=-9, ihi=9), NUMERIC, [-2, 1.5, 4], {"rounding_mode": mode})
    return out


@samples("fmod.Scalar", "remainder.Scalar")
def fmod_remainder_scalar(r, name):
    return scalar_samples(r, Dom(-6, 6, ilo=-9, ihi=9), NUMERIC, [3, -2, 1.5, -0.75])


@samples("bitwise_and.Scalar", "bitwise_or.Scalar", "bitwise_xor.Scalar")
def bitwise_scalar(r, name):
    return scalar_samples(r, Dom(-9, 9), INTS + [B], [5, -3, True, False])


@samples("eq.Scalar", "ne.Scalar", "lt.Scalar", "le.Scalar", "gt.Scalar", "ge.Scalar")
def compare_scalar(r, name):
    return scalar_samples(r, TIES, ALL, [1, 0.5, -1.5, True, 0]) + [S(T(NONFINITE), inf), S(T(NONFINITE), nan)]


@samples("pow.Tensor_Scalar")
def pow_tensor_scalar(r, name):
    out = [S(r.t([2, 3], dt, 0.5, 2), e) for dt in FLOATS for e in (2, 3, 0.5, -1, 0, -2.5)]
    out += [S(r.t([2, 3], dt, -3, 3), e) for dt in INTS for e in (2, 3, 0)]
    out += [S(r.t([2, 3], dt, 0, 3), 1.5) for dt in INTS]
    out += [S(r.t([2, 3], B), 2), S(r.t([2, 3], B), 0.5)]
    out += [S(r.t(shape, F32, 0.5, 2), 2) for shape in ([], [0, 3], [2, 1, 3])]
    out += [S(r.t([2, 3], F32, -2, 2), 2), S(r.t([2, 3], F32, -2, 2), 3)]  # negative bases, integral exponents
    return out


@samples("pow.Scalar")
def pow_scalar(r, name):
    out = [S(b, r.t([2, 3], dt, -2, 2)) for dt in FLOATS for b in (2.0, 0.5, 3)]
    out += [S(b, r.t([2, 3], dt, 0, 4)) for dt in INTS for b in (2, -3, 1.5)]
    out += [S(2, r.t([2, 3], B)), S(2.5, r.t([2, 3], B))]
    out += [S(2.0, r.t(shape, F32, -2, 2)) for shape in ([], [0, 3], [2, 1, 3])]
    return out


# -- where, clamp --


@samples("where.self")
def where(r, name):
    out = [S(r.t(c, B), r.t(x), r.t(y)) for c, x, y in
           (([3, 4], [3, 4], [3, 4]), ([3, 1], [1, 4], [3, 4]), ([3, 4], [], [3, 4]), ([2, 3], [2, 3], []),
            ([], [2, 3], [2, 3]), ([], [], []), ([0, 3], [0, 3], [1, 3]), ([2, 1, 3], [4, 1], [3]))]
    out += [S(r.t([2, 3], B), r.t([2, 3], dt), r.t([2, 3], dt)) for dt in ALL[1:]]
    out += [S(r.t([2, 3], B), r.t(sa, da), r.t(sb, db)) for da, db, sa, sb in MIXED]
    return out


@samples("clamp.default")
def clamp(r, name):
    out = []
    for dt in NUMERIC:
        x = lambda: r.t([2, 3], dt, -3, 3)  # noqa: E731
        out += [S(x(), -1, 1), S(x(), -0.5, 1.5), S(x(), None, 0), S(x(), 0.5, None)]
    out.append(S(r.t([2, 3], B), False, True))
    out += [S(r.t(shape), -0.5, 0.5) for shape in ([3, 4], [], [0, 3], [2, 1, 3])]
    out += [S(r.t([2, 3]), 1.0, -1.0), S(T(NONFINITE), -1.0, 1.0)]  # min > max gives max everywhere
    return out


@samples("clamp.Tensor")
def clamp_tensor(r, name):
    out = [S(r.t([3, 4], F32, -3, 3), r.t([3, 1], F32, -2, 0), r.t([1, 4], F32, 0, 2)),
           S(r.t([3, 4], F32, -3, 3), r.t([4], F32, -2, 0), None),
           S(r.t([3, 4], F32, -3, 3), None, r.t([3, 4], F32, 0, 2)),
           S(r.t([], F32, -3, 3), r.t([], F32, -2, 0), r.t([], F32, 0, 2)),
           S(r.t([0, 4], F32, -3, 3), r.t([1, 4], F32, -2, 0), r.t([4], F32, 0, 2)),
           S(r.t([2, 3], F32, -3, 3), r.t([], F32, 0.5, 1), r.t([2, 3], F32, -1, 0))]  # min > max
    out += [S(r.t([2, 3], dt, -3, 3), r.t([2, 3], dt, -2, 0), r.t([2, 3], dt, 0, 2)) for dt in ALL[1:]]
    out += [S(r.t([2, 3], I64, -3, 3), r.t([2, 3], F32, -2, 0), r.t([2, 3], F32, 0, 2)),
            S(r.t([2, 3], F16, -3, 3), r.t([], F32, -1, 0), r.t([], F32, 0, 1)),
            S(r.t([2, 3], I32, -3, 3), r.t([], I64, -1, 0), r.t([2, 3], I64, 0, 2))]
    return out


# -- reductions --


@samples("amax.default", "amin.default")
def amax_amin(r, name):
    x = lambda shape, dt=F32: r.t(shape, dt, -3, 3)  # noqa: E731
    out = [S(x([3, 4]), [1]), S(x([3, 4]), [0], True), S(x([3, 4])), S(x([3, 4]), [-1], True),
           S(x([2, 3, 4]), [0, 2]), S(x([2, 3, 4]), [-1, 0], True), S(x([])), S(x([]), [0]), S(x([0, 3]), [1]),
           S(x([2, 1, 3]), [1]), S(T([1.0, nan, 3.0, -inf]), [0])]
    out += [S(x([2, 3], dt), [1]) for dt in ALL[1:]]
    return out


@samples("any.default", "any.dim", "any.dims")
def any_(r, name):
    def x(shape, dt=F32):
        v = r.t(shape, I64, 0, 1) * r.t(shape, I64, 0, 1)  # mostly zeros: some rows all false
        return v.to(dt)
    overload = name.split(".")[1]
    if overload == "default":
        out = [S(x(s)) for s in ([3, 4], [2, 2], [], [0, 3], [1])]
        out.append(S(torch.zeros(2, 3)))
        return out + [S(x([2, 3], dt)) for dt in ALL[1:]] + [S(T([0.0, nan, 0.0]))]
    if overload == "dim":
        out = [S(x([3, 4]), 1), S(x([3, 4]), 0, True), S(x([2, 3, 4]), -1), S(x([]), 0), S(x([0, 3]), 1),
               S(x([3, 0]), 1, True)]
        return out + [S(x([3, 4], dt), 1) for dt in ALL[1:]]
    out = [S(x([3, 4]), [1]), S(x([3, 4]), [0, 1], True), S(x([2, 3, 4]), [0, -1]), S(x([3, 4]), None),
           S(x([3, 4]), []), S(x([]), None), S(x([0, 3]), [1])]
    return out + [S(x([3, 4], dt), [1]) for dt in ALL[1:]]


@samples("argmax.default", "argmin.default")
def argmax_argmin(r, name):
    d = r.distinct
    out = [S(d([3, 4])), S(d([3, 4]), 1), S(d([3, 4]), 0, True), S(d([2, 3, 4]), -1), S(d([])), S(d([]), 0),
           S(d([1, 5]), 0), S(T([1.0, 3.0, 3.0, -1.0, 3.0, 0.0]).reshape(2, 3), 1),  # ties: the first index
           S(T([[2.0, 2.0, 2.0], [-1.0, -1.0, -1.0]]))]
    out += [S(d([3, 4], dt), 1) for dt in NUMERIC[1:]]
    return out


@samples("max.dim", "min.dim")
def max_min_dim(r, name):
    d = r.distinct
    out = [S(d([3, 4]), 1), S(d([3, 4]), 0, True), S(d([2, 3, 4]), -1), S(d([2, 3, 4]), 1, True), S(d([]), 0),
           S(d([1, 5]), 0), S(d([0, 3]), 1), S(T([[1.0, 3.0, 3.0], [-1.0, 3.0, 0.0]]), 1),  # ties
           S(T([[1.0, nan, 3.0], [-1.0, 2.0, 0.0]]), 1)]
    out += [S(d([3, 4], dt), 1) for dt in NUMERIC[1:]]
    out.append(S(r.t([3, 4], B), 1))
    return out


@samples("mean.default")
def mean_default(r, name):
    out = [S(r.t(s)) for s in ([3, 4], [2, 3, 4], [], [1], [0, 3])]
    out += [S(r.t([3, 4], dt)) for dt in ALL[1:]]
    out += [S(r.t([3, 4], dt), dtype=F32) for dt in INTS] + [S(r.t([3, 4], F16), dtype=F32), S(r.t([3, 4]), dtype=F64)]
    return out


@samples("mean.dim")
def mean_dim(r, name):
    out = [S(r.t([3, 4]), [1]), S(r.t([3, 4]), [0], True), S(r.t([2, 3, 4]), [0, 2]), S(r.t([2, 3, 4]), [-1], True),
           S(r.t([3, 4]), None), S(r.t([]), []), S(r.t([0, 3]), [1]), S(r.t([3, 0]), [1])]
    out += [S(r.t([3, 4], dt), [1]) for dt in ALL[1:]]
    out += [S(r.t([3, 4], dt), [0], dtype=F32) for dt in INTS] + [S(r.t([3, 4], BF16), [1], True, dtype=F32)]
    return out


@samples("sum.dim_IntList")
def sum_dim(r, name):
    out = [S(r.t([3, 4]), [1]), S(r.t([3, 4]), [0], True), S(r.t([2, 3, 4]), [0, 2]), S(r.t([2, 3, 4]), [-1], True),
           S(r.t([3, 4]), None), S(r.t([3, 4]), []), S(r.t([]), None), S(r.t([0, 3]), [0]), S(r.t([0, 3]), [1])]
    out += [S(r.t([3, 4], dt, -5, 5), [1]) for dt in ALL[1:]]
    out += [S(r.t([3, 4], I32), [1], dtype=F32), S(r.t([3, 4], F16), [0], dtype=F32), S(r.t([3, 4]), [1], dtype=F64),
            S(r.t([3, 4], B), None, dtype=I32)]
    return out


@samples("prod.default", "prod.dim_int")
def prod(r, name):
    dim = name.endswith("dim_int")
    x = lambda s, dt=F32: r.t(s, dt, 0.5, 1.5) if dt.is_floating_point else r.t(s, dt, -2, 2)  # noqa: E731
    if not dim:
        out = [S(x(s)) for s in ([3, 4], [2, 3], [], [1], [0, 3])]
        out += [S(x([2, 3], dt)) for dt in ALL[1:]]
        return out + [S(x([2, 3], I32), dtype=F32), S(x([2, 3]), dtype=F64), S(x([2, 3], B), dtype=I32)]
    out = [S(x([3, 4]), 1), S(x([3, 4]), 0, True), S(x([2, 3, 4]), -1), S(x([]), 0), S(x([0, 3]), 1), S(x([3, 0]), 1)]
    out += [S(x([3, 4], dt), 1) for dt in ALL[1:]]
    return out + [S(x([3, 4], I32), 0, dtype=F32), S(x([3, 4], F16), 1, True, dtype=F32)]


@samples("var.correction")
def var_correction(r, name):
    out = [S(r.t([3, 4]), [1]), S(r.t([3, 4]), [0], keepdim=True), S(r.t([2, 3, 4]), [0, 2], correction=0),
           S(r.t([3, 4]), None), S(r.t([3, 4]), None, correction=2, keepdim=True), S(r.t([3, 4]), [1], correction=0.5),
           S(r.t([3, 4]), [-1], correction=0), S(r.t([2, 1, 3]), [1], correction=0), S(r.t([]), None, correction=0),
           S(r.t([0, 3]), [1])]
    out += [S(r.t([3, 4], dt), [1]) for dt in ALL[1:]]
    return out


@samples("var.dim")
def var_dim(r, name):
    out = [S(r.t([3, 4]), [1]), S(r.t([3, 4]), [0], False, True), S(r.t([2, 3, 4]), [0, 2], True),
           S(r.t([3, 4]), None, False), S(r.t([2, 3, 4]), [-1], False, True), S(r.t([0, 3]), [1])]
    out += [S(r.t([3, 4], dt), [1]) for dt in ALL[1:]]
    return out


@samples("cumsum.default")
def cumsum(r, name):
    out = [S(r.t([3, 4]), 1), S(r.t([3, 4]), 0), S(r.t([2, 3, 4]), -1), S(r.t([]), 0), S(r.t([0, 3]), 1),
           S(r.t([1, 5]), 0)]
    out += [S(r.t([3, 4], dt, -5, 5), 1) for dt in ALL[1:]]
    return out + [S(r.t([3, 4], I32), 1, dtype=F32), S(r.t([3, 4], F16), 0, dtype=F32), S(r.t([3, 4], B), 1, dtype=I32)]


@samples("sort.default")
def sort(r, name):
    d = r.distinct
    out = [S(d([3, 4])), S(d([3, 4]), 0), S(d([3, 4]), 1, True), S(d([2, 3, 4]), -2, True), S(d([])), S(d([0, 3])),
           S(d([5]), 0, True)]
    out += [S(d([2, 5], dt)) for dt in NUMERIC[1:]] + [S(d([2, 5], dt), -1, True) for dt in (F16, I64)]
    return out


@samples("topk.default")
def topk(r, name):
    d = r.distinct
    out = [S(d([3, 4]), 2), S(d([3, 4]), 1, 0), S(d([3, 4]), 3, -1, False), S(d([2, 3, 4]), 2, 1), S(d([5]), 5),
           S(d([3, 4]), 0), S(d([]), 1), S(d([0, 3]), 2)]
    out += [S(d([2, 5], dt), 3) for dt in NUMERIC[1:]] + [S(d([2, 5], dt), 2, -1, False) for dt in (BF16, I32)]
    return out


# -- matrix products --


@samples("mm.default")
def mm(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([3, 4]), x([4, 2])), S(x([1, 4]), x([4, 1])), S(x([3, 1]), x([1, 5])), S(x([3, 0]), x([0, 2])),
           S(x([0, 3]), x([3, 2]))]
    return out + [S(x([2, 3], dt), x([3, 4], dt)) for dt in ALL[1:]]


@samples("bmm.default")
def bmm(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([2, 3, 4]), x([2, 4, 2])), S(x([1, 1, 3]), x([1, 3, 2])), S(x([3, 2, 1]), x([3, 1, 2])),
           S(x([0, 2, 3]), x([0, 3, 2])), S(x([2, 3, 0]), x([2, 0, 2]))]
    return out + [S(x([2, 2, 3], dt), x([2, 3, 2], dt)) for dt in ALL[1:]]


@samples("addmm.default")
def addmm(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([2]), x([3, 4]), x([4, 2])), S(x([3, 2]), x([3, 4]), x([4, 2])), S(x([1, 2]), x([3, 4]), x([4, 2])),
           S(x([]), x([3, 4]), x([4, 2])), S(x([3, 1]), x([3, 4]), x([4, 2]), beta=0.5, alpha=2),
           S(T([nan, 1.0]), x([3, 4]), x([4, 2]), beta=0),  # beta=0 ignores self, even NaN
           S(x([2]), x([3, 0]), x([0, 2]), alpha=1.5)]
    out += [S(x([3], dt), x([2, 3], dt), x([3, 3], dt)) for dt in ALL[1:]]
    out += [S(x([3], I64), x([2, 3], I64), x([3, 3], I64), beta=2, alpha=-1)]
    return out


# -- convolution, pooling --


@samples("convolution.default")
def convolution(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -1, 1)  # noqa: E731

    def conv(xs, ws, bias=True, stride=1, padding=0, dilation=1, transposed=False, output_padding=0, groups=1,
             dt=F32):
        n = len(xs) - 2
        rep = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * n  # noqa: E731
        b = x([ws[1] * groups if transposed else ws[0]], dt) if bias else None
        return S(x(xs, dt), x(ws, dt), b, rep(stride), rep(padding), rep(dilation), transposed, rep(output_padding),
                 groups)

    out = [conv([1, 2, 5, 5], [3, 2, 3, 3]),
           conv([1, 2, 5, 5], [3, 2, 3, 3], bias=False, stride=2, padding=1),
           conv([1, 2, 5, 6], [2, 2, 2, 3], stride=[1, 2], padding=[1, 2], dilation=[2, 1]),
           conv([1, 4, 4, 4], [2, 2, 3, 3], groups=2, padding=1),
           conv([1, 4, 3, 3], [4, 1, 2, 2], groups=4),  # depthwise
           conv([2, 1, 4, 4], [2, 1, 2, 2], stride=2),
           conv([1, 3, 2, 2], [4, 3, 1, 1]),  # 1x1
           conv([0, 2, 5, 5], [3, 2, 3, 3], padding=1),  # empty batch
           conv([2, 2, 6], [3, 2, 3], stride=2, padding=1),  # 1d
           conv([1, 4, 7], [2, 2, 3], dilation=2, groups=2),
           conv([1, 2, 3, 3, 3], [2, 2, 2, 2, 2], padding=1),  # 3d
           conv([1, 1, 4, 4, 3], [2, 1, 3, 3, 2], stride=[2, 1, 1], padding=[1, 0, 0]),
           conv([1, 2, 3, 3], [2, 3, 3, 3], stride=2, padding=1, transposed=True, output_padding=1),  # transposed
           conv([1, 2, 3, 3], [2, 2, 2, 2], bias=False, transposed=True),
           conv([1, 4, 5], [4, 1, 3], stride=2, dilation=2, transposed=True, groups=2),
           conv([1, 2, 4], [2, 3, 3], stride=3, padding=1, transposed=True, output_padding=2),
           conv([1, 2, 2, 2, 2], [2, 1, 2, 2, 2], stride=2, transposed=True)]
    out += [conv([1, 2, 4, 4], [2, 2, 3, 3], padding=1, dt=dt) for dt in ALL[1:]]
    out += [conv([1, 2, 4, 4], [2, 2, 3, 3], stride=2, padding=1, transposed=True, output_padding=1, dt=dt)
            for dt in FLOATS[1:]]
    return out


@samples("avg_pool1d.default")
def avg_pool1d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 2, 7]), [2]), S(x([1, 2, 7]), [3], [2], [1]), S(x([1, 2, 7]), [3], [2], [1], False, False),
           S(x([1, 2, 7]), [2], [2], [0], True), S(x([1, 2, 7]), [3], [2], [1], True, False), S(x([2, 5]), [2], [1]),
           S(x([2, 1, 4]), [4]), S(x([0, 2, 5]), [2])]
    return out + [S(x([1, 2, 6], dt), [2]) for dt in ALL[1:]]


@samples("adaptive_avg_pool1d.default")
def adaptive_avg_pool1d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 2, 7]), [3]), S(x([1, 2, 7]), [1]), S(x([1, 2, 7]), [7]), S(x([2, 5]), [2]), S(x([1, 1, 3]), [5])]
    return out + [S(x([1, 2, 7], dt), [3]) for dt in ALL[1:]]


@samples("avg_pool2d.default")
def avg_pool2d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 2, 5, 5]), [2, 2]), S(x([1, 2, 5, 5]), [3, 3], [2, 2], [1, 1]),
           S(x([1, 2, 5, 5]), [3, 3], [2, 2], [1, 1], False, False),
           S(x([1, 2, 5, 5]), [2, 2], [2, 2], [0, 0], True), S(x([1, 2, 5, 5]), [3, 3], [2, 2], [1, 1], True, False),
           S(x([1, 2, 5, 5]), [2, 2], [1, 1], [1, 1], True, True, 3), S(x([1, 2, 6, 5]), [2, 3], [1, 2]),
           S(x([2, 4, 4]), [2, 2]), S(x([2, 1, 3, 3]), [3, 3], [1, 1], [1, 1]), S(x([1, 1, 4, 4]), [4, 4])]
    out += [S(x([1, 2, 4, 4], dt), [2, 2]) for dt in ALL[1:]]
    out += [S(x([1, 2, 4, 4], dt), [3, 3], [2, 2], [1, 1], True, False) for dt in (F16, BF16)]
    return out


@samples("avg_pool3d.default")
def avg_pool3d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 1, 4, 4, 4]), [2, 2, 2]), S(x([1, 1, 4, 4, 4]), [3, 3, 3], [2, 2, 2], [1, 1, 1]),
           S(x([1, 1, 4, 4, 4]), [3, 3, 3], [2, 2, 2], [1, 1, 1], False, False),
           S(x([1, 2, 3, 3, 3]), [2, 2, 2], [2, 2, 2], [0, 0, 0], True),
           S(x([1, 2, 3, 3, 3]), [2, 2, 2], [1, 1, 1], [1, 1, 1], False, True, 5),
           S(x([2, 3, 3, 3]), [2, 2, 2]), S(x([1, 1, 2, 4, 4]), [1, 2, 3], [1, 2, 1])]
    out += [S(x([1, 1, 3, 3, 3], dt), [2, 2, 2]) for dt in ALL[1:]]
    return out


@samples("max_pool2d_with_indices.default")
def max_pool2d(r, name):
    d = r.distinct
    out = [S(d([1, 2, 5, 5]), [2, 2]), S(d([1, 2, 5, 5]), [3, 3], [2, 2], [1, 1]),
           S(d([1, 2, 5, 5]), [2, 2], [1, 1], [0, 0], [2, 2]), S(d([1, 2, 5, 5]), [2, 2], [2, 2], [0, 0], [1, 1], True),
           S(d([1, 2, 5, 5]), [3, 3], [2, 2], [1, 1], [1, 1], True), S(d([1, 2, 6, 5]), [2, 3], [1, 2], [1, 0]),
           S(d([2, 4, 4]), [2, 2]), S(d([1, 1, 4, 4]), [4, 4]), S(T([nan, 1.0, 2.0, 3.0]).reshape(1, 1, 2, 2), [2, 2])]
    out += [S(d([1, 2, 4, 4], dt), [2, 2]) for dt in NUMERIC[1:]] + [S(r.t([1, 2, 4, 4], B), [2, 2])]
    out += [S(d([1, 2, 4, 4], dt), [3, 3], [2, 2], [1, 1]) for dt in (F16, BF16)]
    return out


@samples("max_pool3d_with_indices.default")
def max_pool3d(r, name):
    d = r.distinct
    out = [S(d([1, 1, 4, 4, 4]), [2, 2, 2]), S(d([1, 1, 4, 4, 4]), [3, 3, 3], [2, 2, 2], [1, 1, 1]),
           S(d([1, 2, 3, 3, 3]), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], True),
           S(d([1, 1, 4, 4, 4]), [2, 2, 2], [1, 1, 1], [0, 0, 0], [2, 2, 2]),
           S(d([2, 3, 3, 3]), [2, 2, 2]), S(d([1, 1, 2, 4, 4]), [1, 2, 3], [1, 2, 1])]
    out += [S(d([1, 1, 3, 3, 3], dt), [2, 2, 2]) for dt in NUMERIC[1:]] + [S(r.t([1, 1, 3, 3, 3], B), [2, 2, 2])]
    return out


@samples("_adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 2, 5, 5]), [3, 3]), S(x([1, 2, 5, 5]), [1, 1]), S(x([1, 2, 5, 5]), [5, 5]),
           S(x([1, 2, 4, 6]), [2, 4]), S(x([2, 4, 4]), [2, 2]), S(x([1, 1, 3, 7]), [2, 3]), S(x([1, 1, 2, 2]), [4, 3])]
    out += [S(x([1, 2, 5, 5], dt), [3, 3]) for dt in ALL[1:]]
    return out


@samples("_adaptive_avg_pool3d.default")
def adaptive_avg_pool3d(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([1, 1, 3, 4, 4]), [2, 2, 2]), S(x([1, 2, 2, 3, 3]), [1, 1, 1]), S(x([1, 1, 3, 4, 5]), [3, 2, 3]),
           S(x([2, 3, 3, 3]), [2, 1, 2])]
    out += [S(x([1, 1, 3, 3, 3], dt), [2, 2, 2]) for dt in ALL[1:]]
    return out


# -- normalization, softmax, activations --


@samples("native_layer_norm.default")
def layer_norm(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([2, 3, 4]), [4], x([4]), x([4]), 1e-5), S(x([2, 3, 4]), [3, 4], x([3, 4]), x([3, 4]), 1e-5),
           S(x([2, 3, 4]), [4], None, None, 1e-3), S(x([3, 4]), [4], x([4]), None, 1e-5),
           S(x([1, 5]), [5], None, x([5]), 1e-5), S(x([0, 4]), [4], x([4]), x([4]), 1e-5),
           S(x([2, 1]), [1], x([1]), x([1]), 1e-5)]
    out += [S(x([2, 4], dt), [4], x([4], dt), x([4], dt), 1e-5) for dt in ALL[1:]]
    return out


@samples("native_group_norm.default")
def group_norm(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([2, 4, 3]), x([4]), x([4]), 2, 4, 3, 2, 1e-5), S(x([1, 6, 2, 2]), x([6]), x([6]), 1, 6, 4, 3, 1e-5),
           S(x([2, 4, 3]), None, None, 2, 4, 3, 4, 1e-3), S(x([2, 4, 3]), x([4]), None, 2, 4, 3, 1, 1e-5),
           S(x([1, 4, 2, 2, 2]), None, x([4]), 1, 4, 8, 2, 1e-5), S(x([3, 2]), x([2]), x([2]), 3, 2, 1, 1, 1e-5)]
    out += [S(x([2, 4, 3], dt), x([4], dt), x([4], dt), 2, 4, 3, 2, 1e-5) for dt in ALL[1:]]
    return out


@samples("_native_batch_norm_legit_no_training.default")
def batch_norm_no_training(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    v = lambda s, dt=F32: r.t(s, dt, 0.5, 2)  # noqa: E731
    out = [S(x([2, 3, 4]), x([3]), x([3]), x([3]), v([3]), 0.1, 1e-5),
           S(x([2, 3, 2, 2]), x([3]), x([3]), x([3]), v([3]), 0.1, 1e-5),
           S(x([4, 3]), None, None, x([3]), v([3]), 0.1, 1e-3),
           S(x([1, 2, 2, 2, 2]), x([2]), None, x([2]), v([2]), 0.1, 1e-5),
           S(x([0, 3, 2]), x([3]), x([3]), x([3]), v([3]), 0.1, 1e-5)]
    out += [S(x([2, 3, 4], dt), x([3], dt), x([3], dt), x([3], dt), v([3], dt), 0.1, 1e-5) for dt in ALL[1:]]
    out += [S(x([2, 3, 4], dt), x([3]), x([3]), x([3]), v([3]), 0.1, 1e-5) for dt in (F16, BF16)]  # f32 statistics
    # Only the output is compared: save_mean and save_invstd are empty without training, and
    # eager and the graph disagree on their dtype for f16/bf16 input with f32 statistics.
    return [s.only(0) for s in out]


@samples("_native_batch_norm_legit.no_stats")
def batch_norm_no_stats(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -2, 2)  # noqa: E731
    out = [S(x([2, 3, 4]), x([3]), x([3]), True, 0.1, 1e-5), S(x([2, 3, 2, 2]), None, None, True, 0.1, 1e-5),
           S(x([4, 3]), x([3]), None, True, 0.1, 1e-3), S(x([1, 2, 2, 2, 2]), None, x([2]), True, 0.1, 1e-5)]
    out += [S(x([2, 3, 4], dt), x([3], dt), x([3], dt), True, 0.1, 1e-5) for dt in ALL[1:]]
    return out


@samples("_softmax.default", "_log_softmax.default")
def softmax(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -3, 3)  # noqa: E731
    out = [S(x([3, 4]), 1, False), S(x([3, 4]), 0, False), S(x([2, 3, 4]), -1, False), S(x([2, 3, 4]), 1, False),
           S(x([]), 0, False), S(x([0, 3]), 1, False), S(x([3, 1]), 1, False),
           S(T([[0.0, -inf, 1.0], [-inf, 2.0, -inf]]), 1, False), S(T([[100.0, 101.0, 99.0]]), 1, False)]
    out += [S(x([3, 4], dt), -1, False) for dt in ALL[1:]]
    return out


@samples("elu.default")
def elu(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -3, 3)  # noqa: E731
    out = [S(x([3, 4])), S(x([3, 4]), 0.5), S(x([2, 3]), 1.0, 1.0507, 1.5), S(x([])), S(x([0, 3])),
           S(x([2, 1, 3]), 2.0)]
    return out + [S(x([2, 3], dt)) for dt in ALL[1:]] + [S(T(NONFINITE))]


@samples("gelu.default")
def gelu(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -4, 4)  # noqa: E731
    out = []
    for approx in ("none", "tanh"):
        out += [S(x([3, 4]), approximate=approx), S(x([]), approximate=approx), S(x([0, 3]), approximate=approx),
                S(x([2, 1, 3]), approximate=approx)]
        out += [S(x([2, 3], dt), approximate=approx) for dt in ALL[1:]]
    return out + [S(x([2, 3]))]


@samples("hardtanh.default")
def hardtanh(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -3, 3)  # noqa: E731
    out = [S(x([3, 4])), S(x([3, 4]), -0.5, 0.5), S(x([2, 3]), 0.0, 6.0), S(x([])), S(x([0, 3])),
           S(x([2, 1, 3]), -2, 2)]
    return out + [S(x([2, 3], dt)) for dt in ALL[1:]] + [S(x([2, 3], dt), -2, 2) for dt in INTS]


@samples("leaky_relu.default")
def leaky_relu(r, name):
    x = lambda s, dt=F32: r.t(s, dt, -3, 3)  # noqa: E731
    out = [S(x([3, 4])), S(x([3, 4]), 0.2), S(x([2, 3]), -0.5), S(x([])), S(x([0, 3])), S(x([2, 1, 3]), 1.5)]
    return out + [S(x([2, 3], dt)) for dt in ALL[1:]]


# -- views and shape ops --


@samples("alias.default")
def alias(r, name):
    return [S(r.t(s)) for s in ([3, 4], [], [0, 3], [2, 1, 3])] + [S(r.t([2, 3], dt)) for dt in ALL[1:]]


@samples("clone.default")
def clone(r, name):
    out = [S(r.t(s)) for s in ([3, 4], [], [0, 3], [2, 1, 3])] + [S(r.t([2, 3], dt)) for dt in ALL[1:]]
    return out + [S(r.t([1, 2, 3, 3]), memory_format=torch.channels_last),
                  S(r.t([2, 3]), memory_format=torch.contiguous_format)]


@samples("as_strided.default")
def as_strided(r, name):
    out = [S(r.t([3, 4]), [2, 2], [1, 2], 1), S(r.t([3, 4]), [3, 3], [1, 1]), S(r.t([12]), [2, 3], [0, 2], 0),
           S(r.t([3, 4]), [4, 3], [1, 4], 0), S(r.t([2, 3]), [], [], 5), S(r.t([2, 3]), [0, 2], [1, 1], 0),
           S(r.t([2, 3, 4]), [2, 2, 2], [12, 4, 1], 5)]
    return out + [S(r.t([2, 3], dt), [2, 2], [2, 1], 1) for dt in ALL[1:]]


@samples("cat.default")
def cat(r, name):
    x = r.t
    out = [S([x([2, 3]), x([1, 3])]), S([x([2, 3]), x([2, 1]), x([2, 2])], 1), S([x([2, 3, 2]), x([2, 1, 2])], -2),
           S([x([3])]), S([x([0, 3]), x([2, 3])]), S([x([2, 3]), x([2, 0])], 1),
           S([x([2, 3]), torch.zeros(0)], 0),  # a legacy 1-d empty tensor is skipped
           S([x([1, 2]), x([1, 2]), x([1, 2]), x([1, 2])], 0)]
    out += [S([x([2, 3], dt), x([1, 3], dt)]) for dt in ALL[1:]]
    out += [S([x([2, 3], I64), x([1, 3], F32)]), S([x([2, 3], F16), x([2, 3], BF16)], 1),
            S([x([1, 3], B), x([1, 3], I32), x([1, 3], I64)]), S([x([2, 3], I32), x([2, 3], F16)], -1)]
    return out


@samples("constant_pad_nd.default")
def constant_pad_nd(r, name):
    x = r.t
    out = [S(x([3, 4]), [1, 2]), S(x([3, 4]), [1, 1, 0, 2], 2.5), S(x([3, 4]), [-1, 1]), S(x([3, 4]), [0, 0, -1, -2]),
           S(x([2, 2, 3]), [1, 0, 0, 1, 1, 1], -1.0), S(x([2, 3]), []), S(x([0, 3]), [1, 1]), S(x([2]), [2, 3]),
           S(x([3, 4]), [1, 1], -inf)]
    out += [S(x([2, 3], dt), [1, 2], 1) for dt in ALL[1:]]
    return out


@samples("copy.default")
def copy(r, name):
    x = r.t
    out = [S(x([3, 4]), x([3, 4])), S(x([3, 4]), x([4])), S(x([3, 4]), x([])), S(x([]), x([])), S(x([0, 3]), x([3])),
           S(x([2, 3]), x([2, 1]))]
    out += [S(x([2, 3], dt), x([2, 3], dt)) for dt in ALL[1:]]
    out += [S(x([2, 3], F32), x([2, 3], I64, -9, 9)), S(x([2, 3], I64), x([2, 3], F32, -3, 3)),
            S(x([2, 3], B), x([2, 3], F32)), S(x([2, 3], F16), x([2, 3], F64)), S(x([2, 3], I32), x([3], B)),
            S(x([2, 3], BF16), x([2, 3], F32))]
    return out


@samples("diagonal.default")
def diagonal(r, name):
    x = r.t
    out = [S(x([3, 4])), S(x([3, 4]), 1), S(x([3, 4]), -1), S(x([2, 3, 4]), 0, 1, 2), S(x([2, 3, 4]), 1, -1, 0),
           S(x([3, 4]), 5), S(x([0, 3])), S(x([4, 4]), 0, 1, 0)]
    return out + [S(x([3, 3], dt)) for dt in ALL[1:]]


@samples("expand.default")
def expand(r, name):
    x = r.t
    out = [S(x([3, 1]), [3, 4]), S(x([1]), [2, 3]), S(x([3, 1]), [-1, 4]), S(x([]), [2, 2]),
           S(x([2, 3, 1]), [2, 2, 3, 4]), S(x([1, 3]), [0, 3]), S(x([2, 3]), [2, 3]), S(x([3, 1]), [2, -1, 5])]
    return out + [S(x([3, 1], dt), [3, 4]) for dt in ALL[1:]]


@samples("flip.default")
def flip(r, name):
    x = r.t
    out = [S(x([3, 4]), [0]), S(x([3, 4]), [0, 1]), S(x([2, 3, 4]), [-1]), S(x([2, 3, 4]), [0, 2]), S(x([3, 4]), []),
           S(x([]), []), S(x([0, 3]), [1])]
    return out + [S(x([2, 3], dt), [1]) for dt in ALL[1:]]


@samples("permute.default")
def permute(r, name):
    x = r.t
    out = [S(x([3, 4]), [1, 0]), S(x([2, 3, 4]), [2, 0, 1]), S(x([2, 3, 4]), [-1, 0, -2]), S(x([]), []),
           S(x([0, 3]), [1, 0]), S(x([2, 1, 3]), [0, 1, 2])]
    return out + [S(x([2, 3], dt), [1, 0]) for dt in ALL[1:]]


@samples("repeat.default")
def repeat(r, name):
    x = r.t
    out = [S(x([2, 3]), [2, 1]), S(x([2, 3]), [1, 3]), S(x([2, 3]), [2, 1, 2]), S(x([]), [2, 3]), S(x([2, 3]), [0, 2]),
           S(x([3]), [2]), S(x([2, 1, 3]), [1, 1, 1])]
    return out + [S(x([2, 3], dt), [2, 2]) for dt in ALL[1:]]


@samples("select.int")
def select(r, name):
    x = r.t
    out = [S(x([3, 4]), 0, 1), S(x([3, 4]), 1, -1), S(x([2, 3, 4]), 2, 3), S(x([2, 3, 4]), -2, 0), S(x([4]), 0, 2),
           S(x([3, 0]), 0, 1)]
    return out + [S(x([2, 3], dt), 1, 1) for dt in ALL[1:]]


@samples("slice.Tensor")
def slice_(r, name):
    x = r.t
    out = [S(x([5, 4]), 0, 1, 3), S(x([5, 4]), 1, None, None, 2), S(x([5, 4]), 0, -3, -1), S(x([5, 4]), 0, 2, 100),
           S(x([5, 4]), 1, 3, 1), S(x([5, 4])), S(x([2, 6, 2]), -2, 1, None, 3), S(x([5, 4]), 0, -100, 2),
           S(x([0, 3]), 1, 0, 2)]
    return out + [S(x([4, 3], dt), 0, 1, 4, 2) for dt in ALL[1:]]


@samples("split_with_sizes.default")
def split_with_sizes(r, name):
    x = r.t
    out = [S(x([3, 4]), [1, 2]), S(x([3, 4]), [1, 3], 1), S(x([3, 4]), [2, 0, 2], -1), S(x([2, 3, 2]), [3], 1),
           S(x([0, 3]), [0], 0)]
    return out + [S(x([3, 2], dt), [2, 1]) for dt in ALL[1:]]


@samples("squeeze.dim")
def squeeze_dim(r, name):
    x = r.t
    out = [S(x([3, 1, 4]), 1), S(x([3, 4]), 0), S(x([1]), 0), S(x([2, 1]), -1), S(x([]), 0), S(x([1, 0]), 0)]
    return out + [S(x([1, 3], dt), 0) for dt in ALL[1:]]


@samples("squeeze.dims")
def squeeze_dims(r, name):
    x = r.t
    out = [S(x([1, 3, 1, 4]), [0, 2]), S(x([3, 1]), [0, 1]), S(x([1, 1]), [-1, -2]), S(x([2, 3]), []), S(x([]), [0]),
           S(x([1, 0, 1]), [2])]
    return out + [S(x([1, 3, 1], dt), [0, 2]) for dt in ALL[1:]]


@samples("unsqueeze.default")
def unsqueeze(r, name):
    x = r.t
    out = [S(x([3, 4]), 0), S(x([3, 4]), 2), S(x([3, 4]), -1), S(x([3, 4]), -2), S(x([]), 0), S(x([0, 3]), 1)]
    return out + [S(x([2, 3], dt), 1) for dt in ALL[1:]]


@samples("view.default")
def view(r, name):
    x = r.t
    out = [S(x([3, 4]), [12]), S(x([3, 4]), [-1, 2]), S(x([3, 4]), [2, 2, 3]), S(x([]), [1]), S(x([1]), []),
           S(x([0, 3]), [3, 0]), S(x([2, 3]), [2, 1, 3, 1]), S(x([0, 3]), [-1])]
    return out + [S(x([2, 3], dt), [3, 2]) for dt in ALL[1:]]


@samples("select_scatter.default")
def select_scatter(r, name):
    x = r.t
    out = [S(x([3, 4]), x([4]), 0, 1), S(x([3, 4]), x([3]), 1, -1), S(x([2, 3, 4]), x([2, 3]), 2, 0),
           S(x([4]), x([]), 0, 2), S(x([0, 3]), x([0]), 1, 2)]
    return out + [S(x([2, 3], dt), x([3], dt), 0, 1) for dt in ALL[1:]]


@samples("slice_scatter.default")
def slice_scatter(r, name):
    x = r.t
    out = [S(x([5, 4]), x([2, 4]), 0, 1, 3), S(x([5, 4]), x([5, 2]), 1, None, None, 2),
           S(x([5, 4]), x([2, 4]), 0, -3, -1),
           S(x([5, 4]), x([5, 4])), S(x([2, 6, 2]), x([2, 2, 2]), -2, 1, None, 3), S(x([5, 4]), x([0, 4]), 0, 3, 3)]
    return out + [S(x([4, 3], dt), x([2, 3], dt), 0, 1, 4, 2) for dt in ALL[1:]]


@samples("reflection_pad1d.default")
def pad1d(r, name):
    x = r.t
    out = [S(x([2, 5]), [2, 1]), S(x([1, 2, 4]), [1, 3]), S(x([1, 1, 3]), [0, 2]), S(x([2, 2, 4]), [0, 0])]
    return out + [S(x([2, 4], dt), [1, 2]) for dt in ALL[1:]]


@samples("reflection_pad2d.default", "replication_pad2d.default")
def pad2d(r, name):
    x = r.t
    out = [S(x([1, 2, 4, 4]), [1, 1, 1, 1]), S(x([1, 2, 4, 4]), [2, 1, 0, 3]), S(x([2, 3, 3]), [1, 2, 2, 1]),
           S(x([1, 1, 2, 5]), [3, 0, 1, 1])]
    return out + [S(x([1, 2, 3, 3], dt), [1, 1, 2, 0]) for dt in ALL[1:]]


@samples("reflection_pad3d.default", "replication_pad3d.default")
def pad3d(r, name):
    x = r.t
    out = [S(x([1, 1, 3, 3, 3]), [1, 1, 1, 1, 1, 1]), S(x([1, 2, 2, 3, 3]), [1, 2, 0, 1, 1, 0]),
           S(x([1, 3, 3, 3]), [2, 0, 1, 2, 0, 1])]
    return out + [S(x([1, 1, 2, 3, 3], dt), [1, 1, 1, 0, 1, 1]) for dt in ALL[1:]]


# -- dtype conversion, fill and creation --


@samples("_to_copy.default")
def to_copy(r, name):
    def values(dt):
        if dt == B:
            return T([True, False, True, True, False, False], B)
        if dt in INTS:
            return T([-3, 0, 1, 7, -1, 2], dt)
        return T([-2.75, -0.5, 0.0, 0.3, 1.5, 2.9999], dt)

    out = [S(values(a), dtype=b) for a in ALL for b in ALL if a != b]
    out += [S(values(F32)), S(r.t([0, 3]), dtype=F16), S(r.t([]), dtype=I64),
            S(T([65519.0, 1e-8, -1e5, inf, nan, 3.14159265]), dtype=F16),
            S(T([1.00390625, 1.01171875, 3.14159265, -1e39, 1e-40, nan]), dtype=BF16),
            S(r.t([1, 2, 2, 2]), memory_format=torch.channels_last)]
    return out


@samples("fill.Scalar")
def fill_scalar(r, name):
    out = [S(r.t([3, 4]), 2.5), S(r.t([3, 4], I64), 3), S(r.t([2, 3], B), True), S(r.t([]), -1.5), S(r.t([0, 3]), 1.0),
           S(r.t([2, 3], I32), 2.9), S(r.t([2, 3]), -inf)]
    return out + [S(r.t([2, 3], dt), 1) for dt in (F64, F16, BF16)]


@samples("full.default")
def full(r, name):
    return [S([2, 3], 1.5), S([2, 3], 3), S([2, 3], True), S([2, 3], 2.5, dtype=F16), S([2, 3], -1, dtype=BF16),
            S([], 7.0), S([0, 3], 1.0), S([2, 3], 5, dtype=I32), S([2, 3], -inf), S([2, 3], 2.75, dtype=I64),
            S([1, 2], 1, dtype=B), S([3], 0.1, dtype=F64)]


@samples("full_like.default")
def full_like(r, name):
    out = [S(r.t([3, 4]), 2.5), S(r.t([3, 4], I64), 3), S(r.t([2, 3], B), True), S(r.t([]), -1.5),
           S(r.t([0, 3]), 1.0), S(r.t([2, 3]), 4, dtype=I64), S(r.t([2, 3], I64), 0.5, dtype=F16),
           S(r.t([1, 2, 2, 2]), 1.0, memory_format=torch.channels_last)]
    return out + [S(r.t([2, 3], dt), 1) for dt in (F64, F16, BF16, I32)]


@samples("scalar_tensor.default")
def scalar_tensor(r, name):
    return [S(2.5), S(-3), S(True, dtype=B), S(1.5, dtype=F16), S(2, dtype=I64), S(7, dtype=I32), S(-0.75, dtype=BF16),
            S(0.1, dtype=F64), S(-inf)]


@samples("arange.start_step")
def arange(r, name):
    return [S(0, 5), S(0.0, 1.0, 0.25), S(5, 0, -1), S(-1.0, 1.0, 0.3), S(0, 5, dtype=F16), S(0, 0), S(1, 10, 3),
            S(0, 6, 2, dtype=I32), S(0.5, 3, dtype=BF16), S(0, 1, 0.1, dtype=F64), S(-3, 4, 2, dtype=F32)]


# -- indexing, gather and scatter --


@samples("index.Tensor")
def index(r, name):
    x = r.t
    out = [S(x([3, 4]), [r.idx([2], 3)]), S(x([3, 4]), [None, r.idx([5], 4)]),
           S(x([3, 4]), [r.idx([2, 1], 3), r.idx([3], 4)]),
           S(x([3, 4]), [r.idx([4], 3, lo=-3)]), S(x([2, 3, 4]), [r.idx([2], 2), None, r.idx([2], 4)]),
           S(x([2, 3, 4]), [None, r.idx([2, 2], 3), r.idx([2], 4)]), S(x([3, 4]), [r.idx([2], 3, I32)]),
           S(x([3, 4]), [r.idx([], 3)]), S(x([3, 4]), [r.idx([0], 3)]), S(x([0, 3]), [None, r.idx([2], 3)])]
    return out + [S(x([3, 2], dt), [r.idx([4], 3)]) for dt in ALL[1:]]


@samples("index_put.default")
def index_put(r, name):
    x = r.t
    out = [S(x([4, 3]), [r.uidx(2, 4)], x([2, 3])), S(x([4, 3]), [r.uidx(3, 4)], x([])),
           S(x([4, 3]), [None, r.uidx(2, 3)], x([4, 2])), S(x([4, 3]), [r.uidx(3, 4), r.uidx(3, 3)], x([3])),
           S(x([4, 3]), [r.idx([5], 4)], x([5, 3]), True), S(x([4, 3]), [r.idx([6], 4), r.idx([6], 3)], x([6]), True),
           S(x([4, 3]), [r.uidx(2, 4) - 4], x([3])), S(x([4, 3]), [r.uidx(2, 4, I32)], x([2, 3])),
           S(x([4, 3]), [r.idx([0], 4)], x([0, 3]))]
    out += [S(x([4, 3], dt), [r.uidx(2, 4)], x([2, 3], dt)) for dt in ALL[1:]]
    out += [S(x([4, 3], dt), [r.idx([5], 4)], x([5, 3], dt), True) for dt in (I64, F16)]
    return out


@samples("index_select.default")
def index_select(r, name):
    x = r.t
    out = [S(x([3, 4]), 0, r.idx([5], 3)), S(x([3, 4]), 1, r.idx([2], 4)), S(x([2, 3, 4]), -1, r.idx([3], 4)),
           S(x([3, 4]), 0, r.idx([], 3)), S(x([3, 4]), 1, r.idx([3], 4, I32)), S(x([3, 4]), 0, r.idx([0], 3)),
           S(x([]), 0, torch.zeros(1, dtype=I64))]
    return out + [S(x([3, 2], dt), 0, r.idx([4], 3)) for dt in ALL[1:]]


@samples("gather.default")
def gather(r, name):
    x = r.t
    out = [S(x([3, 4]), 1, r.idx([3, 2], 4)), S(x([3, 4]), 0, r.idx([2, 4], 3)), S(x([3, 4]), 1, r.idx([2, 2], 4)),
           S(x([2, 3, 4]), -1, r.idx([2, 3, 5], 4)), S(x([3, 4]), 0, r.idx([0, 4], 3)),
           S(x([]), 0, torch.zeros((), dtype=I64))]
    return out + [S(x([3, 4], dt), 1, r.idx([3, 2], 4)) for dt in ALL[1:]]


@samples("scatter.src", "scatter.value")
def scatter(r, name):
    x = r.t
    src = name.endswith("src")
    val = lambda s, dt=F32: x(s, dt) if src else 1.5  # noqa: E731
    out = [S(x([3, 4]), 1, r.rows_uidx(3, 2, 4), val([3, 2])),
           S(x([3, 4]), 0, r.rows_uidx(4, 3, 3).T.contiguous(), val([3, 4])),
           S(x([3, 4]), 1, r.rows_uidx(2, 3, 4), val([3, 4])),  # index smaller than self and src
           S(x([2, 3, 4]), -1, r.rows_uidx(6, 2, 4).reshape(2, 3, 2), val([2, 3, 2])),
           S(x([3, 4]), 1, r.idx([3, 0], 4), val([3, 0]))]
    out += [S(x([3, 4], dt), 1, r.rows_uidx(3, 2, 4), val([3, 2], dt) if src else 2) for dt in ALL[1:]]
    if not src:
        out += [S(x([3, 4]), 1, r.rows_uidx(3, 2, 4), -2), S(x([3, 4], I64), 1, r.rows_uidx(3, 2, 4), 7),
                S(x([3, 4], B), 1, r.rows_uidx(3, 2, 4), True)]
    return out


@samples("scatter_add.default")
def scatter_add(r, name):
    x = r.t
    out = [S(x([3, 4]), 1, r.idx([3, 5], 4), x([3, 5])), S(x([3, 4]), 0, r.idx([4, 4], 3), x([4, 4])),
           S(x([3, 4]), 1, r.idx([2, 3], 4), x([3, 4])), S(x([2, 3, 4]), -1, r.idx([2, 3, 2], 4), x([2, 3, 2])),
           S(x([3, 4]), 1, r.idx([3, 0], 4), x([3, 0]))]
    return out + [S(x([3, 4], dt, -5, 5), 1, r.idx([3, 3], 4), x([3, 3], dt, -5, 5)) for dt in ALL[1:]]


@samples("scatter_reduce.two")
def scatter_reduce(r, name):
    x = r.t
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            out.append(S(x([3, 4]), 1, r.idx([3, 5], 4), x([3, 5]), reduce, include_self=include_self))
        out.append(S(x([3, 4], I64, -5, 5), 0, r.idx([4, 4], 3), x([4, 4], I64, -5, 5), reduce, include_self=False))
        out.append(S(x([3, 4], F16), 1, r.idx([2, 3], 4), x([3, 4], F16), reduce))
    out += [S(x([3, 4], dt), 1, r.idx([3, 3], 4), x([3, 3], dt), "sum") for dt in (F64, BF16, I32)]
    out += [S(x([2, 3, 4]), -1, r.idx([2, 3, 2], 4), x([2, 3, 2]), "amax"),
            S(x([3, 4]), 1, r.idx([3, 0], 4), x([3, 0]), "sum")]
    return out


@samples("masked_scatter.default")
def masked_scatter(r, name):
    x = r.t
    out = [S(x([3, 4]), x([3, 4], B), x([3, 4])), S(x([3, 4]), x([3, 1], B), x([12])),
           S(x([3, 4]), x([4], B), x([2, 7])), S(x([3, 4]), torch.zeros(3, 4, dtype=B), x([2])),
           S(x([]), x([], B), x([2])), S(x([0, 3]), x([1, 3], B), x([3]))]
    return out + [S(x([2, 3], dt), x([2, 3], B), x([2, 3], dt)) for dt in ALL[1:]]


@samples("embedding.default")
def embedding(r, name):
    w = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(w([5, 3]), r.idx([2, 3], 5)), S(w([5, 3]), r.idx([4], 5)), S(w([5, 3]), r.idx([], 5)),
           S(w([5, 3]), r.idx([2, 3], 5), 0), S(w([5, 3]), r.idx([3], 5, I32)), S(w([5, 3]), r.idx([0], 5)),
           S(w([1, 4]), torch.zeros(2, 2, dtype=I64))]
    return out + [S(w([4, 2], dt), r.idx([3], 4)) for dt in ALL[1:]]


@samples("_embedding_bag.default")
def embedding_bag(r, name):
    w = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = []
    for mode in (0, 1, 2):
        out += [S(w([5, 3]), r.idx([6], 5), T([0, 2, 5], I64), False, mode),
                S(w([5, 3]), r.idx([5], 5), T([0, 2, 2], I64), False, mode),  # an empty bag
                S(w([5, 3]), r.idx([6], 5), T([0, 3, 6], I64), False, mode, False, None, True)]  # include_last_offset
    out += [S(w([5, 3]), r.idx([6], 5), T([0, 2, 5], I64), False, 0, False, r.t([6]), False),
            S(w([5, 3]), r.idx([6], 5), T([0, 4], I64), False, 0, False, None, False, 1),  # padding_idx
            S(w([5, 3]), r.idx([6], 5, I32), T([0, 2, 5], I32), False, 1)]
    out += [S(w([4, 3], dt), r.idx([5], 4), T([0, 2], I64), False, 1) for dt in ALL[1:]]
    # Only the bags are compared: offset2bag, bag_size and max_indices are scratch results whose
    # values (even shapes) depend on the CPU kernel's path, e.g. offset2bag is empty for mode sum.
    return [s.only(0) for s in out]


@samples("grid_sampler_2d.default")
def grid_sampler(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    g = lambda s, dt=F32: r.t(s, dt, -1.2, 1.2)  # noqa: E731
    out = [S(x([1, 2, 4, 4]), g([1, 3, 3, 2]), interp, pad, align)
           for interp in (0, 1, 2) for pad in (0, 1, 2) for align in (False, True)]
    out += [S(x([2, 1, 3, 3]), g([2, 2, 4, 2]), 0, 0, False), S(x([1, 1, 3, 5]), g([1, 1, 2, 2]), 2, 1, True)]
    out += [S(x([1, 2, 3, 3], dt), g([1, 2, 2, 2], dt), 0, 0, False) for dt in ALL[1:]]
    return out


@samples("upsample_bilinear2d.vec")
def upsample_bilinear2d(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(x([1, 2, 3, 3]), [4, 6], False, None), S(x([1, 2, 3, 3]), [4, 6], True, None),
           S(x([1, 2, 3, 3]), None, False, [2.0, 1.5]), S(x([1, 2, 3, 3]), None, True, [2.0, 2.0]),
           S(x([1, 1, 5, 5]), [2, 3], False, None), S(x([1, 1, 5, 5]), [2, 3], True, None),
           S(x([2, 1, 1, 2]), [3, 3], False, None), S(x([1, 1, 4, 4]), None, False, [0.5, 0.75])]
    out += [S(x([1, 2, 3, 3], dt), [5, 4], False, None) for dt in ALL[1:]]
    return out


@samples("upsample_nearest2d.vec")
def upsample_nearest2d(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(x([1, 2, 3, 3]), [6, 6], None), S(x([1, 2, 3, 3]), [4, 5], None), S(x([1, 2, 3, 3]), None, [2.0, 1.5]),
           S(x([1, 1, 5, 5]), [2, 3], None), S(x([2, 1, 1, 2]), [3, 3], None), S(x([1, 1, 4, 4]), None, [0.5, 0.75])]
    out += [S(x([1, 2, 3, 3], dt), [6, 5], None) for dt in ALL[1:]]
    return out


@samples("_cdist_forward.default")
def cdist(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(x([3, 4]), x([5, 4]), p, None) for p in (2.0, 1.0, 0.0, inf, 3.0, 0.5)]
    out += [S(x([2, 3, 4]), x([2, 2, 4]), 2.0, mode) for mode in (None, 1, 2)]
    out += [S(x([1, 3]), x([4, 3]), 2.0, None), S(x([0, 3]), x([2, 3]), 2.0, None), S(x([3, 2]), x([3, 2]), 1.0, None)]
    out += [S(x([3, 4], dt), x([2, 4], dt), 2.0, None) for dt in ALL[1:]]
    return out


@samples("_pdist_forward.default")
def pdist(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(x([4, 3]), p) for p in (2.0, 1.0, 0.0, inf, 3.0)]
    return out + [S(x([2, 5]), 2.0), S(x([1, 3]), 2.0), S(x([5, 1]), 2.0)] + [S(x([4, 3], dt), 2.0) for dt in ALL[1:]]


@samples("col2im.default")
def col2im(r, name):
    x = lambda s, dt=F32: r.t(s, dt)  # noqa: E731
    out = [S(x([1, 4, 4]), [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
           S(x([1, 8, 4]), [4, 4], [2, 2], [1, 1], [0, 0], [2, 2]),
           S(x([1, 4, 9]), [4, 4], [2, 2], [1, 1], [1, 1], [2, 2]),
           S(x([1, 4, 4]), [4, 4], [2, 2], [2, 2], [0, 0], [1, 1]),
           S(x([1, 6, 8]), [3, 4], [1, 3], [1, 1], [0, 1], [2, 1]),
           S(x([4, 6]), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])]  # unbatched
    return out + [S(x([1, 4, 4], dt), [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]) for dt in ALL[1:]]


# ---- export ---------------------------------------------------------------------------------


def bundle_name(op) -> str:
    packet, overload = str(op).split(".")[1:]
    return f"{packet}_{overload}.fxt"


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _same(a, b) -> bool:
    """Bitwise equality of eager results (NaN payloads included)."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return a == b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == B:
        return torch.equal(a, b)
    flat = lambda t: torch.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1)).view(torch.uint8)  # noqa: E731
    return torch.equal(flat(a), flat(b))


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:300]


def module_and_args(op, samples):
    """The OpModule for ``samples`` and its arguments (fresh copies of the samples' tensors)."""
    templates, args = [], []
    for s in samples:
        templates.append(s.template(len(args)))
        args += [t.clone() for t in s.tensors()]
    return OpModule(op, templates), tuple(args)


def run_eager(op, samples) -> list:
    model, args = module_and_args(op, samples)
    with torch.no_grad():
        return list(model(*args))


def probe(op, sample) -> tuple:
    """Runs the sample eagerly twice: (None, nondeterministic?) or (reason it fails, False)."""
    try:
        first = run_eager(op, [sample])
        second = run_eager(op, [sample])
    except Exception as e:  # noqa: BLE001 - any eager failure means PyTorch does not support the sample
        return f"eager: {_first_line(e)}", False
    if not all(isinstance(t, torch.Tensor) for t in first):
        return "eager: returns a non-tensor", False
    return None, not all(_same(a, b) for a, b in zip(first, second))


def capture_error(op, kept) -> str | None:
    from fxhlo.export import capture, trace_dict

    model, args = module_and_args(op, kept)
    try:
        trace_dict(capture(model.eval(), args), "probe", ROOT)
    except Exception as e:  # noqa: BLE001
        return _first_line(e)
    return None


def export(op, samples, path: Path) -> Path:
    model, args = module_and_args(op, samples)
    fxhlo.export(model, args, path, reference=True, source_root=ROOT)
    check_portable(path)
    return path


def check_outputs(bundle: Path):
    """Fails when an eager result does not have the dtype and shape the graph gives it."""
    from safetensors.torch import load_file

    trace = json.loads((bundle / "graph.json").read_text())
    metas = {i["name"]: i["meta"] for i in trace["inputs"]}
    metas.update({n["name"]: n["meta"][0] for n in trace["nodes"] if len(n["meta"]) == 1})
    reference = load_file(bundle / "reference.safetensors")
    for i, out in enumerate(trace["outputs"]):
        meta, ref = metas[out["tensor"]], reference[f"output.{i}"]
        if (meta["dtype"], meta["sizes"]) != (dtype_name(ref.dtype), list(ref.shape)):
            raise RuntimeError(f"{bundle}: output {i} is {dtype_name(ref.dtype)}{list(ref.shape)} in eager but "
                             f"{meta['dtype']}{meta['sizes']} in the graph")


def targets_of(bundle: Path) -> list:
    trace = json.loads((bundle / "graph.json").read_text())
    return sorted({n["target"] for n in trace["nodes"] if n["target"] != "getitem"})


def check_portable(bundle: Path):
    trace = json.loads((bundle / "graph.json").read_text())
    for node in trace["nodes"]:
        file = node.get("source", {}).get("file", "")
        if file.startswith("/") or file.startswith("..") or "site-packages" in file:
            raise RuntimeError(f"{bundle}: node {node['name']} has the non-portable source file {file!r}")


def compare_compiled(op, kept) -> str | None:
    """Runs the captured (decomposed) graph and compares it with eager; a note when they differ."""
    from fxhlo.export import capture

    model, args = module_and_args(op, kept)
    cap = capture(model.eval(), args)
    with torch.no_grad():
        eager = _flat(model(*args))
    notes = []
    for i, (c, e) in enumerate(zip(cap.outputs, eager)):
        if c.dtype != e.dtype or c.shape != e.shape:
            notes.append(f"output {i}: compiled {c.dtype}{list(c.shape)} vs eager {e.dtype}{list(e.shape)}")
        elif not _same(c.contiguous(), e.contiguous()):
            if c.dtype.is_floating_point:
                diff = (c.double() - e.double()).abs().nan_to_num(nan=inf).max().item() if c.numel() else 0.0
                notes.append(f"output {i}: max abs diff {diff:.3g}")
            else:
                notes.append(f"output {i}: {int((c != e).sum())} elements differ")
    return "; ".join(notes) or None


def generate(op, out_dir: Path, check_compiled=False) -> dict:
    """Writes the op's bundle; returns its manifest entry."""
    name = str(op)
    entry = {"op": name, "bundle": None, "dtypes": [], "samples": 0, "targets": [], "excluded": exclusion(op),
             "dropped": [], "cases": []}
    if entry["excluded"]:
        return entry
    short = name.removeprefix("aten.")
    if short not in BUILDERS:
        entry["excluded"] = NO_SAMPLES
        return entry
    kept = []
    for s in BUILDERS[short](Rand(name), short):
        reason, nondet = probe(op, s)
        if reason:
            entry["dropped"].append(f"{s.describe()}: {reason}")
        elif nondet:
            entry["dropped"].append(f"{s.describe()}: eager output is nondeterministic")
        else:
            kept.append(s)
    if not kept:
        entry["excluded"] = "no sample runs eagerly: " + "; ".join(entry["dropped"])
        return entry
    path = out_dir / bundle_name(op)
    try:
        export(op, kept, path)
    except Exception as e:  # noqa: BLE001
        # Find the samples the capture refuses, one by one.
        still = []
        for s in kept:
            err = capture_error(op, [s])
            if err:
                entry["dropped"].append(f"{s.describe()}: capture: {err}")
            else:
                still.append(s)
        if not still or len(still) == len(kept):
            entry["excluded"] = f"cannot be captured: {_first_line(e)}"
            return entry
        kept = still
        export(op, kept, path)
    outputs = 0
    for s in kept:
        n = len(run_eager(op, [s]))
        entry["cases"].append({"sample": s.describe(), "outputs": [outputs, outputs + n]})
        outputs += n
    dtypes = set()
    for s in kept:
        if s.tensors():
            dtypes.update(dtype_name(t.dtype) for t in s.tensors())
        else:
            dtypes.update(dtype_name(t.dtype) for t in run_eager(op, [s]))
    check_outputs(path)
    entry.update(bundle=path.name, dtypes=sorted(dtypes), samples=len(kept), targets=targets_of(path))
    if check_compiled:
        entry["compiled_vs_eager"] = compare_compiled(op, kept)
    return entry


def _work(job):
    names, out_dir, check_compiled = job
    torch.set_num_threads(1)
    by_name = {str(op): op for op in core_ops()}
    results = []
    for n in names:
        t = time.perf_counter()
        entry = generate(by_name[n], Path(out_dir), check_compiled)
        results.append((entry, time.perf_counter() - t))
    return results


def write_manifest(entries, out_dir: Path):
    text = json.dumps(sorted(entries, key=lambda e: e["op"]), indent=1) + "\n"
    (out_dir / MANIFEST).write_text(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OPS_DIR, help="folder to write the bundles and manifest.json into")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (the output does not depend on it)")
    parser.add_argument("--check-compiled", action="store_true",
                        help="also run each captured graph and note where it differs from eager (not written)")
    parser.add_argument("ops", nargs="*", metavar="OP", help="only these ops, e.g. aten.add.Tensor (no manifest)")
    opts = parser.parse_args(argv)
    all_ops = [str(op) for op in core_ops()]
    unknown = [o for o in opts.ops if o not in all_ops]
    if unknown:
        parser.error(f"not core ops of this torch: {', '.join(unknown)}")
    names = opts.ops or all_ops
    out_dir = opts.out
    out_dir.mkdir(parents=True, exist_ok=True)
    if not opts.ops and (out_dir / MANIFEST).is_file():
        # A full run owns an op folder (one with a manifest): bundles of ops that no longer get
        # one go.
        import shutil
        for p in out_dir.glob("*.fxt"):
            shutil.rmtree(p)
    start = time.perf_counter()
    jobs = max(1, min(opts.jobs, len(names)))
    chunks = [(names[i::jobs], str(out_dir), opts.check_compiled) for i in range(jobs)]
    if jobs == 1:
        results = _work(chunks[0])
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = [r for chunk in pool.map(_work, chunks) for r in chunk]
    entries = [e for e, _ in results]
    for entry, seconds in sorted(results, key=lambda x: x[0]["op"]):
        status = entry["bundle"] or f"excluded: {entry['excluded']}"
        extra = [t for t in entry["targets"] if t != entry["op"]]
        line = f"{entry['op']}: {status}"
        if entry["bundle"]:
            line += f" ({entry['samples']} samples, {' '.join(entry['dtypes'])}; {seconds:.1f}s)"
        if extra:
            line += f"\n    graph: {' '.join(entry['targets'])}"
        for d in entry["dropped"]:
            line += f"\n    dropped {d}"
        if entry.get("compiled_vs_eager"):
            line += f"\n    compiled vs eager: {entry['compiled_vs_eager']}"
        print(line)
    for e in entries:
        e.pop("compiled_vs_eager", None)
    if not opts.ops:
        write_manifest(entries, out_dir)
    bundles = sum(1 for e in entries if e["bundle"])
    reasons = {}
    for e in entries:
        if e["excluded"]:
            reasons[e["excluded"]] = reasons.get(e["excluded"], 0) + 1
    print(f"\n{len(entries)} core ops: {bundles} bundles, {len(entries) - bundles} excluded")
    for reason, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  {n:3d}  {reason}")
    size = lambda d: sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 1e6  # noqa: E731
    where = f"{size(out_dir):.2f} MB written"
    if out_dir.resolve() == OPS_DIR.resolve():
        where += f"; testsuite/fixtures holds {size(OPS_DIR.parent):.2f} MB"
    print(f"{where}; generated in {time.perf_counter() - start:.0f}s")
    missing = [e["op"] for e in entries if e["excluded"] == NO_SAMPLES]
    if missing:
        print(f"warning: no samples for {', '.join(missing)}", file=sys.stderr)


if __name__ == "__main__":
    main()

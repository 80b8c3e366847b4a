"""Orthogonal polynomials (``special_chebyshev_polynomial_{t,u,v,w}``, their shifted forms,
``special_hermite_polynomial_{h,he}``, ``special_laguerre_polynomial_l``,
``special_legendre_polynomial_p``) written in ATen ops fxhlo lowers: the special cases, the
trigonometric shortcuts and the three-term recurrences eager PyTorch evaluates, each recurrence a
``while_loop`` over the degree."""

from __future__ import annotations

import torch

from .._compat import while_loop


# Ports of aten/src/ATen/native/Math.h (``chebyshev_polynomial_t_forward``, ...), operation for
# operation in the same order, so that float32 results round as eager's do. Every case is
# evaluated on the whole tensor and one is chosen with `torch.where`, from the last to the first
# (the first of Math.h's `if`s that holds wins). Math.h's loops run per element; here one loop
# runs to the largest degree that takes the recurrence, each element's state kept once the loop
# passes its own degree. Eager's CPU kernels are built with FMA contraction: `a * b - c` in a
# recurrence rounds once (see `_fma`), which near a root of the polynomial decides most digits.


def _operands(x, n):
    """``x`` and ``n`` as eager's binary float ops see them: in the common dtype (integers and
    bool give the default float dtype; a Python number is a wrapped scalar, so it does not
    decide the dtype), broadcast."""
    dtype = torch.result_type(x, n)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    if not isinstance(x, torch.Tensor):
        x = torch.full_like(n, x, dtype=dtype)
    if not isinstance(n, torch.Tensor):
        n = torch.full_like(x, n, dtype=dtype)
    return torch.broadcast_tensors(x.to(dtype), n.to(dtype))


def _elementwise(fn):
    """The rule for ``fn(x, n)``, written for 1-d operands: the loop's carried state must keep
    its strides through the body, which an expanded or empty n-d operand does not."""

    def rule(x, n):
        x, n = _operands(x, n)
        flat = [t.reshape(-1).clone(memory_format=torch.contiguous_format) for t in (x, n)]
        return fn(*flat).reshape(x.shape)

    rule.__name__ = fn.__name__
    rule.__doc__ = fn.__doc__
    return rule


def _degree(n):
    """``static_cast<int64_t>(n)``: truncated toward zero; NaN, inf and values past int64 give
    INT64_MIN on x86, a negative degree (so the result 0), as ``-1`` here does."""
    ok = n.abs() < 2.0**63
    return torch.where(ok, n, -1.0).to(torch.int64)


def _fma(a, b, c):
    """``a * b + c`` rounded once, as the contracted kernel computes it: float32 in double (the
    product is exact there); double as written (XLA fuses it into an FMA as the kernel does)."""
    if a.dtype == torch.float32:
        return (a.double() * b.double() + c.double()).float()
    return a * b + c


def _libm(fn, v):
    """``fn(v)`` as the C library's float function: float32 computed in double and rounded
    once (glibc's float functions are correctly rounded or nearly; XLA's are a few ulp off)."""
    if v.dtype == torch.float32:
        return fn(v.double()).float()
    return fn(v)


def _full(x, v):
    return torch.full_like(x, v)


def _as(x, k):
    """The integer ``k`` (a tensor) converted to x's dtype, as C converts it in ``k * p``."""
    return k.to(x.dtype)


def _recurrence(x, first, last, p, q, step, stride=1):
    """Math.h's ``for (k = first; k <= last && !isnan(q); k += stride) { r = step(k, p, q);
    p = q; q = r; }`` on every element at once, ``last`` its own (int64; below ``first`` runs
    none); returns q (eager returns r, which is q after the first step). The loop stops when no
    element still runs with a number q: NaN stays NaN, so stopping it changes no value."""

    def cond_fn(k, p, q):
        return ((k <= last) & ~torch.isnan(q)).any()

    def body_fn(k, p, q):
        r = step(k, p, q)
        run = k <= last
        return k + stride, torch.where(run, q, p), torch.where(run, r, q)

    k = torch.full((), first, dtype=torch.int64, device=x.device)
    return while_loop(cond_fn, body_fn, (k, p, q))[2]


def _cases(default, *cases):
    """Math.h's chain of ``if (cond) return value;`` over ``default``: the first case that holds
    wins."""
    out = default
    for cond, value in reversed(cases):
        out = torch.where(cond, value, out)
    return out


def _signed(cond, value):
    """``value`` where ``cond``, else ``-value``."""
    return torch.where(cond, value, -value)


def _first_kind_step(two_y):
    # r = (y + y) * q - p
    return lambda k, p, q: _fma(two_y, q, -p)


# ---- Chebyshev polynomials of the four kinds --------------------------------------------------


def _chebyshev(y, nd, q1, trig, trig_min, edge):
    """The shared tail of the (shifted) Chebyshev functions: after the special cases ``edge``
    (a list of (cond, value)), the trigonometric form for ``n > trig_min`` and ``|y| < 1``, then
    ``n == 0``, ``n == 1`` (``q1``) and the recurrence from ``p = 1, q = q1``."""
    one = torch.ones_like(y)
    use_trig = (nd > trig_min) & (y.abs() < 1.0)
    rest = ~use_trig & (nd >= 2)
    for cond, _ in edge:
        rest = rest & ~cond
    last = torch.where(rest, nd, torch.zeros_like(nd))
    r = _recurrence(y, 2, last, one, q1, _first_kind_step(y + y))
    return _cases(r, (nd < 0, torch.zeros_like(y)), *edge, (use_trig, trig), (nd == 0, one), (nd == 1, q1))


# glibc's acosf (fdlibm's e_acosf.c), the one eager's float kernels call on Linux: its
# rounding, times n in cos(n acos(x)), is most of the last digits (float32 only; double's acos
# is within an ulp of eager's, far below the tolerance).
_ACOSF_P = (1.6666667163e-01, -3.2556581497e-01, 2.0121252537e-01, -4.0055535734e-02, 7.9153501429e-04,
            3.4793309169e-05)
_ACOSF_Q = (-2.4033949375e+00, 2.0209457874e+00, -6.8828397989e-01, 7.7038154006e-02)
_PIO2_HI, _PIO2_LO, _PI_F = 1.5707962513e+00, 7.5497894159e-08, 3.1415925026e+00
_ACOS_TIE = float.fromhex("0x1.6a09e667f3bcdp-26")  # acos(1 - 2^-52), correctly rounded


def _rounded(p):
    """The float product ``p`` rounded on its own before the sum it feeds: glibc's acosf has no
    FMA, but XLA's CPU code fuses a product and a sum into one; the NaN test between them (a
    no-op but for NaN payloads) keeps them apart."""
    return torch.where(torch.isnan(p), _full(p, float("nan")), p)


def _acosf_ratio(z):
    # p / q for p = z (p0 + z (p1 + ... + z p5)), q = 1 + z (q1 + ... + z q4), Horner's order.
    t = _rounded(z * _ACOSF_P[5])
    for c in reversed(_ACOSF_P[1:5]):
        t = _rounded(z * (c + t))
    p = z * (_ACOSF_P[0] + t)
    t = _rounded(z * _ACOSF_Q[3])
    for c in reversed(_ACOSF_Q[:3]):
        t = _rounded(z * (c + t))
    return p / (1.0 + t)


def _clear_low_bits(s):
    """Positive normal float32 ``s`` with the low 12 of its 23 fraction bits cleared (fdlibm's
    ``SET_FLOAT_WORD(df, idf & 0xfffff000)``; fxhlo has no bitcast): ``floor(s / u) u`` for
    ``u = 2^(exponent - 11)``, exact in double; log2's exponent corrected by a step at powers of
    two."""
    d = s.double()
    u = torch.exp2(torch.floor(torch.log2(d)) - 11.0)
    u = torch.where(u * 2048.0 > d, u * 0.5, torch.where(u * 4096.0 <= d, u * 2.0, u))
    return (torch.floor(d / u) * u).float()


def _acosf(x):
    """glibc's ``__ieee754_acosf`` for float32 ``|x| < 1``, its three ranges on guarded inputs."""
    ax = x.abs()
    # |x| < 0.5: pi/2 - (x + x r(x^2)); below 2^-26 the constant
    xs = torch.where(ax < 0.5, x, torch.zeros_like(x))
    r = _acosf_ratio(xs * xs)
    mid = _PIO2_HI - (xs - (_PIO2_LO - _rounded(xs * r)))
    mid = torch.where(ax <= 2.0**-26, _full(x, _PIO2_HI) + _PIO2_LO, mid)
    # x <= -0.5: pi - 2 (s + s r(z) - pio2_lo), z = (1 + x) / 2, s = sqrt(z)
    z = (1.0 + torch.where(x <= -0.5, x, -torch.ones_like(x))) * 0.5
    s = _libm(torch.sqrt, z)
    low = _PI_F - 2.0 * (s + (_rounded(_acosf_ratio(z) * s) - _PIO2_LO))
    # x >= 0.5: 2 (df + s r(z) + c), df = s with its low 12 bits cleared, z = (1 - x) / 2
    z = (1.0 - torch.where(x >= 0.5, x, torch.ones_like(x))) * 0.5
    s = _libm(torch.sqrt, z)
    df = _clear_low_bits(s)
    c = (z - df * df) / (s + df)
    high = 2.0 * (df + (_rounded(_acosf_ratio(z) * s) + c))
    return torch.where(ax < 0.5, mid, torch.where(x < 0.0, low, high))


def _acos(y):
    # acos of |y| < 1 (elsewhere the trigonometric form is not chosen: 0.25 keeps it quiet).
    y = torch.where(y.abs() < 1.0, y, _full(y, 0.25))
    if y.dtype == torch.float32:
        return _acosf(y)
    a = torch.acos(y)
    if y.dtype == torch.float64:
        # At y = 1 - 2^-52, cos(acos(y) / 2) is a rounding tie: W's test against 1 goes by
        # acos's last bit, and XLA's acos is an ulp below glibc's (correctly rounded) there.
        a = torch.where(y == 1.0 - 2.0**-52, _full(y, _ACOS_TIE), a)
    return a


def _t_trig(y, m):
    # cos(n * acos(y))
    return _libm(torch.cos, m * _acos(y))


def _u_trig(y, nd):
    # sin((n + 1) acos(y)) / sin(acos(y)), or (n + 1) cos((n + 1) acos(y)) / y where that sine is 0.
    a = _acos(y)
    m1 = _as(y, nd + 1)
    s = _libm(torch.sin, a)
    safe_s = torch.where(s != 0.0, s, torch.ones_like(s))
    safe_y = torch.where(s != 0.0, torch.ones_like(y), y)
    return torch.where(s != 0.0, _libm(torch.sin, m1 * a) / safe_s, m1 * _libm(torch.cos, m1 * a) / safe_y)


def _vw_trig(y, m, fn, limit_value):
    # fn((n + 1/2) acos(y)) / fn(acos(y) / 2) (fn: cos for V, sin for W), or limit_value where
    # the half angle's other function is 1 (Math.h's test for a zero denominator).
    a = _acos(y)
    half = a / 2.0
    ok = _libm(torch.sin if fn is torch.cos else torch.cos, half) != 1.0
    den = _libm(fn, half)
    return torch.where(ok, _libm(fn, (m + 0.5) * a) / torch.where(ok, den, torch.ones_like(den)), limit_value)


def _chebyshev_polynomial_t(x, n):
    nd = _degree(n)
    m = _as(x, nd)
    edge = [(x.abs() == 1.0, _signed((x > 0.0) | (nd % 2 == 0), torch.ones_like(x)))]
    return _chebyshev(x, nd, x, _t_trig(x, m), 6, edge)


def _chebyshev_polynomial_u(x, n):
    nd = _degree(n)
    edge = [(x.abs() == 1.0, _as(x, torch.where((x > 0.0) | (nd % 2 == 0), nd + 1, -(nd + 1))))]
    return _chebyshev(x, nd, x + x, _u_trig(x, nd), 8, edge)


def _chebyshev_polynomial_v(x, n):
    nd = _degree(n)
    m = _as(x, nd)
    odd_sign = _as(x, torch.where(nd % 2 == 0, nd + nd + 1, -(nd + nd + 1)))
    edge = [(x.abs() == 1.0, torch.where(x > 0.0, torch.ones_like(x), odd_sign))]
    trig = _vw_trig(x, m, torch.cos, odd_sign)
    return _chebyshev(x, nd, x + x - 1.0, trig, 8, edge)


def _chebyshev_polynomial_w(x, n):
    nd = _degree(n)
    m = _as(x, nd)
    limit = torch.where(x > 0.0, _as(x, nd + nd + 1), _signed(nd % 2 == 0, torch.ones_like(x)))
    edge = [(x.abs() == 1.0, limit)]
    trig = _vw_trig(x, m, torch.sin, limit)
    return _chebyshev(x, nd, x + x + 1.0, trig, 8, edge)


# Shifted: y = x + x - 1, with the special cases at x == 1 and x == 0.


def _shifted_chebyshev_polynomial_t(x, n):
    nd = _degree(n)
    y = x + x - 1.0
    edge = [(x == 1.0, torch.ones_like(x)), (x == 0.0, _signed(nd % 2 == 0, torch.ones_like(x)))]
    return _chebyshev(y, nd, y, _t_trig(y, _as(x, nd)), 6, edge)


def _shifted_chebyshev_polynomial_u(x, n):
    nd = _degree(n)
    y = x + x - 1.0
    m1 = _as(x, nd + 1)
    edge = [(x == 1.0, m1), (x == 0.0, _as(x, torch.where(nd % 2 == 0, nd + 1, -(nd + 1))))]
    return _chebyshev(y, nd, y + y, _u_trig(y, nd), 6, edge)


def _shifted_chebyshev_polynomial_v(x, n):
    nd = _degree(n)
    y = x + x - 1.0
    odd_sign = _as(x, torch.where(nd % 2 == 0, nd + nd + 1, -(nd + nd + 1)))
    edge = [(x == 1.0, torch.ones_like(x)), (x == 0.0, odd_sign)]
    trig = _vw_trig(y, _as(x, nd), torch.cos, odd_sign)
    return _chebyshev(y, nd, y + y - 1.0, trig, 6, edge)


def _shifted_chebyshev_polynomial_w(x, n):
    nd = _degree(n)
    y = x + x - 1.0
    even = _signed(nd % 2 == 0, torch.ones_like(x))
    edge = [(x == 1.0, _as(x, nd + nd + 1)), (x == 0.0, even)]
    trig = _vw_trig(y, _as(x, nd), torch.sin, even)
    return _chebyshev(y, nd, y + y + 1.0, trig, 4, edge)


# ---- Hermite, Laguerre, Legendre -------------------------------------------------------------


def _hermite_limit(x) -> int:
    # Math.h's getHermitianLimit: past this degree the result is NaN.
    return {torch.float32: 128, torch.float64: 512}.get(x.dtype, 1024)


def _hermite_polynomial_h(x, n):
    nd = _degree(n)
    limit = _hermite_limit(x)
    one = torch.ones_like(x)
    two_x = x + x
    # for (k = 2; k < n + n; k += 2) r = (x + x) * q - k * p
    last = torch.where((nd >= 2) & (nd <= limit), nd + nd - 1, torch.zeros_like(nd))
    r = _recurrence(x, 2, last, one, two_x, lambda k, p, q: _fma(two_x, q, -(_as(x, k) * p)), stride=2)
    return _cases(r, (nd < 0, torch.zeros_like(x)), (nd == 0, one), (nd == 1, two_x),
                  (nd > limit, _full(x, float("nan"))))


def _hermite_polynomial_he(x, n):
    nd = _degree(n)
    limit = _hermite_limit(x)
    one = torch.ones_like(x)
    # for (k = 1; k < n; k++) r = x * q - k * p
    last = torch.where((nd >= 2) & (nd <= limit), nd - 1, torch.zeros_like(nd))
    r = _recurrence(x, 1, last, one, x, lambda k, p, q: _fma(x, q, -(_as(x, k) * p)))
    return _cases(r, (nd < 0, torch.zeros_like(x)), (nd == 0, one), (nd == 1, x),
                  (nd > limit, _full(x, float("nan"))))


def _laguerre_polynomial_l(x, n):
    nd = _degree(n)
    one = torch.ones_like(x)
    q1 = 1.0 - x
    zero_x = x.abs() == 0.0
    # for (k = 1; k < n; k++) r = (((k + k) + (1 - x)) * q - k * p) / (k + 1)
    last = torch.where((nd >= 2) & ~zero_x, nd - 1, torch.zeros_like(nd))

    def step(k, p, q):
        return _fma(_as(x, k + k) + q1, q, -(_as(x, k) * p)) / _as(x, k + 1)

    r = _recurrence(x, 1, last, one, q1, step)
    return _cases(r, (nd < 0, torch.zeros_like(x)), (zero_x, one), (nd == 0, one), (nd == 1, q1))


def _legendre_polynomial_p(x, n):
    nd = _degree(n)
    one = torch.ones_like(x)
    edge = x.abs() == 1.0
    # for (k = 1; k < n; k++) r = ((k + k + 1) * x * q - k * p) / (k + 1)
    last = torch.where((nd >= 2) & ~edge, nd - 1, torch.zeros_like(nd))

    def step(k, p, q):
        return _fma(_as(x, k + k + 1) * x, q, -(_as(x, k) * p)) / _as(x, k + 1)

    r = _recurrence(x, 1, last, one, x, step)
    ends = _signed((x > 0.0) | (nd % 2 == 0), one)
    return _cases(r, (nd < 0, torch.zeros_like(x)), (edge, ends), (nd == 0, one), (nd == 1, x))


_FUNCTIONS = {
    "special_chebyshev_polynomial_t": _chebyshev_polynomial_t,
    "special_chebyshev_polynomial_u": _chebyshev_polynomial_u,
    "special_chebyshev_polynomial_v": _chebyshev_polynomial_v,
    "special_chebyshev_polynomial_w": _chebyshev_polynomial_w,
    "special_shifted_chebyshev_polynomial_t": _shifted_chebyshev_polynomial_t,
    "special_shifted_chebyshev_polynomial_u": _shifted_chebyshev_polynomial_u,
    "special_shifted_chebyshev_polynomial_v": _shifted_chebyshev_polynomial_v,
    "special_shifted_chebyshev_polynomial_w": _shifted_chebyshev_polynomial_w,
    "special_hermite_polynomial_h": _hermite_polynomial_h,
    "special_hermite_polynomial_he": _hermite_polynomial_he,
    "special_laguerre_polynomial_l": _laguerre_polynomial_l,
    "special_legendre_polynomial_p": _legendre_polynomial_p,
}

# Not lowered by fxhlo, no decomposition in PyTorch. The scalar overloads wrap the number as
# eager does (`_operands`); the `out` overloads never reach a functional graph.
RULES = {
    f"{name}.{overload}": _elementwise(fn)
    for name, fn in _FUNCTIONS.items()
    for overload in ("default", "x_scalar", "n_scalar")
}

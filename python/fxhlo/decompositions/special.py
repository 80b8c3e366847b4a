"""Special functions of the error and gamma families (``special_erfcx``, ``special_log_ndtr``,
``special_ndtri``, ``igamma``/``igammac``, ``polygamma``) written in ATen ops fxhlo lowers: the
Cephes algorithms eager PyTorch evaluates."""

from __future__ import annotations

import math
import struct

import torch

from ._cephes import as_float as _float, opmath as _opmath, polevl as _polevl, rdiv as _rdiv


# Ports of aten/src/ATen/native/Math.h (`calc_erfcx`, `calc_ndtri`, `calc_igamma`,
# `calc_igammac`, `trigamma`, `calc_polygamma`), operation for operation where that keeps float32
# results rounding as eager's do. Every branch is evaluated on the whole tensor and one is chosen
# with `torch.where`; a branch reads its inputs through a `where` that puts a harmless value where
# it is not chosen (so it makes no inf or NaN there). Math.h's loops that stop on convergence are
# unrolled a fixed number of times, each step kept only while the loop would still be running.


def _f32(v: float) -> float:
    """``v`` rounded to float32 (Math.h's ``c10::pi<float>`` and the like)."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _keep(done, old, new):
    """One step of an unrolled loop: ``new`` where the loop still runs, ``old`` where it has
    stopped."""
    return torch.where(done, old, new)


def _eps(x) -> float:
    """Math.h's MACHEP for ``x``'s dtype (2^-53 for double, 2^-24 for float)."""
    return 1.11022302462515654042e-16 if x.dtype == torch.float64 else 5.9604644775390625e-8


# ---- erfcx, log_ndtr -------------------------------------------------------------------------


def _constant_table(rows, like):
    """``rows`` (equal-length tuples of floats) as a constant [len(rows), len(rows[0])] tensor of
    ``like``'s dtype, built from `full`s: a tensor literal would be a lifted constant, which AOT
    Autograd refuses in a decomposition."""
    flat = [torch.full((1,), v, dtype=like.dtype, device=like.device) for row in rows for v in row]
    return torch.cat(flat).reshape(len(rows), len(rows[0]))


def _erfcx_y100(y100):
    """Math.h's ``erfcx_y100``: erfcx(x) from ``y100 = 400 / (4 + x)`` in [0, 100], by the
    Chebyshev polynomial of degree 6 of the piece ``floor(y100)`` (a lookup in the 100 x 7
    coefficient table); 1 at y100 = 100 (|x| below 4 eps), past the table."""
    k = torch.floor(y100).clamp(0, 99)
    t = 2 * y100 - (2 * k + 1)
    # index_select, not `table[k]`: a 0-dim index tensor would index as a Python int (`.item()`).
    c = torch.index_select(_constant_table(_ERFCX_Y100, y100), 0, k.to(torch.int64).reshape(-1))
    c = c.reshape(*k.shape, 7)
    acc = c[..., 6]
    for j in range(5, -1, -1):
        acc = acc * t + c[..., j]
    return torch.where(y100 >= 100, torch.ones_like(y100), acc)


@_opmath
def _special_erfcx(x):
    """erfcx(x) = exp(x^2) erfc(x) as Math.h's ``calc_erfcx`` (S. G. Johnson's Faddeeva
    package): Chebyshev pieces in 4 / (4 + |x|) for |x| <= 50, a 5-term continued fraction past
    50 (1 term past 5e7), and 2 exp(x^2) - erfcx(-x) for x < 0 (inf below -26.7)."""
    ispi = 0.56418958354775628694807945156  # 1 / sqrt(pi)
    ax = x.abs()
    # Chebyshev pieces: x in [0, 50] (x >= 0) or [-6.1, 0) (x < 0); 0 elsewhere and for NaN.
    y100 = _rdiv(400.0, 4 + torch.where(ax <= 50, ax, torch.zeros_like(x)))
    cheb = _erfcx_y100(y100)
    # x > 50: the continued fraction (x clamped to where it is used, so x^4 stays finite).
    xl = x.clamp(50, 5e7)
    xx = xl * xl
    cf = ispi * (xx * (xx + 4.5) + 2) / (xl * (xx * (xx + 5) + 3.75))
    big = torch.where(x > 5e7, _rdiv(ispi, torch.where(x > 5e7, x, torch.ones_like(x))), cf)
    positive = torch.where(x > 50, big, cheb)
    # x < 0: 2 exp(x^2) (inf past -26.7, where it overflows even in double), minus erfcx(-x)
    # above -6.1 (below, erfcx(-x) is under half an ulp of it).
    xn = torch.where(x < 0, x, torch.zeros_like(x))
    two_exp = 2 * torch.exp(xn * xn)
    negative = torch.where(x < -26.7, torch.full_like(x, math.inf),
                           torch.where(x < -6.1, two_exp, two_exp - cheb))
    return torch.where(torch.isnan(x), x, torch.where(x >= 0, positive, negative))


# ---- ndtri -----------------------------------------------------------------------------------

# Cephes ndtri: |y - 1/2| <= 3/8 (P0/Q0); z = sqrt(-2 log y) in [2, 8) (P1/Q1) and [8, 64]
# (P2/Q2), y the smaller tail.
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.00000000000000000000e0, 1.95448858338141759834e0, 4.67627912898881538453e0,
             8.63602421390890590575e1, -2.25462687854119370527e2, 2.00260212380060660359e2,
             -8.20372256168333339912e1, 1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.00000000000000000000e0, 1.57799883256466749731e1, 4.53907635128879210584e1,
             4.13172038254672030440e1, 1.50425385692907503408e1, 2.50464946208309415979e0,
             -1.42182922854787788574e-1, -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (1.00000000000000000000e0, 6.02427039364742014255e0, 3.67983563856160859403e0,
             1.37702099489081330271e0, 2.16236993594496635890e-1, 1.34204006088543189037e-2,
             3.28014464682127739104e-4, 2.89247864745380683936e-6, 6.79019408009981274425e-9)


@_opmath
def _special_ndtri(y0):
    """The normal quantile as Math.h's ``calc_ndtri`` (Cephes): a rational function of
    (y - 1/2)^2 in the middle, of 1/z with z = sqrt(-2 log y) in the tails; -inf at 0, inf at 1,
    NaN outside [0, 1]."""
    exp_m2 = 0.13533528323661269189  # exp(-2)
    upper = y0 > 1 - exp_m2
    y = torch.where(upper, 1 - y0, y0)
    # Middle: |y - 1/2| <= 3/8.
    ym = y - 0.5
    y2 = ym * ym
    middle = (ym + ym * (y2 * _polevl(y2, _NDTRI_P0) / _polevl(y2, _NDTRI_Q0))) * 2.50662827463100050242
    # Tails: y in (0, exp(-2)]; 0.1 where not taken (no log of 0 or of a negative).
    tail = (y > 0) & ~(y > exp_m2)
    yt = torch.where(tail, y, torch.full_like(y, 0.1))
    z = torch.sqrt(-2.0 * torch.log(yt))
    x0 = z - torch.log(z) / z
    w = _rdiv(1.0, z)
    x1 = torch.where(z < 8.0, w * _polevl(w, _NDTRI_P1) / _polevl(w, _NDTRI_Q1),
                     w * _polevl(w, _NDTRI_P2) / _polevl(w, _NDTRI_Q2))
    xt = x0 - x1
    xt = torch.where(upper, xt, -xt)
    out = torch.where(y > exp_m2, middle, xt)
    out = torch.where((y0 < 0) | (y0 > 1), torch.full_like(y0, math.nan), out)
    out = torch.where(y0 == 1, torch.full_like(y0, math.inf), out)
    out = torch.where(y0 == 0, torch.full_like(y0, -math.inf), out)
    return torch.where(torch.isnan(y0), y0, out)


# ---- polygamma -------------------------------------------------------------------------------


def _trigamma(x):
    """Math.h's ``trigamma`` (its float and double overloads alike): the reflection
    psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) below 1/2, with sin(pi x) as written (not reduced
    first) and pi of x's precision, then six steps of psi1(x) = 1/x^2 + psi1(x + 1) and the
    asymptotic series."""
    pi = math.pi if x.dtype == torch.float64 else _f32(math.pi)
    reflect = x < 0.5
    s = torch.sin(pi * x)
    result = torch.where(reflect, _rdiv(-(pi * pi), s * s), torch.zeros_like(x))
    x = torch.where(reflect, 1 - x, x)
    for _ in range(6):
        result = result + _rdiv(1.0, x * x)
        x = x + 1
    ixx = _rdiv(1.0, x * x)
    result = result + (1 + _rdiv(1.0, 2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return torch.where(reflect, -result, result)


def _cot_derivative(n: int) -> list:
    """Coefficients (constant first) of the polynomial P_n with d^n/dt^n cot(t) = P_n(cot t):
    P_0(c) = c, P_{k+1}(c) = -(1 + c^2) P_k'(c)."""
    p = [0.0, 1.0]
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))] + [0.0, 0.0]
        p = [-(dp[j] + (dp[j - 2] if j >= 2 else 0.0)) for j in range(len(dp))]
    return p


def _zeta(n: int, q):
    """The Hurwitz zeta(n + 1, q) = sum_k (q + k)^-(n+1) of integer order n + 1 >= 3, for q not
    0, -1, -2, ...: fxhlo's zeta for q > 0 (which matches eager's there) and below 0, where
    Cephes' sums from k = 0 (|q| terms) and fxhlo's does not, the reflection
    zeta(n + 1, q) = (-1)^n (zeta(n + 1, 1 - q) + pi^(n+1) / n! P_n(cot(pi q))) (the n-th
    derivative of psi(1 - q) - psi(q) = pi cot(pi q))."""
    negative = q < 0
    direct = torch.special.zeta(torch.full_like(q, float(n + 1)), torch.where(negative, 1 - q, q))
    # cot(pi q) = cot(pi r), r = q - round(q) in [-1/2, 1/2] (exact), its cosine written as
    # sin(pi (1/2 - |r|)) to keep its relative precision near r = +-1/2 (where cot is 0).
    r = q - torch.round(q)
    r = torch.where(negative & (r != 0), r, torch.full_like(q, 0.25))
    cot = torch.sin(math.pi * (0.5 - r.abs())) / torch.sin(math.pi * r)
    p = _cot_derivative(n)
    acc = torch.full_like(q, p[-1])
    for c in reversed(p[:-1]):
        acc = acc * cot + c if c else acc * cot
    reflected = direct + (math.pi ** (n + 1) / math.factorial(n)) * acc
    return torch.where(negative, reflected if n % 2 == 0 else -reflected, direct)


def _polygamma_n(n: int, x):
    """psi^(n)(x) for n >= 2 as ``calc_polygamma``: (-1)^(n+1) n! zeta(n + 1, x) by Cephes'
    Hurwitz zeta, which sums (x + k)^-(n+1) from k = 0 for x < 0 too; inf at x = 0, -1, ...
    and -inf (times the sign), NaN at +inf (Cephes' Euler-Maclaurin tail is 0 * inf there).

    For float, Cephes' zeta accumulates in double (``acc_type``) but takes its first term,
    ``std::pow(q, -x)``, in float: near a pole at x < 0 that term's rounding is amplified by
    the cancellation with the others (up to ~1e-5 relative at n = 4..8), so it is kept: the
    first term is rounded to float, the rest, zeta(n + 1, x + 1), computed in double."""
    sign = 1.0 if n % 2 else -1.0
    pole = (x <= 0) & (x == torch.floor(x))
    bad = pole | (x == math.inf)
    xs = torch.where(bad, torch.ones_like(x), x)
    if x.dtype == torch.float32:
        wide = xs.double()
        first = torch.pow(wide, -(n + 1)).float().double()
        zeta = (first + _zeta(n, wide + 1)).float()
    else:
        zeta = _zeta(n, xs)
    out = (sign * math.factorial(n)) * zeta
    out = torch.where(pole, torch.full_like(x, sign * math.inf), out)
    return torch.where(x == math.inf, torch.full_like(x, math.nan), out)


def _polygamma(n: int, self):
    """``aten.polygamma(n, x)`` as eager's kernel dispatches it: digamma for n = 0, trigamma for
    n = 1, (-1)^(n+1) n! zeta(n + 1, x) above (float16/bfloat16 in float32)."""
    x = _float(self)
    if n == 0:
        # fxhlo's digamma, but -inf / inf at +0 / -0 as eager's (the lowering gives NaN there).
        return torch.where(x == 0, _rdiv(-1.0, x), torch.digamma(x))
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    out = _trigamma(work) if n == 1 else _polygamma_n(n, work)
    return out.to(x.dtype)


# ---- igamma, igammac -------------------------------------------------------------------------
#
# Math.h's `calc_igamma` / `calc_igammac` (SciPy's igam/igamc): boundary values, then by region
# of (a, x) the uniform asymptotic series (DLMF 8.12.3/4) for large a near x, the power series
# (DLMF 8.11.4), its form for small x that avoids cancellation (DLMF 8.7.3), or the continued
# fraction (DLMF 8.9.2). Each loop runs up to 2000 times in Math.h, stopping on convergence; here
# a fixed number of steps, each kept only while Math.h's loop would still run (the continued
# fraction runs all its steps: see there).
#
# Two departures from Math.h's regions bound the step counts (and XLA's compile time, which
# grows faster than the graph in float64); the series taken instead converge there too, so
# results differ from eager's by rounding only:
# - Math.h takes the asymptotic series for a > 200 only within |x - a| / a < 4.5 / sqrt(a),
#   leaving 4.5 / sqrt(a) <= |x - a| / a < 0.3 to the power series and continued fraction,
#   which take O(sqrt(a)) steps there (past 2000 from a ~ 1e6 on). Here the asymptotic series
#   covers that band too (as Math.h has it do for 20 < a < 200, where it is no more accurate
#   than for larger a), and a = 200.
# - Math.h takes the continued fraction for Q from x > 1.1 (x >= a); it converges slowest for
#   small a and x below 3 (120 steps in double). There the small-x series (also convergent, its
#   terms 3^n / n! at most) takes over: the continued fraction serves x >= 3.
# Steps, (power series, small-x series, continued fraction), to MACHEP (2^-53, 2^-24) in the
# regions each serves: the power series' terms shrink at least by x / (a + 1) < 0.7 a step for
# a > 20 (104 / 47 steps) and it took at most 48 / 29 for a <= 20 (x = a = 20); the small-x
# series and the continued fraction took at most 27 / 18 and 52 / 28 over dense and random
# grids of their regions (measured with a Python transcription of Math.h's loops).
_IGAM_STEPS = {torch.float64: (112, 32, 64), torch.float32: (48, 20, 32)}

_LANCZOS_G = 6.024680040776729583740234375
# Boost's Lanczos sum exp(g) scaled, numerator and denominator (highest power first).
_LANCZOS_NUM = (0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0,
                150917976.0, 120543840.0, 39916800.0, 0.0)


def _lanczos_sum_expg_scaled(a):
    """Math.h's ``lanczos_sum_expg_scaled`` (``ratevl``, a > 0): the rational function in a up
    to 1, in 1/a (coefficients reversed) above."""
    one = torch.ones_like(a)
    small = torch.where(a > 1, one, a)
    inv = _rdiv(1.0, torch.where(a > 1, a, one))
    low = _polevl(small, _LANCZOS_NUM) / _polevl(small, _LANCZOS_DEN)
    high = _polevl(inv, _LANCZOS_NUM[::-1]) / _polevl(inv, _LANCZOS_DEN[::-1])
    return torch.where(a > 1, high, low)


def _igam_fac(a, x, lgamma_a):
    """Math.h's ``_igam_helper_fac`` (a, x > 0; ``lgamma_a`` = lgamma(a)): x^a exp(-x) /
    Gamma(a), from logarithms when x is far from a, else by Boost's Lanczos form (which avoids
    their cancellation)."""
    maxlog = 7.09782712893383996843e2 if a.dtype == torch.float64 else 88.72283905206835
    g = _LANCZOS_G
    one = torch.ones_like(a)
    far = (a - x).abs() > 0.4 * a.abs()
    ax = torch.where(far, a * torch.log(x) - x - lgamma_a, torch.zeros_like(a))
    by_log = torch.where(ax < -maxlog, torch.zeros_like(a), torch.exp(ax))
    an, xn = torch.where(far, one, a), torch.where(far, one, x)
    fac = an + g - 0.5
    res = torch.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(an)
    small = (an < 200) & (xn < 200)
    a1, x1 = torch.where(small, an, one), torch.where(small, xn, one)
    direct = torch.exp(a1 - x1) * torch.pow(x1 / (a1 + g - 0.5), a1)
    numfac = (xn - an - g + 0.5) / fac
    scaled = torch.exp(an * (torch.log1p(numfac) - numfac) + xn * (0.5 - g) / fac)
    return torch.where(far, by_log, res * torch.where(small, direct, scaled))


def _igam_series(a, x, steps: int):
    """Math.h's ``_igam_helper_series`` (DLMF 8.11.4), ``steps`` terms at most, without its
    factor: P(a, x) = fac(a, x) / a * sum_k x^k / ((a + 1) ... (a + k)), the sum returned."""
    eps = _eps(a)
    r, c, ans = a, torch.ones_like(a), torch.ones_like(a)
    done = torch.zeros_like(a, dtype=torch.bool)
    for _ in range(steps):
        r = r + 1
        c_next = c * (x / r)
        ans_next = ans + c_next
        c, ans = _keep(done, c, c_next), _keep(done, ans, ans_next)
        done = done | (c_next <= eps * ans_next)
    return ans


def _igamc_series(a, x, lgamma_a, steps: int):
    """Math.h's ``_igamc_helper_series`` (DLMF 8.7.3), ``steps`` terms at most: Q(a, x) for
    small x, as 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) * sum_n (-x)^n / (n! (a + n))."""
    eps = _eps(a)
    fac, total = torch.ones_like(a), torch.zeros_like(a)
    done = torch.zeros_like(a, dtype=torch.bool)
    for n in range(1, steps + 1):
        fac = fac * (-x / n)
        term = fac / (a + n)
        total_next = total + term
        total = _keep(done, total, total_next)
        done = done | (term.abs() <= eps * total_next.abs())
    logx = torch.log(x)
    return -torch.expm1(a * logx - torch.lgamma(1 + a)) - torch.exp(a * logx - lgamma_a) * total


def _igamc_continued_fraction(a, x, steps: int):
    """Math.h's ``_igamc_helper_continued_fraction`` (DLMF 8.9.2) without its factor:
    Q(a, x) = fac(a, x) * p/q for x > a, the convergents p/q rescaled by 2^-53 (2^-24) when p
    grows past 2^52 (2^24). All ``steps`` steps run and the last convergent is returned: once
    converged (Math.h's stop: two convergents within MACHEP), later ones stay within rounding
    of it, and tracking the stop per step (a division and two selects each) makes XLA's compile
    time grow steeply with the step count."""
    big, biginv = (4.503599627370496e15, 2.22044604925031308085e-16) if a.dtype == torch.float64 \
        else (16777216.0, 5.9604644775390625e-8)
    y = 1 - a
    z = x + y + 1
    pkm2, qkm2 = torch.ones_like(a), x
    pkm1, qkm1 = x + 1, z * x
    for c in range(1, steps + 1):
        y = y + 1
        z = z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        scale = torch.where(pk.abs() > big, torch.full_like(pk, biginv), torch.ones_like(pk))
        pkm2, pkm1, qkm2, qkm1 = pkm1 * scale, pk * scale, qkm1 * scale, qk * scale
    return pkm1 / qkm1


def _igam_asymptotic(a, x, lower: bool):
    """Math.h's ``_igam_helper_asymptotic_series`` (DLMF 8.12.3/4, Temme): P (``lower``) or Q
    for large a near x, 0.5 erfc(-/+ eta sqrt(a/2)) -/+ exp(-a eta^2 / 2) / sqrt(2 pi a)
    * sum_k c_k(eta) a^-k, stopping where the terms grow or reach MACHEP. c_k is summed by
    Horner's rule over all 25 coefficients where Math.h stops at the first below MACHEP."""
    eps = _eps(a)
    sgn = -1.0 if lower else 1.0
    lam = x / a
    sigma = (x - a) / a
    e = torch.sqrt((-2 * (torch.log1p(sigma) - sigma)).clamp(min=0))
    eta = torch.where(lam > 1, e, torch.where(lam < 1, -e, torch.zeros_like(e)))
    res = 0.5 * torch.erfc(sgn * eta * torch.sqrt(a / 2))
    total, afac = torch.zeros_like(a), torch.ones_like(a)
    absold = torch.full_like(a, math.inf)
    done = torch.zeros_like(a, dtype=torch.bool)
    for d in _IGAM_D:
        ck = _polevl(eta, d[::-1])
        term = ck * afac
        absterm = term.abs()
        done = done | (absterm > absold)
        total_next = total + term
        total = _keep(done, total, total_next)
        done = done | (absterm < eps * total_next.abs())
        absold = absterm
        afac = afac / a
    # Math.h writes sqrt(2 * c10::pi<float> * a): pi to float precision, in double too.
    return res + sgn * torch.exp(-0.5 * a * eta * eta) * total / torch.sqrt((2 * _f32(math.pi)) * a)


def _igamma_inputs(a, x):
    """``a``, ``x`` in the dtype eager computes ``igamma(a, x)`` in (their promoted dtype,
    float32 for float16/bfloat16), and the result's dtype."""
    dtype = torch.result_type(a, x)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    return a.to(work), x.to(work), dtype


class _Igamma:
    """What ``igamma`` and ``igammac`` share: a and x where a series runs (finite, > 0; 1
    elsewhere), which elements those are, which take the asymptotic series (Math.h's regions,
    widened for a >= 200: see above), the step counts, and the kernels, each fed its region's
    (a, x) and harmless values elsewhere. lgamma(a) and the factor x^a e^-x / Gamma(a) are
    computed once for all kernels (each is a large expansion in XLA: one per kernel made
    float64 compiles take many minutes)."""

    def __init__(self, a0, x0):
        self.a0, self.x0 = a0, x0
        self.steps = _IGAM_STEPS[a0.dtype]
        self.inner = (a0 > 0) & (x0 > 0) & torch.isfinite(a0) & torch.isfinite(x0)
        one = torch.ones_like(a0)
        a, x = torch.where(self.inner, a0, one), torch.where(self.inner, x0, one)
        window = torch.where(a > 200, torch.sqrt(20.25 / a).clamp(min=0.3), torch.full_like(a, 0.3))
        self.asymptotic = self.inner & (a > 20) & ((x - a).abs() / a < window)
        self.a, self.x = a, x
        self.lgamma_a = torch.lgamma(a)
        self.fac = _igam_fac(a, x, self.lgamma_a)

    def _on(self, mask, x_off: float):
        """(a, x) where ``mask``, (1, ``x_off``) elsewhere."""
        return (torch.where(mask, self.a, torch.ones_like(self.a)),
                torch.where(mask, self.x, torch.full_like(self.x, x_off)))

    def lower_series(self, mask):
        """P(a, x) by the power series where ``mask``."""
        a, x = self._on(mask, 1.0)
        total = _igam_series(a, x, self.steps[0])
        return torch.where(self.fac == 0, torch.zeros_like(a), total * self.fac / self.a)

    def small_x_series(self, mask):
        """Q(a, x) by the small-x series where ``mask``."""
        a, x = self._on(mask, 1.0)
        lgamma_a = torch.where(mask, self.lgamma_a, torch.zeros_like(a))
        return _igamc_series(a, x, lgamma_a, self.steps[1])

    def continued_fraction(self, mask):
        """Q(a, x) by the continued fraction where ``mask``."""
        a, x = self._on(mask, 4.0)
        return torch.where(self.fac == 0, torch.zeros_like(a), _igamc_continued_fraction(a, x, self.steps[2]) * self.fac)

    def asymptotic_series(self, lower: bool):
        """P (``lower``) or Q by the asymptotic series where it is taken."""
        mask = self.asymptotic
        a = torch.where(mask, self.a, torch.full_like(self.a, 30.0))
        x = torch.where(mask, self.x, torch.full_like(self.x, 30.0))
        return _igam_asymptotic(a, x, lower)


def _igamma(self, other):
    """The regularized lower incomplete gamma P(a, x) as Math.h's ``calc_igamma``."""
    a0, x0, dtype = _igamma_inputs(self, other)
    g = _Igamma(a0, x0)
    a, x = g.a, g.x
    # Not asymptotic: 1 - Q(a, x) for x > 1 beyond a (Q by the continued fraction from 3, the
    # small-x series below), else the power series.
    upper = ~g.asymptotic & (x > 1) & (x > a)
    by_fraction = upper & (x >= 3)
    by_small_x = upper & ~(x >= 3)
    out = g.lower_series(~upper)
    out = torch.where(by_small_x, 1 - g.small_x_series(by_small_x), out)
    out = torch.where(by_fraction, 1 - g.continued_fraction(by_fraction), out)
    out = torch.where(g.asymptotic, g.asymptotic_series(True), out)
    # Boundaries, the last `where` being Math.h's first test; NaN in a or x gives NaN unless a
    # boundary decides first (igamma(nan, 0) = 0, as eager).
    nan, zero, one = torch.full_like(a, math.nan), torch.zeros_like(a), torch.ones_like(a)
    out = torch.where(g.inner, out, nan)
    out = torch.where(torch.isinf(x0), one, out)
    out = torch.where(torch.isinf(a0), torch.where(torch.isinf(x0), nan, zero), out)
    out = torch.where(x0 == 0, zero, out)
    out = torch.where(a0 == 0, torch.where(x0 > 0, one, nan), out)
    out = torch.where((x0 < 0) | (a0 < 0), nan, out)
    return out.to(dtype)


def _igammac(self, other):
    """The regularized upper incomplete gamma Q(a, x) as Math.h's ``calc_igammac``."""
    a0, x0, dtype = _igamma_inputs(self, other)
    g = _Igamma(a0, x0)
    a, x = g.a, g.x
    # Not asymptotic: above x = 1.1, 1 - P(a, x) below a and Q beyond it (by the continued
    # fraction from 3, the small-x series below); up to 1.1, 1 - P(a, x) when a is large for x
    # (a > -0.4 / log(x) up to 0.5, a > 1.1 x above), else the small-x series.
    above = x > 1.1
    large_a = torch.where(x <= 0.5, -0.4 / torch.log(x) < a, x * 1.1 < a)
    by_lower = ~g.asymptotic & torch.where(above, x < a, large_a)
    by_fraction = ~g.asymptotic & above & ~(x < a) & (x >= 3)
    by_small_x = ~g.asymptotic & ~by_lower & ~by_fraction
    out = 1 - g.lower_series(by_lower)
    out = torch.where(by_small_x, g.small_x_series(by_small_x), out)
    out = torch.where(by_fraction, g.continued_fraction(by_fraction), out)
    out = torch.where(g.asymptotic, g.asymptotic_series(False), out)
    nan, zero, one = torch.full_like(a, math.nan), torch.zeros_like(a), torch.ones_like(a)
    out = torch.where(g.inner, out, nan)
    out = torch.where(torch.isinf(x0), zero, out)
    out = torch.where(torch.isinf(a0), torch.where(torch.isinf(x0), nan, one), out)
    out = torch.where(x0 == 0, one, out)
    out = torch.where(a0 == 0, torch.where(x0 > 0, zero, nan), out)
    out = torch.where((x0 < 0) | (a0 < 0), nan, out)
    return out.to(dtype)


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
    # Not lowered by fxhlo, no decomposition in PyTorch (special_log_ndtr's needs erfcx).
    "special_erfcx.default": _special_erfcx,
    "special_ndtri.default": _special_ndtri,
    "igamma.default": _igamma,
    "igammac.default": _igammac,
    # fxhlo lowers polygamma to chlo.polygamma, whose zeta is wrong for x < 0 (eager sums the
    # Hurwitz zeta term by term there) and which has no reflection for trigamma.
    "polygamma.default": _polygamma,
}


# ---- tables ----------------------------------------------------------------------------------

# `erfcx_y100`'s 100 Chebyshev pieces (Math.h): row k holds c0..c6 of c0 + c1 t + ... + c6 t^6
# for y100 in [k, k + 1), t = 2 y100 - (2k + 1).
_ERFCX_Y100 = (
    (0.0007087803245410644, 0.000712340910470263, 3.5779077297597742e-06, 1.7403143962587938e-08,
     8.171066004730779e-11, 3.688502236043496e-13, 1.5917038551111112e-15),
    (0.0021479143208285143, 0.0007268640236737999, 3.6843175430938994e-06, 1.80718412721492e-08,
     8.549644929604033e-11, 3.885203751853429e-13, 1.6868473576888889e-15),
    (0.0036165255935630175, 0.0007418209232355551, 3.794831995752824e-06, 1.8771627021793087e-08,
     8.948471512241509e-11, 4.093585851777244e-13, 1.787206146488889e-15),
    (0.005115498386003198, 0.0007572284073479166, 3.90964257267357e-06, 1.950416870430047e-08,
     9.3687503063179e-11, 4.3143925959079665e-13, 1.8939926435555556e-15),
    (0.006645751317267305, 0.0007731040605444745, 4.028951058939944e-06, 2.0271233238288382e-08,
     9.81176313217091e-11, 4.548420740601775e-13, 2.007635221333333e-15),
    (0.008208238997024121, 0.0007894662961188171, 4.152970155262265e-06, 2.1074693344544657e-08,
     1.0278874108587318e-10, 4.796520139061334e-13, 2.1285907413333335e-15),
    (0.009803953727535219, 0.0008063344010834284, 4.281924132973699e-06, 2.1916534346907168e-08,
     1.0771535136565471e-10, 5.059597262369282e-13, 2.2573462684444446e-15),
    (0.011433927298290302, 0.0008237285838319657, 4.416049531176544e-06, 2.2798861426211987e-08,
     1.129129174587924e-10, 5.338618936581688e-13, 2.3944209546666666e-15),
    (0.013099232878814654, 0.0008416700246790696, 4.555595898845751e-06, 2.3723907357214174e-08,
     1.1839789326602696e-10, 5.634616306755024e-13, 2.5403679644444446e-15),
    (0.014800987015587536, 0.0008601809294634594, 4.700826584881687e-06, 2.4694040760197315e-08,
     1.2418779768752298e-10, 5.948689037032026e-13, 2.695776456888889e-15),
    (0.01654035173939407, 0.0008792845864124146, 4.852019579300175e-06, 2.571177490088171e-08,
     1.3030128534230821e-10, 6.282009758687478e-13, 2.8612737351111112e-15),
    (0.018318536789842393, 0.0008990054264789172, 5.009468408955337e-06, 2.677977707421807e-08,
     1.3675822186304616e-10, 6.635828774535271e-13, 3.0375273884444443e-15),
    (0.020136801964214277, 0.0009193690873767368, 5.1734830914104276e-06, 2.7900878609710433e-08,
     1.435797640280904e-10, 7.011479031104373e-13, 3.2252476e-15),
    (0.021996459598282742, 0.0009404024815536678, 5.344391150804117e-06, 2.9078085538049375e-08,
     1.507884450032973e-10, 7.41038136474992e-13, 3.425189232e-15),
    (0.02389887718722632, 0.0009621338683590018, 5.5225386998049015e-06, 3.0314589961047687e-08,
     1.5840826497296334e-10, 7.834050047241445e-13, 3.6381553564444445e-15),
    (0.025845480155298518, 0.0009845929306782012, 5.708291592005185e-06, 3.161378216916483e-08,
     1.664647874552963e-10, 8.28409859287854e-13, 3.864997576888889e-15),
    (0.027837754783474698, 0.0010078108563256892, 5.9020366493792216e-06, 3.297926355324652e-08,
     1.7498524159268457e-10, 8.762245912484253e-13, 4.106620648888889e-15),
    (0.029877251304899308, 0.001031820424505735, 6.104182969716206e-06, 3.441486035954272e-08,
     1.839986307293409e-10, 9.270322736636504e-13, 4.3639844053333335e-15),
    (0.03196558717859645, 0.0010566560976716574, 6.315163319241458e-06, 3.592463833952192e-08,
     1.9353584758781173e-10, 9.810278385988926e-13, 4.6381060817777776e-15),
    (0.03410445055258834, 0.0010823541191350532, 6.535435615955393e-06, 3.7512918348533524e-08,
     2.0362979635817883e-10, 1.0384187833037281e-12, 4.930062526222222e-15),
    (0.036295603928292425, 0.0011089526167995269, 6.765484509551836e-06, 3.918429294991359e-08,
     2.1431552202133775e-10, 1.0994259106646732e-12, 5.240994910222222e-15),
    (0.03854088803884051, 0.001136491713417542, 7.005823064124631e-06, 4.0943644083718584e-08,
     2.2563034723692883e-10, 1.1642841011361993e-12, 5.572109287111111e-15),
    (0.04084222595478596, 0.0011650136437945675, 7.2569945502343e-06, 4.279616186185504e-08,
     2.3761401711005023e-10, 1.2332431172381557e-12, 5.924680236444444e-15),
    (0.04320162743154022, 0.0011945628793917271, 7.51957435328492e-06, 4.474736455396099e-08,
     2.503088521647295e-10, 1.3065684400300477e-12, 6.300053285333334e-15),
    (0.04562119351381047, 0.001225186260806753, 7.794172005555192e-06, 4.680311983095446e-08,
     2.6375990983978426e-10, 1.384542137097712e-12, 6.6996477404444446e-15),
    (0.048103121413299865, 0.0012569331386432195, 8.081433349636768e-06, 4.896966733568202e-08,
     2.7801515481905746e-10, 1.4674637611609885e-12, 7.124958935111111e-15),
    (0.05064970967698334, 0.0012898555233099055, 8.38204284145688e-06, 5.125364265255184e-08,
     2.9312563849675507e-10, 1.5556512782814827e-12, 7.577560782222223e-15),
    (0.053263363664388864, 0.0013240082443256975, 8.696726001500767e-06, 5.36621027503968e-08,
     3.09145687866348e-10, 1.6494420240828494e-12, 8.059107964444444e-15),
    (0.05594660135350001, 0.001359449119740819, 9.026252023301638e-06, 5.6202552975056696e-08,
     3.261331041050314e-10, 1.7491936862246368e-12, 8.571338168888888e-15),
    (0.058702059496154084, 0.0013962391363223647, 9.371436548731279e-06, 5.8882975670265285e-08,
     3.4414937110591756e-10, 1.855285310975186e-12, 9.11607367111111e-15),
    (0.061532500145144775, 0.0014344426411912014, 9.733144620101681e-06, 6.171186050734718e-08,
     3.63259874182953e-10, 1.9681183310134517e-12, 9.69522384e-15),
    (0.06444081757665329, 0.0014741275456383132, 1.0112293819576438e-05, 6.469823660593325e-08,
     3.8353412915303665e-10, 2.088117611438512e-12, 1.031078448e-14),
    (0.06743004563313039, 0.001515365541891654, 1.0509857606888329e-05, 6.785170652936334e-08,
     4.050460219481114e-10, 2.2157325110542536e-12, 1.0964842115555555e-14),
    (0.07050336551333886, 0.001558232333649571, 1.092686886686523e-05, 7.118248223961351e-08,
     4.2787405890153386e-10, 2.351437952227442e-12, 1.1659571751111111e-14),
    (0.0736641140379446, 0.001602807881243882, 1.1364423678778208e-05, 7.470142309742318e-08,
     4.521016277747649e-10, 2.495735500408857e-12, 1.2397238257777777e-14),
    (0.07691579242081956, 0.0016491766623447889, 1.1823685320041301e-05, 7.842007599378154e-08,
     4.778172695691648e-10, 2.6491544403815725e-12, 1.3180196462222222e-14),
    (0.08026207557809462, 0.0016974279491709504, 1.2305888517309891e-05, 8.235071769897904e-08,
     5.051149610985711e-10, 2.81225284976269e-12, 1.4010889635555555e-14),
    (0.08370682200898036, 0.0017476561032212657, 1.2812343958540764e-05, 8.650639951503644e-08,
     5.340944082386946e-10, 2.9856186620887555e-12, 1.489185159111111e-14),
    (0.08725408428446171, 0.0017999608886001962, 1.3344443080089493e-05, 9.0900994316429e-08,
     5.648613497261646e-10, 3.169870708003396e-12, 1.5825697795555556e-14),
    (0.09090812018217274, 0.00185444780506577, 1.390366314342612e-05, 9.554924606254991e-08,
     5.975278712524205e-10, 3.36565973660991e-12, 1.6815130613333334e-14),
    (0.09467340450807549, 0.0019112284419887304, 1.4491572616545005e-05, 1.0046682186333614e-07,
     6.3221272959791e-10, 3.573669397558913e-12, 1.786293159111111e-14),
    (0.09855464164800445, 0.0019704208544725622, 1.5109836875625445e-05, 1.0567036667675984e-07,
     6.690416864001935e-10, 3.794617185082434e-12, 1.897195904e-14),
    (0.1025567788947009, 0.0020321499629472857, 1.576022424296218e-05, 1.1117756071353507e-07,
     7.081478511009766e-10, 4.029255327663256e-12, 2.0145143075555556e-14),
    (0.10668502059865094, 0.002096547977614873, 1.6444612377624982e-05, 1.1700717962026153e-07,
     7.496720325093842e-10, 4.2783716186085925e-12, 2.138547936e-14),
    (0.11094484319386444, 0.002163754849190817, 1.7164995035719656e-05, 1.2317915750735938e-07,
     7.937630983149963e-10, 4.542790176310636e-12, 2.2696025653333333e-14),
    (0.11534201115268805, 0.002233918747454642, 1.7923489217504226e-05, 1.2971465288245997e-07,
     8.405783418038907e-10, 4.8233721206418025e-12, 2.4079890062222222e-14),
    (0.11988259392684095, 0.002307196569191869, 1.8722342718958937e-05, 1.3663611754337958e-07,
     8.902838548849328e-10, 5.121016156922585e-12, 2.554022711111111e-14),
    (0.12457298393509812, 0.0023837544771809576, 1.956394210571161e-05, 1.439673684773947e-07,
     9.430549064645925e-10, 5.436659058313422e-12, 2.708022592e-14),
    (0.12941991566142438, 0.002463768471950886, 2.045082112747588e-05, 1.5173366280523906e-07,
     9.990763250638903e-10, 5.771276031135163e-12, 2.8703099555555555e-14),
    (0.13443048593088697, 0.0025474249981080823, 2.1385669591362916e-05, 1.5996177579900442e-07,
     1.0585428844575133e-09, 6.125880953678788e-12, 3.041208014222222e-14),
    (0.13961217543434562, 0.0026349215871051762, 2.2371342712572568e-05, 1.6868008199296823e-07,
     1.1216596910444997e-09, 6.501526475309089e-12, 3.221039450666667e-14),
    (0.144972871576738, 0.002726467538398244, 2.341087096105095e-05, 1.7791863939526378e-07,
     1.1886425714330958e-09, 6.8993039665054284e-12, 3.4101266222222225e-14),
    (0.15052089272774619, 0.0028222846410136237, 2.4507470422713398e-05, 1.8770927679626137e-07,
     1.259718458758337e-09, 7.320343304922983e-12, 3.6087889048888887e-14),
    (0.1562650139577461, 0.0029226079376196627, 2.566455369376845e-05, 1.9808568415654462e-07,
     1.3351257759815557e-09, 7.765812489104676e-12, 3.817342003555556e-14),
    (0.16221449434620738, 0.0030276865332726477, 2.6885741326534563e-05, 2.0908350604346383e-07,
     1.415114814424073e-09, 8.236917066597432e-12, 4.036095745777778e-14),
    (0.1683791059541213, 0.0031377844510793083, 2.8174873844911173e-05, 2.2074043807045782e-07,
     1.499948105599609e-09, 8.734899366193081e-12, 4.265352897777778e-14),
    (0.1747691645565937, 0.0032531815370903066, 2.9536024347344365e-05, 2.3309632627767074e-07,
     1.5899007843582445e-09, 9.261037523542736e-12, 4.5054073102222224e-14),
    (0.18139556223643702, 0.0033741744168097, 3.09735117147095e-05, 2.461932693759229e-07,
     1.6852609412267751e-09, 9.81664429428549e-12, 4.756541809777778e-14),
    (0.18826980194443665, 0.0035010775057740316, 3.249191444001427e-05, 2.600757237588632e-07,
     1.7863299617388377e-09, 1.0403065638343878e-11, 5.019026583111111e-14),
    (0.19540403413693969, 0.0036342240767211326, 3.4096085096200906e-05, 2.7479061117017636e-07,
     1.8934228504790033e-09, 1.1021679075323599e-11, 5.293117173333333e-14),
    (0.20281109560651886, 0.00377396738593236, 3.579116545759241e-05, 2.9038742889416174e-07,
     2.0068685374849e-09, 1.1673891799578381e-11, 5.5790523093333335e-14),
    (0.21050455062669335, 0.003920681861392565, 3.7582602289680105e-05, 3.0691836231886877e-07,
     2.1270101645763676e-09, 1.2361138551062899e-11, 5.877052016e-14),
    (0.21849873453703333, 0.004074764355468959, 3.947616382098671e-05, 3.244383997013992e-07,
     2.254205349151868e-09, 1.3084879235290859e-11, 6.187315326222222e-14),
    (0.2268087999004323, 0.004236635464862852, 4.1477956909656896e-05, 3.430054489450281e-07,
     2.3888264229264067e-09, 1.3846596292818514e-11, 6.510018375111112e-14),
    (0.23545076536988704, 0.004406740920636517, 4.35944449162247e-05, 3.6268045617760415e-07,
     2.53126064308532e-09, 1.4647791812837902e-11, 6.845312263111111e-14),
    (0.24444156740777434, 0.004585553051160578, 4.5832466292683086e-05, 3.835275259003303e-07,
     2.6819103733055602e-09, 1.5489984390884758e-11, 7.193320636444444e-14),
    (0.25379911500634267, 0.004773572320865003, 4.8199253896534185e-05, 4.0561404245564733e-07,
     2.8411932320871164e-09, 1.637470573645832e-11, 7.554137982222222e-14),
    (0.26354234756393613, 0.0049713289477083785, 5.070245503693037e-05, 4.2901079254268185e-07,
     3.009542205890048e-09, 1.730349702534734e-11, 7.927827336888888e-14),
    (0.27369129607732345, 0.005179384602305264, 5.33501522583266e-05, 4.537920884886502e-07,
     3.187405724581438e-09, 1.827790501024511e-11, 8.314418236444444e-14),
    (0.28426714781640317, 0.005398334191669514, 5.615088486525581e-05, 4.800358919649474e-07,
     3.3752476967570798e-09, 1.9299477888083468e-11, 8.713904913777777e-14),
    (0.2952923146534852, 0.0056288077305420795, 5.911367118991331e-05, 5.078239378174484e-07,
     3.5735475025851714e-09, 2.036976093701707e-11, 9.126244261333333e-14),
    (0.3067905052252884, 0.00587147230327454, 6.224803160219768e-05, 5.372418576620094e-07,
     3.782799941896024e-09, 2.149029193044454e-11, 9.551353918222223e-14),
    (0.3187868011117332, 0.00612703411923391, 6.556401225970764e-05, 5.683793028783774e-07,
     4.003515135339238e-09, 2.2662596341239295e-11, 9.989110976e-14),
    (0.33130773722152623, 0.006396240664679808, 6.90722095929424e-05, 6.013300666188594e-07,
     4.236218376588347e-09, 2.3888182347073697e-11, 1.0439349811555555e-13),
    (0.34438138658041334, 0.0066798829540414, 7.278379551860356e-05, 6.36192204432288e-07,
     4.481449933651445e-09, 2.5168535651285476e-11, 1.0901861383111111e-13),
    (0.35803744972380175, 0.006978797883488269, 7.671054337145482e-05, 6.730681530891739e-07,
     4.739764797584523e-09, 2.650511414114305e-11, 1.1376390933333332e-13),
    (0.37230734890119727, 0.007293870689646138, 8.086485454267072e-05, 7.120648471806269e-07,
     5.0117323769745884e-09, 2.7899342394100073e-11, 1.1862637614222222e-13),
    (0.3872243273055545, 0.00762603751625498, 8.525978581000461e-05, 7.532938330517133e-07,
     5.297936136838812e-09, 2.935260605416409e-11, 1.2360253370666666e-13),
    (0.4028235535461694, 0.007976288091502973, 8.990907734243825e-05, 7.968713796195619e-07,
     5.5989731807360405e-09, 3.0866246101464866e-11, 1.2868841946666668e-13),
    (0.4191422315891379, 0.008345668518695046, 9.482718135925016e-05, 8.429185856178314e-07,
     5.915453775108349e-09, 3.244155303434747e-11, 1.338795794311111e-13),
    (0.43621971639463786, 0.00873528418282895, 0.000100029291420668, 8.915614828021988e-07,
     6.24800081507886e-09, 3.407976098345888e-11, 1.3917107176888888e-13),
    (0.4540976354853433, 0.009146302775554824, 0.00010553137232446167, 9.429311346463863e-07,
     6.597249231221996e-09, 3.5782041795476564e-11, 1.4455745872e-13),
    (0.4728200166851233, 0.009579957440886046, 0.00011135019058000067, 9.971637300550903e-07,
     6.963845336995697e-09, 3.7549499088161346e-11, 1.500328071288889e-13),
    (0.4924334222717984, 0.010037550043909497, 0.00011750334542845235, 1.0544006716188967e-06,
     7.348446116824222e-09, 3.938316232643575e-11, 1.5559069118222223e-13),
    (0.5129870897920926, 0.010520454564612427, 0.00012400930037494997, 1.1147886579371265e-06,
     7.75171845505687e-09, 4.1283980931872625e-11, 1.612241968e-13),
    (0.5345330797910137, 0.011030120618800727, 0.0001308874151957227, 1.1784797595374515e-06,
     8.174338306304482e-09, 4.3252818449517084e-11, 1.669259264e-13),
    (0.557126430711693, 0.011568077107929736, 0.00013815797838036652, 1.2456314879260905e-06,
     8.616989807896932e-09, 4.529044681153965e-11, 1.7268801084444443e-13),
    (0.5808253212251933, 0.012135935999503878, 0.0001458422399666584, 1.316406857309571e-06,
     9.080364335510602e-09, 4.739754071312462e-11, 1.785021160888889e-13),
    (0.6056912402529337, 0.01273539623952555, 0.00015396244472258864, 1.3909744385382817e-06,
     9.565159503230623e-09, 4.957467212766904e-11, 1.8435945564444444e-13),
    (0.6317891649471572, 0.013368247798287032, 0.00016254186562762076, 1.4695084048334055e-06,
     1.0072078109604152e-08, 5.182230499568071e-11, 1.9025081422222223e-13),
    (0.6591877468972532, 0.014036375850601992, 0.00017160483760259707, 1.5521885688723188e-06,
     1.060182703153528e-08, 5.414079010583752e-11, 1.9616655146666667e-13),
    (0.6879595068317443, 0.014741765091365868, 0.00018117679143520433, 1.6392004108230584e-06,
     1.1155116068018043e-08, 5.653036019492569e-11, 2.0209663662222222e-13),
    (0.7181810380872997, 0.015486504187117112, 0.00019128428784550924, 1.7307350969359975e-06,
     1.1732656736113608e-08, 5.899112528756384e-11, 2.0803065333333334e-13),
    (0.7499332191172625, 0.016272790364044783, 0.00020195505163377912, 1.8269894883203348e-06,
     1.2335161021630225e-08, 6.152306831216908e-11, 2.1395783431111112e-13),
    (0.7833014353128349, 0.01710293413265243, 0.00021321800585063328, 1.9281661395543912e-06,
     1.2963340087354342e-08, 6.412604099806635e-11, 2.1986708942222223e-13),
    (0.8183758104102381, 0.017979364149044223, 0.0002251033059275313, 2.0344732868018175e-06,
     1.361790294183995e-08, 6.679976008397248e-11, 2.257470126222222e-13),
    (0.8552514477568512, 0.01890463221254756, 0.00023764237370371255, 2.146124825130639e-06,
     1.4299555071870523e-08, 6.954380386469418e-11, 2.3158593688888887e-13),
    (0.8940286817084994, 0.0198814183991272, 0.00025086793128395994, 2.2633402747585233e-06,
     1.500899704211653e-08, 7.235760907504394e-11, 2.3737194737777777e-13),
    (0.9348133394287079, 0.02091253632978037, 0.0002648140346599848, 2.3863447359754924e-06,
     1.5746923065472183e-08, 7.524046814172015e-11, 2.4309291271111114e-13),
    (0.9777170133588503, 0.02200093857283048, 0.0002795161070268238, 2.5153688325245316e-06,
     1.651401954782282e-08, 7.819152682936823e-11, 2.4873652355555557e-13),
)

# `_igam_helper_asymptotic_series`' d[k][n] (Math.h): the coefficient of eta^n in c_k(eta).
_IGAM_D = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815,
     0.0011574074074074073, 0.0003527336860670194, -0.0001787551440329218,
     3.919263178522438e-05, -2.1854485106799924e-06, -1.85406221071516e-06,
     8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09,
     1.0261809784240309e-08, -4.382036018453353e-09, 9.14769958223679e-10,
     -2.551419399494625e-11, -5.830772132550426e-11, 2.4361948020667415e-11,
     -5.0276692801141755e-12, 1.1004392031956135e-13, 3.3717632624009856e-13,
     -1.392388722418162e-13, 2.8534893807047445e-14, -5.139111834242572e-16,
     -1.9752288294349442e-15),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
     -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
     -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
     4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14,
     7.1624989648114856e-12, -2.933186643771437e-12, 5.996696365683689e-13,
     -2.1671786527323313e-16, -4.978339972369262e-14, 2.0291628823713425e-14,
     -4.13125571381061e-15),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
     2.0093878600823047e-06, -0.00010736653226365161, 5.2923448829120125e-05,
     -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062932e-06,
     -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617112e-09,
     9.428356159014678e-13, 1.2872252400089318e-10, -5.5645956134363323e-11,
     1.197593554636698e-11, -4.1689782251838634e-15, -1.0940640427884595e-12,
     4.662239946390136e-13, -9.905105763906907e-14, 1.8931876768373515e-17,
     8.859221872591127e-15),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
     0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
     1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
     -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
     -9.460496661855133e-10, 2.1541049775774907e-10, -1.388823336813903e-14,
     -2.1894761681963938e-11, 9.790998951171684e-12, -2.178219188018096e-12,
     6.208819573407901e-17, 2.126978363279737e-13, -9.344688791517433e-14,
     2.045367122678285e-14),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
     1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06,
     8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10, 1.86023389685045e-10,
     -4.356323005056618e-11, 1.278600101629623e-15, 4.67927502665792e-12,
     -2.149246470613483e-12, 4.908815614809652e-13, -6.33859148489156e-18,
     -5.045332069080094e-14),
    (-0.00033679855336635813, -6.972813758365858e-05, 0.0002772753244959392,
     -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07,
     -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06,
     -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.306194500013523e-09,
     3.162417628774568e-09, -7.840924253697429e-10, 5.192679165254041e-15,
     9.358944242306784e-11, -4.513426216163278e-11, 1.0799129993116828e-11,
     -3.661886712685252e-17, -1.210902069055155e-12, 5.680743584990564e-13,
     -1.3249659916340829e-13),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045,
     7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05,
     -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06,
     -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08, 4.7435958880408125e-08, -1.2545415020710382e-08,
     8.649648858010293e-14, 1.6846058979264062e-09, -8.575492823577594e-10,
     2.1598224929232125e-10, -7.613230520476153e-16, -2.6639822008536144e-11,
     1.3065700536611057e-11, -3.1799163902367977e-12, 4.710976121367431e-18,
     3.6902800842763465e-13),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234,
     0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07,
     2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
     4.93875893393627e-10, -1.0595367014026043e-06, 6.166714376110408e-07,
     -1.7562973359060463e-07, -1.297447328701544e-12, 2.695423606288966e-08,
     -1.4578352908731272e-08, 3.887645959386175e-09, -3.881002251019412e-17,
     -5.327994173877286e-10, 2.7437977643314844e-10, -6.995796092070568e-11,
     2.589986387486848e-17, 8.856689099669639e-12, -4.403168815871311e-12,
     1.0865561947091654e-12),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721,
     -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218,
     4.629953263691304e-05, 4.557909867922708e-09, -1.0595271125805195e-05,
     6.783342904865167e-06, -2.1075476666258803e-06, -1.7213731432817144e-11,
     3.773587741611098e-07, -2.1867506700122867e-07, 6.220228804018927e-08,
     6.597703826733e-16, -9.590386497425686e-09, 5.213214492280807e-09,
     -1.3991589583935709e-09, 5.382058999060575e-16, 1.9484714275467745e-10,
     -1.0127287556389682e-10, 2.6077347197254926e-11, -5.090418699993299e-18,
     -3.3721464474854593e-12),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328,
     -0.0006401475260262758, 0.00027750107634328704, 1.819700838046515e-07,
     -8.479507117068503e-05, 6.105192082501531e-05, -2.1073920183404862e-05,
     -8.858589014125599e-10, 4.5284535953805374e-06, -2.8427815022504407e-06,
     8.708234177864641e-07, 3.6886101871706966e-12, -1.534469519070206e-07,
     8.862466778790695e-08, -2.5184812301826817e-08, -1.0225912098215092e-14,
     3.896947075815478e-09, -2.1267304792235634e-09, 5.737013552805138e-10,
     -1.887749850169741e-19, -8.093153869465787e-11, 4.23827232834492e-11,
     -1.1002224534207727e-11),
    (0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636,
     9.9324041226423e-07, -0.0005087450129309319, 0.00042735056665392886,
     -0.000168588537679108, -8.1301893922785e-09, 4.5284402370562144e-05,
     -3.127053674781734e-05, 1.044986828530338e-05, 4.8435226265680926e-11,
     -2.148256587345626e-06, 1.329369701097492e-06, -4.029569309210103e-07,
     -1.756787766632329e-13, 7.014504316366825e-08, -4.040787734999483e-08,
     1.1474026743371962e-08, 3.9642746853563326e-18, -1.7804938269892715e-09,
     9.748026254873165e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
     3.764774955354384e-11),
    (0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276,
     0.00213896861856891, -0.0010108559391263003, -3.99127055299192e-07,
     0.0003623502508476469, -0.00028143901463712157, 0.00010449513336495887,
     2.12114184918303e-09, -2.5779417251947842e-05, 1.7281818956040464e-05,
     -5.641377387290428e-06, -1.1024320105776174e-11, 1.1223224418895176e-06,
     -6.869339637952674e-07, 2.0653236975414888e-07, 4.6714772409838506e-14,
     -3.5609886164949055e-08, 2.0470855345905963e-08, -5.809173863328336e-09,
     -1.332821287582869e-16, 9.035460439133513e-10, -4.959878251733084e-10,
     1.3481607129399748e-10),
    (-0.004072512119514016, 0.00640336283380807, -0.004041016108167662,
     -2.183732802866233e-06, 0.002174044180125464, -0.001970044051841889,
     0.0008359546974796246, 1.9445447567109655e-08, -0.000257793871204217,
     0.00019009987368139304, -6.769649993743896e-05, -1.4440629666426571e-10,
     1.5712512518742267e-05, -1.0304008744776892e-05, 3.304517767401387e-06,
     7.982976024232571e-13, -6.4097794149313e-07, 3.8894624761300054e-07,
     -1.161834764494887e-07, -2.816808630596451e-15, 1.9878012911297094e-08,
     -1.1407719956357511e-08, 3.2355857064185554e-09, 4.175946829345594e-20,
     -5.042311271810582e-10),
    (-0.0059475779383993, -0.0005401647678926045, 0.00879104135507679,
     -0.009857631558785612, 0.005013469503102154, 1.2807521786221875e-06,
     -0.0020626019342754685, 0.0017109128573523059, -0.000676953127141338,
     -6.901154567656214e-09, 0.00018855128143995903, -0.0001339521566349197,
     4.626318303352804e-05, 4.003423061332135e-11, -1.0255652921494033e-05,
     6.612086372797651e-06, -2.0913022027253007e-06, -2.0951775649603836e-13,
     3.975602904199325e-07, -2.395621197881589e-07, 7.118288338214586e-08,
     8.925574873053455e-16, -1.2101547235064675e-08, 6.935061824833439e-09,
     -1.96614644538561e-09),
    (0.01740202778752271, -0.029527880945699123, 0.020045875571402798,
     7.0289515966903405e-06, -0.012375421071343148, 0.011976293444235253,
     -0.0054156038466518525, -6.329089339641862e-08, 0.0018855118129005065,
     -0.001473473274825001, 0.0005551581009770838, 5.240683441255066e-10,
     -0.00014357913535784837, 9.91812932249433e-05, -3.346083474947831e-05,
     -3.575583729109899e-12, 7.1560851960630075e-06, -4.551680262815553e-06,
     1.4236576649271474e-06, 1.8803149082089665e-14, -2.662340389892921e-07,
     1.5950642189595716e-07, -4.71875146738411e-08, -6.510787295875518e-17,
     7.979509102674624e-09),
    (0.03024912416090589, 0.0024817436002649977, -0.049939134373457025,
     0.05991564300930787, -0.03248320760162339, -5.721296865210344e-06,
     0.015085251778569354, -0.013261324005088445, 0.0055515262632426145,
     3.026318225703001e-08, -0.0017229548406756724, 0.0012893570099929638,
     -0.00046845138348319875, -1.830259937893045e-10, 0.00011449739014822654,
     -7.737856522124447e-05, 2.5625836246985202e-05, 1.0766165333192815e-12,
     -5.324680928242262e-06, 3.349634863064464e-06, -1.0381253128684019e-06,
     -5.608909920621128e-15, 1.9150821930676592e-07, -1.1418365800203487e-07,
     3.3654425209171787e-08),
    (-0.09905102088015905, 0.17954011706123485, -0.12989606383463778,
     -3.1478872752284355e-05, 0.09051063527684813, -0.0928288244111844,
     0.04441211283987781, 2.7779236316835886e-07, -0.017229543805449696,
     0.014182925050891573, -0.005621416163374734, -2.39598509186381e-09,
     0.0016029634366079909, -0.0011606784674435774, 0.00041001337768153875,
     1.836580075409066e-11, -9.58442565636559e-05, 6.364306233776471e-05,
     -2.076250624489065e-05, -1.1806020912804483e-13, 4.213180823912065e-06,
     -2.626224133701247e-06, 8.077062049493066e-07, 6.012591212363273e-16,
     -1.472973737401884e-07),
    (-0.19994542198219728, -0.015056113040026424, 0.36470239469348487, -0.4643519231173355,
     0.26640934719197895, 3.403826602714719e-05, -0.13784338709329624, 0.1276467178337056,
     -0.056213828755200985, -1.753150885483011e-07, 0.019235592956768112, -0.015088821281095314,
     0.005740185445135012, 1.0622382710310225e-09, -0.0015335082692563998, 0.0010819320643228215,
     -0.0003737251019394566, -6.617090972903199e-12, 8.426361738090962e-05, -5.515070682748348e-05,
     1.776953644834807e-05, 3.882792321020553e-14, -3.53513697488768e-06, 2.186583213004527e-06,
     -6.68128494476256e-07),
    (0.7243860850402943, -1.3918010932653375, 1.0654143352413967,
     0.0001876173868950258, -0.827055011761527, 0.8935243334782842,
     -0.44971003995291337, -1.6107401567546651e-06, 0.1923559016527109,
     -0.1659770216004261, 0.06888222268181433, 1.3910091724608687e-08,
     -0.02146911561508663, 0.016228980898865892, -0.005979601617258426,
     -1.1287469112826745e-10, 0.0015167451119784856, -0.00104786342935539,
     0.0003553907288912642, 8.170432211180152e-13, -7.77730134424524e-05,
     5.029141389700772e-05, -1.6035083867000518e-05, 1.2469354315487606e-14,
     3.1369106244517616e-06),
    (1.6668949727276812, 0.1165462765994632, -3.3288393225018904, 4.469232548286404,
     -2.6977693045875806, -0.0002600667859891061, 1.5389017615694538, -1.4937962361134611,
     0.6888196463323315, 1.3077482004552384e-06, -0.2576296332559629, 0.21097676102125448,
     -0.08371440835921988, -7.792042888135476e-09, 0.0242679230648336, -0.017813678334552312,
     0.006397033038890006, 4.943080709048052e-11, -0.0015554602758465635, 0.0010561196919903215,
     -0.000352771844604729, 9.300233464502246e-14, 7.528585502655717e-05, -4.818651556915635e-05,
     1.5227271505597605e-05),
    (-6.618829886137293, 13.397985455142589, -10.789350606845145,
     -0.0014352254537875018, 9.23336945961898, -10.456552819547769,
     5.510552602903347, 1.2024439690716742e-05, -2.5762961164755818,
     2.320744274538718, -1.0045728797216285, -1.0207833290021913e-07,
     0.3397509217116947, -0.2672051745075747, 0.10235252851562705,
     8.432973048487163e-10, -0.027998284958442594, 0.020066274144976814,
     -0.007055436891508624, 1.9402238183698188e-12, 0.0016562888105449611,
     -0.0011082898580743682, 0.0003654545161310169, -5.129003202697179e-11,
     -7.634010369686903e-05),
    (-17.112706061976095, -1.1208044642899115, 37.131966511885445,
     -52.29827102534896, 33.058589696624615, 0.002479129897620022,
     -20.61089403411526, 20.88672775145582, -10.045703956517752,
     -1.2238783449063012e-05, 4.077013427422114, -3.473667358470195,
     1.4329352617312006, 7.135991441187971e-08, -0.4479725715911561,
     0.3411266608064446, -0.12699786326594922, -2.895367726908153e-10,
     0.03312577627825986, -0.023274087021036102, 0.008039999350364889,
     -1.177805216235265e-09, -0.001832162489107167, 0.0012108282933588664,
     -0.0003947994124682252),
    (73.89033153567425, -156.80141270402274, 132.2177542759164,
     0.013692876877324546, -123.66496885920151, 146.2068939106273,
     -80.36558772486535, -0.00011259851148881298, 40.77013219617994,
     -38.21034001327303, 17.19522294277362, 9.351970795516835e-07,
     -6.271615990774704, 5.116899907185264, -2.0319658112299095,
     -4.950721558276154e-09, 0.596263972943326, -0.44220765337238094,
     0.16079998700166273, -2.4733786203223403e-08, -0.040307574759979765,
     0.02784905074709787, -0.009475185899205422, 6.419922235909132e-06,
     0.002125018077469946),
    (212.1683709838252, 13.107863022633868, -496.9828593287175, 731.215952669692,
     -482.1382172089085, -0.028817248692894887, 326.167203029471, -343.8934028008712,
     171.95193870816232, 0.00014038077378096157, -75.2594195897599, 66.51969984520935,
     -28.447519748152462, -7.613702615875392e-07, 9.540223710530437, -7.517530111331138,
     2.894399756887196, -4.66121949995382e-07, -0.8061514959879409, 0.5848300657063102,
     -0.20845408972964957, 0.00014765818959305816, 0.05100043386375302, -0.03306625214188366,
     0.015109265210467774),
    (-989.5964309832236, 2192.555536090523, -1928.3586782723355, -0.15925738122215252,
     1956.9985945919857, -2407.2514765081555, 1375.6149959336497, 0.0012920735237496668,
     -752.5941715948055, 731.7166874220871, -341.37023466220063, -9.985739026060805e-06,
     133.56313181291574, -112.76295161252794, 46.31039609820446, -7.923738713361476e-06,
     -14.510726927018647, 11.111771248100563, -4.169081794527089, 0.0031008219800117806,
     1.1220095449981469, -0.7605237992614992, 0.36262236505085255, 0.2216867741940747,
     0.48683443692930506),
)

"""Linear algebra written in ATen ops fxhlo lowers: triangular solves and the Cholesky factor
(``stablehlo.triangular_solve``, ``stablehlo.cholesky``), LU with partial pivoting and what rests
on it, Householder QR, Jacobi eigh and SVD (and what rests on them: pinv, matrix_sqrth,
polar, and PyTorch's own svdvals, matrix_rank, cond and nuclear norm), the matrix exponential
and LDL^T with Bunch-Kaufman pivoting. The algorithms are StableHLO programs, as XLA's TPU
backend writes them, so the same lowering runs on every PJRT device. There are no loops in
the IR: iterative algorithms are unrolled a fixed number of times (the bounds are stated in
each section), so the graph grows with the matrix size; they are meant for the small matrices
models carry."""

from __future__ import annotations

import math

import torch


# ---- linear algebra on the Cholesky factor and triangular solves -----------------------------


def _triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    # The deprecated form: (solution, a copy of the coefficients broadcast to the batch).
    coefficient = a.mT if transpose else a
    x = torch.linalg.solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return x, a.expand(*x.shape[:-2], *a.shape[-2:]).clone()


def _cholesky_solve(b, factor, upper=False):
    # A = L L^H (or U^H U): two triangular solves.
    lower = factor.mT if upper else factor
    y = torch.linalg.solve_triangular(lower, b, upper=False)
    return torch.linalg.solve_triangular(lower.mT, y, upper=True)


def _cholesky_inverse(factor, upper=False):
    eye = torch.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
    return _cholesky_solve(eye.expand(factor.shape), factor, upper)


# ---- LU with partial pivoting, and what rests on it ------------------------------------------
#
# LAPACK's getrf unrolled over the columns (n steps of a pivot search by argmax, a row swap by
# gather and a rank-1 update), so the pivots are eager's: the first largest magnitude of each
# column. The graph grows with n: meant for the small matrices models carry (camera and
# coordinate transforms, small solves); a large n compiles slowly.


def _lu_steps(a):
    """``(lu, perm, pivots, info)``: packed factors (L's unit diagonal implied), the row
    permutation (``a[perm] = L U``), LAPACK's 1-based i32 pivots and info (1 + the first
    zero pivot's column, 0 when none)."""
    m, n = a.shape[-2], a.shape[-1]
    rows = torch.arange(m, device=a.device)
    lu = a.clone()
    perm = rows.expand(*a.shape[:-2], m)
    pivots, info = [], torch.zeros(a.shape[:-2], dtype=torch.int32, device=a.device)
    for k in range(min(m, n)):
        p = lu[..., k:, k].abs().argmax(-1) + k
        pivots.append(p)
        pk = p.unsqueeze(-1)
        swap = torch.where(rows == k, pk, torch.where(rows == pk, torch.full_like(pk, k), rows))
        lu = lu.gather(-2, swap.unsqueeze(-1).expand(lu.shape))
        perm = perm.gather(-1, swap)
        pivot = lu[..., k:k + 1, k:k + 1]
        zero = pivot == 0
        info = torch.where((info == 0) & zero[..., 0, 0], torch.full_like(info, k + 1), info)
        column = lu[..., k + 1:, k:k + 1]
        below = torch.where(zero, column, column / torch.where(zero, torch.ones_like(pivot), pivot))
        update = lu[..., k + 1:, k + 1:] - below * lu[..., k:k + 1, k + 1:]
        lu = torch.cat([lu[..., :k + 1, :], torch.cat([lu[..., k + 1:, :k], below, update], -1)], -2)
    if pivots:
        pivots = torch.stack(pivots, -1).to(torch.int32) + 1
    else:
        pivots = torch.zeros(*a.shape[:-2], 0, dtype=torch.int32, device=a.device)
    return lu, perm, pivots, info


def _lu_factor_ex(a, pivot=True, check_errors=False):
    if not pivot:
        return NotImplemented
    lu, _, pivots, info = _lu_steps(a)
    return lu, pivots, info


def _unpack(lu):
    """L (unit lower, m x k) and U (upper, k x n) of packed factors."""
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    eye = torch.eye(m, k, dtype=lu.dtype, device=lu.device)
    return lu[..., :, :k].tril(-1) + eye, lu[..., :k, :].triu()


def _permutation_matrix(perm, dtype):
    """P with ``P[perm[i], i] = 1``, so that ``A = P L U`` when ``A[perm] = L U``."""
    m = perm.shape[-1]
    return (perm.unsqueeze(-2) == torch.arange(m, device=perm.device).unsqueeze(-1)).to(dtype)


def _linalg_lu(a, pivot=True):
    if not pivot:
        return NotImplemented
    lu, perm, _, _ = _lu_steps(a)
    lower, upper = _unpack(lu)
    return _permutation_matrix(perm, a.dtype), lower, upper


def _perm_of_pivots(pivots, m: int):
    """The row permutation LAPACK's 1-based ``pivots`` describe (swaps applied in order)."""
    rows = torch.arange(m, device=pivots.device)
    perm = rows.expand(*pivots.shape[:-1], m)
    for k in range(pivots.shape[-1]):
        pk = (pivots[..., k:k + 1] - 1).to(torch.int64)
        at_k, at_p = perm[..., k:k + 1], perm.gather(-1, pk)
        perm = torch.where(rows == k, at_p, torch.where(rows == pk, at_k, perm))
    return perm


def _lu_unpack(lu, pivots, unpack_data=True, unpack_pivots=True):
    m = lu.shape[-2]
    lower, upper = _unpack(lu)
    perm = _perm_of_pivots(pivots, m)
    return _permutation_matrix(perm, lu.dtype), lower, upper


def _lu_solve_left(lu, perm, b, adjoint: bool):
    """X with ``A X = B`` (``A^H X = B`` when ``adjoint``), ``A[perm] = L U``."""
    if not adjoint:
        pb = b.gather(-2, perm.unsqueeze(-1).expand(*perm.shape, b.shape[-1]))
        y = torch.linalg.solve_triangular(lu, pb, upper=False, unitriangular=True)
        return torch.linalg.solve_triangular(lu, y, upper=True)
    y = torch.linalg.solve_triangular(lu.mT, b, upper=False)
    z = torch.linalg.solve_triangular(lu.mT, y, upper=True, unitriangular=True)
    inverse = torch.argsort(perm, -1)
    return z.gather(-2, inverse.unsqueeze(-1).expand(*inverse.shape, z.shape[-1]))


def _lu_solve(lu, perm, b, left: bool, adjoint: bool):
    if left:
        return _lu_solve_left(lu, perm, b, adjoint)
    # X A = B  <=>  A^T X^T = B^T
    return _lu_solve_left(lu, perm, b.mT, not adjoint).mT


def _broadcast_batch(a, b, left: bool):
    """``a`` and ``b`` with their batch dims broadcast (b a vector when it has one dim less)."""
    vector = b.dim() == a.dim() - 1 and left
    if vector:
        b = b.unsqueeze(-1)
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:]), vector


def _linalg_lu_solve(lu, pivots, b, *, left=True, adjoint=False):
    lu, b, _ = _broadcast_batch(lu, b, True)
    perm = _perm_of_pivots(pivots.expand(*lu.shape[:-2], pivots.shape[-1]), lu.shape[-2])
    return _lu_solve(lu, perm, b, left, adjoint)


def _linalg_solve_ex(a, b, *, left=True, check_errors=False):
    lu, perm, pivots, info = _lu_steps(a)
    la, bb, vector = _broadcast_batch(lu, b, left)
    pa = perm.expand(*la.shape[:-2], perm.shape[-1])
    x = _lu_solve(la, pa, bb, left, False)
    return (x.squeeze(-1) if vector else x), lu, pivots, info


def _linalg_inv_ex(a, *, check_errors=False):
    lu, perm, _, info = _lu_steps(a)
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape)
    return _lu_solve(lu, perm, eye, True, False), info


def _det_parts(a):
    lu, perm, pivots, _ = _lu_steps(a)
    diagonal = lu.diagonal(dim1=-2, dim2=-1)
    swaps = (pivots != torch.arange(1, pivots.shape[-1] + 1, device=a.device, dtype=torch.int32)).sum(-1)
    sign = 1 - 2 * (swaps % 2).to(a.dtype)
    return lu, pivots, diagonal, sign


def _linalg_det(a):
    lu, pivots, diagonal, sign = _det_parts(a)
    return sign * diagonal.prod(-1), lu, pivots


def _linalg_slogdet(a):
    lu, pivots, diagonal, sign = _det_parts(a)
    sign = sign * torch.sign(diagonal).prod(-1)
    return sign, diagonal.abs().log().sum(-1), lu, pivots


# ---- Householder QR ------------------------------------------------------------------------
#
# LAPACK's geqr2 unrolled over the columns: column j's reflector H_j = I - tau v v^T (v[j] = 1,
# zeros above) maps A[j:, j] to beta e_j with dlarfg's conventions (beta = -sign(alpha) *
# ||A[j:, j]||, tau = (beta - alpha) / beta, v = x / (alpha - beta); tau = 0 and H = I when
# the column below the diagonal is zero), so R, tau and the stored reflectors are eager's,
# signs included. min(m, n) steps, each a norm, a vector-matrix product and a rank-1 update.
# Every step is the same computation: the trailing matrix is held with its pivot at (0, 0)
# (the finished row and column rotated to the end as zeros), and the results collect in
# buffers rotated along with it, put back in place once at the end. XLA then compiles one
# set of kernels for all steps (steps that differ, indexing column j, cost a compile each).
# orgqr (householder_product) and ormqr walk the stored reflectors the same way.


def _flat(x, tail: int):
    """``x`` with its batch dims flattened to one (``tail`` trailing dims kept)."""
    lead = x.shape[:x.dim() - tail]
    return x.reshape(math.prod(lead), *x.shape[x.dim() - tail:])


def _push(buffer, item, dim: int):
    """``buffer`` with its first entry along ``dim`` dropped and ``item`` appended."""
    return torch.cat([buffer.narrow(dim, 1, buffer.shape[dim] - 1), item], dim)


def _rotate_left(x, dim: int, by: int = 1):
    """``x`` rotated by ``by`` towards the front along ``dim`` (entry ``by`` comes first)."""
    size = x.shape[dim]
    by %= max(size, 1)
    if by == 0:
        return x
    return torch.cat([x.narrow(dim, by, size - by), x.narrow(dim, 0, by)], dim)


def _geqrf_steps(a):
    """``(packed, tau)`` of ``(B, m, n)`` ``a`` as LAPACK's geqrf: R on and above the
    diagonal, the reflectors' ``v`` (unit diagonal element implied) below it, their ``tau``."""
    batch, m, n = a.shape
    k = min(m, n)
    if k == 0:
        return a, a.new_zeros(batch, 0)
    x = a
    zero = a.new_zeros(batch, 1)
    rows_of_r, reflectors, taus = a.new_zeros(batch, k, n), a.new_zeros(batch, k, m), a.new_zeros(batch, k)
    for _ in range(k):
        col = x[:, :, 0]
        alpha, rest = col[:, :1], col[:, 1:]
        xnorm = (rest * rest).sum(-1, keepdim=True).sqrt()
        beta = -torch.copysign(torch.hypot(alpha, xnorm), alpha)
        trivial = xnorm == 0
        tau = torch.where(trivial, zero, (beta - alpha) / beta)
        v = torch.cat([zero + 1, rest * torch.where(trivial, zero, 1 / (alpha - beta))], -1)
        x = x - (tau * v).unsqueeze(-1) * (v.unsqueeze(-1) * x).sum(1, keepdim=True)
        row = torch.cat([torch.where(trivial, alpha, beta), x[:, 0, 1:]], -1)
        # Collect (buffers rotated along with x), then drop the finished row and column.
        rows_of_r = _rotate_left(_push(rows_of_r, row.unsqueeze(1), 1), 2)
        reflectors = _rotate_left(_push(reflectors, v.unsqueeze(1), 1), 2)
        taus = _push(taus, tau, 1)
        x = torch.cat([x[:, 1:, 1:], x.new_zeros(batch, m - 1, 1)], 2)
        x = torch.cat([x, x.new_zeros(batch, 1, n)], 1)
    r = _rotate_left(rows_of_r, 2, -k)
    v = _rotate_left(reflectors, 2, -k).mT
    if m > k:
        r = torch.cat([r, r.new_zeros(batch, m - k, n)], 1)
    if n > k:
        v = torch.cat([v, v.new_zeros(batch, m, n - k)], 2)
    return r.triu() + v.tril(-1), taus


def _geqrf(a):
    if a.is_complex():
        return NotImplemented
    packed, tau = _geqrf_steps(_flat(a, 2))
    return packed.reshape(a.shape), tau.reshape(*a.shape[:-2], tau.shape[-1])


def _reflectors(packed, k: int):
    """The first ``k`` reflectors' ``v`` as columns (``(B, m, k)``: 1 on the diagonal, the
    stored part below, 0 above)."""
    m = packed.shape[1]
    return packed[:, :, :k].tril(-1) + torch.eye(m, k, dtype=packed.dtype, device=packed.device)


def _apply_reflectors(packed, tau, c, left: bool, forward: bool):
    """``c`` with the reflectors ``H_i = I - tau_i v_i v_i^T`` applied from the left
    (``H c``) or the right (``c H``), the first reflector first when ``forward``. The next
    reflector always sits in the same slot (first or last) of the rotated buffers."""
    k = tau.shape[-1]
    vs = _reflectors(packed, k)
    slot = 0 if forward else k - 1
    for _ in range(k):
        v, t = vs[:, :, slot], tau[:, slot:slot + 1]
        if left:
            c = c - (t * v).unsqueeze(-1) * (v.unsqueeze(-1) * c).sum(1, keepdim=True)
        else:
            c = c - (c * v.unsqueeze(1)).sum(2, keepdim=True) * (t * v).unsqueeze(1)
        step = 1 if forward else -1
        vs, tau = _rotate_left(vs, 2, step), _rotate_left(tau, 1, step)
    return c


def _householder_product_impl(packed, tau):
    """The first ``n`` columns of ``H_0 H_1 ... H_{k-1}`` (LAPACK's orgqr) of ``(B, m, n)``
    reflectors: applied to the identity from the last, as orgqr accumulates them."""
    batch, m, n = packed.shape
    q = torch.eye(m, n, dtype=packed.dtype, device=packed.device).expand(batch, m, n)
    return _apply_reflectors(packed, tau, q, left=True, forward=False)


def _householder_product(a, tau):
    if a.is_complex():
        return NotImplemented
    batch = torch.broadcast_shapes(a.shape[:-2], tau.shape[:-1])
    a = _flat(a.expand(*batch, *a.shape[-2:]), 2)
    q = _householder_product_impl(a, _flat(tau.expand(*batch, tau.shape[-1]), 1))
    return q.reshape(*batch, *q.shape[1:])


def _ormqr(a, tau, c, left=True, transpose=False):
    # Q = H_0 ... H_{k-1} applied without forming it: Q C and C Q^T apply the last reflector
    # first, Q^T C and C Q the first.
    if a.is_complex() or c.is_complex():
        return NotImplemented
    batch = torch.broadcast_shapes(a.shape[:-2], tau.shape[:-1], c.shape[:-2])
    a = _flat(a.expand(*batch, *a.shape[-2:]), 2)
    tau = _flat(tau.expand(*batch, tau.shape[-1]), 1)
    c = _flat(c.expand(*batch, *c.shape[-2:]), 2)
    out = _apply_reflectors(a, tau, c, left, forward=left == transpose)
    return out.reshape(*batch, *out.shape[1:])


def _linalg_qr(a, mode="reduced"):
    if a.is_complex():
        return NotImplemented
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    packed, tau = _geqrf_steps(_flat(a, 2))
    batch = a.shape[:-2]
    if mode == "r":
        return a.new_zeros(0), packed[:, :k, :].triu().reshape(*batch, k, n)
    if mode == "complete":
        if n < m:
            square = torch.cat([packed, packed.new_zeros(packed.shape[0], m, m - n)], -1)
        else:
            square = packed[:, :, :m]
        return _householder_product_impl(square, tau).reshape(*batch, m, m), packed.triu().reshape(a.shape)
    q = _householder_product_impl(packed[:, :, :k], tau)
    return q.reshape(*batch, m, k), packed[:, :k, :].triu().reshape(*batch, k, n)


# ---- Jacobi: the symmetric eigensolver and the SVD ------------------------------------------
#
# Jacobi methods in the parallel (round-robin) ordering, as XLA's TPU backend writes eigh and
# svd. The matrix is held so that each round rotates the n/2 disjoint pairs (i, n/2 + i) at
# once; between rounds its rows and columns move to the next round's pairing (a fixed
# permutation P: one slot stays, the others cycle, so n - 1 rounds meet every pair once and
# restore the order). A round is one small matrix G = J P, the rotations times P, built from
# the rotations' (c, s) by a product with a constant map, and the update G^T A G (eigh,
# two-sided) or A G (svd, one-sided on R^T of a QR): a few ops per round, products fxhlo
# lowers at full precision. Odd n gets a zero row/column that no rotation moves. The sweep
# count is fixed (no loops in the IR): convergence is quadratic, and _jacobi_sweeps reaches
# eager's accuracy on random, clustered, ill-conditioned (1e-6 / 1e-12) and rank-deficient
# matrices for n <= 32 in float32 and float64, with a sweep to spare. The graph holds
# sweeps * (n - 1) rounds (n = 16: 7 sweeps, 105 rounds in float32; 10, 150 in float64):
# meant for the small matrices models carry; larger n compiles slowly.


def _jacobi_sweeps(n: int, dtype) -> int:
    """Sweeps of the parallel-ordered Jacobi method for an ``n x n`` matrix (even ``n``): one
    for 2 x 2 (a single exact rotation), else ``log2(n) + 3`` (float32) or ``+ 6`` (float64),
    one more than the measured need."""
    if n <= 2:
        return 1
    return (n - 1).bit_length() + (6 if dtype == torch.float64 else 3)


def _next_round(top, bottom, dim: int):
    """The halves ``top`` and ``bottom`` (pairs ``(top[i], bottom[i])``) along ``dim`` in the
    next round's order: top[0] stays, the others cycle ``bottom[0] -> top[1] -> ... ->
    top[h-1] -> bottom[h-1] -> ... -> bottom[0]``."""
    h = top.shape[dim]
    if h == 1:
        return torch.cat([top, bottom], dim)
    return torch.cat([top.narrow(dim, 0, 1), bottom.narrow(dim, 0, 1), top.narrow(dim, 1, h - 2),
                      bottom.narrow(dim, 1, h - 1), top.narrow(dim, h - 1, 1)], dim)


def _next_order(order: list) -> list:
    """:func:`_next_round` on a Python list (where each original index sits)."""
    h = len(order) // 2
    top, bottom = order[:h], order[h:]
    if h == 1:
        return top + bottom
    return [top[0], bottom[0]] + top[1:h - 1] + bottom[1:h] + [top[h - 1]]


def _round_map(n: int, dtype, device):
    """The constant ``(n, n*n)`` map from ``cat([c, s])`` (the round's rotations) to the
    flattened ``G = J P``: ``J`` rotates each pair ``(p, q) = (i, h + i)`` by
    ``[[c, s], [-s, c]]`` (``J_pp = J_qq = c``, ``J_pq = s``, ``J_qp = -s``) and ``P`` moves
    the columns to the next round's order. G is linear in (c, s): the map is G of each basis
    vector."""
    h = n // 2
    eye = torch.eye(n, dtype=dtype, device=device)
    basis_c = torch.cat([eye[:, :h], eye[:, :h]], -1).unsqueeze(-2)
    basis_s = torch.cat([eye[:, h:], eye[:, h:]], -1).unsqueeze(-2)
    eye_h, zero_h = eye[:h, :h], torch.zeros(h, h, dtype=dtype, device=device)
    skew = torch.cat([torch.cat([zero_h, eye_h], -1), torch.cat([-eye_h, zero_h], -1)], -2)
    g = eye * basis_c + skew * basis_s
    return (g @ _next_round(eye[:, :h], eye[:, h:], -1)).reshape(n, n * n)


def _round_matrix(c, s, mapping):
    """G = J P of the round whose rotations are ``c``, ``s`` (``(B, h)`` each)."""
    n = 2 * c.shape[-1]
    return torch.mm(torch.cat([c, s], -1), mapping).view(c.shape[0], n, n)


def _symmetric_rotation(app, aqq, apq, one):
    """``(c, s)`` of the Jacobi rotation ``J = [[c, s], [-s, c]]`` with ``J^T [[app, apq],
    [apq, aqq]] J`` diagonal: ``t = s / c`` the smaller root of ``t^2 + 2 theta t - 1``,
    ``theta = (aqq - app) / (2 apq)``, written without overflow (``t = 0`` when ``apq = 0``)."""
    d = aqq - app
    two = apq + apq
    den = d + torch.copysign(torch.hypot(d, two), d)
    t = two / torch.where(den == 0, one, den)
    c = torch.rsqrt(t * t + 1)
    return c, t * c


def _pad_even(a):
    """``a`` with a zero last row and column when ``n`` is odd (decoupled: no rotation moves it)."""
    n = a.shape[-1]
    if n % 2 == 0:
        return a
    a = torch.cat([a, torch.zeros_like(a[..., :1, :])], -2)
    return torch.cat([a, torch.zeros_like(a[..., :, :1])], -1)


def _padding_mask(n: int, padded: int, rounds: int, device):
    """Where (along the diagonal, after ``rounds`` rounds) the padding index sits: a bool
    ``(padded,)`` mask, all False when nothing was padded."""
    order = list(range(padded))
    for _ in range(rounds % max(padded - 1, 1)):
        order = _next_order(order)
    slot = order.index(n) if padded > n else -1
    return torch.arange(padded, device=device) == slot


def _sorted_columns(x, order, n: int):
    """Columns ``order`` (``(B, n)``) of ``x``'s first ``n`` rows (the padding row dropped)."""
    return x[:, :n, :].gather(-1, order.unsqueeze(-2).expand(x.shape[0], n, n))


def _jacobi_eigh(a, vectors: bool):
    """Eigenvalues (ascending) and, when ``vectors``, eigenvectors (columns) of the symmetric
    ``(B, n, n)`` ``a`` (``n >= 1``)."""
    n = a.shape[-1]
    x = _pad_even(a)
    batch, padded = x.shape[0], x.shape[-1]
    h = padded // 2
    v = torch.eye(padded, dtype=a.dtype, device=a.device).expand(x.shape) if vectors else None
    mapping = _round_map(padded, a.dtype, a.device)
    one = torch.ones(batch, h, dtype=a.dtype, device=a.device)
    rounds = _jacobi_sweeps(padded, a.dtype) * (padded - 1)
    for _ in range(rounds):
        d = x.diagonal(dim1=-2, dim2=-1)
        c, s = _symmetric_rotation(d[:, :h], d[:, h:], x.diagonal(h, -2, -1), one)
        g = _round_matrix(c, s, mapping)
        x = torch.bmm(torch.bmm(g.mT, x), g)
        if vectors:
            v = torch.bmm(v, g)
    values = x.diagonal(dim1=-2, dim2=-1)
    # The padding's eigenvalue (0) sorts last, then is dropped.
    pad = _padding_mask(n, padded, rounds, a.device)
    values, order = torch.sort(torch.where(pad, torch.full_like(values, float("inf")), values), dim=-1)
    values, order = values[:, :n], order[:, :n]
    return values, _sorted_columns(v, order, n) if vectors else None


def _symmetrize(a, upper: bool):
    """The symmetric matrix that one triangle of ``a`` stands for."""
    if upper:
        return a.triu() + a.triu(1).mT
    return a.tril() + a.tril(-1).mT


def _eigh_impl(a, upper: bool, vectors: bool):
    """``(eigenvalues, eigenvectors or None)`` of the symmetric matrix one triangle of ``a``
    stands for, batch dims kept."""
    n = a.shape[-1]
    if n == 0:
        return a.new_zeros(*a.shape[:-1]), a.new_zeros(a.shape) if vectors else None
    values, v = _jacobi_eigh(_flat(_symmetrize(a, upper), 2), vectors)
    values = values.reshape(*a.shape[:-1])
    return values, v.reshape(a.shape) if vectors else None


def _linalg_eigh(a, UPLO="L", compute_v=True):  # noqa: N803 (ATen's argument name)
    if a.is_complex():
        return NotImplemented
    values, vectors = _eigh_impl(a, UPLO == "U", compute_v)
    if not compute_v:
        vectors = torch.zeros(0, dtype=a.dtype, device=a.device)
    return values, vectors


def _jacobi_svd(a, vectors: bool):
    """Singular values (descending) and, when ``vectors``, the orthogonal columns ``A V``
    (``U S``) and ``V``, of the ``(B, m, n)`` ``a`` (``m >= n >= 1``): one-sided Jacobi
    (Hestenes), rotating column pairs of ``a`` until they are orthogonal (their 2x2 Gram
    matrix diagonalized, the parallel ordering and counts of :func:`_jacobi_eigh`)."""
    n = a.shape[-1]
    x = a if n % 2 == 0 else torch.cat([a, torch.zeros_like(a[..., :1])], -1)
    batch, padded = x.shape[0], x.shape[-1]
    h = padded // 2
    v = torch.eye(padded, dtype=a.dtype, device=a.device).expand(batch, padded, padded) if vectors else None
    mapping = _round_map(padded, a.dtype, a.device)
    one = torch.ones(batch, h, dtype=a.dtype, device=a.device)
    rounds = _jacobi_sweeps(padded, a.dtype) * (padded - 1)
    for _ in range(rounds):
        xp, xq = x[..., :h], x[..., h:]
        c, s = _symmetric_rotation((xp * xp).sum(-2), (xq * xq).sum(-2), (xp * xq).sum(-2), one)
        g = _round_matrix(c, s, mapping)
        x = torch.bmm(x, g)
        if vectors:
            v = torch.bmm(v, g)
    norms = torch.linalg.vector_norm(x, dim=-2)
    # The padding column (0) sorts last, then is dropped.
    pad = _padding_mask(n, padded, rounds, a.device)
    values, order = torch.sort(torch.where(pad, torch.full_like(norms, -1.0), norms), dim=-1, descending=True)
    values, order = values[:, :n], order[:, :n]
    if not vectors:
        return values, None, None
    columns = x.gather(-1, order.unsqueeze(-2).expand(batch, x.shape[-2], n))
    return values, columns, _sorted_columns(v, order, n)


def _orthonormal_basis(x):
    """Orthonormal columns spanning ``x``'s (``(B, n, n)``, orthogonal columns in descending
    norm): the Householder Q, each column's sign taken from R's diagonal, so that a nonzero
    column of ``x`` gives itself normalized and a zero one a completion of the basis."""
    packed, tau = _geqrf_steps(x)
    q = _householder_product_impl(packed, tau)
    diagonal = packed.diagonal(dim1=-2, dim2=-1)
    return q * torch.where(diagonal < 0, -torch.ones_like(diagonal), torch.ones_like(diagonal)).unsqueeze(-2)


def _svd_impl(a, full_matrices: bool, vectors: bool):
    """``(U, S, V)`` (``V`` not transposed; ``U``, ``V`` None unless ``vectors``) of ``a``
    (any batch dims). Householder QR first (of ``a^T`` when wide), then one-sided Jacobi on
    ``R^T``, whose graded columns converge in fewer sweeps than ``a``'s (Drmac and Veselic's
    preconditioning): ``R^T V_J = W S`` gives ``a = (Q V_J) S W^T``, ``W`` the orthonormal
    basis of ``W S`` (completed where singular values are 0); ``U`` completed to ``m x m`` by
    Q's other columns for ``full_matrices``."""
    m, n = a.shape[-2], a.shape[-1]
    if m < n:
        u, s, v = _svd_impl(a.mT, full_matrices, vectors)
        return v, s, u
    batch = a.shape[:-2]
    if n == 0:
        if not vectors:
            return None, a.new_zeros(*batch, 0), None
        cols = m if full_matrices else 0
        u = torch.eye(m, cols, dtype=a.dtype, device=a.device).expand(*batch, m, cols)
        return u, a.new_zeros(*batch, 0), a.new_zeros(*batch, 0, 0)
    packed, tau = _geqrf_steps(_flat(a, 2))
    s, ws, vj = _jacobi_svd(packed[:, :n, :].triu().mT, vectors)
    s = s.reshape(*batch, n)
    if not vectors:
        return None, s, None
    if full_matrices and m > n:
        packed = torch.cat([packed, packed.new_zeros(packed.shape[0], m, m - n)], -1)
    q = _householder_product_impl(packed, tau)
    u = torch.cat([torch.bmm(q[..., :n], vj), q[..., n:]], -1)
    return u.reshape(*batch, m, u.shape[-1]), s, _orthonormal_basis(ws).reshape(*batch, n, n)


def _linalg_svd(a, full_matrices=False, compute_uv=True, *, driver=None):
    if a.is_complex():
        return NotImplemented
    u, s, v = _svd_impl(a, full_matrices, compute_uv)
    if not compute_uv:
        empty = torch.zeros(0, dtype=a.dtype, device=a.device)
        return empty, s, empty
    return u, s, v.mT


def _linalg_pinv(a, *, atol=None, rtol=None, hermitian=False):
    # ATen's linalg_pinv: singular values (|eigenvalues| when hermitian) at most
    # max(atol, rtol * largest) are dropped; rtol defaults to eps * max(m, n) without atol
    # (0 when atol > 0). Tolerances are compared in a's real dtype.
    if a.is_complex():
        return NotImplemented
    m, n = a.shape[-2], a.shape[-1]
    if a.numel() == 0:
        return a.new_zeros(*a.shape[:-2], n, m)
    dtype = a.dtype
    zero = torch.zeros((), dtype=dtype, device=a.device)
    atol_t = zero if atol is None else atol.to(dtype)
    if rtol is not None:
        rtol_t = rtol.to(dtype)
    else:
        default = torch.full((), torch.finfo(dtype).eps * max(m, n), dtype=dtype, device=a.device)
        rtol_t = default if atol is None else torch.where(atol_t > 0, zero, default)
    if hermitian:
        values, vectors = _eigh_impl(a, False, True)
        size = values.abs()
        largest = size.amax(-1, keepdim=True)
    else:
        u, values, v = _svd_impl(a, False, True)
        size = values
        largest = values[..., :1]
    tol = torch.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * largest)
    inverse = torch.where(size > tol, 1 / values, torch.zeros_like(values))
    if hermitian:
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mT
    return (v * inverse.unsqueeze(-2)) @ u.mT


def _linalg_matrix_sqrth(a):
    # ATen's: V diag(sqrt(max(w, 0))) V^H from eigh of the lower triangle.
    if a.is_complex():
        return NotImplemented
    if a.shape[-1] == 0:
        return a.clone()
    values, vectors = _eigh_impl(a, False, True)
    return (vectors * values.clamp_min(0).sqrt().unsqueeze(-2)) @ vectors.mT


def _linalg_polar(a):
    # ATen's CPU path: A = W S V^T gives U = W V^T and H = V S V^T, symmetrized.
    if a.is_complex():
        return NotImplemented
    n = a.shape[-1]
    if a.numel() == 0:
        return a.clone(), a.new_zeros(*a.shape[:-2], n, n)
    w, s, v = _svd_impl(a, False, True)
    h = (v * s.unsqueeze(-2)) @ v.mT
    return w @ v.mT, (h + h.mT) / 2


# ---- the matrix exponential -----------------------------------------------------------------
#
# ATen's CPU kernel (Bader, Blanes, Casas 2019, optimized Taylor polynomials of degree 1, 2,
# 4, 8, 12, 18): the degree is chosen per matrix by its 1-norm, and past the last bound the
# matrix is scaled by 2^-s and the degree-18 result squared s times. Here every candidate is
# computed and the right one selected per batch element; the scaling and the squarings are
# masked steps, at most _MAX_SQUARINGS of them (1-norms up to theta_18 * 2^64, ~5e19, beyond
# which eager's result is inf or 0 in float32 for any matrix that is not nilpotent).

_MAX_SQUARINGS = 64

# Upper 1-norm bounds of degrees 1, 2, 4, 8, 12, 18: float (float32) and double (the rest).
_EXP_THETAS = {
    "float": (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
              5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    "double": (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
               4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}

_SQRT_177 = 0.1330413469565007072504e+2
_T8_X3 = 2.0 / 3.0
_T8 = (
    _T8_X3 * ((1.0 + _SQRT_177) / 88.0),  # x1
    _T8_X3 * ((1.0 + _SQRT_177) / 352.0),  # x2
    (-271.0 + 29.0 * _SQRT_177) / (315.0 * _T8_X3),  # x4
    (-11.0 + 11.0 * _SQRT_177) / (1260.0 * _T8_X3),  # x5
    (-99.0 + 11.0 * _SQRT_177) / (5040.0 * _T8_X3),  # x6
    (89.0 - _SQRT_177) / (5040.0 * _T8_X3 * _T8_X3),  # x7 (x3^2: the paper's; older ATen had x3)
    (857.0 - 58.0 * _SQRT_177) / 630.0,  # y2
)

# Rows combine {I, A, A^2, A^3}.
_T12 = (
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359),
)

# Rows combine {I, A, A^2, A^3, A^6}.
_T18 = (
    (0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.0),
    (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04),
    (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05),
)


def _combine(coefficients, powers):
    """``sum_j coefficients[j] * powers[j]`` (a row of ATen's _compute_linear_combination)."""
    out = powers[0] * coefficients[0]
    for c, p in zip(coefficients[1:], powers[1:]):
        out = out + p * c
    return out


def _exp_taylor(a, eye):
    """ATen's degree 1, 2, 4, 8 and 12 approximations of ``exp(a)`` (``(B, n, n)``)."""
    mm = torch.bmm
    a2 = mm(a, a)
    t1 = eye + a
    t2 = eye + a + a2 / 2.0
    t4 = eye + a + mm(a2, _combine((1 / 2.0, 1 / 6.0, 1 / 24.0), (eye, a, a2)))
    x1, x2, x4, x5, x6, x7, y2 = _T8
    a4 = mm(a2, a * x1 + a2 * x2)
    a8 = mm(a2 * _T8_X3 + a4, _combine((x4, x5, x6, x7), (eye, a, a2, a4)))
    t8 = eye + a + a2 * y2 + a8
    powers = (eye, a, a2, mm(a2, a))
    b = [_combine(row, powers) for row in _T12]
    b2 = b[2] + mm(b[3], b[3])
    t12 = b[0] + mm(b[1] + b2, b2)
    return t1, t2, t4, t8, t12


def _exp_t18(a, eye):
    """ATen's degree 18 approximation of ``exp(a)`` (``(B, n, n)``)."""
    mm = torch.bmm
    a2 = mm(a, a)
    a3 = mm(a2, a)
    powers = (eye, a, a2, a3, mm(a3, a3))
    b = [_combine(row, powers) for row in _T18]
    a9 = b[3] + mm(b[0], b[4])
    return b[1] + mm(b[2] + a9, a9)


def _linalg_matrix_exp(a):
    if a.is_complex():
        return NotImplemented
    n = a.shape[-1]
    if n == 0:
        return a.clone()
    if n == 1:
        return a.exp()
    thetas = _EXP_THETAS["float" if a.dtype == torch.float32 else "double"]
    x = _flat(a, 2)
    eye = torch.eye(n, dtype=a.dtype, device=a.device).expand(x.shape)
    norm = x.abs().sum(-2).amax(-1)[:, None, None]
    # Scaling: s = max(0, ceil(log2(norm / theta_18))) halvings, exact: one factor 2^-(2^b)
    # per binary digit b of s.
    s = torch.ceil(torch.log2(norm / thetas[5])).clamp(0, _MAX_SQUARINGS)
    scaled = x
    for b in range(_MAX_SQUARINGS.bit_length()):
        digit = torch.remainder(torch.floor(s * 0.5 ** b), 2) == 1
        scaled = torch.where(digit, scaled * 0.5 ** (2 ** b), scaled)
    out = _exp_t18(scaled, eye)
    # s squarings, masked per matrix: a countdown, so that every step is the same computation
    # (XLA compiles its kernels once).
    for _ in range(_MAX_SQUARINGS):
        out = torch.where(s > 0, torch.bmm(out, out), out)
        s = s - 1
    # Smaller norms take the lowest degree whose bound they meet (degree 18 from theta_12 on).
    t1, t2, t4, t8, t12 = _exp_taylor(x, eye)
    out = torch.where(norm < thetas[4], t12, out)
    for bound, t in ((thetas[3], t8), (thetas[2], t4), (thetas[1], t2), (thetas[0], t1)):
        out = torch.where(norm <= bound, t, out)
    return out.reshape(a.shape)


# ---- LDL^T with Bunch-Kaufman pivoting -----------------------------------------------------
#
# LAPACK's sytf2 (lower) unrolled: each matrix of the batch sits at its own column k and
# takes a 1x1 or a 2x2 pivot (k advances by 1 or 2), so every step is written with one-hot
# masks of k and of the pivot row, for n steps (the most a matrix can need; finished
# matrices are left alone). The pivot choice is LAPACK's (alpha = (1 + sqrt(17)) / 8, the
# first largest magnitude), so LD, pivots and info are eager's. sytrs solves with them the
# same way. Meant for small matrices: n steps of O(n^2) masked work each.

_BK_ALPHA = (1 + math.sqrt(17)) / 8


def _onehot(index, n: int, dtype):
    """``(B, n)`` one-hot rows of ``index`` (``(B,)`` i64) in ``dtype``."""
    return (torch.arange(n, device=index.device) == index.unsqueeze(-1)).to(dtype)


def _swap_rows_cols(w, i, j):
    """``w`` (``(B, n, n)``) with rows and columns ``i`` and ``j`` (``(B,)``) exchanged."""
    n = w.shape[-1]
    rows = torch.arange(n, device=w.device)
    ii, jj = i.unsqueeze(-1), j.unsqueeze(-1)
    perm = torch.where(rows == ii, jj, torch.where(rows == jj, ii, rows))
    w = w.gather(1, perm.unsqueeze(-1).expand(w.shape))
    return w.gather(2, perm.unsqueeze(1).expand(w.shape))


def _sytf2(a):
    """``(LD, pivots, info)`` of ``(B, n, n)`` symmetric ``a`` (lower triangle read)."""
    batch, n, _ = a.shape
    dtype, device = a.dtype, a.device
    rows = torch.arange(n, device=device)
    w = a.tril() + a.tril(-1).mT
    ld = torch.zeros_like(a)
    pivots = torch.zeros(batch, n, dtype=torch.int64, device=device)
    info = torch.zeros(batch, dtype=torch.int64, device=device)
    k = torch.zeros(batch, dtype=torch.int64, device=device)
    lower = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    for _ in range(n):
        active = k < n
        kc = k.clamp(max=n - 1)
        ek = _onehot(kc, n, dtype)
        colk = (w * ek.unsqueeze(1)).sum(-1)
        akk = (colk * ek).sum(-1)
        absakk = akk.abs()
        below = rows > kc.unsqueeze(-1)
        magnitudes = torch.where(below, colk.abs(), torch.full_like(colk, -1.0))
        colmax, imax = magnitudes.max(-1)
        colmax = colmax.clamp(min=0)
        imax = torch.where(colmax > 0, imax, kc)
        eimax = _onehot(imax, n, dtype)
        rowi = (w * eimax.unsqueeze(1)).sum(-1)
        aii = (rowi * eimax).sum(-1)
        trailing = (rows >= kc.unsqueeze(-1)) & (rows != imax.unsqueeze(-1))
        rowmax = torch.where(trailing, rowi.abs(), torch.zeros_like(rowi)).amax(-1)
        singular = torch.maximum(absakk, colmax) == 0
        no_swap = singular | (absakk >= _BK_ALPHA * colmax)
        safe_rowmax = torch.where(rowmax == 0, torch.ones_like(rowmax), rowmax)
        no_swap = no_swap | (absakk >= _BK_ALPHA * colmax * (colmax / safe_rowmax))
        one_swap = ~no_swap & (aii.abs() >= _BK_ALPHA * rowmax)
        two = ~no_swap & ~one_swap & active
        kp = torch.where(no_swap, kc, imax)
        kk = kc + two.long()
        w = _swap_rows_cols(w, torch.where(active, kk, kc), torch.where(active, kp, kc))
        # 1x1 pivot: d = w[k, k], L's column x / d below, trailing update w - x (x / d)^T.
        ek1 = _onehot((kc + 1).clamp(max=n - 1), n, dtype)
        colk = (w * ek.unsqueeze(1)).sum(-1)
        colk1 = (w * ek1.unsqueeze(1)).sum(-1)
        d = (colk * ek).sum(-1)
        inv_d = 1 / torch.where(d == 0, torch.ones_like(d), d)
        x = torch.where(below, colk, torch.zeros_like(colk))
        update1 = x.unsqueeze(-1) * (-inv_d.unsqueeze(-1) * x).unsqueeze(1)
        l1 = x * inv_d.unsqueeze(-1)
        # 2x2 pivot (LAPACK's formulas): rows below k + 1 get wk, wkp1.
        d21 = (colk * ek1).sum(-1)
        safe_d21 = torch.where(d21 == 0, torch.ones_like(d21), d21)
        d11 = (colk1 * ek1).sum(-1) / safe_d21
        d22 = d / safe_d21
        t = 1 / (d11 * d22 - 1)
        d21 = t / safe_d21
        below2 = rows > (kc + 1).unsqueeze(-1)
        xk = torch.where(below2, colk, torch.zeros_like(colk))
        xk1 = torch.where(below2, colk1, torch.zeros_like(colk1))
        wk = d21.unsqueeze(-1) * (d11.unsqueeze(-1) * xk - xk1)
        wkp1 = d21.unsqueeze(-1) * (d22.unsqueeze(-1) * xk1 - xk)
        update2 = -(xk.unsqueeze(-1) * wk.unsqueeze(1) + xk1.unsqueeze(-1) * wkp1.unsqueeze(1))
        do1 = (active & ~two & ~singular)[:, None, None]
        do2 = two[:, None, None]
        # LAPACK updates the lower triangle only: the upper one mirrors it.
        upd = torch.where(do1, update1, torch.where(do2, update2, torch.zeros_like(update1)))
        upd = torch.where(lower, upd, torch.zeros_like(upd))
        w = w + upd + upd.tril(-1).mT
        # The finished columns of LD: k (and k + 1).
        col_k = torch.where(two.unsqueeze(-1), torch.where(below2, wk, colk),
                            torch.where(below, torch.where(singular.unsqueeze(-1), colk, l1), colk))
        col_k = torch.where(rows >= kc.unsqueeze(-1), col_k, torch.zeros_like(col_k))
        col_k1 = torch.where(below2, wkp1,
                             torch.where(rows == (kc + 1).unsqueeze(-1), colk1, torch.zeros_like(colk1)))
        ld = torch.where((active.unsqueeze(-1) & (ek > 0)).unsqueeze(1), col_k.unsqueeze(-1), ld)
        ld = torch.where((two.unsqueeze(-1) & (ek1 > 0)).unsqueeze(1), col_k1.unsqueeze(-1), ld)
        info = torch.where(active & singular & (info == 0), kc + 1, info)
        pivot = torch.where(two, -(kp + 1), kp + 1)
        at_pivot = (ek > 0) | (two.unsqueeze(-1) & (ek1 > 0))
        pivots = torch.where(active.unsqueeze(-1) & at_pivot, pivot.unsqueeze(-1), pivots)
        k = k + torch.where(active, 1 + two.long(), torch.zeros_like(k))
    return ld, pivots.to(torch.int32), info.to(torch.int32)


def _take_row(x, onehot):
    """Row ``onehot`` (``(B, n)``) of ``x`` (``(B, n, r)``): ``(B, r)``."""
    return (x * onehot.unsqueeze(-1)).sum(1)


def _swap_rows(x, i, j):
    """``x`` (``(B, n, r)``) with rows ``i`` and ``j`` (``(B,)``) exchanged."""
    rows = torch.arange(x.shape[1], device=x.device)
    ii, jj = i.unsqueeze(-1), j.unsqueeze(-1)
    perm = torch.where(rows == ii, jj, torch.where(rows == jj, ii, rows))
    return x.gather(1, perm.unsqueeze(-1).expand(x.shape))


def _sytrs(ld, pivots, b):
    """X with ``A X = B`` from sytf2's ``(LD, pivots)`` (``(B, n, n)``, ``(B, n)``; ``b``
    ``(B, n, r)``): LAPACK's sytrs, L D forwards then L^T backwards."""
    batch, n, _ = ld.shape
    dtype, device = ld.dtype, ld.device
    rows = torch.arange(n, device=device)
    pivots = pivots.to(torch.int64)
    k = torch.zeros(batch, dtype=torch.int64, device=device)
    for _ in range(n):
        active = k < n
        kc = k.clamp(max=n - 1)
        k1 = (kc + 1).clamp(max=n - 1)
        p = pivots.gather(1, kc.unsqueeze(-1)).squeeze(-1)
        two = active & (p < 0)
        kp = torch.where(p < 0, -p, p) - 1
        b = _swap_rows(b, torch.where(active, torch.where(two, k1, kc), kc), torch.where(active, kp, kc))
        ek, ek1 = _onehot(kc, n, dtype), _onehot(k1, n, dtype)
        colk = (ld * ek.unsqueeze(1)).sum(-1)
        colk1 = (ld * ek1.unsqueeze(1)).sum(-1)
        bk, bk1 = _take_row(b, ek), _take_row(b, ek1)
        # 1x1: rows below k lose L[:, k] b_k, then b_k /= d.
        below = (rows > kc.unsqueeze(-1)).to(dtype)
        d = (colk * ek).sum(-1)
        one1 = b - (colk * below).unsqueeze(-1) * bk.unsqueeze(1)
        one1 = torch.where((ek > 0).unsqueeze(-1), (bk * (1 / d).unsqueeze(-1)).unsqueeze(1), one1)
        # 2x2: rows below k + 1 lose L[:, k] b_k and L[:, k+1] b_k+1, then the 2x2 solve.
        below2 = (rows > k1.unsqueeze(-1)).to(dtype)
        two1 = b - (colk * below2).unsqueeze(-1) * bk.unsqueeze(1)
        two1 = two1 - (colk1 * below2).unsqueeze(-1) * bk1.unsqueeze(1)
        akm1k = (colk * ek1).sum(-1)
        akm1 = d / akm1k
        ak = (colk1 * ek1).sum(-1) / akm1k
        denom = (akm1 * ak - 1).unsqueeze(-1)
        bkm1, bkk = bk / akm1k.unsqueeze(-1), bk1 / akm1k.unsqueeze(-1)
        new_k = (ak.unsqueeze(-1) * bkm1 - bkk) / denom
        new_k1 = (akm1.unsqueeze(-1) * bkk - bkm1) / denom
        two1 = torch.where((ek > 0).unsqueeze(-1), new_k.unsqueeze(1), two1)
        two1 = torch.where((ek1 > 0).unsqueeze(-1), new_k1.unsqueeze(1), two1)
        b = torch.where(two[:, None, None], two1, torch.where(active[:, None, None], one1, b))
        k = k + torch.where(active, 1 + two.long(), torch.zeros_like(k))
    k = torch.full((batch,), n - 1, dtype=torch.int64, device=device)
    for _ in range(n):
        active = k >= 0
        kc = k.clamp(min=0)
        km1 = (kc - 1).clamp(min=0)
        p = pivots.gather(1, kc.unsqueeze(-1)).squeeze(-1)
        two = active & (p < 0)
        kp = torch.where(p < 0, -p, p) - 1
        ek, ekm1 = _onehot(kc, n, dtype), _onehot(km1, n, dtype)
        below = (rows > kc.unsqueeze(-1)).to(dtype)
        colk = (ld * ek.unsqueeze(1)).sum(-1) * below
        colkm1 = (ld * ekm1.unsqueeze(1)).sum(-1) * below
        # b_k -= L[k+1:, k]^T b[k+1:] (and b_k-1 with L[k+1:, k-1] for a 2x2 block).
        new_k = _take_row(b, ek) - (colk.unsqueeze(-1) * b).sum(1)
        new_km1 = _take_row(b, ekm1) - (colkm1.unsqueeze(-1) * b).sum(1)
        upd = torch.where((ek > 0).unsqueeze(-1), new_k.unsqueeze(1), b)
        upd = torch.where(((ekm1 > 0) & two.unsqueeze(-1)).unsqueeze(-1), new_km1.unsqueeze(1), upd)
        b = torch.where(active[:, None, None], upd, b)
        b = _swap_rows(b, kc, torch.where(active, kp, kc))
        k = k - torch.where(active, 1 + two.long(), torch.zeros_like(k))
    return b


def _linalg_ldl_factor_ex(a, *, hermitian=False, check_errors=False):
    # Real matrices: hermitian is symmetric (sytrf either way).
    if a.is_complex():
        return NotImplemented
    n = a.shape[-1]
    ld, pivots, info = _sytf2(_flat(a, 2))
    return ld.reshape(a.shape), pivots.reshape(*a.shape[:-2], n), info.reshape(a.shape[:-2])


def _linalg_ldl_solve(ld, pivots, b, *, hermitian=False):
    if ld.is_complex() or b.is_complex():
        return NotImplemented
    batch = torch.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    n = ld.shape[-1]
    x = _sytrs(_flat(ld.expand(*batch, n, n), 2), _flat(pivots.expand(*batch, n), 1),
               _flat(b.expand(*batch, *b.shape[-2:]), 2))
    return x.reshape(*batch, *b.shape[-2:])


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
    "triangular_solve.default": _triangular_solve,
    "cholesky_solve.default": _cholesky_solve,
    "cholesky_inverse.default": _cholesky_inverse,
    "linalg_lu_factor_ex.default": _lu_factor_ex,
    "linalg_lu.default": _linalg_lu,
    "lu_unpack.default": _lu_unpack,
    "linalg_lu_solve.default": _linalg_lu_solve,
    "_linalg_solve_ex.default": _linalg_solve_ex,
    "linalg_inv_ex.default": _linalg_inv_ex,
    "_linalg_det.default": _linalg_det,
    "_linalg_slogdet.default": _linalg_slogdet,
    "geqrf.default": _geqrf,
    "linalg_householder_product.default": _householder_product,
    "ormqr.default": _ormqr,
    "linalg_qr.default": _linalg_qr,
    "_linalg_eigh.default": _linalg_eigh,
    "_linalg_svd.default": _linalg_svd,
    "linalg_pinv.atol_rtol_tensor": _linalg_pinv,
    "linalg_matrix_sqrth.default": _linalg_matrix_sqrth,
    "linalg_polar.default": _linalg_polar,
    "linalg_matrix_exp.default": _linalg_matrix_exp,
    "linalg_ldl_factor_ex.default": _linalg_ldl_factor_ex,
    "linalg_ldl_solve.default": _linalg_ldl_solve,
}

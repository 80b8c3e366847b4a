"""Linear algebra written in ATen ops fxhlo lowers: triangular solves and the Cholesky factor
(``stablehlo.triangular_solve``, ``stablehlo.cholesky``), LU with partial pivoting and what rests
on it. The algorithms are StableHLO programs, as XLA's TPU backend writes them, so the same
lowering runs on every PJRT device."""

from __future__ import annotations

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
}

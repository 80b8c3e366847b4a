"""Complex numbers and Fourier transforms written in the forms fxhlo lowers.

fxhlo's IR has one transform, ``stablehlo.fft``: over the 1 to 3 innermost dims, in order,
unnormalized forward and divided by the signal size inverse (XLA's convention). ATen's
``_fft_c2c``/``_fft_r2c``/``_fft_c2r`` take any dims and three normalizations; the rules here
move the dims innermost, split more than three into passes (the transform is separable), scale
to ATen's normalization and move the dims back. A call already in XLA's form is left alone
(``NotImplemented``), and the importer maps it to the IR op.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten

# ATen's fft_norm_mode: none, by 1/sqrt(n), by 1/n.
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _trailing(x, dims) -> bool:
    """Whether ``dims`` are the innermost dims of ``x`` in order, 1 to 3 of them."""
    k = len(dims)
    return 1 <= k <= 3 and [d % x.dim() for d in dims] == list(range(x.dim() - k, x.dim()))


def _to_end(x, dims):
    """``x`` with ``dims`` moved innermost (in their order), and the permutation back."""
    dims = [d % x.dim() for d in dims]
    rest = [d for d in range(x.dim()) if d not in dims]
    perm = rest + dims
    back = [perm.index(d) for d in range(x.dim())]
    return x.permute(perm), back


def _scale(y, n: int, normalization: int, inverse_divided: bool):
    """Rescale a transform of signal size ``n`` to ATen's ``normalization``. ``inverse_divided``:
    ``y`` came from XLA's inverse, already divided by ``n``."""
    have = 1.0 / n if inverse_divided else 1.0
    want = {_NONE: 1.0, _BY_ROOT_N: 1.0 / math.sqrt(n), _BY_N: 1.0 / n}[normalization]
    factor = want / have if n else 1.0
    return y if factor == 1.0 else y * factor


def _c2c_innermost(x, k: int, forward: bool):
    """The transform over the ``k`` innermost dims, in passes of at most 3 (XLA's form: the
    inverse divided by the signal size)."""
    norm = _NONE if forward else _BY_N
    done = 0
    while done < k:
        step = min(3, k - done)
        if done:
            # Bring the next dims innermost: rotate the k transformed ones out of the way.
            x = x.movedim(list(range(x.dim() - done, x.dim())), list(range(x.dim() - k, x.dim() - k + done)))
        x = aten._fft_c2c.default(x, list(range(x.dim() - step, x.dim())), norm, forward)
        if done:
            x = x.movedim(list(range(x.dim() - k, x.dim() - k + done)), list(range(x.dim() - done, x.dim())))
        done += step
    return x


def _signal_size(x, dims) -> int:
    return math.prod(x.shape[d] for d in dims)


def _fft_c2c(x, dim, normalization, forward):
    if _trailing(x, dim) and normalization == (_NONE if forward else _BY_N):
        return NotImplemented
    if len(dim) == 0:
        return x.clone()
    n = _signal_size(x, dim)
    y, back = _to_end(x, dim)
    y = _c2c_innermost(y, len(dim), forward)
    return _scale(y, n, normalization, not forward).permute(back)


def _fft_r2c(x, dim, normalization, onesided):
    if _trailing(x, dim) and normalization == _NONE and onesided and len(dim) <= 3:
        return NotImplemented
    n = _signal_size(x, dim)
    y, back = _to_end(x, dim)
    k = len(dim)
    if not onesided:
        # The full spectrum: the complex transform of the real signal.
        y = _c2c_innermost(y.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64), k, True)
    else:
        # The real transform over the last dim (halved), the complex one over the others.
        y = aten._fft_r2c.default(y, [y.dim() - 1], _NONE, True)
        if k > 1:
            y = y.movedim(-1, -k)
            y = _c2c_innermost(y, k - 1, True)
            y = y.movedim(-k, -1)
    return _scale(y, n, normalization, False).permute(back)


def _fft_c2r(x, dim, normalization, last_dim_size):
    trailing = _trailing(x, dim) and normalization == _BY_N
    half = last_dim_size // 2 + 1
    if trailing and x.shape[dim[-1]] == half:
        return NotImplemented
    y, back = _to_end(x, dim)
    # Only the first n/2 + 1 entries of the halved dim are read (eager ignores the rest).
    y = y.narrow(-1, 0, min(half, y.shape[-1]))
    if y.shape[-1] < half:
        y = torch.cat([y, y.new_zeros(*y.shape[:-1], half - y.shape[-1])], -1)
    k = len(dim)
    if k > 1:
        y = y.movedim(-1, -k)
        y = _c2c_innermost(y, k - 1, False)
        y = y.movedim(-k, -1)
    y = aten._fft_c2r.default(y, [y.dim() - 1], _BY_N, last_dim_size)
    n = math.prod(x.shape[d] for d in dim[:-1]) * last_dim_size
    return _scale(y, n, normalization, True).permute(back)


def _polar(abs_, angle):
    return torch.complex(abs_ * torch.cos(angle), abs_ * torch.sin(angle))


def _view_as_complex(x):
    return torch.complex(x.select(-1, 0), x.select(-1, 1))


def _view_as_real(x):
    # prims' real/imag are values, not views (ATen's `real` is itself `view_as_real`).
    return torch.stack([torch.ops.prims.real.default(x), torch.ops.prims.imag.default(x)], -1)


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
    "_fft_c2c.default": _fft_c2c,
    "_fft_r2c.default": _fft_r2c,
    "_fft_c2r.default": _fft_c2r,
    "polar.default": _polar,
    "view_as_complex.default": _view_as_complex,
    "view_as_real.default": _view_as_real,
}

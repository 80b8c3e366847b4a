"""Resampling ops written in ATen ops fxhlo lowers (``_upsample_bilinear2d_aa``,
``grid_sampler_3d``)."""

from __future__ import annotations

import math
import struct

import torch


def _as_dtype(x: float, dtype: torch.dtype) -> float:
    """``x`` rounded to ``dtype`` (float32 or float64) as a Python float: ATen computes the
    resampling scale in the input's type before it enters any tensor arithmetic."""
    if dtype == torch.float64:
        return float(x)
    return struct.unpack("f", struct.pack("f", x))[0]


# ---- grid_sampler_3d -------------------------------------------------------------------------


def _clip_coordinates(x, size: int):
    """``min(size - 1, max(x, 0))`` with std::min/std::max's NaN handling (GridSampler.h):
    ``max`` keeps a NaN, ``min(limit, NaN)`` gives the limit."""
    x = torch.where(x < 0, torch.zeros_like(x), x)
    return torch.where(x < size - 1, x, torch.full_like(x, size - 1))


def _reflect_coordinates(x, twice_low: int, twice_high: int):
    """GridSampler.h's ``reflect_coordinates``: ``x`` folded into ``[low, high]``."""
    if twice_low == twice_high:
        return torch.zeros_like(x)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = (x - low).abs()
    extra = torch.fmod(x, span)
    # The number of flips, floor(x / span), taken from the exact remainder: x - extra is a
    # multiple of span, so rounding its quotient gives the count even where XLA divides by a
    # constant as a multiply by its reciprocal (a floor of that can disagree with the fmod and
    # put the point at the other end of the span).
    even = torch.remainder(torch.round((x - extra) / span), 2) == 0
    return torch.where(even, extra + low, (span - extra) + low)


def _grid_source_index(coord, size: int, padding_mode: int, align_corners: bool):
    """``grid_sampler_compute_source_index``: a grid coordinate in [-1, 1] to an input
    position, then border clipping (1) or reflection (2), in the input's dtype as ATen does."""
    if align_corners:
        coord = ((coord + 1) / 2) * (size - 1)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if padding_mode == 1:
        coord = _clip_coordinates(coord, size)
    elif padding_mode == 2:
        if align_corners:
            coord = _reflect_coordinates(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect_coordinates(coord, -1, 2 * size - 1)
        coord = _clip_coordinates(coord, size)
    return coord


def _grid_sampler_3d(a, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    # ATen's CPU kernel (GridSampler.cpp, grid_sampler_3d_cpu_impl): trilinear or nearest;
    # corners outside the input add nothing ("zeros" padding after the coordinate mapping).
    if interpolation_mode not in (0, 1):
        # Bicubic has no 5-d form (eager leaves the output uninitialized).
        return NotImplemented
    n, c, d, h, w = a.shape
    od, oh, ow = grid.shape[1:4]
    flat = a.reshape(n, c, d * h * w)
    ix = _grid_source_index(grid[..., 0], w, padding_mode, align_corners).reshape(n, 1, -1)
    iy = _grid_source_index(grid[..., 1], h, padding_mode, align_corners).reshape(n, 1, -1)
    iz = _grid_source_index(grid[..., 2], d, padding_mode, align_corners).reshape(n, 1, -1)

    def corner(x, y, z):
        """Input values at integer corners (float tensors), and whether each is inside."""
        inside = (x >= 0) & (x < w) & (y >= 0) & (y < h) & (z >= 0) & (z < d)
        # The flat index in int64: float16 and bfloat16 hold few integers exactly.
        x, y, z = (torch.where(inside, t, torch.zeros_like(t)).to(torch.int64) for t in (x, y, z))
        at = (z * h + y) * w + x
        return flat.gather(2, at.expand(n, c, at.shape[-1])), inside

    if interpolation_mode == 1:
        # std::nearbyint: half to even, as torch.round.
        value, inside = corner(torch.round(ix), torch.round(iy), torch.round(iz))
        out = torch.where(inside, value, torch.zeros_like(value))
        return out.reshape(n, c, od, oh, ow)

    x0, y0, z0 = torch.floor(ix), torch.floor(iy), torch.floor(iz)
    x1, y1, z1 = x0 + 1, y0 + 1, z0 + 1
    # The eight corners in the kernel's order (t/b: z, n/s: y, w/e: x) and its weight
    # products, each ((x-term * y-term) * z-term).
    corners = (
        (x0, y0, z0, ((x1 - ix) * (y1 - iy)) * (z1 - iz)),
        (x1, y0, z0, ((ix - x0) * (y1 - iy)) * (z1 - iz)),
        (x0, y1, z0, ((x1 - ix) * (iy - y0)) * (z1 - iz)),
        (x1, y1, z0, ((ix - x0) * (iy - y0)) * (z1 - iz)),
        (x0, y0, z1, ((x1 - ix) * (y1 - iy)) * (iz - z0)),
        (x1, y0, z1, ((ix - x0) * (y1 - iy)) * (iz - z0)),
        (x0, y1, z1, ((x1 - ix) * (iy - y0)) * (iz - z0)),
        (x1, y1, z1, ((ix - x0) * (iy - y0)) * (iz - z0)),
    )
    out = None
    for x, y, z, weight in corners:
        value, inside = corner(x, y, z)
        term = value * weight
        if out is None:
            out = torch.where(inside, term, torch.zeros_like(term))
        else:
            # Accumulated in order, skipping corners outside, as the kernel does.
            out = torch.where(inside, out + term, out)
    return out.reshape(n, c, od, oh, ow)


# ---- _upsample_bilinear2d_aa -----------------------------------------------------------------


def _floor_half_up(x):
    """``floor(x + 0.5)`` with the sum exact (ATen adds the 0.5 in double to a float value
    before truncating); exact for any float ``x``, negative ones included."""
    whole = torch.floor(x)
    return whole + ((x - whole) >= 0.5).to(x.dtype)


def _aa_weights(in_size: int, out_size: int, align_corners: bool, scale, dtype, device):
    """The ``[out_size, in_size]`` matrix of ATen's antialiased linear resampling along one
    axis (UpSampleKernel.cpp, ``_compute_indices_min_size_weights_aa``): output ``i`` is a
    triangle filter centred at ``scale * (i + 0.5)``, widened by ``scale`` when downsampling,
    over the input window ``[xmin, xmin + xsize)``, normalized to sum 1. Built from ``arange``
    arithmetic in the input's dtype (a lifted constant would be refused by AOT Autograd)."""
    # area_pixel_compute_scale, in the input's dtype.
    if align_corners:
        s = _as_dtype(_as_dtype(in_size - 1, dtype) / (out_size - 1), dtype) if out_size > 1 else 0.0
    elif scale is not None and scale > 0:
        s = _as_dtype(1.0 / scale, dtype)
    else:
        s = _as_dtype(_as_dtype(in_size, dtype) / out_size, dtype)
    support = s if s >= 1.0 else 1.0  # interp_size (2) * 0.5, times the scale when downsampling
    invscale = _as_dtype(1.0 / s, dtype) if s >= 1.0 else 1.0
    max_size = math.ceil(support) * 2 + 1
    i = torch.arange(out_size, device=device).to(dtype)
    center = (i + 0.5) * s
    xmin = _floor_half_up(center - support).clamp(min=0)
    xmax = _floor_half_up(center + support).clamp(max=in_size)
    xsize = (xmax - xmin).clamp(0, max_size)
    j = torch.arange(in_size, device=device).to(dtype)
    arg = ((j.unsqueeze(0) - center.unsqueeze(1)) + 0.5) * invscale
    arg = arg.abs()
    weight = torch.where(arg < 1.0, 1.0 - arg, torch.zeros_like(arg))
    inside = (j.unsqueeze(0) >= xmin.unsqueeze(1)) & (j.unsqueeze(0) < (xmin + xsize).unsqueeze(1))
    weight = torch.where(inside, weight, torch.zeros_like(weight))
    total = weight.sum(1, keepdim=True)
    # A window whose weights sum to 0 keeps them unnormalized, as the kernel does.
    return torch.where(total != 0, weight / torch.where(total != 0, total, torch.ones_like(total)), weight)


def _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h=None, scales_w=None):
    # Separable, as ATen's CPU kernel: the width pass first, then the height pass, each only
    # where that size changes (an unchanged axis is copied even when a scale is given).
    if not x.is_floating_point():
        # uint8 takes ATen's int16 fixed-point path; not written here.
        return NotImplemented
    ih, iw = x.shape[-2:]
    oh, ow = int(output_size[0]), int(output_size[1])
    out = x
    if ow != iw:
        weight = _aa_weights(iw, ow, align_corners, scales_w, x.dtype, x.device)
        out = torch.matmul(out, weight.t())
    if oh != ih:
        weight = _aa_weights(ih, oh, align_corners, scales_h, x.dtype, x.device)
        out = torch.matmul(weight, out)
    return out.clone() if out is x else out.contiguous()


def _upsample_bilinear2d_aa_vec(x, output_size, align_corners, scale_factors):
    # ATen's compute_output_size: a scale factor's size is truncated, input size * factor.
    if output_size is None:
        output_size = [int(x.shape[-2] * scale_factors[0]), int(x.shape[-1] * scale_factors[1])]
    sh = scale_factors[0] if scale_factors is not None else None
    sw = scale_factors[1] if scale_factors is not None else None
    return _upsample_bilinear2d_aa(x, output_size, align_corners, sh, sw)


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
    "grid_sampler_3d.default": _grid_sampler_3d,
    "_upsample_bilinear2d_aa.default": _upsample_bilinear2d_aa,
    "_upsample_bilinear2d_aa.vec": _upsample_bilinear2d_aa_vec,
}

"""The decomposition table of fxhlo's capture: what AOT Autograd rewrites before a graph reaches
fxhlo. Core ATen's table, PyTorch's own rules for a few more ops, and fxhlo's rules for ops
PyTorch has none for (or where PyTorch's differs from the op). Each rule here is checked by the
OpInfo sweep (``scripts/opinfo_sweep.py``) against eager PyTorch.

Rules are written in ATen ops fxhlo lowers, with no data-dependent shapes: a rule whose result
shape would depend on values is not a rule (``nonzero``, ``unique``).
"""

from __future__ import annotations

import builtins  # builtins.range: `range` is an argument name of the histogram ops
import functools
import math

import torch

from .. import _compat


# ATen ops that survive the core ATen decompositions but that PyTorch can write in terms of
# ops fxhlo lowers: decomposed by PyTorch's own rules (`torch._decomp`) before the graph is
# written, as Inductor does with its larger table. Each passes the OpInfo sweep
# (scripts/opinfo_sweep.py) through its decomposition. Ops fxhlo lowers itself (lgamma, erfinv,
# hypot, ...) are not here: their decompositions only rename them to `prims.*`.
_EXTRA_DECOMPOSITIONS = (
    "addmv", "as_strided_copy", "cumprod", "dist", "ldexp", "narrow_copy", "permute_copy", "unbind_copy",
    "unfold", "var_mean", "view_copy", "adaptive_max_pool3d", "_native_batch_norm_legit_functional",
    "_batch_norm_with_update_functional", "max_pool2d_with_indices_backward",
    "isin",
)


def _round_decimals(x, decimals: int = 0):
    # ATen's kernel: scale by 10^|decimals| in x's dtype, round half to even, scale back.
    if decimals == 0:
        return torch.round(x)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return torch.round(x * scale) / scale
    return torch.round(x / scale) * scale


def _addbmm(x, batch1, batch2, *, beta=1, alpha=1):
    product = torch.bmm(batch1, batch2).sum(0)
    if beta == 0:
        return alpha * product if alpha != 1 else product
    return beta * x + alpha * product


def _angle(x):
    # Real input: 0 for x >= 0, pi for x < 0, NaN kept; integers give the default float.
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    pi = torch.full_like(x, math.pi)
    return torch.where(torch.isnan(x), x, torch.where(x < 0, pi, torch.zeros_like(x)))


def _assert_async(cond, msg=""):
    # A device-side assertion (`one_hot`'s range check, ...): eager checks it; a compiled graph
    # has no way to raise mid-graph, so it is dropped, as Inductor does without debug asserts.
    return None


def _flash_attention_for_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """ATen's CPU flash attention (FlashAttentionKernel.cpp) as one softmax: the output and the
    logsumexp. Scores are ``(q @ k^T) * scale`` with the mask added after, as the kernel computes
    them (PyTorch's math path scales q and k by sqrt(scale) each, whose two roundings the
    softmax amplified into 2e-5 errors); the weights are ``exp(s - max)`` and the output is
    ``(P @ v) * (1 / sum)``. A row with every key masked gives 0 and logsumexp 0, not NaN, as
    the kernel does. float16/bfloat16 compute in float32 with ``P`` rounded to the input's dtype
    before ``P @ v``, as the kernel stores it. The kernel's blocked online softmax and its fast
    vector exp are not reproduced: they are CPU implementation details (an ulp or so apart)
    that no other device should pay for."""
    if dropout_p != 0.0:
        return NotImplemented
    if key.size(-3) != query.size(-3):
        # Grouped-query attention (enable_gqa): each key/value head serves a group of query heads.
        group = query.size(-3) // key.size(-3)
        key, value = key.repeat_interleave(group, -3), value.repeat_interleave(group, -3)
    dtype = query.dtype
    acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    q, k, v = query.to(acc), key.to(acc), value.to(acc)
    length, keys = q.size(-2), k.size(-2)
    # sdp::calculate_scale, in the accumulation type (a Python float multiplies as one).
    scale = scale if scale is not None else 1.0 / math.sqrt(q.size(-1))
    s = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        rows = torch.arange(length, device=q.device).unsqueeze(1)
        cols = torch.arange(keys, device=q.device).unsqueeze(0)
        s = s.masked_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        # (A boolean mask reaches the op as 0 / -inf: F.scaled_dot_product_attention converts it.)
        s = s + attn_mask.to(acc)
    row_max = s.amax(-1, keepdim=True)
    dead = row_max == float("-inf")
    row_max = torch.where(dead, torch.zeros_like(row_max), row_max)
    p = torch.exp(s - row_max)
    row_sum = p.sum(-1, keepdim=True)
    row_sum = torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)
    if acc != dtype:
        p = p.to(dtype).to(acc)
    out = ((p @ v) * (1 / row_sum)).to(dtype)
    lse = (row_max + torch.log(row_sum)).squeeze(-1)
    # The kernel's output is (N, L, H, E) in memory, viewed as (N, H, L, E): keep that layout
    # (PyTorch's decomposition does, for views that follow it).
    out = out.permute(2, 0, 1, 3).contiguous().permute(1, 2, 0, 3)
    return out, lse


def _index_put(x, indices, values, accumulate=False):
    # `x[mask] = v` (one boolean index over x's leading dims) as a select or a masked scatter,
    # which need no data-dependent shape; other index lists stay `index_put`.
    if len(indices) != 1 or indices[0] is None or indices[0].dtype not in (torch.bool, torch.uint8):
        return NotImplemented
    mask = indices[0].bool()
    rest = x.shape[mask.dim():]
    m = mask.reshape(*mask.shape, *([1] * len(rest))).expand(x.shape)
    values = values.to(x.dtype)
    if values.dim() <= len(rest) or values.shape[0] == 1:
        # One value (or one row) for every selected position: broadcast, without the leading
        # size-1 dims that stand for the selected positions.
        lead = max(values.dim() - len(rest), 0)
        v = values.reshape(values.shape[lead:]).expand(x.shape)
        return torch.where(m, x + v if accumulate else v, x)
    # One row per selected position, in order: a masked scatter.
    if accumulate:
        return x + torch.zeros_like(x).masked_scatter(m, values)
    return x.masked_scatter(m, values)


# ---- histograms and bucketing ----------------------------------------------------------------


def _bin_counts(x, pos, inside, bins: int, weight=None):
    """Counts (or summed ``weight``) of ``x``'s elements per bin ``pos`` (i64, x's shape),
    leaving out the elements not ``inside``: a scatter-add, so memory stays linear."""
    pos = torch.where(inside, pos, torch.zeros_like(pos)).reshape(-1)
    ones = torch.ones_like(x) if weight is None else weight.to(x.dtype)
    counts = torch.where(inside, ones, torch.zeros_like(ones)).reshape(-1)
    return torch.zeros(bins, dtype=x.dtype, device=x.device).index_put((pos,), counts, accumulate=True)


def _histogram_counts(x, bins: int, lo, hi, weight=None):
    """Counts in ``bins`` equal bins over ``[lo, hi]``, as ATen's CPU kernel bins them:
    ``int((v - lo) / (hi - lo) * bins)``, the right edge in the last bin, elements outside the
    range (and NaN) left out."""
    inside = (x >= lo) & (x <= hi)
    pos = ((x - lo) / (hi - lo) * bins).to(torch.int64).clamp(0, bins - 1)
    return _bin_counts(x, pos, inside, bins, weight)


def _data_range(x, lo: float, hi: float, widen: float):
    """A histogram's range: ``[lo, hi]``, or the data's own when both are equal (0, 0 by
    default), widened by ``widen`` on each side when that range is empty (ATen: 1 for
    ``histc``, 0.5 for ``histogram``)."""
    if lo != hi:
        return lo, hi
    lo_t, hi_t = x.amin(), x.amax()
    same = lo_t == hi_t
    return torch.where(same, lo_t - widen, lo_t), torch.where(same, hi_t + widen, hi_t)


def _histc(x, bins=100, min=0, max=0):  # noqa: A002 (ATen's argument names)
    lo, hi = _data_range(x, float(min), float(max), 1.0)
    return _histogram_counts(x, bins, lo, hi)


def _histogram_bin_ct(x, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    lo, hi = (float(range[0]), float(range[1])) if range is not None else (0.0, 0.0)
    lo, hi = _data_range(x, lo, hi, 0.5)
    hist = _histogram_counts(x, bins, lo, hi, weight)
    lo_t = torch.as_tensor(lo, dtype=x.dtype, device=x.device)
    hi_t = torch.as_tensor(hi, dtype=x.dtype, device=x.device)
    edges = torch.linspace(lo_t, hi_t, bins + 1, dtype=x.dtype, device=x.device)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return hist, edges


def _histogram_bins_tensor(x, bins, *, weight=None, density=False):
    # Given edges: bin i holds edges[i] <= v < edges[i + 1], the last edge in the last bin.
    n = bins.numel() - 1
    pos = (_searchsorted(bins, x, right=True) - 1).clamp(0, max(n - 1, 0))
    inside = (x >= bins[0]) & (x <= bins[-1])
    hist = _bin_counts(x, pos, inside, n, weight)
    if density:
        hist = hist / (hist.sum() * (bins[1:] - bins[:-1]))
    return hist, bins.clone()


def _searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """How many boundaries come before each value, counted by comparison (the negated forms
    are the binary search's own, so a NaN value lands past the end as in eager). Memory is
    values x boundaries: meant for the bucket tables models carry, not for huge sequences."""
    right = right or side == "right"
    seq = sorted_sequence if sorter is None else sorted_sequence.gather(-1, sorter)
    if not isinstance(values, torch.Tensor):
        # torch.full, not torch.tensor: a tensor literal is a lifted copy AOT Autograd refuses.
        values = torch.full((), values, dtype=seq.dtype, device=seq.device)
    v = values.unsqueeze(-1)
    s = seq if seq.dim() == 1 else seq.unsqueeze(-2)
    before = ~(s > v) if right else ~(s >= v)
    return before.sum(-1).to(torch.int32 if out_int32 else torch.int64)


def _bucketize(x, boundaries, *, out_int32=False, right=False):
    return _searchsorted(boundaries, x, out_int32=out_int32, right=right)


def _upper_bound(seq, values):
    """libstdc++'s ``std::upper_bound`` over the 1-d ``seq`` for each of ``values``: the same
    halving probes, run for the most rounds any search needs, so the result is the kernel's
    even where ``seq`` is not sorted (ATen does not check that histogram edges are)."""
    n = seq.numel()
    first = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    length = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length()):
        half = length // 2
        mid = first + half
        probe = seq.index_select(0, mid.clamp(max=n - 1).reshape(-1)).reshape(values.shape)
        right = ~(values < probe)
        active = length > 0
        first = torch.where(active & right, mid + 1, first)
        length = torch.where(active, torch.where(right, length - half - 1, half), length)
    return first


def _histogramdd_outer_edges(flat, bins, range):  # noqa: A002 (ATen's argument names)
    """Each dimension's leftmost and rightmost edge (``select_outer_bin_edges``): ``range``,
    else the data's min and max (0 and 1 for empty data), widened by 0.5 each side when equal."""
    dims = flat.shape[-1]
    if range is not None:
        out = []
        for d in builtins.range(dims):
            lo, hi = float(range[2 * d]), float(range[2 * d + 1])
            out.append((lo - 0.5, hi + 0.5) if lo == hi else (lo, hi))
        return out
    if flat.numel() == 0:
        return [(0.0, 1.0)] * dims
    lo_t, hi_t = flat.amin(0), flat.amax(0)
    same = lo_t == hi_t
    lo_t, hi_t = torch.where(same, lo_t - 0.5, lo_t), torch.where(same, hi_t + 0.5, hi_t)
    return [(lo_t[d], hi_t[d]) for d in builtins.range(dims)]


def _linspace_cpu(lo, hi, steps: int, dtype, device):
    """ATen's CPU linspace (RangeFactoriesKernel.cpp) value for value: ``step * i + lo`` before
    the halfway point, ``hi - step * (steps - 1 - i)`` from it, each one multiply-add (the
    kernel's compiled form). Histogram bins follow the edges, so an edge an ulp off (as
    ``torch.linspace``'s decomposition gives some) puts an element lying on it in another bin
    than eager's. float32 edges are computed in float64 and rounded once, which is that
    multiply-add whether or not XLA fuses it, folds it as a constant (its evaluator does not
    fuse) or divides by the constant step count as a multiply. ``lo``, ``hi``: 0-d tensors."""
    if steps == 1:
        return lo.to(dtype).reshape(1).clone()
    wide = torch.float64 if dtype == torch.float32 else dtype
    lo, hi = lo.to(dtype).to(wide), hi.to(dtype).to(wide)
    step = ((hi - lo).to(dtype).to(wide) / (steps - 1)).to(dtype).to(wide)
    i = torch.arange(steps, device=device)
    before = step * i.to(wide) + lo
    after = hi - step * (steps - 1 - i).to(wide)
    return torch.where(i < steps // 2, before, after).to(dtype)


def _histogramdd_bin_edges(x, bins, *, range=None, weight=None, density=False):  # noqa: A002
    # One linspace of bins[d] + 1 edges per dimension, in x's dtype.
    flat = x.reshape(-1, x.shape[-1])
    edges = []
    for (lo, hi), count in zip(_histogramdd_outer_edges(flat, bins, range), bins):
        if not isinstance(lo, torch.Tensor):
            # torch.full, not torch.tensor: a tensor literal is a lifted copy AOT refuses.
            lo = torch.full((), lo, dtype=x.dtype, device=x.device)
            hi = torch.full((), hi, dtype=x.dtype, device=x.device)
        edges.append(_linspace_cpu(lo, hi, count + 1, x.dtype, x.device))
    return edges


def _histogramdd_counts(x, edges, weight, density, positions):
    """The N-d histogram of ``x`` (``[..., N]``) over ``edges`` (one 1-d tensor a dimension):
    ``positions(values, edges)`` bins one dimension's values; an element outside some
    dimension's outer edges (or NaN) is left out; the counts are a scatter-add, so memory
    stays linear. ``density`` divides by the total, then by each dimension's bin widths, in
    ATen's order."""
    dims = x.shape[-1]
    flat = x.reshape(-1, dims)
    counts = [e.numel() - 1 for e in edges]
    inside = torch.ones(flat.shape[0], dtype=torch.bool, device=x.device)
    index = torch.zeros(flat.shape[0], dtype=torch.int64, device=x.device)
    stride = math.prod(counts)
    for d, e in enumerate(edges):
        stride //= max(counts[d], 1)
        v = flat[:, d]
        inside = inside & (v >= e[0]) & (v <= e[-1])
        pos = positions(v, e)
        # The rightmost bin holds its right edge.
        pos = torch.where(pos == counts[d], pos - 1, pos)
        index = index + pos * stride
    index = torch.where(inside, index, torch.zeros_like(index))
    ones = torch.ones(flat.shape[0], dtype=x.dtype, device=x.device) if weight is None else weight.reshape(-1)
    adds = torch.where(inside, ones, torch.zeros_like(ones))
    hist = torch.zeros(math.prod(counts), dtype=x.dtype, device=x.device).index_put((index,), adds, accumulate=True)
    hist = hist.reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = counts[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist


def _histogramdd_from_bin_cts(x, bins, *, range=None, weight=None, density=False):  # noqa: A002
    # ATen's LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH: the bin by division, then an upper bound
    # over the edges at pos - 1 .. pos + 1 (the edges are a linspace, so sorted).
    edges = _histogramdd_bin_edges(x, bins, range=range)

    def positions(v, e):
        n = e.numel()
        lo, hi = e[0], e[-1]
        pos = ((v - lo) * (n - 1) / (hi - lo)).to(torch.int64)
        pos = torch.where(torch.isfinite(v), pos, torch.zeros_like(pos)).clamp(0, n - 1)
        start = (pos - 1).clamp(min=0)
        stop = (pos + 2).clamp(max=n)
        found = start.clone()
        for t in builtins.range(3):
            at = start + t
            edge = e.index_select(0, at.clamp(max=n - 1))
            found = found + ((at < stop) & ~(v < edge)).to(torch.int64)
        return found - 1

    return _histogramdd_counts(x, edges, weight, density, positions)


def _histogramdd_from_bin_tensors(x, bins, *, weight=None, density=False):
    # ATen's BINARY_SEARCH: std::upper_bound over each dimension's given edges.
    return _histogramdd_counts(x, list(bins), weight, density, lambda v, e: _upper_bound(e, v) - 1)


# ---- segment reductions ----------------------------------------------------------------------


# Each reduction's scatter_reduce name and the start value of an empty segment without `initial`.
_SEGMENT_REDUCE = {
    "sum": ("sum", 0.0), "mean": ("sum", 0.0), "prod": ("prod", 1.0),
    "max": ("amax", float("-inf")), "min": ("amin", float("inf")),
}


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False,
                    initial=None):
    """ATen's ``segment_reduce`` (SegmentReduce.cpp): one output row per segment along ``axis``,
    segments given by ``lengths`` or ``offsets`` (whose leading dims match ``data``'s before
    ``axis``). Each element's segment is the count of segment ends at or before it (a scatter
    of ones at the ends, then a cumulative sum); elements outside every segment go to a spare
    row that is dropped; a ``scatter_reduce`` from ``initial`` (or the reduction's identity)
    reduces them, so memory stays linear. A mean divides by the segment's length; an empty
    segment's mean is ``initial``, or NaN without one."""
    if indices is not None or (lengths is None) == (offsets is None):
        return NotImplemented
    axis = axis % data.dim()
    if lengths is not None:
        lengths = lengths.to(torch.int64)
        ends = lengths.cumsum(-1)
        starts = ends - lengths
    else:
        offsets = offsets.to(torch.int64)
        starts, ends = offsets[..., :-1], offsets[..., 1:]
        lengths = ends - starts
    segments = starts.shape[-1]
    n = data.shape[axis]
    outer = math.prod(data.shape[:axis])
    inner = math.prod(data.shape[axis + 1:])
    starts = starts.reshape(-1, segments).expand(outer, segments)
    ends = ends.reshape(-1, segments).expand(outer, segments)
    x = data.reshape(outer, n, inner)
    marks = torch.zeros(outer, n + 1, dtype=torch.int64, device=data.device)
    marks = marks.scatter_add(1, ends.clamp(0, n), torch.ones_like(ends))
    segment = marks.cumsum(1)[:, :n]
    j = torch.arange(n, device=data.device).unsqueeze(0)
    valid = (j >= starts[:, :1]) & (segment < segments)
    segment = torch.where(valid, segment, torch.full_like(segment, segments))
    how, identity = _SEGMENT_REDUCE[reduce]
    start = identity if initial is None else initial
    out = torch.full((outer, segments + 1, inner), start, dtype=data.dtype, device=data.device)
    out = out.scatter_reduce(1, segment.unsqueeze(-1).expand(outer, n, inner), x, how, include_self=True)
    out = out[:, :segments]
    if reduce == "mean":
        count = lengths.reshape(-1, segments).expand(outer, segments).unsqueeze(-1)
        divided = out / count.clamp(min=1).to(data.dtype)
        empty = torch.full_like(out, float("nan")) if initial is None else out
        out = torch.where(count > 0, divided, empty)
    shape = list(data.shape)
    shape[axis] = segments
    return out.reshape(shape)


# ---- scans -----------------------------------------------------------------------------------


def _scan(combine, values: tuple, dim: int) -> tuple:
    """An inclusive scan of ``values`` (tensors of one shape) along ``dim`` by doubling steps
    (Hillis-Steele): log2(n) rounds of ``combine(earlier, later)``, each a slice, an
    elementwise combine and a concatenation, so any associative ``combine`` works."""
    n = values[0].shape[dim]
    step = 1
    while step < n:
        earlier = combine(tuple(v.narrow(dim, 0, n - step) for v in values),
                          tuple(v.narrow(dim, step, n - step) for v in values))
        values = tuple(torch.cat([v.narrow(dim, 0, step), m], dim) for v, m in zip(values, earlier))
        step *= 2
    return values


def _scalar_with_index(x):
    """A 0-d input's (value, index) result: itself, at index 0."""
    return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)


def _positions(x, dim: int):
    """Each element's index along ``dim`` (i64, ``x``'s shape)."""
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    return torch.arange(x.shape[dim], device=x.device).reshape(shape).expand(x.shape)


def _cumulative_extreme(x, dim: int, take_later):
    if x.dim() == 0:
        return _scalar_with_index(x)
    dim = dim % x.dim()

    def combine(a, b):
        later = take_later(a[0], b[0])
        return torch.where(later, b[0], a[0]), torch.where(later, b[1], a[1])

    return _scan(combine, (x, _positions(x, dim)), dim)


def _cummax(x, dim):
    # ATen's kernel: the running value moves to x[i] when x[i] >= it or x[i] is NaN (a NaN,
    # once taken, is only replaced by a later NaN): ties take the later index.
    return _cumulative_extreme(x, dim, lambda a, b: (b >= a) | torch.isnan(b) if b.is_floating_point() else b >= a)


def _cummin(x, dim):
    return _cumulative_extreme(x, dim, lambda a, b: (b <= a) | torch.isnan(b) if b.is_floating_point() else b <= a)


def _logcumsumexp(x, dim):
    if x.dim() == 0:
        return x.clone()
    return _scan(lambda a, b: (torch.logaddexp(a[0], b[0]),), (x,), dim % x.dim())[0]


# ---- selection by sorting --------------------------------------------------------------------


def _pick_sorted(x, dim: int, position, keepdim: bool):
    """Value and original index of the element at ``position`` (i64, one per row, keepdim
    shape) of ``x`` sorted stably along ``dim`` (NaN last, as ATen sorts)."""
    values, indices = torch.sort(x, dim=dim, stable=True)
    value = values.gather(dim, position)
    index = indices.gather(dim, position)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


def _median_dim_impl(x, dim: int, keepdim: bool, ignore_nan: bool):
    if x.dim() == 0:
        return _scalar_with_index(x)
    dim = dim % x.dim()
    n = x.shape[dim]
    if x.is_floating_point():
        valid = (~torch.isnan(x)).sum(dim, keepdim=True)
    else:
        valid = torch.full([1 if i == dim else s for i, s in enumerate(x.shape)], n, device=x.device)
    if ignore_nan:
        # nanmedian: the lower middle of the numbers; an all-NaN row gives its first NaN.
        position = ((valid - 1) // 2).clamp(min=0)
    else:
        # median: the lower middle, or the first NaN (sorted stably, it sits right after the numbers).
        position = torch.where(valid < n, valid, torch.full_like(valid, (n - 1) // 2))
    return _pick_sorted(x, dim, position, keepdim)


def _median_dim(x, dim, keepdim=False):
    return _median_dim_impl(x, dim, keepdim, ignore_nan=False)


def _nanmedian_dim(x, dim, keepdim=False):
    return _median_dim_impl(x, dim, keepdim, ignore_nan=True)


def _median(x):
    return _median_dim_impl(x.reshape(-1), 0, False, ignore_nan=False)[0]


def _nanmedian(x):
    return _median_dim_impl(x.reshape(-1), 0, False, ignore_nan=True)[0]


def _kthvalue(x, k, dim=-1, keepdim=False):
    if x.dim() == 0:
        return _scalar_with_index(x)
    dim = dim % x.dim()
    shape = [1 if i == dim else s for i, s in enumerate(x.shape)]
    return _pick_sorted(x, dim, torch.full(shape, k - 1, dtype=torch.int64, device=x.device), keepdim)


def _mode(x, dim=-1, keepdim=False):
    """The most frequent value of each row (the smallest of equally frequent ones) and the
    last index holding it, as ATen's CPU kernel gives them; run lengths come from the sorted
    row (a scatter-add over run ids), so memory stays linear."""
    if x.dim() == 0:
        return _scalar_with_index(x)
    dim = dim % x.dim()
    values, _ = torch.sort(x, dim=dim, stable=True)
    n = x.shape[dim]
    starts = torch.ones_like(values, dtype=torch.int64)
    if n > 1:
        changed = (values.narrow(dim, 1, n - 1) != values.narrow(dim, 0, n - 1)).to(torch.int64)
        starts = torch.cat([starts.narrow(dim, 0, 1), changed], dim)
    run = starts.cumsum(dim) - 1
    lengths = torch.zeros_like(run).scatter_add(dim, run, torch.ones_like(run))
    freq = lengths.gather(dim, run)
    best = freq.argmax(dim, keepdim=True)
    value = values.gather(dim, best)
    index = torch.where(x == value, _positions(x, dim), torch.full_like(run, -1)).amax(dim, keepdim=True)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


# ---- scatters --------------------------------------------------------------------------------


def _put(x, index, source, accumulate=False):
    flat = index.reshape(-1)
    flat = torch.where(flat < 0, flat + x.numel(), flat)
    return x.reshape(-1).index_put((flat,), source.reshape(-1), accumulate).reshape(x.shape)


def _index_reduce(x, dim, index, source, reduce, *, include_self=True):
    # index_reduce along dim is scatter_reduce with the index spread over source's other dims.
    dim = dim % max(x.dim(), 1)
    shape = [1] * source.dim()
    if source.dim():
        shape[dim] = -1
    spread = index.reshape(shape).expand(source.shape)
    return x.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


_SCATTER_REDUCE = {"add": "sum", "multiply": "prod"}


def _scatter_reduce_src(x, dim, index, src, *, reduce):
    return x.scatter_reduce(dim, index, src, _SCATTER_REDUCE[reduce], include_self=True)


def _scatter_reduce_value(x, dim, index, value, *, reduce):
    src = torch.full(index.shape, value, dtype=x.dtype, device=x.device)
    return x.scatter_reduce(dim, index, src, _SCATTER_REDUCE[reduce], include_self=True)


def _nonzero_static(x, *, size, fill_value=-1):
    """The first ``size`` coordinates of nonzero elements (row-major), the rest
    ``fill_value``: each nonzero element's rank among them (a cumulative sum) is its row; rows
    past ``size`` land in one spare row that is dropped."""
    flat = (x != 0).reshape(-1)
    rank = flat.to(torch.int64).cumsum(0) - 1
    row = torch.where(flat & (rank < size), rank, torch.full_like(rank, size))
    coords = []
    rest = torch.arange(flat.numel(), device=x.device)
    for extent in reversed(x.shape):
        coords.append(rest % extent)
        rest = rest // extent
    coords = torch.stack(coords[::-1], dim=1) if coords else torch.zeros((flat.numel(), 0), dtype=torch.int64,
                                                                         device=x.device)
    out = torch.full((size + 1, x.dim()), fill_value, dtype=torch.int64, device=x.device)
    return out.index_put((row,), coords)[:size]


def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    # The product of the three operands, each unsqueezed at its expand dims, summed over sumdim.
    def spread(t, dims):
        for d in sorted(dims):
            t = t.unsqueeze(d)
        return t

    product = spread(i1, expand1) * spread(i2, expand2) * spread(i3, expand3)
    return product.sum(list(sumdim)) if len(sumdim) else product


def _diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    """``x`` with the diagonal ``(offset, dim1, dim2)`` replaced by ``src`` (whose last dim
    runs along the diagonal): a select between ``x`` and ``src`` spread over the rows."""
    dim1, dim2 = dim1 % x.dim(), dim2 % x.dim()
    n1, n2 = x.shape[dim1], x.shape[dim2]
    length = src.shape[-1] if src.dim() else 0
    if length == 0:
        return x.clone()
    rest = [d for d in range(x.dim()) if d not in (dim1, dim2)]
    order = rest + [dim1, dim2]
    xp = x.permute(order)
    row0 = max(-offset, 0)
    rows = (torch.arange(n1, device=x.device) - row0).clamp(0, length - 1)
    spread = src.to(x.dtype).index_select(-1, rows).unsqueeze(-1).expand(xp.shape)
    i = torch.arange(n1, device=x.device).unsqueeze(1)
    j = torch.arange(n2, device=x.device).unsqueeze(0)
    out = torch.where(j - i == offset, spread, xp)
    inverse = [order.index(d) for d in range(x.dim())]
    return out.permute(inverse).contiguous()


def _strided_positions(size, stride, offset, full, arange):
    """The storage position ``offset + sum_k j_k stride_k`` of every element of a strided view
    of ``size``, built with ``full(value)`` and ``arange(n)`` (numpy's on static ints, or
    torch's in the graph)."""
    positions = full(offset)
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = int(n)
        positions = positions + arange(int(n)).reshape(shape) * st
    return positions


def _view_positions(x, size, stride, offset):
    """:func:`_strided_positions` as int64 tensors on ``x``'s device (ops of the graph)."""
    return _strided_positions(size, stride, offset,
                              lambda v: torch.full(list(size), v, dtype=torch.int64, device=x.device),
                              lambda n: torch.arange(n, device=x.device))


def _storage_index(x, positions, memory_order, check: bool = False):
    """For storage positions (relative to ``x``'s first element) that ``x``'s own elements hold,
    their flat row-major indices in ``x``: each position split greedily over ``x``'s strides,
    largest first (exact for a layout that does not overlap itself; an expanded dim, stride 0,
    takes index 0). On int64 tensors (the graph) or numpy arrays (``check``: then whether every
    position is one of ``x``'s elements instead)."""
    contiguous = [1] * x.dim()
    for d in range(x.dim() - 2, -1, -1):
        contiguous[d] = contiguous[d + 1] * x.size(d + 1)
    rest, flat, fits = positions, 0, True
    for d in memory_order:
        i = rest // x.stride(d)
        rest = rest - i * x.stride(d)
        flat = flat + i * contiguous[d]
        if check:
            fits = fits & bool(((i >= 0) & (i < x.size(d))).all())
    return bool((rest == 0).all()) and fits if check else flat


def _as_strided(x, size, stride, storage_offset=None):
    """``as_strided`` of a view that is not contiguous from storage offset 0 (Longformer's
    chunking takes one of a transposed key): its strides and offset address ``x``'s storage,
    which the compiler does not see (it has ``x``'s elements in row-major order), so each
    element's storage position is mapped back to ``x``'s own index and gathered from ``x``.
    A contiguous input from offset 0 keeps the op, and so does a view reaching storage that is
    not one of ``x``'s elements (the base tensor is not in the graph)."""
    base = x.storage_offset()
    if (x.is_contiguous() and base == 0) or x.numel() == 0 or 0 in list(size):
        return NotImplemented
    offset = (base if storage_offset is None else storage_offset) - base
    order = sorted((d for d in range(x.dim()) if x.size(d) > 1 and x.stride(d) > 0), key=lambda d: -x.stride(d))
    # Every position checked now, on the static sizes: the gather must read only x's elements.
    import numpy as np

    grid = _strided_positions(size, stride, offset, lambda v: np.full([int(n) for n in size], v, dtype=np.int64),
                              lambda n: np.arange(n, dtype=np.int64))
    if not _storage_index(x, grid, order, check=True):
        return NotImplemented
    flat = _storage_index(x, _view_positions(x, size, stride, offset), order)
    return x.reshape(-1)[flat.reshape(-1)].reshape(list(size))


def _as_strided_scatter(x, src, size, stride, storage_offset=None):
    """``x`` (contiguous, as the functional op's clone is) with the elements the strided view
    reaches replaced by ``src``: an index_put at the view's flat positions."""
    flat = _view_positions(x, size, stride, storage_offset or 0)
    out = x.reshape(-1).index_put((flat.reshape(-1),), src.to(x.dtype).reshape(-1))
    return out.reshape(x.shape)


def _frexp(x):
    """Mantissa in [0.5, 1) and exponent (i32) with ``x = m * 2**e``; 0, inf and NaN give
    ``(x, 0)``, as C's frexp. The exponent from log2 is corrected by one step either way for
    rounding at powers of two."""
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    finite = torch.isfinite(work) & (work != 0)
    safe = torch.where(finite, work.abs(), torch.ones_like(work))
    e = torch.floor(torch.log2(safe)) + 1
    m = safe / torch.exp2(e)
    e = torch.where(m >= 1, e + 1, torch.where(m < 0.5, e - 1, e))
    m = safe / torch.exp2(e)
    mantissa = torch.where(finite, torch.copysign(m, work), work).to(x.dtype)
    exponent = torch.where(finite, e, torch.zeros_like(e)).to(torch.int32)
    return mantissa, exponent


def _adaptive_max_axis(x, axis: int, out_size: int):
    """Max over the adaptive windows of one axis: window ``i`` covers
    ``[floor(i*n/out), ceil((i+1)*n/out))``. Windows are gathered (at most ``k`` rows each,
    padded rows masked to -inf), so memory is about ``k*out/n`` times the input. Returns the
    values and each maximum's position along the axis."""
    n = x.shape[axis]
    k = max(-((-(i + 1) * n) // out_size) - (i * n) // out_size for i in range(out_size))
    i = torch.arange(out_size, device=x.device).unsqueeze(1)
    starts, ends = (i * n) // out_size, -((-(i + 1) * n) // out_size)
    at = starts + torch.arange(k, device=x.device).unsqueeze(0)
    pos, valid = at.clamp(max=n - 1), at < ends
    xm = x.movedim(axis, -1)
    windows = xm.index_select(-1, pos.reshape(-1)).reshape(*xm.shape[:-1], out_size, k)
    low = torch.full((), float("-inf"), dtype=x.dtype, device=x.device)
    values, which = torch.where(valid, windows, low).max(-1)
    return values.movedim(-1, axis), pos.gather(1, which.reshape(-1, out_size).t()).t().reshape(which.shape).movedim(-1, axis)


def _adaptive_max_pool2d(x, output_size):
    """Separable: rows first, then columns; an index is ``h * W + w`` of the maximum (ties
    across rows and columns at once may pick another of the equal elements than eager)."""
    oh, ow = output_size
    w = x.shape[-1]
    rows, row_of = _adaptive_max_axis(x, x.dim() - 2, oh)
    values, col_of = _adaptive_max_axis(rows, x.dim() - 1, ow)
    h = row_of.gather(-1, col_of)
    return values, h * w + col_of


# ---- mixture of experts ----------------------------------------------------------------------


def grouped_mm(x, weight, offs):
    """Row ``s`` of ``x`` (rows sorted by group) times ``weight[g]`` for
    ``offs[g-1] <= s < offs[g]`` (``offs`` the groups' cumulative row counts); rows past
    ``offs[-1]`` give zeros, as Transformers' ``grouped_mm_fallback`` leaves them. Each group's
    product is computed for every row and the rows of the other groups masked out: no
    data-dependent shape, at the cost of ``groups`` times the grouped product's work."""
    rows = torch.arange(x.shape[0], device=x.device)
    ends = offs.to(torch.int64)
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    out = x.new_zeros(x.shape[0], weight.shape[-1])
    for g in range(weight.shape[0]):
        mine = ((rows >= starts[g]) & (rows < ends[g])).unsqueeze(-1)
        out = torch.where(mine, torch.mm(x, weight[g]), out)
    return out


def _grouped_mm_aten(x, mat2, offs=None, bias=None, out_dtype=None):
    # torch.nn.functional.grouped_mm's 2-d x 3-d form (MoE experts); other forms stay the op.
    if offs is None or x.dim() != 2 or mat2.dim() != 3 or bias is not None:
        return NotImplemented
    out = grouped_mm(x, mat2, offs)
    return out if out_dtype is None else out.to(out_dtype)



def _embedding_bag_forward_only(*args, **kwargs):
    # The same op without the bookkeeping autograd needs; fxhlo lowers `_embedding_bag`.
    return torch.ops.aten._embedding_bag.default(*args, **kwargs)


# fxhlo's own decompositions of ATen ops PyTorch has none for (`torch._decomp` lacks them),
# or where its decomposition differs from the op.
_OWN_DECOMPOSITIONS = {
    "round.decimals": _round_decimals,
    "addbmm.default": _addbmm,
    "angle.default": _angle,
    "_assert_async.msg": _assert_async,
    "_assert_async.default": _assert_async,
    "_scaled_dot_product_flash_attention_for_cpu.default": _flash_attention_for_cpu,
    "index_put.default": _index_put,
    "histc.default": _histc,
    "histogram.bin_ct": _histogram_bin_ct,
    "histogram.bins_tensor": _histogram_bins_tensor,
    "_histogramdd_bin_edges.default": _histogramdd_bin_edges,
    "_histogramdd_from_bin_cts.default": _histogramdd_from_bin_cts,
    "_histogramdd_from_bin_tensors.default": _histogramdd_from_bin_tensors,
    "segment_reduce.default": _segment_reduce,
    "searchsorted.Tensor": _searchsorted,
    "searchsorted.Scalar": _searchsorted,
    "bucketize.Tensor": _bucketize,
    "bucketize.Scalar": _bucketize,
    "cummax.default": _cummax,
    "cummin.default": _cummin,
    "logcumsumexp.default": _logcumsumexp,
    "median.default": _median,
    "median.dim": _median_dim,
    "nanmedian.default": _nanmedian,
    "nanmedian.dim": _nanmedian_dim,
    "kthvalue.default": _kthvalue,
    "mode.default": _mode,
    "put.default": _put,
    "index_reduce.default": _index_reduce,
    "scatter.reduce": _scatter_reduce_src,
    "scatter.value_reduce": _scatter_reduce_value,
    "nonzero_static.default": _nonzero_static,
    "_trilinear.default": _trilinear,
    "_embedding_bag_forward_only.default": _embedding_bag_forward_only,
    "diagonal_scatter.default": _diagonal_scatter,
    "as_strided.default": _as_strided,
    "as_strided_scatter.default": _as_strided_scatter,
    "frexp.Tensor": _frexp,
    "adaptive_max_pool2d.default": _adaptive_max_pool2d,
    "_grouped_mm.default": _grouped_mm_aten,
}

# ---- PyTorch's chunked linear + cross-entropy ------------------------------------------------
#
# `F.linear_cross_entropy` calls these `torch_nn` custom ops (no decomposition of their own):
# the logits in batch chunks, and in training the gradients precomputed in forward. A compiled
# graph holds the whole batch anyway, so the rule is the unchunked definition, with the logits
# and loss in the accumulation dtype as eager's chunks compute them.


def _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing, acc_dtype):
    logits = torch.nn.functional.linear(input.to(acc_dtype), linear_weight.to(acc_dtype), None if linear_bias is None else linear_bias.to(acc_dtype))
    if target.dtype.is_floating_point:
        target = target.to(acc_dtype)
    weight = None if weight is None else weight.to(acc_dtype)
    loss = torch.nn.functional.cross_entropy(logits, target, weight, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)
    return loss.to(input.dtype)


def linear_cross_entropy_chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing,
                                 batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph, compute_input_grad,
                                 compute_linear_weight_grad, compute_linear_bias_grad):
    """``torch_nn::_linear_cross_entropy_batch_chunked`` for inference: the loss and the empty
    gradient slots (training precomputes gradients here: not a rule, the op stays)."""
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        return NotImplemented
    loss = _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing, acc_dtype)
    empty = functools.partial(torch.zeros, dtype=input.dtype, device=input.device)
    return loss, empty((0, 0)), empty((0, 0)), empty((0,))


def linear_cross_entropy_chunked_no_reduction(input, linear_weight, target, linear_bias, weight, ignore_index,
                                              batch_chunk_size, acc_policy, acc_dtype):
    """``torch_nn::_linear_cross_entropy_batch_chunked_no_reduction``: the per-sample loss."""
    return _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, "none", ignore_index, 0.0, acc_dtype)


# Custom ops of libraries models use (``torch.library``, no decomposition of their own), by
# qualified name: fxhlo's rules for them (applied by :mod:`fxhlo.custom_ops`).
CUSTOM_OP_RULES = {
    "transformers::grouped_mm_fallback": grouped_mm,
    "torch_nn::_linear_cross_entropy_batch_chunked": linear_cross_entropy_chunked,
    "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction": linear_cross_entropy_chunked_no_reduction,
}


@functools.cache
def decompositions() -> dict:
    """The decomposition table of fxhlo's capture (the backend's and the export's alike): the
    core ATen decompositions, :data:`_EXTRA_DECOMPOSITIONS` from PyTorch's table,
    :data:`_OWN_DECOMPOSITIONS` and the ``RULES`` of the family modules (``bessel``, ``integer``,
    ``linalg``, ``polynomials``, ``random``, ``sampling``, ``special``, ``spectral``). Built once
    per process (every compiled graph asks for it; AOT Autograd only reads it)."""
    # A name the installed PyTorch lacks (an op added in a later release) is skipped, not fatal.
    table = dict(_compat.core_aten_decompositions())
    table.update(_compat.get_decompositions([op for op in map(_compat.aten_op, _EXTRA_DECOMPOSITIONS) if op is not None]))
    from . import bessel, integer, linalg, polynomials, sampling, special, spectral
    from . import random as random_rules

    rules = {**_OWN_DECOMPOSITIONS}
    for family in (bessel, integer, linalg, polynomials, random_rules, sampling, special, spectral):
        rules.update(family.RULES)
    for name, fn in rules.items():
        op = _compat.aten_op(name)
        if op is not None:
            table[op] = fn
    return table

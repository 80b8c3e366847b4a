"""A graph broken at the scalar reads whose value must reach Python (:mod:`fxhlo.item` turns the
others into 0-d tensors): a size, a slice bound, split sizes from ``tolist()``, a graph output
that is a Python number, an op argument no tensor overload takes. The reads, the arithmetic and
assertions on them, and every op whose arguments or shape depend on their values run in eager
PyTorch; the parts between them compile through :mod:`fxhlo.split`, with the default
``fallback="error"`` too (Dynamo itself breaks the graph at such a read when ``fullgraph`` is
off: the model runs, and one ``FallbackWarning`` per graph names the ops in eager). A part that
fails to compile raises as the whole graph would; ``fallback="eager"`` then runs it in eager.

Sizes the graph's own assertions fix become numbers first (:func:`pin_sizes`), so the ops after
a data-dependent split and concatenation compile.

Before (``counts``: i64[3], the sizes of three row blocks of ``x``: f32[6, 4])::

    x3 = aten.mul.Tensor(x, 3); c0 = aten._local_scalar_dense(aten.select(counts, 0, 0)); ...
    _assert_scalar(Eq(u0 + u1 + u2, 6)); pieces = aten.split_with_sizes(x3, [c0, c1, c2])
    m0 = aten.mm(pieces[0], w0); ...; y = aten.cat([m0, m1, m2]); r = aten.tanh(y)

After (``y`` is 6 rows, which the assertion checks before ``cat`` runs)::

    (x3, s0, s1, s2) = part0(x, counts); c0 = _local_scalar_dense(s0); ...
    pieces = split_with_sizes(x3, [c0, c1, c2]); m0 = mm(pieces[0], w0); ...; y = cat([m0, m1, m2])
    (r,) = part1(y)
"""

from __future__ import annotations

import warnings

import sympy
import torch

from . import _compat
from . import export as _export
from . import split as _split
from .errors import FallbackWarning, UnsupportedOpsError
from .item import READ


def pin_sizes(gm: torch.fx.GraphModule) -> None:
    """Makes numbers of the sizes the graph's own assertions fix: split sizes read with
    ``tolist()`` add up to the dimension split (Dynamo asserts ``Eq(u0 + u1 + u2, 6)``), so the
    concatenation of the pieces has 6 rows, and the ops after it compile. Each tensor whose
    sizes, strides and offset all become numbers gets a fake value with them. The assertions
    run in eager before any op on those sizes (they are on the reads)."""
    vals = [n.meta.get("val") for n in gm.graph.nodes]
    mode = _compat.detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    shape_env = _compat.shape_env(mode)
    if shape_env is None:
        return
    known = {}
    for expr in _compat.runtime_assertions(shape_env):
        if isinstance(expr, sympy.Eq):
            lhs, rhs = expr.args
            if rhs.is_Integer and not lhs.is_number:
                known[lhs] = rhs
            elif lhs.is_Integer and not rhs.is_number:
                known[rhs] = lhs
    if not known:
        return

    def number(s):
        if not isinstance(s, torch.SymInt):
            return s
        expr = _compat.sym_expr(shape_env, s).subs(known)
        return int(expr) if expr.is_Integer else None

    def pinned(val):
        if not isinstance(val, torch.Tensor):
            return val
        dims = (*val.shape, *val.stride(), val.storage_offset())
        if all(isinstance(d, int) for d in dims):
            return val
        sizes, strides = [number(d) for d in val.shape], [number(d) for d in val.stride()]
        offset = number(val.storage_offset())
        if None in sizes or None in strides or offset is None:
            return val
        extent = offset + 1 + sum((n - 1) * st for n, st in zip(sizes, strides)) if all(sizes) else offset
        with mode:
            base = torch.empty(extent, dtype=val.dtype, device=val.device)
            return base.as_strided(sizes, strides, offset)

    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, (torch.Tensor, list, tuple)):
            node.meta["val"] = _compat.pytree.tree_map(pinned, val)


def reads(gm: torch.fx.GraphModule) -> list:
    """The scalar reads :func:`fxhlo.item.legalize` left: their value must reach Python."""
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is READ]


def split(gm: torch.fx.GraphModule, compile_part, name: str):
    """``gm`` broken at its scalar reads: they and every node whose value or shape depends on
    them run in eager PyTorch, the parts between them compiled by ``compile_part`` (see
    :func:`fxhlo.split.split`); a boxed callable. Raises ExportError or CompileError as
    compiling ``gm`` whole would when another node cannot compile (``fallback="eager"`` then
    runs those in eager too)."""
    pin_sizes(gm)
    refused = _split.refused_nodes(gm, None)
    nodes = {n.name: n for n in gm.graph.nodes}
    for node_name, reason in refused.items():
        if not _split.depends_on_data(nodes[node_name]):
            raise _export.ExportError(reason)
    result = _split.cut(gm, refused, compile_part)
    unsupported = [e for e in result.failed.values() if isinstance(e, UnsupportedOpsError)]
    if unsupported and len(unsupported) == len(result.failed):
        ops = [op for e in unsupported for op in e.ops]
        raise UnsupportedOpsError("\n".join(str(e) for e in unsupported), ops)
    if result.failed:
        raise next(iter(result.failed.values()))
    warnings.warn(
        f"fxhlo: graph {name} breaks at {len(reads(gm))} scalar read(s) (Tensor.item(), tolist()) whose value must "
        f"reach Python (a size, a slice bound, split sizes, a Python number returned): "
        f"{', '.join(sorted(result.eager_ops))} run in eager PyTorch; {len(result.compiled)} part(s) compiled by fxhlo",
        FallbackWarning, stacklevel=4)
    return _compat.make_boxed_func(result.module.forward)



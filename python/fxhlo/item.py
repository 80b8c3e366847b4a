"""Scalar reads inside a graph: ``t.item()`` (``tolist()``, ``int(t)``, ...), which Dynamo
captures under ``fullgraph=True`` as ``aten._local_scalar_dense`` returning an unbacked SymInt,
SymFloat or SymBool, and the Python arithmetic on it (``operator.mul``, ``torch.sym_float``, ...).
A compiled graph holds tensors only, so a read whose value stays in the graph becomes the 0-d
tensor it reads (:func:`legalize`); a read whose value must reach Python (a size, a slice bound,
a Python number returned) breaks the graph there (:mod:`fxhlo.graph_break`).

A value stays in the graph when each of its uses is

* a scalar argument of a tensor op (``x * t.item()``): the op takes a 0-d tensor cast to the
  dtype eager would cast the number to, the promotion of the op's tensors with a Python number
  of the read's kind, so the result dtype is eager's (a Python float does not widen a float16
  tensor, nor does a 0-d float16 tensor; a float times an int tensor is float32, and so is the
  0-d float32 tensor times it). A ``Scalar`` argument moves the op to its tensor overload
  (:data:`TENSOR_OVERLOADS`). Each rewrite is checked first on fake tensors: the op must give
  eager's result dtypes and shapes, else the value must reach Python;
* Python arithmetic whose result is itself used so (:data:`ARITHMETIC`): ATen ops on 0-d
  tensors with Python's semantics (ints int64, floats float64, ``/`` true division, ``//`` and
  ``%`` flooring, ``int()`` truncating);
* the condition of an assertion (``assert t.max().item() <= n``, written by Dynamo as
  ``aten._assert_scalar``): the graph returns the conditions, one boolean each, as an extra last
  output, and :class:`Checked` raises eager's ``RuntimeError`` after the call when one is false
  (a compiled graph cannot stop halfway; Inductor checks these on the host too). An assertion
  on a read that must reach Python anyway runs in eager with it.

Before (``t``: i64[], ``x``: f32[4])::

    r = aten._local_scalar_dense(t); s = operator.mul(r, 2); y = aten.mul.Tensor(x, s)

After::

    c = aten.scalar_tensor(2, dtype=i64); s = aten.mul.Tensor(t, c)
    f = aten._to_copy(s, dtype=f32); y = aten.mul.Tensor(x, f)
"""

from __future__ import annotations

import math
import operator

import torch

from . import _compat

aten = torch.ops.aten

READ = aten._local_scalar_dense.default
"""``Tensor.item()``: the op whose result is a Python number."""
ASSERT = aten._assert_scalar.default
"""``_assert_scalar(cond, msg)``: Dynamo's runtime check of a condition on Python numbers."""

def _kind(val):
    """``int``, ``float`` or ``bool``: the Python type of a scalar value; None for anything else
    (a tensor, a complex number)."""
    for kind, types in ((bool, (torch.SymBool, bool)), (int, (torch.SymInt, int)), (float, (torch.SymFloat, float))):
        if isinstance(val, types):
            return kind
    return None


WIDE = {bool: torch.bool, int: torch.int64, float: torch.float64}
"""The dtype of a Python number's kind as a 0-d tensor: Python's ints are 64-bit here, its
floats doubles."""

# ---- Python arithmetic as ATen ops on 0-d tensors ---------------------------------------------
#
# Each rule takes the builder, the operands (0-d tensor nodes or Python numbers) and the dtype of
# the result's kind, and returns the result node. Operands are cast to the dtype the Python
# operation computes in first.

_BINARY = {
    operator.add: aten.add.Tensor,
    operator.sub: aten.sub.Tensor,
    operator.mul: aten.mul.Tensor,
    operator.truediv: aten.div.Tensor,           # a SymFloat: operands go to float64 first
    operator.mod: aten.remainder.Tensor,         # the sign of the divisor, as Python's %
    operator.pow: aten.pow.Tensor_Tensor,
    torch.sym_max: aten.maximum.default,
    torch.sym_min: aten.minimum.default,
}
_COMPARE = {
    operator.lt: aten.lt.Tensor, operator.le: aten.le.Tensor, operator.gt: aten.gt.Tensor,
    operator.ge: aten.ge.Tensor, operator.eq: aten.eq.Tensor, operator.ne: aten.ne.Tensor,
}
_LOGICAL = {operator.and_: aten.logical_and.default, operator.or_: aten.logical_or.default}
_ROUND = {math.floor: aten.floor.default, math.ceil: aten.ceil.default, math.trunc: aten.trunc.default}


def _binary(b, target, operands, dtype):
    x, y = (b.cast(o, dtype) for o in operands)
    return b.call(_BINARY[target], x, y)


def _floordiv(b, target, operands, dtype):
    x, y = (b.cast(o, dtype) for o in operands)
    return b.call(aten.div.Tensor_mode, x, y, rounding_mode="floor")


def _compare(b, target, operands, dtype):
    kinds = {b.kind(o) for o in operands}
    common = WIDE[float] if float in kinds else WIDE[int] if int in kinds else WIDE[bool]
    x, y = (b.cast(o, common) for o in operands)
    return b.call(_COMPARE[target], x, y)


def _logical(b, target, operands, dtype):
    # `and`/`or` of SymBools (`&` and `|` of ints are bitwise: not rewritten, see _scalar_nodes)
    x, y = (b.cast(o, torch.bool) for o in operands)
    return b.call(_LOGICAL[target], x, y)


def _unary(op):
    def rule(b, target, operands, dtype):
        return b.call(op, b.cast(operands[0], dtype))
    return rule


def _convert(b, target, operands, dtype):
    # sym_float, sym_int (toward zero, as int() and a float-to-int cast do)
    return b.cast(operands[0], dtype)


def _round(b, target, operands, dtype):
    x = operands[0]
    if b.kind(x) is float:
        x = b.call(_ROUND[target], b.cast(x, WIDE[float]))
    return b.cast(x, dtype)


def _ite(b, target, operands, dtype):
    cond, x, y = operands
    return b.call(aten.where.self, b.cast(cond, torch.bool), b.cast(x, dtype), b.cast(y, dtype))


def _not(b, target, operands, dtype):
    return b.call(aten.logical_not.default, b.cast(operands[0], torch.bool))


def _sum(b, target, operands, dtype):
    (items,) = operands
    total = b.cast(items[0], dtype)
    for item in items[1:]:
        total = b.call(aten.add.Tensor, total, b.cast(item, dtype))
    return total


ARITHMETIC = {
    **dict.fromkeys(_BINARY, _binary),
    operator.floordiv: _floordiv,
    **dict.fromkeys(_COMPARE, _compare),
    **dict.fromkeys(_LOGICAL, _logical),
    operator.neg: _unary(aten.neg.default),
    operator.abs: _unary(aten.abs.default),
    torch.sym_float: _convert,
    torch.sym_int: _convert,
    **dict.fromkeys(_ROUND, _round),
    torch.sym_ite: _ite,
    torch.sym_not: _not,
    operator.not_: _not,
    torch.sym_sum: _sum,
}
"""The Python operations on scalars FX records (as Dynamo captures them), each with its rule."""

# ---- tensor ops taking a scalar ---------------------------------------------------------------

TENSOR_OVERLOADS = {
    aten.add.Scalar: aten.add.Tensor,
    aten.sub.Scalar: aten.sub.Tensor,
    aten.mul.Scalar: aten.mul.Tensor,
    aten.div.Scalar: aten.div.Tensor,
    aten.div.Scalar_mode: aten.div.Tensor_mode,
    aten.remainder.Scalar: aten.remainder.Tensor,
    aten.pow.Tensor_Scalar: aten.pow.Tensor_Tensor,
    aten.pow.Scalar: aten.pow.Tensor_Tensor,
    aten.clamp.default: aten.clamp.Tensor,
    aten.lt.Scalar: aten.lt.Tensor,
    aten.le.Scalar: aten.le.Tensor,
    aten.gt.Scalar: aten.gt.Tensor,
    aten.ge.Scalar: aten.ge.Tensor,
    aten.eq.Scalar: aten.eq.Tensor,
    aten.ne.Scalar: aten.ne.Tensor,
}
"""An op with a ``Scalar`` argument -> its overload taking that argument as a tensor (the
other arguments the same)."""


class _Builder:
    """Inserts ATen calls into the graph before a given node, each with its fake value."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.graph = gm.graph
        vals = [n.meta.get("val") for n in gm.graph.nodes]
        self.mode = _compat.detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
        self.before = None
        self.values = {}  # scalar node -> its 0-d tensor node

    def fake(self, fn, *args, **kwargs):
        """``fn`` run on fake values (in the graph's fake mode)."""
        with self.mode:
            return fn(*args, **kwargs)

    def call(self, target, *args, **kwargs) -> torch.fx.Node:
        with self.graph.inserting_before(self.before):
            node = self.graph.call_function(target, args, kwargs)
        vals = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
        node.meta["val"] = self.fake(target, *vals[0], **vals[1])
        if "stack_trace" in self.before.meta:
            node.meta["stack_trace"] = self.before.meta["stack_trace"]
        return node

    def kind(self, operand):
        if isinstance(operand, torch.fx.Node):
            dtype = operand.meta["val"].dtype
            return bool if dtype == torch.bool else float if dtype.is_floating_point else int
        return _kind(operand)

    def cast(self, operand, dtype) -> torch.fx.Node:
        """A 0-d tensor node of ``dtype``: ``operand`` (a tensor node or a Python number) converted."""
        if not isinstance(operand, torch.fx.Node):
            return self.call(aten.scalar_tensor.default, operand, dtype=dtype)
        if operand.meta["val"].dtype == dtype:
            return operand
        return self.call(aten._to_copy.default, operand, dtype=dtype)

    def value(self, node: torch.fx.Node) -> torch.fx.Node:
        """The 0-d tensor holding the scalar ``node``: for a read, the tensor it reads (its own
        dtype); for arithmetic, the result in its kind's dtype (int64, float64, bool)."""
        if node in self.values:
            return self.values[node]
        if node.target is READ:
            source = node.args[0]
            result = self.call(aten.view.default, source, []) if source.meta["val"].dim() else source
        else:
            operands = [self._operand(a) for a in node.args]
            result = ARITHMETIC[node.target](self, node.target, operands, WIDE[_kind(node.meta["val"])])
        self.values[node] = result
        return result

    def _operand(self, a):
        if isinstance(a, torch.fx.Node):
            return self.value(a)
        if isinstance(a, (list, tuple)):
            return [self._operand(x) for x in a]
        return a


def _scalar_nodes(gm: torch.fx.GraphModule) -> dict:
    """Every scalar the graph computes that can be a 0-d tensor: reads and the arithmetic on
    them, node -> the reads it depends on."""
    reads = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is READ:
            if _kind(node.meta.get("val")) is not None:
                reads[node] = {node}
            continue
        kind = _kind(node.meta.get("val"))
        if node.target not in ARITHMETIC or kind is None or (node.target in _LOGICAL and kind is not bool):
            continue
        inputs = node.all_input_nodes
        if inputs and all(i in reads for i in inputs) and _flat_numbers(node.args):
            reads[node] = set().union(*(reads[i] for i in inputs))
    return reads


def _flat_numbers(args) -> bool:
    """The arguments are nodes and numbers (lists of them for ``sym_sum``) and nothing else."""
    for a in args:
        if isinstance(a, (list, tuple)):
            if not _flat_numbers(a):
                return False
        elif not isinstance(a, (torch.fx.Node, int, float, bool)):
            return False
    return True


def _positions(node: torch.fx.Node, scalars: dict):
    """``(index or keyword, scalar node)`` of each argument of ``node`` that is a scalar node;
    None when one sits in a list (a size, split sizes: its value must reach Python)."""
    found = []
    for key, a in [*enumerate(node.args), *node.kwargs.items()]:
        if isinstance(a, torch.fx.Node) and a in scalars:
            found.append((key, a))
        elif isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) and x in scalars for x in a):
            return None
    return found


def _schema_type(target, key) -> str:
    for i, arg in enumerate(_compat.schema(target).arguments):
        if key == i or key == arg.name:
            return str(arg.type)
    return ""


class _Use:
    """How a tensor op takes scalars as 0-d tensors: ``target`` (the op, or its tensor
    overload) called with each scalar argument cast to ``dtype``."""

    def __init__(self, node, target, dtype, positions):
        self.node, self.target, self.dtype, self.positions = node, target, dtype, positions

    def apply(self, b: _Builder) -> None:
        b.before = self.node
        args, kwargs = list(self.node.args), dict(self.node.kwargs)
        for key, scalar in self.positions:
            tensor = b.cast(b.value(scalar), self.dtype)
            if isinstance(key, int):
                args[key] = tensor
            else:
                kwargs[key] = tensor
        if self.node.target is aten.scalar_tensor.default:
            self.node.replace_all_uses_with(args[0])
        elif self.node.target is aten.full.default:
            expanded = b.call(aten.expand.default, args[1], list(args[0]))
            self.node.replace_all_uses_with(b.call(aten.clone.default, expanded))
        else:
            self.node.target, self.node.args, self.node.kwargs = self.target, tuple(args), kwargs
            return
        b.graph.erase_node(self.node)


def _plan(b: _Builder, node: torch.fx.Node, scalars: dict):
    """The :class:`_Use` that gives ``node`` its scalar arguments as 0-d tensors with eager's
    result, or None when there is none (the value must reach Python)."""
    if node.op != "call_function" or not isinstance(node.target, _compat.OpOverload):
        return None
    positions = _positions(node, scalars)
    if not positions:
        return None
    out = node.meta.get("val")
    if not isinstance(out, torch.Tensor):
        return None
    if node.target in (aten.scalar_tensor.default, aten.full.default):
        if [k for k, _ in positions] != [1 if node.target is aten.full.default else 0]:
            return None
        return _Use(node, node.target, out.dtype, positions)
    target = node.target
    for key, _ in positions:
        declared = _schema_type(node.target, key)
        if declared in ("number", "Optional[number]"):  # Scalar, Scalar?
            target = TENSOR_OVERLOADS.get(node.target)
            if target is None:
                return None
        elif declared not in ("Tensor", "Optional[Tensor]"):
            return None  # an int, a float, a size: the op needs the number itself
    # The dtype of each scalar as a 0-d tensor: the promotion of the op's tensors with the
    # number (what eager casts the number to), else the result's own dtype; the first whose
    # fake run gives eager's result dtype and shape.
    tensors = [a.meta["val"] for a in node.all_input_nodes
               if a not in scalars and isinstance(a.meta.get("val"), torch.Tensor)]
    examples = [{bool: True, int: 1, float: 1.0}[_kind(s.meta["val"])] for _, s in positions]
    candidates = []
    for t in tensors:
        candidates.append(b.fake(torch.result_type, t, examples[0]))
    candidates.append(out.dtype)
    for dtype in dict.fromkeys(candidates):
        if _gives(b, node, target, positions, dtype, scalars):
            return _Use(node, target, dtype, positions)
    return None


def _gives(b, node, target, positions, dtype, scalars) -> bool:
    """``target`` with the scalars as fake 0-d tensors of ``dtype`` gives ``node``'s result
    (dtypes and shapes)."""
    def fake_arg(a):
        if isinstance(a, torch.fx.Node):
            if a in scalars:
                return b.fake(torch.zeros, (), dtype=dtype, device=_device(a, scalars))
            return a.meta["val"]
        return a
    args = [torch.fx.node.map_aggregate(a, fake_arg) for a in node.args]
    kwargs = {k: torch.fx.node.map_aggregate(v, fake_arg) for k, v in node.kwargs.items()}
    try:
        got = b.fake(target, *args, **kwargs)
    except Exception:  # noqa: BLE001 -- the overload refuses these arguments: no rewrite
        return False
    want = node.meta["val"]
    flat_got, flat_want = _compat.pytree.tree_leaves(got), _compat.pytree.tree_leaves(want)
    return len(flat_got) == len(flat_want) and all(
        isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape
        for g, w in zip(flat_got, flat_want))


def _device(scalar: torch.fx.Node, scalars: dict):
    read = next(iter(scalars[scalar]))
    return read.args[0].meta["val"].device


def legalize(gm: torch.fx.GraphModule) -> list:
    """Rewrites every scalar read whose value can stay in the graph as a 0-d tensor (see the
    module's doc) and returns the messages of the assertions it moved to the graph's last
    output, in order (empty: none; the output is unchanged). Reads whose value must reach
    Python are left (:func:`fxhlo.graph_break.reads` lists them)."""
    scalars = _scalar_nodes(gm)
    b = _Builder(gm)
    if not scalars or b.mode is None:  # no fake values to check a rewrite with: left as it is
        return []
    uses, asserts, staying = [], [], set()
    for node in gm.graph.nodes:
        if node in scalars or not any(i in scalars for i in node.all_input_nodes):
            continue
        if node.target is ASSERT and node.args[0] in scalars:
            asserts.append(node)
            continue
        use = _plan(b, node, scalars)
        if use is None:
            staying.update(*(scalars[i] for i in node.all_input_nodes if i in scalars))
        else:
            uses.append(use)
    for use in uses:
        use.apply(b)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    b.before = output
    checks, messages = [], []
    for node in asserts:
        cond = node.args[0]
        if scalars[cond] & staying:
            continue  # checked in eager, where the read runs anyway
        checks.append(b.call(aten.view.default, b.cast(b.value(cond), torch.bool), [1]))
        messages.append(node.args[1] if len(node.args) > 1 else "Runtime assertion failed")
        gm.graph.erase_node(node)
    if checks:
        outputs = output.args[0]
        ok = b.call(aten.cat.default, checks) if len(checks) > 1 else checks[0]
        output.args = (type(outputs)([*outputs, ok]),)
    for node in reversed(list(scalars)):
        if not node.users:
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return messages


class Checked:
    """A boxed compiled graph whose last output holds the outcome of its assertions (one
    boolean each, :func:`legalize`): returns the other outputs, or raises the message of the
    first assertion that failed, as eager's ``_assert_scalar`` does."""

    _boxed_call = True

    def __init__(self, inner, messages: list):
        self.inner = inner
        self.messages = messages

    def __call__(self, args):
        outs = list(self.inner(args))
        ok = outs.pop()
        if not bool(ok.all()):
            raise RuntimeError(self.messages[int((~ok.cpu()).nonzero()[0, 0])])
        return outs

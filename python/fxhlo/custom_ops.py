"""Custom ops (``torch.library``) that PyTorch can decompose become the ATen ops they decompose
into before a graph is written, so they compile with the rest of it.

AOT Autograd applies only fxhlo's decomposition table, so a custom op with a decomposition of
its own (an entry of ``torch._decomp.decomposition_table``, or a ``CompositeImplicitAutograd``
kernel where the dispatcher did not already inline it) reaches the backend whole, and the
compiler, which knows only ATen, would refuse it. Each such call is traced on its arguments'
fake values with its decomposition and fxhlo's table, and the traced ops replace it, carrying
its source line. A custom op with no decomposition is left: the compiler refuses it and
``fallback="eager"`` runs it in eager.

Before (``mylib.square_plus`` registered as ``x * x + y``)::

    r = mylib.square_plus.default(a, b)

After::

    mul = aten.mul.Tensor(a, a); r = aten.add.Tensor(mul, b)
"""

from __future__ import annotations

import contextlib

import torch

from . import _compat
from . import decompositions as _decompositions
from ._compat import decomposition_table

_ATEN_NAMESPACES = ("aten", "prims")
"""The namespaces the compiler knows; an op of any other is a custom op."""


def decompose(gm: torch.fx.GraphModule) -> None:
    """Replaces in place every call of a custom op that has a decomposition by its ATen ops."""
    table = None
    for node in list(gm.graph.nodes):
        if not _decomposable(node):
            continue
        table = table or _table()
        _inline(gm.graph, node, table)
    if table is not None:
        gm.graph.lint()
        gm.recompile()


def _custom(op) -> bool:
    return isinstance(op, _compat.OpOverload) and op.namespace not in _ATEN_NAMESPACES


def _decomposable(node: torch.fx.Node) -> bool:
    op = node.target
    return (node.op == "call_function" and _custom(op)
            and (op in decomposition_table or _compat.schema(op).name in _decompositions.CUSTOM_OP_RULES
                 or _compat.has_composite_implicit_kernel(op)))


def _table() -> dict:
    """fxhlo's table, every decomposition registered for a custom op (a decomposition may call
    another custom op) and fxhlo's rules for known custom ops
    (:data:`fxhlo.decompositions.CUSTOM_OP_RULES`, for the ops loaded in this process)."""
    table = dict(_decompositions.decompositions())
    table.update({op: fn for op, fn in decomposition_table.items() if _custom(op)})
    for name, fn in _decompositions.CUSTOM_OP_RULES.items():
        namespace, op_name = name.split("::")
        packet = getattr(getattr(torch.ops, namespace), op_name, None)  # None: library not loaded
        for overload in packet.overloads() if packet is not None else ():
            table[getattr(packet, overload)] = fn
    return table


def _inline(graph: torch.fx.Graph, node: torch.fx.Node, table: dict) -> None:
    """Traces ``node``'s op on its arguments' fake values with ``table`` (``make_fx`` under the
    graph's fake mode; a CompositeImplicitAutograd kernel decomposes by itself in the
    dispatcher) and puts the traced ops in its place."""
    inputs = node.all_input_nodes

    def call(*values):
        env = dict(zip(inputs, values))
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
        return node.target(*args, **kwargs)

    values = [n.meta["val"] for n in inputs]
    fake_mode = _compat.detect_fake_mode(values)
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        traced = _compat.make_fx(call, decomposition_table=table, tracing_mode="real")(*values)
    env = dict(zip((n for n in traced.graph.nodes if n.op == "placeholder"), inputs))
    placeholders = set(env)
    with graph.inserting_before(node):
        result = graph.graph_copy(traced.graph, env)
    if "stack_trace" in node.meta:
        for old, new in env.items():
            if old not in placeholders:
                new.meta["stack_trace"] = node.meta["stack_trace"]
    if isinstance(result, torch.fx.Node):
        node.replace_all_uses_with(result)
    else:
        # Several results: each `getitem(node, i)` user becomes the i-th traced value.
        for user in list(node.users):
            user.replace_all_uses_with(result[user.args[1]])
            graph.erase_node(user)
    graph.erase_node(node)

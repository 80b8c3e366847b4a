"""Effect tokens around checks: AOT Autograd threads an *effect token* through ops registered as
having side effects (an extra leading input, chained through ``with_effects`` nodes, returned as
an extra leading output). The ones that reach fxhlo are checks of values (``linalg.cholesky``'s
``_linalg_check_errors`` raising on a matrix that is not positive definite): a compiled graph
cannot raise mid-graph, so they are dropped, as ``_assert_async`` is, and the tokens pass
around the compiled graph untouched."""

from __future__ import annotations

import operator

import torch

# Ops that only check values: dropped with the token step that orders them.
CHECKS = frozenset({torch.ops.aten._linalg_check_errors.default})


def strip(gm: torch.fx.GraphModule, n_inputs: int) -> int:
    """Drops the checks of ``gm`` and, when no other effectful op is left, its token inputs and
    outputs (the placeholders beyond Dynamo's ``n_inputs``); returns how many tokens the
    caller must pass through (0: there were none, or an effect that is not a check remains,
    which compiling then reports)."""
    graph = gm.graph
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    count = len(placeholders) - n_inputs
    if count <= 0:
        return 0
    for node in list(graph.nodes):
        if node.target is not torch.ops.higher_order.with_effects or node.args[1] not in CHECKS:
            continue
        for user in list(node.users):
            if user.target is operator.getitem and user.args[1] == 0:
                user.replace_all_uses_with(node.args[0])
                graph.erase_node(user)
        if not node.users:
            graph.erase_node(node)
    tokens = placeholders[:count]
    output = next(node for node in graph.nodes if node.op == "output")
    results = list(output.args[0])
    passed_through = results[:count] == tokens and all(len(t.users) == 1 for t in tokens)
    if passed_through:
        output.args = (tuple(results[count:]),)
        for token in tokens:
            graph.erase_node(token)
    # Checks dropped before another effect stopped the stripping stay dropped: recompile either way.
    gm.recompile()
    return count if passed_through else 0


class Threaded:
    """A boxed compiled graph with ``tokens`` effect tokens passed around it: the leading
    arguments come back as the leading results."""

    _boxed_call = True

    def __init__(self, inner, tokens: int):
        self.inner = inner
        self.tokens = tokens

    def __call__(self, args):
        tokens = list(args[:self.tokens])
        rest = list(args[self.tokens:])
        args.clear()
        return [*tokens, *self.inner(rest)]

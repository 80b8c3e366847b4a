"""Scaled dot-product attention, one graph whatever the device.

``F.scaled_dot_product_attention`` is a composite op: PyTorch's dispatcher picks a fused kernel
for the tensors' device (``_scaled_dot_product_flash_attention_for_cpu`` on the CPU;
``_flash_attention``, ``_efficient_attention`` or ``_cudnn_attention`` on CUDA, each with its
own auxiliary results) in C++, below the decomposition table, so a table entry for it is never
consulted. :func:`intercept` therefore rewrites Dynamo's graph before AOT Autograd traces it:
each call becomes :func:`scaled_dot_product_attention`, the math form of the CPU kernel (one
softmax, ``fxhlo.decompositions._flash_attention_for_cpu``), and the graph fxhlo compiles is the
same on the CPU, on CUDA and on fake tensors. The importer still lowers every kernel variant
(traces made elsewhere, direct calls): ``frontend/src/aten/attention.rs``.
"""

from __future__ import annotations

import torch

# The forms a Dynamo graph calls attention by: the functional (a builtin) and the ATen packet
# and overload a model may call directly.
_TARGETS = (
    torch.nn.functional.scaled_dot_product_attention,
    torch.ops.aten.scaled_dot_product_attention,
    torch.ops.aten.scaled_dot_product_attention.default,
)

_ORIGINAL = torch.nn.functional.scaled_dot_product_attention


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``F.scaled_dot_product_attention`` as the ATen ops of its math form. Dropout (random,
    which a compiled inference graph refuses anyway) and inputs other than dense
    ``[..., heads, length, dim]`` tensors go to PyTorch's own op."""
    from . import _flash_attention_for_cpu

    if dropout_p != 0.0 or query.dim() < 3 or key.dim() != query.dim() or value.dim() != query.dim() \
            or query.is_nested or not query.is_floating_point():
        return _ORIGINAL(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if key.size(-3) != query.size(-3) and (not enable_gqa or query.size(-3) % key.size(-3) != 0):
        return _ORIGINAL(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        # A boolean mask keeps the keys where it is true: 0 there, -inf elsewhere, as PyTorch
        # converts it before the kernel.
        zero = torch.zeros((), dtype=query.dtype, device=query.device)
        attn_mask = torch.where(attn_mask, zero, torch.full_like(zero, float("-inf")))
    out, _ = _flash_attention_for_cpu(query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)
    return out


def intercept(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Points every attention call of Dynamo's graph ``gm`` at :func:`scaled_dot_product_attention`
    (in place; recompiled when anything changed) and returns ``gm``."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and any(node.target is t for t in _TARGETS):
            node.target = scaled_dot_product_attention
            changed = True
    if changed:
        gm.recompile()
    return gm

"""One graph whatever the device: the ATen variants PyTorch hands a backend on CUDA (batch norm's
f32[C] statistics, 16-bit layer norm's f32 statistics, the SDPA kernels with their auxiliary
results) import, agree with shape inference and compute eager's values. No GPU: the graphs are
captured on fake CUDA tensors (:mod:`fxhlo.fake_device`) and run on the CPU plugin; the CUDA
attention kernels are called directly (on fake tensors SDPA's own kernel choice falls back to
the math form). Each numerical test prints the largest error it saw."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxhlo.fake_device import capture_for, run_trace

aten = torch.ops.aten


def _metas(trace, target):
    """The result metas of every node calling ``target`` (as ``(dtype, sizes)`` or None)."""
    return [[None if m is None else (m["dtype"], m["sizes"]) for m in n["meta"]]
            for n in trace["nodes"] if n["target"] == target]


def _check(name, got, expected, tol):
    """Max abs error at most ``tol`` times the output's scale (its largest magnitude, at least 1)."""
    err = float((got.double() - expected.double()).abs().max())
    scale = max(1.0, float(expected.double().abs().max()))
    print(f"{name}: max abs error {err:.3g} at scale {scale:.3g} (tolerance {tol:g} of the scale)")
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert err <= tol * scale


class Layers(nn.Module):
    """Conv + batch norm + layer norm, then attention through each CUDA kernel called directly,
    summed; :meth:`reference` computes the same with eager CPU kernels."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.ln = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.LayerNorm(8)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)

    def qkv(self, x):
        y = self.ln(self.bn(self.conv(x)).flatten(2).transpose(1, 2))
        q = y.view(y.shape[0], y.shape[1], 2, 4).transpose(1, 2)
        return q, q.flip(2), (q * 2).flip(3)

    def forward(self, x):
        q, k, v = self.qkv(x)
        bias = torch.linspace(-1, 1, k.shape[2], dtype=q.dtype, device=q.device).expand(q.shape[0], 2, q.shape[2], k.shape[2])
        eff = aten._scaled_dot_product_efficient_attention(q, k, v, bias, False)[0]
        eff_causal = aten._scaled_dot_product_efficient_attention(q, k, v, None, False, is_causal=True, scale=0.3)[0]
        cudnn = aten._scaled_dot_product_cudnn_attention(q, k, v, None, False)[0]
        flash = aten._scaled_dot_product_flash_attention(q, k, v, is_causal=True)[0]
        return eff + eff_causal + cudnn + flash + F.scaled_dot_product_attention(q, k, v)

    def reference(self, x):
        q, k, v = self.qkv(x)
        bias = torch.linspace(-1, 1, k.shape[2], dtype=q.dtype, device=q.device).expand(q.shape[0], 2, q.shape[2], k.shape[2])
        sdpa = F.scaled_dot_product_attention
        return (sdpa(q, k, v, attn_mask=bias) + sdpa(q, k, v, is_causal=True, scale=0.3) + sdpa(q, k, v)
                + sdpa(q, k, v, is_causal=True) + sdpa(q, k, v))


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 2e-6), (torch.bfloat16, 2e-2)])
def test_cuda_variants_import_and_match_eager(dtype, tol):
    torch.manual_seed(0)
    model = Layers().eval().to(dtype)
    x = torch.randn(2, 3, 6, 6, dtype=dtype)
    d = capture_for(model, (x,), "cuda")
    # The graph is the CUDA one: batch norm's statistics f32[C], layer norm's in f32, the
    # kernels' ints and None results written as null.
    assert _metas(d.trace, "aten._native_batch_norm_legit_no_training.default")[0][1:] == [("f32", [8])] * 2
    assert _metas(d.trace, "aten.native_layer_norm.default")[0][1][0] == "f32"
    assert _metas(d.trace, "aten._scaled_dot_product_cudnn_attention.default")[0][4] is None
    assert len(_metas(d.trace, "aten._scaled_dot_product_efficient_attention.default")) == 2
    got = run_trace(d.trace, d.weights, d.inputs)[0]
    with torch.no_grad():
        expected = model.reference(x)
    _check(f"cuda variants {dtype}", got, expected, tol)


class Statistics(nn.Module):
    """Returns the kernels' auxiliary results: batch norm's saved statistics, layer norm's mean
    and rstd, and the logsumexp of each attention kernel (padded to 32 by the efficient one)."""

    def forward(self, x, w, b, mean, var, q, k, v):
        _, save_mean, save_invstd = aten._native_batch_norm_legit_no_training(x, w, b, mean, var, 0.1, 1e-5)
        _, ln_mean, ln_rstd = aten.native_layer_norm(x, [5], None, None, 1e-5)
        eff_lse = aten._scaled_dot_product_efficient_attention(q, k, v, None, True)[1]
        flash_lse = aten._scaled_dot_product_flash_attention(q, k, v, is_causal=True)[1]
        cudnn_lse = aten._scaled_dot_product_cudnn_attention(q, k, v, None, True)[1]
        return save_mean, save_invstd, ln_mean, ln_rstd, eff_lse, flash_lse, cudnn_lse


def test_auxiliary_results_have_cudas_values():
    torch.manual_seed(0)
    bf = torch.bfloat16
    x, w, b = torch.randn(2, 4, 3, 5, dtype=bf), torch.randn(4, dtype=bf), torch.randn(4, dtype=bf)
    mean, var = torch.randn(4, dtype=bf), torch.rand(4, dtype=bf) + 0.5
    q, k, v = torch.randn(1, 2, 7, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    args = (x, w, b, mean, var, q, k, v)
    d = capture_for(Statistics(), args, "cuda")
    got = run_trace(d.trace, d.weights, d.inputs)
    scores = (q @ k.transpose(-2, -1)) / 8 ** 0.5
    causal = scores.masked_fill(torch.ones(7, 9, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, -1)
    xf = x.float()
    expected = [
        mean.float(), (var.float() + 1e-5).rsqrt(),
        xf.mean(-1, keepdim=True), (xf.var(-1, unbiased=False, keepdim=True) + 1e-5).rsqrt(),
        F.pad(lse, (0, 32 - 7)), torch.logsumexp(causal, -1), lse.unsqueeze(-1),
    ]
    for i, (g, e) in enumerate(zip(got, expected)):
        if i == 4:  # the efficient kernel's padding is unspecified: only the real rows
            g, e = g[..., :7], e[..., :7]
        _check(f"auxiliary result {i}", g, e, 1e-5)


def test_dropout_in_a_kernel_is_refused():
    class Dropout(nn.Module):
        def forward(self, q):
            return aten._scaled_dot_product_efficient_attention(q, q, q, None, False, 0.5)[0]

    q = torch.randn(1, 2, 4, 8)
    from fxhlo.errors import ExportError

    # The exporter refuses random ops before the importer would (dropout_p must be 0).
    with pytest.raises(ExportError, match="random op"):
        capture_for(Dropout(), (q,), "cuda")


def test_sdpa_is_one_graph_whatever_the_device():
    """F.scaled_dot_product_attention is intercepted before the dispatcher: the ATen graph
    captured on CPU tensors and on fake CUDA tensors is the same, with no device kernel."""

    class Attention(nn.Module):
        def forward(self, q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) + F.scaled_dot_product_attention(q, k, v, is_causal=True)

    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    mask = torch.rand(5, 6) > 0.3
    targets = {}
    for device in ("cpu", "cuda"):
        d = capture_for(Attention(), (q, k, v, mask), device)
        targets[device] = [n["target"] for n in d.trace["nodes"]]
        assert not any("scaled_dot_product" in t for t in targets[device]), targets[device]
        got = run_trace(d.trace, d.weights, d.inputs)[0]
        with torch.no_grad():
            expected = Attention()(q, k, v, mask)
        _check(f"sdpa on {device}", got, expected, 1e-5)
    assert targets["cpu"] == targets["cuda"]


# ---- the model zoo on fake CUDA (scripts/cuda_graphs.py) ------------------------------------


def _cuda_graphs():
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("cuda_graphs", ROOT / "scripts" / "cuda_graphs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A few small zoo models, one of each kind of device form: batch norm's f32[C] statistics
# (ResNet-18, bf16), 16-bit layer norm and the KV cache (GPT-2, bf16), a ViT whose head is
# not zero, the T5 encoder's RMS norm.
ZOO = [("resnet18", "bfloat16"), ("vit_small", "float32"), ("gpt2_small_kv_cache", "bfloat16"),
       ("t5_encoder_small", "float32")]


@pytest.mark.sweep
@pytest.mark.parametrize("model, dtype", ZOO)
def test_zoo_model_on_fake_cuda_matches_eager(model, dtype):
    row = _cuda_graphs().check_model(model, dtype)
    print(row)
    assert "error" not in row, row["error"]
    assert row["ok"], f"{model} {dtype}: max abs error {row['max_abs_error']:.3g} (relative {row['relative']:.3g})"
    if model == "vit_small":
        # The head drawn from a second seed: the logits are not all zero.
        assert row["scale"] > 1e-2
    if model.startswith("resnet"):
        assert "_native_batch_norm_legit_no_training.default" in row["device_forms"]
    if dtype == "bfloat16" and model.startswith("gpt2"):
        assert "native_layer_norm.default" in row["device_forms"]
        assert row["outputs"] == 5  # the hidden state, then each layer's keys and values


def test_vit_head_is_not_zero():
    cg = _cuda_graphs()
    model, args = cg.build("vit_small")
    with torch.no_grad():
        logits = model(*args)
    assert float(logits.abs().max()) > 1e-3


def test_devices_doc_is_up_to_date():
    """docs/devices.md is generated from testsuite/devices/*.json by `scripts/cuda_graphs.py doc`."""
    cg = _cuda_graphs()
    assert cg.DOC.read_text() == cg.devices_doc(), "docs/devices.md is stale: run python scripts/cuda_graphs.py doc"


def test_what_the_capture_asked_of_the_device():
    """What a fake-CUDA capture once asked the CUDA runtime for or could not trace (found by the
    OpInfo sweep and the zoo): training batch norm's cuDNN reserve size, a constant made with
    ``torch.tensor([], device=...)`` (transformers' KV cache), the ``while_loop`` of the
    polynomial decompositions (needs a shape environment), an op with no meta kernel
    (``geqrf``: the fake mode runs it for real)."""

    class Asks(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)

        def forward(self, x, n):
            empty = torch.tensor([], dtype=x.dtype, device=x.device)
            y = torch.cat([empty, self.bn(x).flatten()])
            return y, torch.special.hermite_polynomial_h(x, n), *torch.geqrf(x)

    torch.manual_seed(0)
    model = Asks().train()
    x, n = torch.randn(3, 4), torch.tensor([[0.0, 1, 2, 5]])
    d = capture_for(copy.deepcopy(model), (x, n), "cuda")
    outs = run_trace(d.trace, d.weights, d.inputs)
    with torch.no_grad():
        expected = model(x, n)
    # The running statistics' updates come first, then the model's outputs.
    for i, (g, e) in enumerate(zip(outs[-4:], expected)):
        _check(f"asks output {i}", g, e, 1e-5)

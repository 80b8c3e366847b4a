"""`attention-recompute` (the TPU pipeline's, `-O2`): attention's softmax statistics in one
reduction (`fxhlo.softmax_stats`) and the scores computed a second time, transposed, for the
product with V. Run here on the CPU plugin with the TPU pipeline's passes, against eager
PyTorch: the forms PyTorch's SDPA decomposes to (the safe softmax) and the ones eager
attention code writes (`softmax` of scaled, masked scores), 16-bit inputs, rows masked
entirely, NaN scores, and attention weights returned (left alone)."""

import math

import pytest
import torch

import fxhlo
from fxhlo import _native


def _compile(model, args):
    torch._dynamo.reset()
    passes = list(_native.pipeline_names(2, device="tpu"))
    assert "attention-recompute" in passes and "attention-recompute" not in _native.pipeline_names(2)
    compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"passes": passes})
    with torch.no_grad():
        got = compiled(*args)
    (entry,) = [p for p in fxhlo.compiled_graphs()[-1].stages["passes"] if p["name"] == "attention-recompute"]
    return got, entry


class Sdpa(torch.nn.Module):
    def forward(self, q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Eager(torch.nn.Module):
    """Attention as BERT- and GPT-2-style code writes it: scaled scores, an additive mask or a
    causal `where`, `softmax`, the product with V; optionally the weights returned too."""

    def __init__(self, causal=False, weights=False):
        super().__init__()
        self.causal, self.weights = causal, weights

    def forward(self, q, k, v, mask):
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if self.causal:
            n = s.shape[-1]
            keep = torch.ones(n, n, dtype=torch.bool, device=s.device).tril()
            s = torch.where(keep, s, torch.finfo(s.dtype).min)
        p = torch.softmax(s + mask, dim=-1)
        out = p @ v
        return (out, p) if self.weights else out


def _qkv(dtype=torch.float32, b=2, h=4, n=64, d=16):
    torch.manual_seed(0)
    return tuple(torch.randn(b, h, n, d).to(dtype) for _ in range(3))


CASES = {
    "sdpa": lambda: (Sdpa(), _qkv()),
    # Rows 3 and 10 of batch 0 see no key: the safe softmax gives them zeros.
    "sdpa_rows_masked": lambda: (Sdpa(), (*_qkv(), _bool_mask())),
    "softmax_masked": lambda: (Eager(), (*_qkv(), _additive_mask())),
    "softmax_causal": lambda: (Eager(causal=True), (*_qkv(), torch.zeros(1, 1, 1, 64))),
    "softmax_bf16": lambda: (Eager(), (*_qkv(torch.bfloat16), _additive_mask().to(torch.bfloat16))),
    "sdpa_bf16": lambda: (Sdpa(), _qkv(torch.bfloat16)),
}


def _bool_mask():
    mask = torch.rand(2, 1, 64, 64, generator=torch.Generator().manual_seed(1)) > 0.3
    mask[0, :, 3] = False
    mask[0, :, 10] = False
    return mask


def _additive_mask():
    keep = torch.rand(2, 1, 1, 64, generator=torch.Generator().manual_seed(2)) > 0.2
    return (~keep).float() * -10000.0


@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_recompute_matches_eager(case):
    model, args = CASES[case]()
    with torch.no_grad():
        want = model(*args)
    got, entry = _compile(model, args)
    err = (got.float() - want.float()).abs().max().item()
    print(f"{case}: max abs err {err:.2e}; {entry['summary']}")
    assert entry["changed"], entry
    tol = 2e-2 if want.dtype == torch.bfloat16 else 2e-5
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    if case == "sdpa_rows_masked":
        assert got[0, :, 3].abs().max().item() == 0 and got[0, :, 10].abs().max().item() == 0


def test_attention_recompute_keeps_nan_rows_nan():
    """A NaN score makes its softmax row NaN in eager PyTorch; the one-pass statistics too."""
    q, k, v = _qkv()
    q[1, 2, 5, 0] = float("nan")
    model = Sdpa()
    with torch.no_grad():
        want = model(q, k, v)
    got, entry = _compile(model, (q, k, v))
    assert entry["changed"], entry
    assert torch.isnan(want[1, 2, 5]).all() and torch.isnan(got[1, 2, 5]).all()
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5, equal_nan=True)


def test_attention_recompute_leaves_returned_weights_alone():
    """Weights that are an output must be written anyway: nothing to gain, nothing rewritten."""
    model = Eager(weights=True)
    args = (*_qkv(), _additive_mask())
    with torch.no_grad():
        want = model(*args)
    got, entry = _compile(model, args)
    assert not entry["changed"], entry
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5)


def _hf_models():
    import transformers

    transformers.logging.set_verbosity_error()
    ids = torch.randint(0, 1000, (1, 32), generator=torch.Generator().manual_seed(3))
    small = dict(vocab_size=1000)
    return {
        # SDPA attention (the default) with its padding mask added to the scores.
        "bert": (transformers.BertModel(transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                                intermediate_size=128, **small)), (ids,)),
        # Grouped-query attention: K and V expanded from 2 heads to 4.
        "llama_gqa": (transformers.LlamaModel(transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                                                       num_attention_heads=4, num_key_value_heads=2, **small)), (ids,)),
        # A relative position bias added to the scores.
        "t5_encoder": (transformers.T5EncoderModel(transformers.T5Config(d_model=64, d_ff=128, d_kv=16, num_layers=2,
                                                                         num_heads=4, **small)), (ids,)),
        # Eager attention: a causal `where` and `softmax`.
        "gpt2_eager": (transformers.GPT2Model(transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, use_cache=False,
                                                                      attn_implementation="eager", **small)), (ids,)),
    }


def _cond_unet():
    import diffusers

    unet = diffusers.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8)
    g = torch.Generator().manual_seed(4)
    # Self-attention over 256 positions and cross-attention to 77 text tokens (M != N).
    return unet, (torch.randn(1, 4, 16, 16, generator=g), torch.tensor([10]), torch.randn(1, 77, 32, generator=g))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert", "llama_gqa", "t5_encoder", "gpt2_eager", "cond_unet"])
def test_attention_recompute_keeps_the_values_of_real_models(name):
    """The TPU pipeline (with `attention-recompute`) on the CPU plugin against eager, for the
    attention forms of Hugging Face and diffusers models; each layer's attention rewritten."""
    torch.manual_seed(0)
    model, args = _cond_unet() if name == "cond_unet" else _hf_models()[name]
    model = model.eval()
    with torch.no_grad():
        out = model(*args) if name != "cond_unet" else model(*args).sample
        want = out.last_hidden_state if hasattr(out, "last_hidden_state") else out

        class First(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, *a):
                o = self.m(*a)
                return o.sample if name == "cond_unet" else o.last_hidden_state

        got, entry = _compile(First(model), args)
    err = (got - want).abs().max().item()
    print(f"{name}: max abs err {err:.2e}; {entry['summary']}")
    assert entry["changed"], entry
    if name != "cond_unet":
        # Two layers, one attention each.
        assert entry["summary"].startswith("2 softmax"), entry
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)

"""Mixture-of-experts layers as Hugging Face Transformers writes them (tokens sorted by expert,
``histc`` over the expert ids, ``transformers::grouped_mm_fallback`` over the sorted rows),
compiled whole by fxhlo from small configs (no downloads) and compared with eager."""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402  (scripts/setup.sh installs it)

import fxhlo  # noqa: E402

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
             vocab_size=128, max_position_embeddings=64, num_local_experts=4, num_experts=4, num_experts_per_tok=2,
             moe_intermediate_size=32, shared_expert_intermediate_size=32, decoder_sparse_step=1)


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["mixtral", "qwen2_moe", "olmoe"])
def test_moe_model_compiles_whole_and_matches_eager(model_type):
    config = transformers.AutoConfig.for_model(model_type, **SMALL)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    ids = torch.randint(0, SMALL["vocab_size"], (2, 8))
    with torch.no_grad():
        expected = model(input_ids=ids).last_hidden_state
        torch._dynamo.reset()
        before = len(fxhlo.backend.compiled_graphs())
        compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)
        with warnings.catch_warnings():
            # A fallback to eager would hide an op fxhlo does not lower: make it an error.
            warnings.simplefilter("error", fxhlo.FallbackWarning)
            got = compiled(input_ids=ids).last_hidden_state
    err = (got - expected).abs().max().item()
    print(f"{model_type}: max abs error vs eager {err:.3e}")
    assert len(fxhlo.backend.compiled_graphs()) > before, "nothing was compiled by fxhlo"
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_grouped_mm_rule_matches_the_transformers_kernel():
    # Uneven groups, an empty group, and rows past the last offset (zeros in the kernel too).
    from transformers.integrations import moe  # noqa: F401  (registers transformers::grouped_mm_fallback)

    torch.manual_seed(1)
    x, weight = torch.randn(11, 6), torch.randn(4, 6, 5)
    offs = torch.tensor([3, 3, 7, 9], dtype=torch.int32)
    expected = torch.ops.transformers.grouped_mm_fallback(x, weight, offs)
    fn = torch.compile(lambda a, w, o: torch.ops.transformers.grouped_mm_fallback(a, w, o),
                       backend="fxhlo", fullgraph=True, dynamic=False)
    got = fn(x, weight, offs)
    print(f"grouped_mm: max abs error vs eager {(got - expected).abs().max().item():.3e}")
    torch.testing.assert_close(got, expected)

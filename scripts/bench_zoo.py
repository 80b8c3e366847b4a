#!/usr/bin/env python3
"""Unseen models against eager and Inductor (issue 27's last target): the models users compile
most, with random weights (fixed seeds) at batch 1, compiled as a user would
(``torch.compile(model, backend=..., fullgraph=True, dynamic=False)``, fxhlo with its default
options, Inductor with its own) and timed in turns in one process against eager PyTorch. Prints
a table with each backend's speed-up over eager (eager ms / backend ms) and their geomeans, and
asserts nothing: the machines are shared and noisy, so compare within one run.

Models: torchvision ResNet-50, MobileNet-V3-large, EfficientNet-B0, ConvNeXt-tiny, ViT-B/16
(224x224); Hugging Face BERT-base and T5-small's encoder (128 tokens), GPT-2 and a small
Llama-style decoder (128 tokens); diffusers' unconditional ``UNet2DModel`` (64x64) and a
conditional ``UNet2DConditionModel`` (32x32 latent, 77 text tokens), and the same at Stable
Diffusion's 64x64 latent. Target (issue 27): fxhlo's geomean at least 1.4x eager, no model
below eager.

Usage: .venv/bin/python scripts/bench_zoo.py [--models a,b] [--rounds 5] [--runs 5] [--skip-inductor]
       [--fxhlo-options '{"freeze": true}'] [--tpu-cost tpu:v6e:2x2]
Figures are kept in docs/optimizer.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backend import call_times, round_robin  # noqa: E402
from bench_optimizer import _unet, tpu_cost  # noqa: E402 (the same unconditional UNet as the ablation's)


def _vision(name):
    def build():
        import torchvision

        return getattr(torchvision.models, name)().eval(), (torch.randn(1, 3, 224, 224),)
    return build


def _tokens(vocab: int = 1000):
    return torch.randint(0, vocab, (1, 128), generator=torch.Generator().manual_seed(1))


def _hf(build_model):
    def build():
        import transformers

        transformers.logging.set_verbosity_error()
        return build_model(transformers).eval(), (_tokens(),)
    return build


def _cond_unet(size: int = 32):
    import diffusers

    model = diffusers.UNet2DConditionModel(
        sample_size=size, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=(128, 256, 512),
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=512, attention_head_dim=8,
    )
    return model.eval(), (torch.randn(1, 4, size, size), torch.tensor([10]), torch.randn(1, 77, 512))


MODELS = {
    "resnet50": _vision("resnet50"),
    "mobilenet_v3_large": _vision("mobilenet_v3_large"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "convnext_tiny": _vision("convnext_tiny"),
    "vit_b_16": _vision("vit_b_16"),
    "bert_base": _hf(lambda t: t.BertModel(t.BertConfig())),
    "t5_small_encoder": _hf(lambda t: t.T5EncoderModel(t.T5Config())),
    "gpt2": _hf(lambda t: t.GPT2Model(t.GPT2Config(use_cache=False))),
    "llama_small": _hf(lambda t: t.LlamaModel(t.LlamaConfig(
        vocab_size=1000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=4, use_cache=False))),
    "unet": _unet,
    "cond_unet": _cond_unet,
    # Stable Diffusion's latent size (512x512 images): 4,096 positions, 64 MB of scores per head.
    "cond_unet_64": lambda: _cond_unet(64),
}


def _tensors(out):
    """The output's tensors, flattened (model outputs are dataclasses or tuples)."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {','.join(MODELS)}")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5, help="timed calls per contender and round (default 5)")
    ap.add_argument("--skip-inductor", action="store_true")
    ap.add_argument("--fxhlo-options", default="{}", help="torch.compile options for fxhlo, as JSON")
    ap.add_argument("--tpu-cost", metavar="TARGET", help="instead of timing, compare -O1 and -O2 under the TPU "
                    "cost model of TARGET (e.g. tpu:v6e:2x2), as scripts/bench_optimizer.py --tpu-cost does")
    a = ap.parse_args(argv)
    unknown = [m for m in a.models.split(",") if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; valid: {','.join(MODELS)}")
    if a.tpu_cost:
        return tpu_cost(a.models.split(","), a.tpu_cost, table=MODELS)
    options = json.loads(a.fxhlo_options) or None
    import fxhlo  # noqa: F401 (registers the backend)

    backends = ["fxhlo"] + ([] if a.skip_inductor else ["inductor"])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch 1, random weights; fxhlo options "
          f"{options or 'default'}; latency: median ms of {a.rounds} rounds x {a.runs} calls in turns")
    rows = []
    for name in a.models.split(","):
        torch.manual_seed(0)
        model, args = MODELS[name]()
        contenders, compile_s, errs = {"eager": lambda: model(*args)}, {}, {}
        with torch.no_grad():
            want = _tensors(model(*args))
            for backend in backends:
                torch._dynamo.reset()
                compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False,
                                         options=options if backend == "fxhlo" else None)
                start = time.perf_counter()
                got = _tensors(compiled(*args))
                compile_s[backend] = time.perf_counter() - start
                errs[backend] = max((g - w).abs().max().item() for g, w in zip(got, want))
                contenders[backend] = lambda c=compiled: c(*args)
            times = round_robin(contenders, a.rounds, call_times(a.runs))
        ms = {k: statistics.median([t for block in v for t in block]) * 1e3 for k, v in times.items()}
        rows.append((name, ms, compile_s, errs))
        print(f"{name}: eager {ms['eager']:.2f} ms, " + ", ".join(
            f"{b} {ms[b]:.2f} ms ({ms['eager'] / ms[b]:.2f}x eager, first call {compile_s[b]:.1f} s, max |err| {errs[b]:.1e})"
            for b in backends), flush=True)
    print("\n| model | eager ms | " + " | ".join(f"{b} ms | {b} x eager" for b in backends) + " |")
    print("|---|---:|" + "---:|---:|" * len(backends))
    for name, ms, _, _ in rows:
        print(f"| {name} | {ms['eager']:.2f} | " + " | ".join(f"{ms[b]:.2f} | {ms['eager'] / ms[b]:.2f}" for b in backends) + " |")
    for b in backends:
        speedups = [ms["eager"] / ms[b] for _, ms, _, _ in rows]
        below = [name for name, ms, _, _ in rows if ms[b] > ms["eager"]]
        print(f"{b}: geomean {statistics.geometric_mean(speedups):.2f}x eager; below eager: {', '.join(below) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Graphs PyTorch hands fxhlo for CUDA, checked on the CPU plugin without a GPU.

    python scripts/cuda_graphs.py bundle ../shared/repro/cuda-graphs/gpt2_float32.trace.json out/gpt2
    python scripts/cuda_graphs.py zoo            # model zoo captured on fake CUDA tensors

``bundle``: a trace captured on a GPU (fxhlo's JSON trace, no weights) becomes a bundle
folder (``graph.json``, ``weights.safetensors``) the way the traces in ``repro/cuda-graphs``
were made: ``torch.manual_seed(0)``, the model built on the CPU (torchvision ``vit_b_16``,
``transformers.GPT2Model(GPT2Config())``, ``BertModel(BertConfig())``, chosen by the trace's
file name), its state dict and named buffers as the weights, its input drawn next from the same
generator. The trace is then compiled for the CPU plugin, run, and compared with the same
model's CPU eager run (max abs error, and relative to the output's largest magnitude).

``zoo``: each model (torchvision resnet18 with batch norm, a small ViT, a BERT-style layer in
bf16, a small GPT-2) is captured with fake CUDA tensors (:mod:`fxhlo.fake_device`), so the
graph has CUDA's batch-norm statistics and 16-bit layer norms, imported, run on the CPU plugin
and compared with eager; every op or shape disagreement is listed. The OpInfo ops go through
the same capture with ``scripts/opinfo_sweep.py --device cuda``.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from pathlib import Path

import torch


def _model_for(stem: str):
    """The model and its input for a trace named ``<model>_<dtype>``, built as the traces'
    README says (seed 0, on the CPU, then the input from the same generator)."""
    torch.manual_seed(0)
    if stem.startswith("vit_b_16"):
        import torchvision

        model = torchvision.models.vit_b_16(weights=None)
        args = (torch.randn(1, 3, 224, 224),)
        # torchvision initializes the head to zeros: the logits would be 0 whatever the body
        # computes. The check draws the head from a second generator (the trace takes any
        # weights); the README's weights are otherwise unchanged.
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            model.heads.head.weight.copy_(torch.randn(model.heads.head.weight.shape, generator=g) * 0.02)
    elif stem.startswith("gpt2"):
        import transformers

        model = transformers.GPT2Model(transformers.GPT2Config())
        args = (torch.randint(0, 1000, (1, 128)),)
    elif stem.startswith("bert"):
        import transformers

        model = transformers.BertModel(transformers.BertConfig())
        args = (torch.randint(0, 1000, (1, 128)),)
    else:
        raise SystemExit(f"no model known for trace {stem!r} (vit_b_16_*, gpt2_*, bert_*)")
    return model.eval(), args


def _first_tensor(out):
    from torch.utils import _pytree as pytree

    return next(t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))


def bundle(trace_path: Path, out: Path) -> dict:
    """Writes the bundle for ``trace_path`` under ``out``, runs it on the CPU plugin and
    compares output 0 with eager; returns the errors."""
    from safetensors.torch import save_file

    from fxhlo.fake_device import run_trace

    stem = trace_path.name.split(".")[0]
    model, args = _model_for(stem)
    state = dict(model.state_dict())
    state.update(dict(model.named_buffers()))
    weights = {k: v.detach().contiguous() for k, v in state.items()}
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(trace_path, out / "graph.json")
    save_file(weights, str(out / "weights.safetensors"))
    trace = json.loads(trace_path.read_text())
    missing = [i["weight"] for i in trace["inputs"] if "weight" in i and i["weight"] not in weights]
    if missing:
        raise SystemExit(f"{trace_path}: the model has no weights {missing[:5]}")
    user = [i["name"] for i in trace["inputs"] if i["kind"] == "user_input"]
    if len(user) != len(args):
        raise SystemExit(f"{trace_path}: {len(user)} user inputs, the model takes {len(args)}")
    outs = run_trace(trace, weights, dict(zip(user, args)), origin=str(trace_path))
    with torch.no_grad():
        expected = _first_tensor(model(*args))
    got = outs[0]
    err = float((got.double() - expected.double()).abs().max())
    scale = float(expected.double().abs().max())
    return {"trace": stem, "max_abs_error": err, "relative": err / max(scale, 1e-30), "shape": list(got.shape)}


# ---- the model zoo on fake CUDA tensors ------------------------------------------------------


def _zoo():
    import torchvision
    import transformers

    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(weights=None).eval()
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                               hidden_dim=64, mlp_dim=128, num_classes=10).eval()
    bert_cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                                       intermediate_size=128, vocab_size=500)
    bert = transformers.BertModel(bert_cfg).eval().to(torch.bfloat16)
    gpt_cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500, n_positions=64, use_cache=False)
    gpt2 = transformers.GPT2Model(gpt_cfg).eval()
    ids = torch.randint(0, 500, (2, 16))
    return [
        ("resnet18_f32", resnet, (torch.randn(1, 3, 64, 64),), 1e-4),
        ("resnet18_bf16", copy.deepcopy(resnet).to(torch.bfloat16), (torch.randn(1, 3, 64, 64, dtype=torch.bfloat16),), 5e-2),
        ("vit_small_f32", vit, (torch.randn(2, 3, 32, 32),), 1e-4),
        ("bert_layer_bf16", bert, (ids,), 5e-2),
        ("gpt2_small_f32", gpt2, (ids,), 1e-4),
    ]


def zoo() -> list:
    """Captures each zoo model on fake CUDA tensors, runs it on the CPU plugin; one row each."""
    from fxhlo.fake_device import capture_for, run_trace

    rows = []
    for name, model, args, tol in _zoo():
        row = {"model": name}
        try:
            d = capture_for(model, args, "cuda", name)
            row["cuda_forms"] = sorted({n["target"] for n in d.trace["nodes"]
                                        if any(m is not None and m["dtype"] == "f32" for m in n["meta"][1:])
                                        and "norm" in n["target"]})
            got = run_trace(d.trace, d.weights, d.inputs, origin=name)[0]
            with torch.no_grad():
                expected = _first_tensor(model(*args))
            err = float((got.double() - expected.double()).abs().max())
            scale = float(expected.double().abs().max())
            row.update(ok=err <= tol * max(scale, 1.0), max_abs_error=err, relative=err / max(scale, 1e-30))
        except Exception as e:  # noqa: BLE001 -- every disagreement is reported, the sweep goes on
            row.update(ok=False, error=f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}")
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="a GPU trace -> bundle, run on the CPU plugin against eager")
    b.add_argument("trace", type=Path)
    b.add_argument("out", type=Path)
    sub.add_parser("zoo", help="the model zoo on fake CUDA tensors")
    a = ap.parse_args(argv)
    if a.cmd == "bundle":
        print(json.dumps(bundle(a.trace, a.out)))
        return 0
    rows = zoo()
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

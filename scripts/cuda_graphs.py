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

``zoo``: each model (torchvision ResNet-18, MobileNetV3-small, EfficientNet-B0 and ConvNeXt-tiny
at 64x64, a small ViT; small configs of Hugging Face BERT, GPT-2 without and with its KV cache
and the T5 encoder; a small diffusers UNet), in float32 and bfloat16, is captured with fake CUDA
tensors (:mod:`fxhlo.fake_device`), so the graph has CUDA's batch-norm statistics and 16-bit
layer norms, imported, run on the CPU plugin and compared with the same model's CPU eager run;
one JSON row per model and dtype (``--out``), the results of docs/devices.md. The OpInfo ops go
through the same capture with ``scripts/opinfo_sweep.py --device cuda``.
"""

from __future__ import annotations

import argparse
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
        # The head is drawn from a second generator (the trace takes any weights); the
        # README's weights are otherwise unchanged.
        _vit_head(model)
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


def _vit_head(model):
    """torchvision's ViT starts with a zero head (the logits would be 0 whatever the body
    computes): drawn from a second generator, as :func:`_model_for` does for the shared trace,
    so the check compares something."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        model.heads.head.weight.copy_(torch.randn(model.heads.head.weight.shape, generator=g) * 0.02)
    return model


def _ids(n=16, batch=2, vocab=500):
    return torch.randint(0, vocab, (batch, n), generator=torch.Generator().manual_seed(2))


def _image(size, channels=3, batch=1):
    return torch.randn(batch, channels, size, size, generator=torch.Generator().manual_seed(3))


def _tv(build, size):
    def make():
        return build(weights=None).eval(), (_image(size),)
    return make


def _vit_small():
    import torchvision

    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    return _vit_head(model.eval()), (_image(32, batch=2),)


def _bert():
    import transformers

    cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=500, max_position_embeddings=64)
    return transformers.BertModel(cfg).eval(), (_ids(),)


def _gpt2(use_cache):
    def make():
        import transformers

        cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500, n_positions=64,
                                      use_cache=use_cache)
        return transformers.GPT2Model(cfg).eval(), (_ids(),)
    return make


def _t5_encoder():
    import transformers

    cfg = transformers.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=500)
    return transformers.T5EncoderModel(cfg).eval(), (_ids(),)


def _unet():
    import diffusers

    model = diffusers.UNet2DModel(
        sample_size=32, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
        norm_num_groups=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    )
    return model.eval(), (_image(32), torch.tensor([10]))


def _builders():
    import torchvision.models as tv

    return {
        "resnet18": _tv(tv.resnet18, 64),
        "mobilenet_v3_small": _tv(tv.mobilenet_v3_small, 64),
        "efficientnet_b0": _tv(tv.efficientnet_b0, 64),
        "convnext_tiny": _tv(tv.convnext_tiny, 64),
        "vit_small": _vit_small,
        "bert_small": _bert,
        "gpt2_small": _gpt2(False),
        "gpt2_small_kv_cache": _gpt2(True),
        "t5_encoder_small": _t5_encoder,
        "unet2d_small": _unet,
    }


MODELS = (
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "vit_small", "bert_small",
    "gpt2_small", "gpt2_small_kv_cache", "t5_encoder_small", "unet2d_small")
# Largest error allowed, as a fraction of the output's largest magnitude (at least 1): f32
# graphs compute what eager does up to reassociation; bf16 ones round every intermediate to
# 8 bits, in another order than eager's kernels.
TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}


def build(name: str, dtype: str = "float32"):
    """Zoo model ``name`` and its input, seeded, in ``dtype`` (floating inputs converted)."""
    torch.manual_seed(0)
    model, args = _builders()[name]()
    if dtype != "float32":
        dt = getattr(torch, dtype)
        model = model.to(dt)
        args = tuple(a.to(dt) if a.is_floating_point() else a for a in args)
    return model, args


def _leaves(out):
    from torch.utils import _pytree as pytree

    if hasattr(out, "to_tuple"):  # a transformers ModelOutput (its cache flattens to tensors)
        out = out.to_tuple()
    leaves = []
    for v in pytree.tree_leaves(out):
        if isinstance(v, torch.Tensor):
            leaves.append(v)
        elif hasattr(v, "layers"):  # transformers' Cache: per layer keys then values
            for layer in v.layers:
                leaves += [layer.keys, layer.values]
    return leaves


def _device_forms(trace) -> list:
    """The norms whose statistics have CUDA's form: batch norm's non-empty ``f32[C]`` (empty
    on the CPU), a 16-bit norm's f32 statistics; and the fused attention kernels."""
    forms = set()
    for n in trace["nodes"]:
        t, metas = n["target"].removeprefix("aten."), n["meta"]
        if "attention" in t:
            forms.add(t)
        elif "norm" in t and metas and metas[0] is not None:
            stats = [m for m in metas[1:] if m is not None and m["dtype"] == "f32" and m["sizes"] != [0]]
            if stats and ("batch_norm" in t or metas[0]["dtype"] != "f32"):
                forms.add(t)
    return sorted(forms)


def _pair(outs, expected):
    """Each eager output with one graph output of its shape and dtype, one to one. Dynamo
    orders a graph's outputs its own way (a KV cache's tensors before the hidden state, the
    keys of one layer after the values of another), and ``capture_for`` does not rebuild the
    model's output structure: among outputs of one shape and dtype, the pairs are chosen
    closest first, so a wrong value is found unless it equals another output's."""
    def err(o, e):
        return float((o.double() - e.double()).abs().max()) if o.numel() else 0.0

    cands = sorted((err(o, e), i, j) for i, e in enumerate(expected) for j, o in enumerate(outs)
                   if o.shape == e.shape and o.dtype == e.dtype)
    chosen, used = {}, set()
    for _, i, j in cands:
        if i not in chosen and j not in used:
            chosen[i] = j
            used.add(j)
    missing = [i for i in range(len(expected)) if i not in chosen]
    if missing:
        e = expected[missing[0]]
        raise AssertionError(f"eager's output {missing[0]} ({e.dtype} {list(e.shape)}) is not among the graph's "
                             f"{[(str(o.dtype), list(o.shape)) for o in outs]}")
    return [(outs[chosen[i]], e) for i, e in enumerate(expected)]


def check_model(name: str, dtype: str = "float32") -> dict:
    """``name`` in ``dtype`` captured on fake CUDA tensors, its trace run on the CPU plugin and
    compared with the model's CPU eager run, every output (:func:`_pair`). The row: ok, max abs error, relative error, the
    device forms seen (nodes with f32 statistics), or the error's first line."""
    from fxhlo.fake_device import capture_for, run_trace

    row = {"model": name, "dtype": dtype}
    try:
        model, args = build(name, dtype)
        d = capture_for(model, args, "cuda", name)
        row["device_forms"] = _device_forms(d.trace)
        outs = run_trace(d.trace, d.weights, d.inputs, origin=name)
        with torch.no_grad():
            expected = _leaves(model(*args))
        pairs = _pair(outs, expected)
        err = max(float((g.double() - e.double()).abs().max()) for g, e in pairs)
        scale = max(float(e.double().abs().max()) for _, e in pairs)
        row.update(ok=err <= TOLERANCE[dtype] * max(scale, 1.0), outputs=len(pairs), max_abs_error=err,
                   relative=err / max(scale, 1e-30))
    except Exception as e:  # noqa: BLE001 -- every disagreement is reported, the sweep goes on
        text = str(e).strip().splitlines()
        row.update(ok=False, error=f"{type(e).__name__}: {text[0][:300] if text else ''}")
    return row


def zoo(models=MODELS, dtypes=("float32", "bfloat16")) -> list:
    """Captures each zoo model on fake CUDA tensors, runs it on the CPU plugin; one row each."""
    rows = []
    for name in models:
        for dtype in dtypes:
            row = check_model(name, dtype)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="a GPU trace -> bundle, run on the CPU plugin against eager")
    b.add_argument("trace", type=Path)
    b.add_argument("out", type=Path)
    z = sub.add_parser("zoo", help="the model zoo on fake CUDA tensors")
    z.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    z.add_argument("--dtypes", default="float32,bfloat16")
    z.add_argument("--out", type=Path, help="write the rows as JSON")
    a = ap.parse_args(argv)
    if a.cmd == "bundle":
        print(json.dumps(bundle(a.trace, a.out)))
        return 0
    rows = zoo([m for m in a.models.split(",") if m], [d for d in a.dtypes.split(",") if d])
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

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
and the T5 encoder; small diffusers UNets, one with cross-attention), in float32 and bfloat16, is captured with fake CUDA
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


def _calibrated(model, size):
    """Batch norm's running statistics set to the batch statistics of one random batch: with
    torchvision's initial ones (mean 0, variance 1) and random weights, the activations of a
    deep CNN (MobileNetV3, EfficientNet) shrink layer by layer to an output of 1e-10, and a
    comparison with eager would check nothing."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
    model.train()
    with torch.no_grad():
        model(torch.randn(8, 3, size, size, generator=torch.Generator().manual_seed(4)))
    return model.eval()


def _tv(build, size):
    def make():
        return _calibrated(build(weights=None), size), (_image(size),)
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


def _unet_condition():
    import diffusers

    model = diffusers.UNet2DConditionModel(
        sample_size=16, block_out_channels=(32, 64), layers_per_block=1, cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    )
    g = torch.Generator().manual_seed(5)
    return model.eval(), (_image(16, channels=4), torch.tensor([10]), torch.randn(1, 4, 32, generator=g))


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
        "unet2d_condition_small": _unet_condition,
    }


MODELS = (
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "vit_small", "bert_small",
    "gpt2_small", "gpt2_small_kv_cache", "t5_encoder_small", "unet2d_small",
    "unet2d_condition_small")
# Largest error allowed, as a fraction of the output's largest magnitude (at least 1): f32
# graphs compute what eager does up to reassociation; bf16 ones round every intermediate to
# 8 bits, in another order than eager's kernels.
TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}
# The output's largest magnitude must be at least this: a check of zeros checks nothing.
MIN_SCALE = 1e-2


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


def _max_err(pairs) -> float:
    return max(float((g.double() - e.double()).abs().max()) for g, e in pairs)


def check_model(name: str, dtype: str = "float32") -> dict:
    """``name`` in ``dtype`` captured on fake CUDA tensors, its trace run on the CPU plugin and
    compared with the model's CPU eager run in ``dtype``, every output (:func:`_pair`).

    *ok*: the largest error is within ``TOLERANCE[dtype]`` of the output's scale (its largest
    magnitude, at least 1), or, for a 16-bit dtype, fxhlo is at most twice as far as eager from
    the float32 model's outputs (the rule of the OpInfo sweep: the two round differently, and
    through a deep network the roundings of each add up); and the scale is above ``MIN_SCALE``.
    The row: ok, the errors, the scale, the device forms (:func:`_device_forms`), or the
    error's first line."""
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
        err = _max_err(pairs)
        scale = max(float(e.double().abs().max()) for _, e in pairs)
        ok = err <= TOLERANCE[dtype] * max(scale, 1.0)
        row.update(outputs=len(pairs), max_abs_error=err, scale=scale, relative=err / max(scale, 1e-30))
        if dtype != "float32":
            wide, wide_args = build(name, "float32")
            with torch.no_grad():
                truth = _leaves(wide(*wide_args))
            fx = _max_err([(g, t) for (g, _), t in zip(pairs, truth)])
            eager = _max_err([(e, t) for (_, e), t in zip(pairs, truth)])
            row["vs_float32"] = {"fxhlo": fx, "eager": eager}
            ok = ok or fx <= 2 * eager + TOLERANCE["float32"] * max(scale, 1.0)
        # An output of about 0 would match whatever the graph computes: such a row fails.
        row["ok"] = bool(ok and scale > MIN_SCALE)
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


# ---- docs/devices.md, from the committed results -------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "testsuite" / "devices"
DOC = ROOT / "docs" / "devices.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def devices_doc() -> str:
    """docs/devices.md from ``testsuite/devices/zoo_cuda.json`` (``zoo --out``) and
    ``testsuite/devices/opinfo_cuda.json`` (``opinfo_sweep.py --device cuda --out``), against
    the CPU sweep's ``testsuite/opinfo/*.json``."""
    zoo_rows = json.loads((RESULTS / "zoo_cuda.json").read_text())
    cuda = json.loads((RESULTS / "opinfo_cuda.json").read_text())
    cpu: dict = {}
    for f in ("float32.json", "other_dtypes.json"):
        for op, per in json.loads((ROOT / "testsuite" / "opinfo" / f).read_text())["ops"].items():
            cpu.setdefault(op, {}).update(per)
    out = [
        "# One graph whatever the device",
        "",
        "Generated by `python scripts/cuda_graphs.py doc` from `testsuite/devices/*.json`; "
        "`python/tests/test_device_variants.py` fails when this file is stale.",
        "",
        "PyTorch hands a backend another graph on CUDA than on the CPU: batch norm's saved statistics",
        "are `f32[C]` (empty on the CPU), layer and group norm of 16-bit inputs return f32 statistics,",
        "and attention reaches the CUDA kernels (`_scaled_dot_product_flash_attention`, `_efficient_`,",
        "`_cudnn_`). fxhlo takes all of them: `F.scaled_dot_product_attention` is intercepted in",
        "Dynamo's graph before the dispatcher picks a kernel (`fxhlo.decompositions.attention`), the",
        "kernels called directly are lowered (`frontend/src/aten/attention.rs`), and shape inference",
        "accepts the device forms of the norm statistics (`ir/src/infer/device.rs`).",
        "",
        "Without a GPU the graphs are found on fake CUDA tensors (`fxhlo.fake_device.capture_for`:",
        "Dynamo on the real CPU tensors, AOT Autograd on `FakeTensorMode` tensors of device `cuda`, which",
        "carry CUDA's metadata), and the trace runs on the CPU plugin against the same model's CPU eager",
        "run. One limit: on fake tensors SDPA's own kernel choice falls back to the math form, so the",
        "CUDA kernels are reached by calling them directly (`test_device_variants.py`).",
        "",
        "## What differs on CUDA",
        "",
        "What the fake-CUDA sweeps below found, and where fxhlo takes it:",
        "",
        "| on CUDA | on the CPU | in fxhlo |",
        "|---|---|---|",
        "| `_native_batch_norm_legit_no_training` (eval batch norm) returns its saved mean and inverse "
        "std as `f32[C]` | empty | shape inference accepts both (`ir/src/infer/device.rs`) |",
        "| `native_layer_norm` of bf16/f16 returns f32 mean and rstd | the input's dtype | shape "
        "inference accepts both |",
        "| `F.scaled_dot_product_attention` dispatches to `_flash_attention`, `_efficient_attention` or "
        "`_cudnn_attention` (auxiliary results: log-sum-exp, RNG state, ints) | "
        "`_scaled_dot_product_flash_attention_for_cpu` | intercepted before dispatch; the kernels called "
        "directly are lowered (`frontend/src/aten/attention.rs`) |",
        "| training batch norm (`_batch_norm_with_update`) decomposes with a cuDNN reserve tensor "
        "(`uint8[n]`, for the backward) | `uint8[0]` | dropped from the forward graph |",
        "",
        "What the fake device itself needed (`fxhlo.fake_device`, not a difference of the graphs):",
        "the tracer computed small constants for real (`torch.tensor([], device=\"cuda\")` in",
        "transformers' KV cache: *Found no NVIDIA driver*), training batch norm's decomposition asked",
        "cuDNN its reserve size, the polynomials' `while_loop` needs a shape environment, and fake",
        "tensors run an op with no meta kernel (`geqrf`, `histogram`) for real on their device; all",
        "four are answered without the device while capturing (the last on the CPU, with the CPU",
        "kernel's strides). Still out of reach: arguments PyTorch wants on the CPU whatever the",
        "device (`tensor_split`'s index tensor: the sweep fakes every tensor onto CUDA; on the CPU",
        "the op fails in fxhlo anyway, on its data-dependent sizes).",
        "",
        "## Models on fake CUDA",
        "",
        "`python scripts/cuda_graphs.py zoo --out testsuite/devices/zoo_cuda.json`: torchvision CNNs at",
        "64x64 (batch 1, random weights), a small ViT (2 layers, its zero-initialized head drawn from a",
        "second seed), small configs of Hugging Face BERT, GPT-2 (without and with its KV cache) and the",
        "T5 encoder (batch 2, 16 tokens), small diffusers `UNet2DModel` and `UNet2DConditionModel`",
        "(cross-attention to 4 tokens). Every output is compared",
        f"(the KV cache's too); *ok*: max abs error at most {TOLERANCE['float32']:g} (f32) or "
        f"{TOLERANCE['bfloat16']:g} (bf16) of the",
        f"output's largest magnitude (at least 1), or in bf16 fxhlo at most twice as far as eager from",
        "the float32 model (*vs f32*: the largest error of each; through a deep network both runs'",
        "roundings add up, in another order),",
        f"and that magnitude above {MIN_SCALE:g} (an output of",
        "about 0 checks nothing: the CNNs' batch-norm statistics are those of one random batch, the",
        "ViT's head is not zero). *CUDA forms*: the nodes whose form is CUDA's",
        "(batch norm's f32[C] statistics, 16-bit norms' f32 statistics).",
        "",
        "| model | dtype | ok | max abs error | output scale | relative | vs f32: fxhlo / eager | CUDA forms / error |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in zoo_rows:
        if "error" in r:
            out.append(f"| {r['model']} | {r['dtype']} | **fail** | | | | | {_cell(r['error'])} |")
        else:
            forms = ", ".join(f"`{f}`" for f in r.get("device_forms", []))
            vs = r.get("vs_float32")
            vs = f"{vs['fxhlo']:.3g} / {vs['eager']:.3g}" if vs else ""
            out.append(f"| {r['model']} | {r['dtype']} | {'yes' if r['ok'] else '**no**'} | "
                       f"{r['max_abs_error']:.3g} | {r['scale']:.3g} | {r['relative']:.3g} | {vs} | {forms} |")
    counts: dict = {}
    for per in cuda["ops"].values():
        for dtype, r in per.items():
            c = counts.setdefault(dtype, {"pass": 0, "fail": 0, "excluded": 0, "unsupported": 0})
            c[r["status"]] += 1
    out += [
        "",
        "## OpInfo on fake CUDA",
        "",
        "`python scripts/opinfo_sweep.py --device cuda --dtypes float32,bfloat16 --samples "
        f"{cuda['samples']} --out testsuite/devices/opinfo_cuda.json`:",
        "each OpInfo sample captured on fake CUDA tensors, its trace run on the CPU plugin and compared",
        "with eager as in the CPU sweep (docs/ops.md, \"OpInfo coverage\"); an op that fails is run",
        "through `aot_eager` on the CPU, and where that fails too it is *excluded*.",
        "",
        "| dtype | pass | fail | excluded | unsupported |",
        "|---|---:|---:|---:|---:|",
    ]
    for dtype, c in sorted(counts.items(), key=lambda kv: kv[0] != "float32"):
        out.append(f"| {dtype} | {c['pass']} | {c['fail']} | {c['excluded']} | {c['unsupported']} |")
    differ, both, better, excluded = [], [], [], 0
    for op, per in sorted(cuda["ops"].items()):
        for dtype, r in sorted(per.items()):
            was = cpu.get(op, {}).get(dtype, {})
            status = was.get("status", "not run")
            if r["status"] == "pass":
                if status not in ("pass", "not run"):
                    better.append(f"| `{op}` | {dtype} | pass | {status} | {_cell(was.get('reason', ''))[:140]} |")
                continue
            if r["status"] == "unsupported":
                continue
            if r["status"] == "excluded" and status == "excluded":
                excluded += 1
                continue
            line = f"| `{op}` | {dtype} | {r['status']} | {status} | {_cell(r.get('reason', ''))[:140]} |"
            (differ if status == "pass" else both).append(line)
    head = ["| OpInfo op | dtype | fake CUDA | CPU | reason |", "|---|---|---|---|---|"]
    out += ["", "### Pass on the CPU, not on fake CUDA", "",
            "The device's differences not taken yet, and the fake device's own limits:", "",
            *head, *(differ or ["| (none) | | | | |"])]
    out += ["", "### Failing on both", "",
            "fxhlo's own gaps, the same on either device (docs/ops.md); the data-dependent sizes",
            "(`nonzero`, `unique`, `masked_select`) stop the fake-CUDA capture earlier, in the fake",
            "mode's shape environment (*u0 possible memo disaster*). "
            f"Besides these, {excluded} op/dtype pairs are excluded on both (random ops, uninitialized",
            "memory, ops Dynamo does not capture).", "", *head, *both]
    out += ["", "### Pass on fake CUDA, not on the CPU", "",
            "Not a device difference: the committed CPU results (docs/ops.md) are older than this sweep",
            "(or from another CPU: eager's floats differ from one to another). The CPU sweep run again",
            "on this sweep's tree and machine passes every one checked: `addmm`, `nn.functional.gelu`,",
            "`logit`, `native_batch_norm`, `grid_sampler_2d` in bf16, `matrix_exp`, `linalg.eigh`,",
            "`narrow`, `take` in float32 (3 samples); re-recording testsuite/opinfo/ is left to the",
            "next CPU sweep.",
            "`linear_cross_entropy.chunked` is excluded there (Dynamo with `fullgraph=True` refuses a",
            "skipped function) and captured here by `capture_for`'s own Dynamo call. The reason column is",
            "the CPU sweep's.", "", *head, *better, ""]
    return "\n".join(out)


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
    sub.add_parser("doc", help="write docs/devices.md from testsuite/devices/*.json")
    a = ap.parse_args(argv)
    if a.cmd == "doc":
        DOC.write_text(devices_doc())
        return 0
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

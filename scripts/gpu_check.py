"""The GPU check: fxhlo against PyTorch eager and Inductor, on the device where the model lives.

Run by ``scripts/gpu_check.sh run`` (which puts the carried build first on ``PYTHONPATH``). In one
process, within a time budget, it prints:

- the per-call time of a cached 1-element graph (``x + 1``) for eager, Inductor and fxhlo: best
  of ``--blocks`` blocks of ``--calls`` calls each, the three interleaved block by block;
- for each model (torchvision CNNs with batch norm, ViT, BERT, GPT-2, T5 encoder, a diffusers
  UNet; random weights after ``torch.manual_seed(0)``, nothing downloaded) in bf16 batch 1, f32
  batch 1 and bf16 batch 32 (cases run in that order, so the time budget cuts batch 32 first):
  whether fxhlo's output matches eager's (largest error over the outputs, relative to the largest
  magnitude of eager's output, within a tolerance per dtype; Inductor's error is shown beside it
  as the yardstick of what another compiler's rounding gives), the seconds of the first call
  (trace, compile, run) of Inductor and fxhlo, and the median latency of eager, Inductor and
  fxhlo, timed in rotation call by call (each call synchronized with the device).

Every case runs in its own try/except: a failure is a row with its error, not the end of the run.
When the budget (``--budget``) would be exceeded, the remaining cases are skipped and listed. With
``$OUT`` set (or ``--json``), the results also go to ``$OUT/gpu_check.json``, rewritten after every
case so that a run killed from outside keeps what it measured.

``--device cpu --quick`` runs the same code on the CPU plugin with small configurations of a few
of the models (python/tests/test_gpu_check.py does, so this script is tested without a GPU).
The environment can say the same: GPU_CHECK_DEVICE=cpu, GPU_CHECK_QUICK=1, GPU_CHECK_BUDGET=<s>.

Exit status: 0 when every case that ran compiled and matched, 1 otherwise, 2 when the check could
not start (no CUDA device, fxhlo not importable, no PJRT plugin for the device).
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
import traceback
import warnings

START = time.perf_counter()  # the budget counts from here: importing torch is part of the run
# The libraries' advice about loading pretrained weights does not apply to random ones.
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
# Nothing is downloaded (models come from configs); where there is no network, no lookup waits.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# diffusers' version checks are lru_cache'd: Dynamo says, once per call site, that it traces through.
warnings.filterwarnings("ignore", message="Dynamo detected a call to a `functools.lru_cache`")

try:
    import torch
except ImportError as _e:  # the machine's own PyTorch is the one to check against
    print(f"gpu_check: PyTorch is not importable in this Python ({sys.executable}: {_e}); PYTHON names "
          "the interpreter that has it", flush=True)
    sys.exit(2)

# Largest error relative to the output's scale that counts as a match, per dtype. bf16 keeps 8
# bits of mantissa (rounding ~4e-3 per op, compounding over layers); f32 on a GPU meets TF32
# (eager's cuDNN convolutions use it by default), ~5e-4 per op.
TOLERANCE = {torch.float32: 1e-2, torch.bfloat16: 5e-2}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# Cases in priority order: the budget skips from the end.
VARIANTS = ("bf16x1", "f32x1", "bf16x32")
QUICK_VARIANTS = ("f32x1", "bf16x2")
# The PJRT plugin files the runtime looks for (runtime/src/plugin.rs, `plugin_files`), relative
# to a site-packages folder; here only to say early and plainly when none is installed.
PLUGIN_FILES = {
    "cuda": ["jax_plugins/xla_cuda13/xla_cuda_plugin.so", "jax_plugins/xla_cuda12/xla_cuda_plugin.so"],
    "cpu": ["xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"],
}
PLUGIN_PACKAGES = {"cuda": "jax-cuda13-pjrt (or jax-cuda12-pjrt)", "cpu": "xla-cpu-pjrt"}


def log(*args):
    print(*args, flush=True)


# ---- the models ------------------------------------------------------------------------------
# Each builder takes (batch, quick) and returns (model, args, kwargs) on the CPU in f32, seeded.
# Only long-stable constructor APIs (the GPU machine's packages are older than this checkout's).


def _randomize_batch_norm(model):
    """Running statistics away from (0, 1), so that a batch norm computed wrongly shows."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model


def torchvision_model(name, size, quick_name=None, quick_size=64):
    def build(batch, quick):
        import torchvision

        torch.manual_seed(0)
        s = quick_size if quick else size
        kwargs = {"image_size": s} if name.startswith("vit_") else {}  # ViT's position embedding is sized
        model = getattr(torchvision.models, quick_name if quick and quick_name else name)(weights=None, **kwargs)
        if name.startswith("vit_"):  # torchvision zero-initializes ViT's head: the output would be 0
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
            torch.nn.init.normal_(model.heads.head.bias, std=0.02)
        return _randomize_batch_norm(model), (torch.randn(batch, 3, s, s),), {}

    return build


def bert(batch, quick):
    import transformers

    torch.manual_seed(0)
    config = (transformers.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=128) if quick else transformers.BertConfig())
    model = transformers.BertModel(config)
    return model, (torch.randint(0, config.vocab_size, (batch, 16 if quick else 128)),), {}


def gpt2(batch, quick):
    import transformers

    torch.manual_seed(0)
    config = (transformers.GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4, use_cache=False,
                                      bos_token_id=0, eos_token_id=0)
              if quick else transformers.GPT2Config(use_cache=False))
    model = transformers.GPT2Model(config)
    return model, (torch.randint(0, config.vocab_size, (batch, 16 if quick else 128)),), {}


def t5_encoder(batch, quick):
    import transformers

    torch.manual_seed(0)
    config = (transformers.T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
              if quick else transformers.T5Config())  # T5Config() is t5-small's shape
    model = transformers.T5EncoderModel(config)
    return model, (torch.randint(0, config.vocab_size, (batch, 16 if quick else 128)),), {}


def unet(batch, quick):
    import diffusers

    torch.manual_seed(0)
    if quick:
        config = dict(sample_size=16, block_out_channels=(32, 64), layers_per_block=1, cross_attention_dim=32,
                      attention_head_dim=8, norm_num_groups=8)
        size, text = 16, 4
    else:  # a Stable-Diffusion-shaped UNet, smaller: 3 levels, one layer per block
        config = dict(sample_size=32, block_out_channels=(128, 256, 512), layers_per_block=1, cross_attention_dim=512,
                      attention_head_dim=8)
        size, text = 32, 77
    model = diffusers.UNet2DConditionModel(
        in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D",) * (len(config["block_out_channels"]) - 1) + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * (len(config["block_out_channels"]) - 1),
        **config)
    args = (torch.randn(batch, 4, size, size), torch.full((batch,), 10))
    return model, args, {"encoder_hidden_states": torch.randn(batch, text, config["cross_attention_dim"])}


MODELS = {
    "resnet50": torchvision_model("resnet50", 224, quick_name="resnet18"),
    "mobilenet_v3_large": torchvision_model("mobilenet_v3_large", 224),
    "convnext_tiny": torchvision_model("convnext_tiny", 224),
    "vit_b_16": torchvision_model("vit_b_16", 224),
    "bert": bert,
    "gpt2": gpt2,
    "t5_encoder": t5_encoder,
    "unet": unet,
}
QUICK_MODELS = ("resnet50", "bert")


# ---- measuring -------------------------------------------------------------------------------


def _tensors(out):
    """The tensors of a model's output, in order (tuples, lists, dicts, Hugging Face ModelOutput
    and diffusers BaseOutput, which are ordered dicts)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):  # ModelOutput / BaseOutput included: their set fields
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []


def relative_error(got, want) -> float:
    """Largest |got - want| over every output, relative to the largest |want| of that output."""
    got, want = _tensors(got), _tensors(want)
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs, eager has {len(want)}")
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            raise AssertionError(f"output shape {tuple(g.shape)}, eager's is {tuple(w.shape)}")
        if g.dtype != w.dtype or g.device != w.device:
            raise AssertionError(f"output {g.dtype} on {g.device}, eager's is {w.dtype} on {w.device}")
        if not w.is_floating_point():
            worst = max(worst, 0.0 if torch.equal(g.cpu(), w.cpu()) else math.inf)
            continue
        g, w = g.detach().to("cpu", torch.float64), w.detach().to("cpu", torch.float64)
        scale = w.abs().max().item() if w.numel() else 0.0
        err = (g - w).abs().max().item() if w.numel() else 0.0
        err = err / scale if scale > 0 else err
        worst = max(worst, err if not math.isnan(err) else math.inf)
    return worst


class Device:
    def __init__(self, kind: str):
        self.kind = kind
        self.torch = torch.device(kind)

    def sync(self):
        if self.kind == "cuda":
            torch.cuda.synchronize()

    def free(self):
        gc.collect()
        if self.kind == "cuda":
            torch.cuda.empty_cache()


def interleaved_ms(fns: dict, device: Device, runs: int, target_s: float) -> dict:
    """Median milliseconds per call of each of ``fns`` (no-argument callables), called in rotation
    (a, b, c, b, c, a, ...), each call synchronized; the number of rounds is sized so that timing
    takes about ``target_s`` seconds, at least 5 and at most ``runs``."""
    single = {}
    for name, fn in fns.items():
        fn()
        device.sync()
        start = time.perf_counter()
        fn()
        device.sync()
        single[name] = time.perf_counter() - start
    rounds = max(5, min(runs, int(target_s / max(sum(single.values()), 1e-6))))
    samples = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            device.sync()
            start = time.perf_counter()
            fns[name]()
            device.sync()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) * 1e3 for name, v in samples.items()} | {"rounds": rounds}


def _root(e: BaseException) -> BaseException:
    """The error behind ``e``: Dynamo wraps a backend's error in BackendCompilerFailed (its
    ``inner_exception``; some releases also chain it as the cause)."""
    while True:
        inner = e.__cause__ or getattr(e, "inner_exception", None)
        if not isinstance(inner, BaseException) or inner is e:
            return e
        e = inner


def _first_line(e: BaseException) -> str:
    e = _root(e)
    text = [line for line in str(e).strip().splitlines() if line.strip()]
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


# The 1-element graph, one function per contender: Dynamo caches compiled code per code object.
def _add_one_eager(x):
    return x + 1


def _add_one_inductor(x):
    return x + 1


def _add_one_fxhlo(x):
    return x + 1


def per_call(device: Device, options: dict, blocks: int, calls: int) -> dict:
    """Microseconds per call of a cached ``x + 1`` on a 1-element tensor: best of ``blocks``
    blocks of ``calls`` calls (synchronized once per block), the contenders interleaved by block."""
    x = torch.ones(1, device=device.torch)
    fns = {
        "eager": _add_one_eager,
        "inductor": torch.compile(_add_one_inductor, fullgraph=True, dynamic=False),
        "fxhlo": torch.compile(_add_one_fxhlo, backend="fxhlo", fullgraph=True, dynamic=False, options=options),
    }
    result = {}
    with torch.no_grad():
        for name in ("fxhlo", "eager", "inductor"):  # fxhlo first: no plugin, no point going on
            fn = fns[name]
            try:
                got = fn(x)
                if got.device != x.device or got.dtype != x.dtype:
                    raise AssertionError(f"x + 1 gave {got.dtype} on {got.device} for {x.dtype} on {x.device}")
                if not torch.equal(got, x + 1):
                    raise AssertionError(f"x + 1 gave {got.tolist()}")
            except Exception as e:
                if name == "fxhlo" and _device_error(e):
                    raise
                result[f"{name} error"] = _first_line(e)
                del fns[name]
        best = {name: math.inf for name in fns}
        for _ in range(blocks):
            for name, fn in fns.items():
                device.sync()
                start = time.perf_counter()
                for _ in range(calls):
                    fn(x)
                device.sync()
                best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return result | {f"{name} us": t * 1e6 for name, t in best.items()}


def _device_error(e: BaseException):
    """The fxhlo.DeviceError behind ``e`` (Dynamo wraps a backend's errors), or None."""
    import fxhlo

    while e is not None:
        if isinstance(e, fxhlo.DeviceError):
            return e
        e = e.__cause__ or getattr(e, "inner_exception", None) or e.__context__
    return None


def run_case(name: str, variant: str, device: Device, options: dict, quick: bool, runs: int, target_s: float) -> dict:
    dtype_name, batch = variant.split("x")
    dtype, batch = DTYPES[dtype_name], int(batch)
    row = {"model": name, "dtype": dtype_name, "batch": batch}
    torch._dynamo.reset()
    stage = "build"
    try:
        model, args, kwargs = MODELS[name](batch, quick)
        model = model.eval().to(device=device.torch, dtype=dtype)

        def move(t):
            if not isinstance(t, torch.Tensor):
                return t
            return t.to(device.torch, dtype) if t.is_floating_point() else t.to(device.torch)

        args = tuple(move(a) for a in args)
        kwargs = {k: move(v) for k, v in kwargs.items()}
        contenders = {"eager": model}
        with torch.no_grad():
            stage = "eager"
            want = model(*args, **kwargs)
            device.sync()
            scale = max((t.detach().abs().max().item() for t in _tensors(want) if t.is_floating_point() and t.numel()),
                        default=0.0)
            if not scale > 0:  # all zeros (or NaN): any output would match
                raise AssertionError(f"eager's output is {'all zeros' if scale == 0 else 'NaN'}: nothing to compare")
            for backend in ("inductor", "fxhlo"):
                stage = backend
                try:
                    if backend == "inductor":
                        compiled = torch.compile(model, fullgraph=True, dynamic=False)
                    else:
                        compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options=options)
                    start = time.perf_counter()
                    got = compiled(*args, **kwargs)
                    device.sync()
                    row[f"{backend} compile s"] = time.perf_counter() - start
                    row[f"{backend} err"] = relative_error(got, want)
                    del got
                    contenders[backend] = compiled
                except Exception as e:
                    if backend == "fxhlo" and _device_error(e):
                        raise
                    row[f"{backend} error"] = _first_line(e)
                    row[f"{backend} error text"] = str(_root(e))[:4000]
                    row[f"{backend} traceback"] = traceback.format_exc(limit=-8)
            stage = "timing"
            ms = interleaved_ms({k: (lambda m=m: m(*args, **kwargs)) for k, m in contenders.items()}, device, runs, target_s)
            row["rounds"] = ms.pop("rounds")
            row.update({f"{k} ms": v for k, v in ms.items()})
    except Exception as e:
        if _device_error(e):
            raise
        row["error"] = f"{stage}: {_first_line(e)}"
    finally:
        contenders = compiled = model = want = None
        torch._dynamo.reset()
        device.free()
    row["match"] = "fxhlo err" in row and row["fxhlo err"] <= TOLERANCE[dtype] and "error" not in row
    return row


# ---- reporting -------------------------------------------------------------------------------


def _fmt(v, spec):
    """``v`` formatted by ``spec``, or a dash as wide when there is no figure."""
    return format(v, spec) if isinstance(v, (int, float)) else "-".rjust(int(spec.split(".")[0] or 0))


def table(report: dict) -> str:
    lines = []
    pc = report.get("per_call", {})
    lines.append(f"Per call of a cached x + 1 (1 element, {report['device']}), best of {report['blocks']} blocks of "
                 f"{report['calls']} calls:")
    lines.append("  " + "   ".join(f"{k} {pc[f'{k} us']:.1f} us" if f"{k} us" in pc else f"{k} -"
                                   for k in ("eager", "inductor", "fxhlo")))
    for k in ("eager", "inductor", "fxhlo"):
        if f"{k} error" in pc:
            lines.append(f"  {k}: {pc[f'{k} error']}")
    lines.append("")
    head = (f"| {'model':<18} | {'case':<7} | match | {'fxhlo err':>9} | {'ind. err':>9} | {'fxhlo comp s':>12} | "
            f"{'ind. comp s':>11} | {'eager ms':>9} | {'ind. ms':>9} | {'fxhlo ms':>9} |")
    lines += [head, "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"]
    notes = []
    order = {v: i for i, v in enumerate(report["variants"])}
    for r in sorted(report["cases"], key=lambda r: (list(MODELS).index(r["model"]), order.get(f"{r['dtype']}x{r['batch']}", 0))):
        case = f"{r['dtype']}x{r['batch']}"
        if r.get("skipped"):
            lines.append(f"| {r['model']:<18} | {case:<7} | skipped: {r['skipped']}")
            continue
        lines.append(
            f"| {r['model']:<18} | {case:<7} | {'yes' if r['match'] else 'NO':<5} | {_fmt(r.get('fxhlo err'), '9.1e')} | "
            f"{_fmt(r.get('inductor err'), '9.1e')} | {_fmt(r.get('fxhlo compile s'), '12.1f')} | "
            f"{_fmt(r.get('inductor compile s'), '11.1f')} | {_fmt(r.get('eager ms'), '9.3f')} | "
            f"{_fmt(r.get('inductor ms'), '9.3f')} | {_fmt(r.get('fxhlo ms'), '9.3f')} |")
        for key in ("error", "fxhlo error", "inductor error"):
            if key in r:
                who = "" if key == "error" else key.split()[0] + ": "
                notes.append(f"  {r['model']} {case}: {who}{r[key]}")
    if notes:
        lines += ["", "Errors:"] + notes
    ran = [r for r in report["cases"] if not r.get("skipped")]
    lines.append("")
    if report["quick"]:
        lines.append("--quick: small configurations, not the real models (resnet50 is ResNet-18, the CNNs and ViT "
                     "see 64x64 images, the transformers have 2 layers of width 64 and 16 tokens, the UNet is tiny).")
    lines.append(f"{sum(r['match'] for r in ran)} of {len(ran)} cases compiled and matched eager "
                 f"(tolerance relative to the output's scale: f32 {TOLERANCE[torch.float32]:g}, "
                 f"bf16 {TOLERANCE[torch.bfloat16]:g}); {report['skipped']} skipped; {report['elapsed s']:.0f} s.")
    b1 = [r for r in ran if r["dtype"] == "bf16" and r["batch"] == 1 and r.get("fxhlo ms") and r.get("inductor ms")]
    if b1:
        gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
        lines.append(f"bf16 batch 1, geomean speedup over eager ({len(b1)} models with both): "
                     f"Inductor {gm([r['eager ms'] / r['inductor ms'] for r in b1]):.2f}x, "
                     f"fxhlo {gm([r['eager ms'] / r['fxhlo ms'] for r in b1]):.2f}x")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cuda", "cpu"), default=os.environ.get("GPU_CHECK_DEVICE", "cuda"),
                    help="where the models run (default cuda; cpu runs the check on the CPU plugin)")
    ap.add_argument("--quick", action="store_true", default=os.environ.get("GPU_CHECK_QUICK") == "1",
                    help=f"small configurations of {', '.join(QUICK_MODELS)}, cases {', '.join(QUICK_VARIANTS)}, "
                         "short timing: the code path, for a test")
    ap.add_argument("--models", help=f"comma list of models (default: all: {', '.join(MODELS)})")
    ap.add_argument("--variants", help=f"comma list of <dtype>x<batch> cases, dtype f32 or bf16 "
                                       f"(default {','.join(VARIANTS)}; quick: {','.join(QUICK_VARIANTS)})")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("GPU_CHECK_BUDGET", 400)),
                    help="seconds for the whole run; cases that would not fit are skipped (default 400)")
    ap.add_argument("--hard-limit", type=float, default=None,
                    help="seconds after which a case still running is abandoned: the table so far is printed "
                         "and the process exits 3 (default: budget + 65, under 8 minutes in all)")
    ap.add_argument("--runs", type=int, default=50, help="most timed rounds per case (default 50, at least 5)")
    ap.add_argument("--json", help="write the results here (default: $OUT/gpu_check.json when OUT is set)")
    ap.add_argument("--dump", metavar="DIR", help="fxhlo dumps each graph's trace into DIR (options dump='trace')")
    a = ap.parse_args(argv)
    t0 = START

    models = a.models.split(",") if a.models else list(QUICK_MODELS if a.quick else MODELS)
    variants = a.variants.split(",") if a.variants else list(QUICK_VARIANTS if a.quick else VARIANTS)
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; models: {', '.join(MODELS)}")
    for v in variants:
        d, _, b = v.partition("x")
        if d not in DTYPES or not b.isdigit() or int(b) < 1:
            ap.error(f"case {v!r} is not <dtype>x<batch> with dtype f32 or bf16")

    if a.device == "cuda" and not torch.cuda.is_available():
        why = ("this PyTorch is built without CUDA" if torch.version.cuda is None
               else f"PyTorch (CUDA {torch.version.cuda}) finds no GPU (driver, CUDA_VISIBLE_DEVICES?)")
        log(f"gpu_check: no CUDA device: {why}. Run it on a machine with an NVIDIA GPU, or use --device cpu.")
        return 2
    try:
        import fxhlo
        from fxhlo import _plugin
    except ImportError as e:
        log(f"gpu_check: cannot import fxhlo ({e}). 'scripts/gpu_check.sh run' puts carry/site on PYTHONPATH; "
            f"carry/ must be built for this Python ({platform.python_version()}) by 'scripts/gpu_check.sh build'.")
        return 2
    plugin = os.environ.get("FXHLO_PJRT_PLUGIN") or _plugin.find(PLUGIN_FILES[a.device])
    if plugin is None:
        log(f"gpu_check: warning: no PJRT plugin for {a.device} found through the import system (wanted "
            f"{' or '.join(PLUGIN_FILES[a.device])}; install {PLUGIN_PACKAGES[a.device]}, or set FXHLO_PJRT_PLUGIN); "
            "trying the runtime's own search")

    device = Device(a.device)
    options = {"device": a.device}
    if a.dump:
        options.update(dump="trace", dump_dir=a.dump)
    report = {
        "device": torch.cuda.get_device_name() if a.device == "cuda" else f"cpu ({platform.processor() or platform.machine()}, "
                                                                           f"{os.cpu_count()} cores)",
        "torch": torch.__version__, "python": platform.python_version(), "plugin": plugin,
        "fxhlo native": importlib.util.find_spec("fxhlo._native").origin,
        "quick": a.quick, "variants": variants, "budget s": a.budget,
        "blocks": 7, "calls": 200 if a.quick else 2000, "per_call": {}, "cases": [], "skipped": 0, "elapsed s": 0.0,
    }
    for mod in ("torchvision", "transformers", "diffusers"):
        try:
            report[mod] = importlib.metadata.version(mod)
        except importlib.metadata.PackageNotFoundError:  # fails only its models' rows
            report[mod] = "missing"
    out = a.json or (os.path.join(os.environ["OUT"], "gpu_check.json") if os.environ.get("OUT") else None)

    def save():
        report["elapsed s"] = time.perf_counter() - t0
        if out:
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            with open(out + ".tmp", "w") as f:
                json.dump(report, f, indent=1, default=str)
            os.replace(out + ".tmp", out)

    # A compile that never returns must not take the table with it: past the hard limit, print
    # what there is and leave (the running case is lost, the others are kept).
    # If the stuck call holds the GIL, this thread cannot run: faulthandler's own thread then
    # prints where every thread is and ends the process 20 s later (the rows so far are in the
    # JSON and were printed as they came).
    cases = [(m, v) for v in variants for m in models]
    current = {"case": "the per-call check", "pending": cases, "running": None}

    def abandon():
        log(f"\ngpu_check: hard time limit ({hard_limit:.0f} s) reached during {current['case']}: abandoning it")
        report["error"] = f"hard time limit reached during {current['case']}"
        try:
            for m2, v2 in current["pending"]:
                d, b = v2.split("x")
                abandoned = (m2, v2) == current.get("running")
                report["cases"].append({"model": m2, "dtype": d, "batch": int(b), "match": False} | (
                    {"error": "abandoned at the hard time limit"} if abandoned else {"skipped": "hard time limit"}))
                report["skipped"] += 0 if abandoned else 1
            save()
            log("\n" + table(report))
        finally:
            sys.stdout.flush()
            os._exit(3)

    hard_limit = a.hard_limit if a.hard_limit is not None else a.budget + 65
    watchdog = threading.Timer(max(0.0, hard_limit - (time.perf_counter() - t0)), abandon)
    watchdog.daemon = True
    watchdog.start()
    faulthandler.enable()  # a crash in native code (a plugin, a kernel) still says where it was
    faulthandler.dump_traceback_later(max(1.0, hard_limit + 20 - (time.perf_counter() - t0)), exit=True)

    log(f"gpu_check on {report['device']}: torch {torch.__version__}, python {report['python']}, "
        f"torchvision {report['torchvision']}, transformers {report['transformers']}, diffusers {report['diffusers']}")
    log(f"  plugin {plugin or '(runtime search)'}; budget {a.budget:.0f} s")
    try:
        report["per_call"] = per_call(device, options, report["blocks"], report["calls"])
        log("per call: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k}: {v}"
                                     for k, v in report["per_call"].items()))
    except Exception as e:
        if _device_error(e):
            log(f"gpu_check: fxhlo cannot use the {a.device} device: {_first_line(_device_error(e))}\n"
                f"  (the PJRT plugin: install {PLUGIN_PACKAGES[a.device]} for this Python, or set FXHLO_PJRT_PLUGIN)")
            report["error"] = _first_line(_device_error(e))
            save()
            return 2
        report["per_call"] = {"error": _first_line(e)}
    save()

    # Timing per case: about a tenth of the budget's share per case, at most 3 s (quick: 0.3 s).
    target_s = min(0.3 if a.quick else 3.0, 0.1 * a.budget / max(1, len(models) * len(variants)))
    runs = min(a.runs, 5) if a.quick else a.runs
    durations = []
    for i, (m, v) in enumerate(cases):
        left = a.budget - (time.perf_counter() - t0)
        estimate = statistics.median(durations) if durations else 0.0
        if left < 1.2 * estimate or left <= 0:
            for m2, v2 in cases[i:]:
                d, b = v2.split("x")
                report["cases"].append({"model": m2, "dtype": d, "batch": int(b), "match": False,
                                        "skipped": f"time budget ({left:.0f} s left, a case takes ~{estimate:.0f} s)"})
            report["skipped"] = len(cases) - i
            current["pending"] = []
            log(f"time budget: {left:.0f} s left, a case takes ~{estimate:.0f} s: skipping the last {len(cases) - i} cases")
            break
        start = time.perf_counter()
        current.update(case=f"{m} {v}", running=(m, v), pending=cases[i:])
        try:
            row = run_case(m, v, device, options, a.quick, runs, target_s)
        except Exception as e:  # a DeviceError: nothing more will run on this device
            log(f"gpu_check: fxhlo lost the {a.device} device: {_first_line(_device_error(e) or e)}")
            report["error"] = _first_line(_device_error(e) or e)
            save()
            return 2
        row["case s"] = time.perf_counter() - start
        durations.append(row["case s"])
        report["cases"].append(row)
        current.update(running=None, pending=cases[i + 1:])
        save()
        log(f"[{i + 1}/{len(cases)}] {m} {v}: {'match' if row['match'] else 'NO MATCH'}"
            + "".join(f", {k} {row[k]:.3g}" for k in ("fxhlo err", "eager ms", "inductor ms", "fxhlo ms") if k in row)
            + "".join(f"; {k}: {row[k]}" for k in ("error", "fxhlo error", "inductor error") if k in row)
            + f" ({row['case s']:.0f} s)")
    watchdog.cancel()
    faulthandler.cancel_dump_traceback_later()
    current["pending"] = []
    save()
    log("\n" + table(report))
    if out:
        log(f"\nresults: {out}")
    ran = [r for r in report["cases"] if not r.get("skipped")]
    per_call_ok = not any(k.endswith("error") for k in report["per_call"])
    return 0 if ran and all(r["match"] for r in ran) and per_call_ok else 1


if __name__ == "__main__":
    sys.exit(main())

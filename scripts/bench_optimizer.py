#!/usr/bin/env python3
"""The e-graph optimizer's ablation (issue 27): each model compiled with frozen weights at batch
1 at `-O1` (the pipeline without the optimizer) and at `-O2` (the default: the same with `eqsat`,
and `batch-blocks` on the CPU plugin), in one process, and
timed in turns against eager PyTorch (prints a table and asserts nothing: the machines are
shared and noisy, so compare within one run).

Per model it prints: the e-graph's figures at -O2 (the pass's time, e-nodes, why saturation
stopped, the rules that fired, whether the graph changed: `CompiledGraph.stages["passes"]`),
the cold compile time of each level (a fresh compile cache, so PJRT compiles) and eqsat's share
of the -O2 compile, and the median latency of eager, -O1 and -O2 with -O2's ratio to -O1, and
whether both levels compiled the same StableHLO (then the ratio's distance from 1 is this
machine's noise, and a second geomean counts it as 1).

Models (random weights, fixed seeds): torchvision ResNet-50 and ViT-B/16 (224x224), Hugging Face
BERT-base (separate Q/K/V projections, 128 tokens) and GPT-2 (128 tokens), and a small diffusers
`UNet2DModel` (64x64, attention in the low-resolution blocks).

With `--tpu-cost tpu:v6e:2x2` it compares the levels under the TPU compiler's cost model instead
(`fxhlo cost --freeze -O1/-O2`: XLA's flops and bytes accessed and the roofline on one chip),
with `--bf16` for the models in bf16.

Usage: .venv/bin/python scripts/bench_optimizer.py [--runs 10] [--models resnet50,bert,...] [--tpu-cost TARGET [--bf16]]
Figures are kept in docs/optimizer.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backend import call_times, round_robin  # noqa: E402


def _resnet50():
    import torchvision

    return torchvision.models.resnet50().eval(), (torch.randn(1, 3, 224, 224),)


def _vit():
    import torchvision

    return torchvision.models.vit_b_16().eval(), (torch.randn(1, 3, 224, 224),)


def _tokens():
    return (torch.randint(0, 1000, (1, 128), generator=torch.Generator().manual_seed(1)),)


def _bert():
    import transformers

    transformers.logging.set_verbosity_error()
    # attn_implementation="eager": the Q, K and V projections and the attention as separate ops.
    cfg = transformers.BertConfig(attn_implementation="eager")
    return transformers.BertModel(cfg).eval(), _tokens()


def _gpt2():
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.GPT2Model(transformers.GPT2Config(attn_implementation="eager")).eval(), _tokens()


def _unet():
    import diffusers

    model = diffusers.UNet2DModel(
        sample_size=64, in_channels=3, out_channels=3, layers_per_block=2, block_out_channels=(64, 128, 256),
        down_block_types=("DownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "AttnUpBlock2D", "UpBlock2D"),
    )
    return model.eval(), (torch.randn(1, 3, 64, 64), torch.tensor([10]))


MODELS = {"resnet50": _resnet50, "bert": _bert, "gpt2": _gpt2, "unet": _unet, "vit": _vit}


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "sample"):
        return out.sample
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


class _FirstTensor(torch.nn.Module):
    """`model` returning only its first tensor output (see `_first_tensor`)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        return _first_tensor(self.model(*args))


def _compile(model, args, level: int):
    """The model compiled at `level` with frozen weights in a fresh cache (a cold compile), its
    compile seconds and its CompiledGraph."""
    import fxhlo

    before = len(fxhlo.compiled_graphs())
    saved = os.environ.get("FXHLO_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["FXHLO_CACHE_DIR"] = cache
        try:
            compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False,
                                     options={"opt_level": level, "freeze": True})
            start = time.perf_counter()
            compiled(*args)
            seconds = time.perf_counter() - start
        finally:
            # The folder goes with this block: later compiles must not be pointed at it.
            if saved is None:
                os.environ.pop("FXHLO_CACHE_DIR", None)
            else:
                os.environ["FXHLO_CACHE_DIR"] = saved
    graphs = fxhlo.compiled_graphs()[before:]
    return compiled, seconds, graphs


def tpu_cost(models: list[str], target: str, bf16: bool = False, table=None) -> int:
    """`fxhlo cost --freeze -O1` against `-O2` for each model (of `table`, this script's
    `MODELS` by default): XLA's TPU cost analysis (bytes accessed, flops) and the roofline on
    one chip, from an ahead-of-time compile (no TPU)."""
    table = MODELS if table is None else table
    import re
    import subprocess

    import fxhlo
    from bench_tpu_cost import field  # the same report fields, read the same way

    root = Path(__file__).resolve().parents[1]
    binary = next((p for p in (root / "target" / "release" / "fxhlo", root / "target" / "debug" / "fxhlo") if p.exists()), None)
    if binary is None:
        print("no fxhlo binary: run scripts/setup.sh first", file=sys.stderr)
        return 1
    env = dict(os.environ, FXHLO_CACHE="off", NO_COLOR="1")
    print(f"TPU cost model ({target}), frozen weights, batch 1, {'bf16' if bf16 else 'f32'}: -O1 against -O2")
    print("| model | same program | flops -O1 / -O2 | bytes accessed -O1 / -O2 | roofline s -O1 | roofline s -O2 | -O2/-O1 |")
    print("|---|---|---|---|---:|---:|---:|")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            torch.manual_seed(0)
            model, args = table[name]()
            if bf16:
                model = model.to(torch.bfloat16)
                args = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in args)
            with torch.no_grad():
                # The first tensor output only, as timed on the CPU (GPT-2's key/value cache and
                # other structured outputs are not what is compared).
                bundle = fxhlo.export(_FirstTensor(model), args, Path(tmp) / f"{name}.fxt", name=name)
            out = {}
            for level in (1, 2):
                p = subprocess.run([str(binary), "cost", str(bundle), "--target", target, "--freeze", f"-O{level}"],
                                   capture_output=True, text=True, env=env)
                if p.returncode != 0:
                    print(f"| {name} | -O{level} failed: {p.stderr.strip().splitlines()[-1][:120]} |")
                    break
                roof = re.search(r"^roofline on one .*?\): (\S+) s", p.stdout, re.M)
                out[level] = (field(p.stdout, "flops"), field(p.stdout, "bytes accessed"), float(roof[1]) if roof else float("nan"))
            if len(out) == 2:
                ratio = out[2][2] / out[1][2]
                ratios.append(ratio)
                print(f"| {name} | {'yes' if out[1] == out[2] else 'no'} | {out[1][0]} / {out[2][0]} | {out[1][1]} / {out[2][1]} "
                      f"| {out[1][2]:.4e} | {out[2][2]:.4e} | {ratio:.4f} |", flush=True)
    if ratios:
        print(f"geomean -O2/-O1 (roofline): {statistics.geometric_mean(ratios):.4f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="timed calls per contender and round (default 10)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {','.join(MODELS)}")
    ap.add_argument("--bf16", action="store_true", help="with --tpu-cost: the models and inputs in bf16")
    ap.add_argument("--tpu-cost", metavar="TARGET", help="instead of timing on the CPU, compare -O1 and -O2 under "
                    "the TPU cost model of TARGET (e.g. tpu:v6e:2x2; an ahead-of-time compile, no TPU needed)")
    a = ap.parse_args(argv)
    if a.tpu_cost:
        return tpu_cost(a.models.split(","), a.tpu_cost, a.bf16)
    import fxhlo  # noqa: F401 (registers the backend)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; frozen weights, batch 1; "
          f"latency: median ms of {a.rounds} rounds x {a.runs} calls in turns")
    rows = []
    for name in a.models.split(","):
        torch.manual_seed(0)
        model, args = MODELS[name]()
        torch._dynamo.reset()
        with torch.no_grad():
            want = _first_tensor(model(*args))
            o1, o1_s, o1_graphs = _compile(model, args, 1)
            torch._dynamo.reset()
            o2, o2_s, graphs = _compile(model, args, 2)
            errs = {lvl: (_first_tensor(f(*args)) - want).abs().max().item() for lvl, f in (("-O1", o1), ("-O2", o2))}
            eq = [p for g in graphs for p in g.stages.get("passes", []) if p["name"].startswith("eqsat")]
            # The same StableHLO at both levels: the latency ratio can only be noise.
            same = [g.executable.mlir for g in o1_graphs] == [g.executable.mlir for g in graphs]
            eq_s = sum(p["s"] for p in eq)
            times = round_robin({"eager": lambda: model(*args), "-O1": lambda: o1(*args), "-O2": lambda: o2(*args)},
                                a.rounds, call_times(a.runs))
        ms = {k: statistics.median([t for block in v for t in block]) * 1e3 for k, v in times.items()}
        print(f"\n{name}: {len(graphs)} graph(s); max |err| vs eager -O1 {errs['-O1']:.1e}, -O2 {errs['-O2']:.1e}")
        for p in eq:
            print(f"  eqsat {p['s'] * 1e3:.1f} ms, nodes {p['nodes_before']} -> {p['nodes_after']}: {p['summary']}")
        print(f"  cold compile -O1 {o1_s:.2f} s, -O2 {o2_s:.2f} s (eqsat {100 * eq_s / o2_s:.1f}% of it)")
        print(f"  latency eager {ms['eager']:.2f} ms, -O1 {ms['-O1']:.2f} ms, -O2 {ms['-O2']:.2f} ms "
              f"(-O2/-O1 {ms['-O2'] / ms['-O1']:.3f}{'; the same program at both levels' if same else ''})")
        rows.append((name, eq_s, eq, o1_s, o2_s, ms, same))
    print("\n| model | eqsat ms | e-nodes | eqsat changed | same program | cold compile -O1 / -O2 (s) | eqsat share | eager ms "
          "| -O1 ms | -O2 ms | -O2/-O1 |")
    print("|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
    for name, eq_s, eq, o1_s, o2_s, ms, same in rows:
        enodes = sum(int(p["summary"].split(" e-nodes")[0].rsplit(" ", 1)[-1]) for p in eq if p["summary"])
        changed = "yes" if any(p["changed"] for p in eq) else "no"
        print(f"| {name} | {eq_s * 1e3:.1f} | {enodes} | {changed} | {'yes' if same else 'no'} | {o1_s:.2f} / {o2_s:.2f} | {100 * eq_s / o2_s:.1f}% "
              f"| {ms['eager']:.2f} | {ms['-O1']:.2f} | {ms['-O2']:.2f} | {ms['-O2'] / ms['-O1']:.3f} |")
    ratios = [r[5]["-O2"] / r[5]["-O1"] for r in rows]
    print(f"geomean -O2/-O1: {statistics.geometric_mean(ratios):.3f}")
    # Where both levels compiled one program, its ratio is 1 by construction.
    exact = [1.0 if r[6] else r[5]["-O2"] / r[5]["-O1"] for r in rows]
    print(f"geomean -O2/-O1, a model compiled to the same program at both levels counted as 1.000: "
          f"{statistics.geometric_mean(exact):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

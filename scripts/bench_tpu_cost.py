"""TPU cost estimates of the larger models, compiled ahead of time on this machine (no TPU).

For ResNet-18, the BERT encoder, the GPT-2 decoder and the diffusion UNet (fxhlo.models, batch
1, f32 and bf16): exports the model, runs ``fxhlo cost --target <t>`` for each target and prints
a Markdown table of the compile time, XLA's cost analysis (flops, bytes accessed, optimal
seconds) and the roofline on one chip; with ``--tensor-parallel N`` also the Megatron-style plan
over N chips (the figures are then per chip: XLA analyses the partitioned program each chip runs).
These are estimates of XLA's TPU cost model and of the chip's published peaks, not measurements
on a TPU.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import fxhlo
from fxhlo.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"resnet18": {"size": 224}, "bert": {}, "gpt2": {}, "unet": {}}


def field(text: str, name: str) -> str:
    m = re.search(rf"^\s*{re.escape(name)}:\s*(\S+)", text, re.M)
    return m[1] if m else "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", nargs="+", default=["tpu:v6e:2x2", "tpu:v5e:2x2"])
    ap.add_argument("--fxhlo", default=str(ROOT / "target" / "release" / "fxhlo"))
    ap.add_argument("--tensor-parallel", type=int, default=0, help="also cost the Megatron plan over N chips")
    ap.add_argument("--dtypes", nargs="+", default=["f32", "bf16"])
    a = ap.parse_args(argv)
    env = dict(os.environ, FXHLO_CACHE="off", NO_COLOR="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    print("| model | dtype | target | chips | compile s | flops | bytes accessed | optimal s | roofline s (bound) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kwargs in SIZES.items():
            for dtype in a.dtypes:
                model, args = MODELS[name](**kwargs)
                if dtype == "bf16":
                    model = model.to(torch.bfloat16)
                    args = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in args)
                bundle = fxhlo.export(model, args, Path(tmp) / f"{name}_{dtype}.fxt", name=f"{name}_{dtype}")
                runs = [(t, 1) for t in a.targets] + ([(a.targets[0], a.tensor_parallel)] if a.tensor_parallel else [])
                for target, chips in runs:
                    tp = ["--tensor-parallel", str(chips)] if chips > 1 else []
                    p = subprocess.run([a.fxhlo, "cost", str(bundle), "--target", target, *tp], capture_output=True,
                                       text=True, env=env)
                    if p.returncode != 0:
                        print(f"| {name} | {dtype} | {target} | {chips} | FAILED: {p.stderr.strip().splitlines()[-1][:100]} |")
                        continue
                    t = p.stdout
                    compile_s = field(t, "compile time").rstrip("s")
                    optimal = field(t, "optimal seconds")
                    roof = re.search(r"^roofline on one .*?\): (\S+) s \(([\w-]+)", t, re.M)
                    roofline = f"{roof[1]} ({roof[2]})" if roof else "?"
                    print(f"| {name} | {dtype} | {target} | {chips} | {compile_s} | {field(t, 'flops')} | "
                          f"{field(t, 'bytes accessed')} | {optimal} | {roofline} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

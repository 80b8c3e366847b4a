#!/usr/bin/env python3
"""Steady latency of convolutional networks with depthwise convolutions (torchvision's
MobileNetV3-small, EfficientNet-B0 and ConvNeXt-tiny; random weights, batch 1, 224x224):
eager PyTorch, fxhlo at -O0 (XLA alone) and at the default -O1 (on the CPU plugin with the
`channels-last`, `pointwise-conv-dot` and `depthwise-conv-taps` passes), and Inductor, timed in
turns in one process (prints a table and asserts nothing: the machines are shared and noisy, so
compare within one run).

With ``--without a,b`` a column more: the -O1 pipeline without those passes (an ablation in the
same process, e.g. ``--without channels-last``).

Usage: .venv/bin/python scripts/bench_convnets.py [--runs N] [--skip-inductor] [--models a,b] [--without a,b]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backend import call_times, round_robin  # noqa: E402

MODELS = ("mobilenet_v3_small", "efficientnet_b0", "convnext_tiny")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="timed calls per contender (default 20)")
    parser.add_argument("--skip-inductor", action="store_true")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--without", default="", help="passes to leave out of -O1 in an extra column")
    args = parser.parse_args()
    import torchvision

    import fxhlo  # noqa: F401 (registers the backend)
    from fxhlo import _native

    without = [p for p in args.without.split(",") if p]
    unknown = sorted(set(without) - set(_native.pass_names()))
    if unknown:
        parser.error(f"unknown pass(es) {unknown}; valid: {', '.join(_native.pass_names())}")
    ablated = [p for p in _native.pipeline_names(1) if p not in without]

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.runs} calls, "
          "compile = first call (s)")
    if without:
        print(f"ablation column '-O1 -{'-'.join(without)}': passes {ablated}")
    print(f"{'model':<20} {'eager':>8} {'fxhlo -O0':>10} {'fxhlo -O1':>10} {'inductor':>9}   "
          f"{'-O1/eager':>9}  compile -O0 / -O1 (s)   max |err| -O1" + ("   -O1 without  /eager" if without else ""))
    for name in args.models.split(","):
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)().eval()
        x = torch.randn(1, 3, 224, 224)
        contenders, compile_s, err = {"eager": lambda: model(x)}, {}, 0.0
        with torch.no_grad():
            want = model(x)
            for level in (0, 1):
                torch._dynamo.reset()
                fn = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"opt_level": level})
                start = time.perf_counter()
                got = fn(x)
                compile_s[level] = time.perf_counter() - start
                if level == 1:
                    err = (got - want).abs().max().item()
                contenders[f"O{level}"] = (lambda f: lambda: f(x))(fn)
            if without:
                torch._dynamo.reset()
                fn = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"passes": ablated})
                fn(x)
                contenders["ablated"] = (lambda f: lambda: f(x))(fn)
            if not args.skip_inductor:
                torch._dynamo.reset()
                fn = torch.compile(model, backend="inductor", fullgraph=True, dynamic=False)
                fn(x)
                contenders["inductor"] = (lambda f: lambda: f(x))(fn)
            times = round_robin(contenders, 4, call_times(max(1, args.runs // 4)))
        ms = {k: statistics.median(t for block in v for t in block) * 1e3 for k, v in times.items()}
        ind = f"{ms['inductor']:>9.2f}" if "inductor" in ms else f"{'-':>9}"
        print(f"{name:<20} {ms['eager']:>8.2f} {ms['O0']:>10.2f} {ms['O1']:>10.2f} {ind}   "
              f"{ms['O1'] / ms['eager']:>8.2f}x  {compile_s[0]:>6.1f} / {compile_s[1]:<6.1f}          {err:.1e}"
              + (f"   {ms['ablated']:>11.2f} {ms['ablated'] / ms['eager']:>6.2f}x" if without else ""),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

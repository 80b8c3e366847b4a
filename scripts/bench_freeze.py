#!/usr/bin/env python3
"""Compile time and peak memory with and without ``options={"freeze": True}``: ResNet-18
(batch 1, 224x224), the BERT-style encoder (fxhlo.models, seq 128) and a 50M-parameter MLP
(12 x Linear(2048, 2048)). Each contender runs in its own process with the compile cache off,
so the first call is a full compile and the peak RSS is that process's alone; the outputs
are checked against eager PyTorch. Prints a table; asserts nothing (compare within one run:
the machines are shared and noisy).

Usage: .venv/bin/python scripts/bench_freeze.py [--models resnet18,bert,mlp50m] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

MODELS = ("resnet18", "bert", "mlp50m")

CHILD = r"""
import json, resource, sys, time
import torch
import fxhlo
from fxhlo import models

name, freeze = sys.argv[1], sys.argv[2] == "1"
torch.manual_seed(0)
if name == "resnet18":
    model, args = models.resnet18()
elif name == "bert":
    model, args = models.bert()
else:
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(12)]).eval()
    args = (torch.randn(4, 2048),)
with torch.no_grad():
    want = model(*args)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"freeze": freeze})
    start = time.perf_counter()
    got = compiled(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    compiled(*args)
    second = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
params = sum(p.numel() for p in model.parameters())
flat = lambda t: list(t) if isinstance(t, (tuple, list)) else [t]
err = max((g - w).abs().max().item() for g, w in zip(flat(got), flat(want)))
print(json.dumps({"first": first, "second": second, "peak_mb": peak / 1024, "base_mb": base / 1024,
                  "params": params, "err": err}))
"""


def run(name: str, freeze: bool) -> dict:
    env = dict(os.environ, FXHLO_CACHE="off")
    out = subprocess.run([sys.executable, "-c", CHILD, name, "1" if freeze else "0"], env=env,
                         capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"{name} freeze={freeze} failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeat", type=int, default=1, help="runs per contender; the fastest is shown")
    args = parser.parse_args()
    print("first call = trace + import + passes + codegen + PJRT compile (cache off); peak = process max RSS")
    print(f"{'model':<10} {'params':>8} {'first s':>8} {'frozen':>8} {'ratio':>6} "
          f"{'peak MB':>8} {'frozen':>8} {'ratio':>6}  {'max |err| frozen':>16}")
    for name in args.models.split(","):
        runs = {f: min((run(name, f) for _ in range(args.repeat)), key=lambda r: r["first"]) for f in (False, True)}
        a, b = runs[False], runs[True]
        print(f"{name:<10} {a['params'] / 1e6:>7.1f}M {a['first']:>8.2f} {b['first']:>8.2f} "
              f"{b['first'] / a['first']:>6.2f} {a['peak_mb']:>8.0f} {b['peak_mb']:>8.0f} "
              f"{b['peak_mb'] / a['peak_mb']:>6.2f}  {b['err']:>16.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The channels-last layout two ways (issue 27): the `channels-last` pass (`eqsat` in place of
`eqsat-layout` and the pass after it, as before session 16) against the e-graph's channels-last
rules (`-O2`'s pipeline on the CPU plugin: `eqsat-layout`, no pass), on convnets, frozen weights, batch 1, on the CPU plugin, timed in turns with
eager in one process (prints a table and asserts nothing: compare within one run).

Per model: the largest difference from eager of each, the median ms of eager, the pass and the
rules, the rules' ratio to the pass, and `eqsat-layout`'s one-line summary (time, e-nodes, rules
fired, predicted cost).

Usage: .venv/bin/python scripts/bench_layout.py [--models resnet50,...] [--rounds 5] [--runs 5]
Figures are kept in docs/optimizer.md.
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
from bench_zoo import MODELS, _tensors  # noqa: E402

CONVNETS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(CONVNETS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    import fxhlo

    rules = list(fxhlo._native.pipeline_names(2))
    at = rules.index("eqsat-layout")
    default = rules[:at] + ["eqsat"] + rules[at + 1:]
    default.insert(default.index("pointwise-conv-dot"), "channels-last")
    variants = {"pass": default, "rules": rules}
    print(f"pass:  {' '.join(default)}\nrules: {' '.join(rules)}")
    rows = []
    for name in a.models.split(","):
        torch.manual_seed(0)
        model, args = MODELS[name]()
        contenders, errs, summary = {"eager": lambda: model(*args)}, {}, ""
        with torch.no_grad():
            want = _tensors(model(*args))
            for variant, passes in variants.items():
                torch._dynamo.reset()
                compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False,
                                         options={"passes": passes, "freeze": True})
                got = _tensors(compiled(*args))
                errs[variant] = max((g - w).abs().max().item() for g, w in zip(got, want))
                if variant == "rules":
                    for p in fxhlo.compiled_graphs()[-1].stages["passes"]:
                        if p["name"] == "eqsat-layout":
                            summary = f"{p['s'] * 1e3:.1f} ms: {p['summary']}"
                contenders[variant] = lambda c=compiled: c(*args)
            times = round_robin(contenders, a.rounds, call_times(a.runs))
        ms = {k: statistics.median([t for block in v for t in block]) * 1e3 for k, v in times.items()}
        rows.append((name, ms, errs))
        print(f"{name}: eager {ms['eager']:.2f} ms, pass {ms['pass']:.2f} (max |err| {errs['pass']:.1e}), rules "
              f"{ms['rules']:.2f} (max |err| {errs['rules']:.1e}); eqsat-layout {summary}", flush=True)
    print("\n| model | eager ms | channels-last pass ms | channels-last rules ms | rules / pass |")
    print("|---|---:|---:|---:|---:|")
    for name, ms, _ in rows:
        print(f"| {name} | {ms['eager']:.2f} | {ms['pass']:.2f} | {ms['rules']:.2f} | {ms['rules'] / ms['pass']:.3f} |")
    ratios = [ms["rules"] / ms["pass"] for _, ms, _ in rows]
    print(f"geomean rules / pass: {statistics.geometric_mean(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

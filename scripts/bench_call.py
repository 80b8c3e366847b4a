#!/usr/bin/env python3
"""Per-call cost of a cached one-element graph (`x + 1`) through torch.compile, side by side in
one process (prints a table; asserts nothing about time).

Contenders, each its own function so that Dynamo caches each separately:
- eager `x + 1`;
- Dynamo alone: a backend that returns its input without computing (the floor every backend
  stands on: guards, frame wrapper, config patching);
- fxhlo, as it runs (where AOT Autograd's runtime wrappers would do nothing, Dynamo calls the
  executable itself through `fxhlo._native.PositionalCall`), and with those wrappers kept (the
  ablation of that shortcut);
- Inductor (torch.compile's default backend);
- fxhlo's compiled graph called without torch.compile (`CompiledGraph([x])`).

Each is timed in blocks of `--calls` calls, `--blocks` rounds taking turns; the figure is the
calling thread's CPU time per call (`time.thread_time_ns`), which other processes on a shared
machine disturb far less than wall time. Best and median of the blocks are printed.

Usage: .venv/bin/python scripts/bench_call.py [--blocks 7] [--calls 2000]
Figures are kept in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import fxhlo
from fxhlo import graph_capture


def _plus_one():
    def f(a):
        return a + 1

    return f


def _dynamo_only(gm, example_inputs):
    def run(*args):
        return (args[0],)

    return run


def contenders(x: torch.Tensor) -> dict:
    out = {"eager x + 1": lambda: x + 1}
    dynamo = torch.compile(_plus_one(), backend=_dynamo_only, fullgraph=True, dynamic=False)
    out["Dynamo alone (no computation)"] = lambda: dynamo(x)
    fx = torch.compile(_plus_one(), backend="fxhlo", fullgraph=True, dynamic=False)
    fx(x)
    graph = fxhlo.compiled_graphs()[-1]
    out["fxhlo via torch.compile"] = lambda: fx(x)
    direct = graph_capture._direct
    graph_capture._direct = lambda forwards, example_inputs: None
    try:
        wrapped = torch.compile(_plus_one(), backend="fxhlo", fullgraph=True, dynamic=False)
        wrapped(x)
    finally:
        graph_capture._direct = direct
    out["fxhlo, AOT wrappers kept"] = lambda: wrapped(x)
    inductor = torch.compile(_plus_one(), fullgraph=True, dynamic=False)
    out["Inductor via torch.compile"] = lambda: inductor(x)
    out["fxhlo compiled graph, direct"] = lambda: graph([x])
    for fn in out.values():
        fn()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 16)
    x = torch.randn(1)
    fns = contenders(x)
    names = list(fns)
    times = {k: [] for k in names}
    for block in range(args.blocks):
        for k in names[block % len(names):] + names[:block % len(names)]:
            fn = fns[k]
            fn()
            start = time.thread_time_ns()
            for _ in range(args.calls):
                fn()
            times[k].append((time.thread_time_ns() - start) / args.calls / 1000)
    print(f"torch {torch.__version__}; {args.blocks} blocks of {args.calls} calls; thread CPU time per call (µs)")
    print(f"| {'path':32s} | best | median |")
    print(f"|{'-' * 34}|-----:|-------:|")
    for k in names:
        print(f"| {k:32s} | {min(times[k]):4.1f} | {statistics.median(times[k]):6.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

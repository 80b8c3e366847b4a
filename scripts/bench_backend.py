#!/usr/bin/env python3
"""Benchmark of the torch.compile backend (prints a table; asserts nothing about time).

1. Per-call overhead of a cached tiny graph (one add of two 8x8 f32 tensors):
   - PyTorch eager, the same op;
   - fxhlo and Inductor through torch.compile (Dynamo guards + AOT Autograd wrapper + backend);
   - fxhlo's compiled graph called directly (what fxhlo itself costs from Python call to
     returned tensor: argument checks, uploads, execute, output tensors);
   - the raw PJRT work of one call measured in Rust on the same executable: execute alone,
     upload + execute, and upload + execute + download into preallocated memory.
   fxhlo's overhead = direct call - raw upload + execute (on the CPU plugin the outputs reach
   torch without a copy, so there is no download to count); target: at most 20 us.
2. Steady-state latency of ResNet-18 (batch 1 and 8, 224x224) and the BERT-style encoder
   (sequence 128): eager, torch.compile with fxhlo (default and freeze=True) and with Inductor;
   same process, same threads, run round-robin; ratios against eager.

Usage: .venv/bin/python scripts/bench_backend.py [--quick] [--skip-inductor] [--runs N]
Figures are kept in docs/benchmarks.md. Machines here are shared and noisy: compare within one run.
Other benchmarks import the timing helpers (round_robin, call_times, mean_call_time, median_time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import fxhlo
from fxhlo import _native
from fxhlo.models import MODELS


# Pause before each block of timed calls (libgomp's default spin is well under this).
SETTLE_S = 0.3


def round_robin(contenders: dict, rounds: int, timed_block, settle_s: float = SETTLE_S) -> dict:
    """Times the contenders (name -> function of no arguments) in turns: ``rounds`` rounds, each
    starting with the next contender, so that a burst of load on the shared machine hits all of
    them alike. Each turn starts after a pause of ``settle_s`` and a warm-up call (PyTorch's
    OpenMP workers and XLA's pool spin for a while after a call, and without the pause that
    spinning is billed to whoever runs next), then runs ``timed_block(fn)``. Returns name -> the
    list of what ``timed_block`` returned, one item per round."""
    names = list(contenders)
    results = {k: [] for k in names}
    for round_ in range(rounds):
        for k in names[round_ % len(names):] + names[:round_ % len(names)]:
            fn = contenders[k]
            time.sleep(settle_s)
            fn()  # warm-up: caches
            results[k].append(timed_block(fn))
    return results


def call_times(calls: int):
    """A ``timed_block`` for :func:`round_robin`: the wall time of each of ``calls`` calls."""
    def block(fn):
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return times
    return block


def mean_call_time(calls: int):
    """A ``timed_block`` for :func:`round_robin`: the wall time of ``calls`` calls in a row,
    divided by ``calls`` (for calls too short to time one by one)."""
    def block(fn):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls
    return block


def median_time(fn, runs: int, warmup: int = 3) -> float:
    """Median wall time of ``fn()`` in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_call(runs: int, inductor: bool) -> list:
    x, y = torch.randn(8, 8), torch.randn(8, 8)

    def add(a, b):
        return a + b

    torch._dynamo.reset()
    compiled = torch.compile(add, backend="fxhlo", fullgraph=True, dynamic=False)
    assert torch.equal(compiled(x, y), x + y)
    graph = fxhlo.compiled_graphs()[-1]
    raw = graph.executable.bench_raw([x, y], runs)
    rows = [
        ("eager x + y", median_time(lambda: x + y, runs)),
        ("fxhlo via torch.compile", median_time(lambda: compiled(x, y), runs)),
        ("fxhlo compiled graph, direct", median_time(lambda: graph([x, y]), runs)),
        ("raw PJRT execute (Rust)", raw["execute_ns"] * 1e-9),
        ("raw PJRT upload+execute (Rust)", raw["upload_execute_ns"] * 1e-9),
        ("raw PJRT upload+execute+download (Rust)", raw["roundtrip_ns"] * 1e-9),
    ]
    if inductor:
        torch._dynamo.reset()
        ind = torch.compile(add, fullgraph=True, dynamic=False)
        ind(x, y)
        rows.insert(2, ("inductor via torch.compile", median_time(lambda: ind(x, y), runs)))
    return rows


def model_latency(name: str, kwargs: dict, runs: int, inductor: bool) -> dict:
    """Median latency of eager and each compiled model. The contenders take turns in blocks
    (:func:`round_robin`: ``runs // 4`` timed calls; four rounds, each starting with a different
    contender). Each block starts after a pause and a warm-up call: without the pause, BERT in
    fxhlo measured 13 ms alone and 21-22 ms alternating call by call with eager."""
    model, args = MODELS[name](**kwargs)
    out = {}
    with torch.no_grad():
        want = model(*args)
        contenders = {"eager": model}
        backends = ["fxhlo", "fxhlo freeze"] + (["inductor"] if inductor else [])
        for backend in backends:
            torch._dynamo.reset()
            options = {"freeze": True} if backend == "fxhlo freeze" else None
            compiled = torch.compile(model, backend=backend.split()[0], fullgraph=True, dynamic=False, options=options)
            start = time.perf_counter()
            got = compiled(*args)
            out[f"{backend} first call"] = time.perf_counter() - start
            leaves = zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want))
            out[f"{backend} max abs err"] = max((g - w).abs().max().item() for g, w in leaves)
            contenders[backend] = compiled
        calls = {k: (lambda fn=fn: fn(*args)) for k, fn in contenders.items()}
        blocks = round_robin(calls, 4, call_times(max(1, runs // 4)))
        out.update({k: statistics.median(t for block in v for t in block) for k, v in blocks.items()})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per model (default 10)")
    ap.add_argument("--calls", type=int, default=20000, help="timed calls of the tiny graph (default 20000)")
    ap.add_argument("--quick", action="store_true", help="smaller models (ResNet-18 at 64x64, BERT seq 32)")
    ap.add_argument("--skip-inductor", action="store_true", help="leave torch.compile's default backend out")
    a = ap.parse_args(argv)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, fxhlo {_native.__version__}")
    print("\n## per-call overhead, cached tiny graph (add of two 8x8 f32)")
    rows = per_call(a.calls, not a.skip_inductor)
    for label, t in rows:
        print(f"  {label:42s} {t * 1e6:8.1f} us")
    d = dict(rows)
    # On the CPU plugin fxhlo hands outputs to torch without a copy, so the raw work of a call
    # is upload + execute; elsewhere it downloads, and the round trip is the reference.
    overhead = d["fxhlo compiled graph, direct"] - d["raw PJRT upload+execute (Rust)"]
    print(f"  fxhlo overhead over raw PJRT (direct call - raw upload+execute): {overhead * 1e6:.1f} us (target <= 20 us)")

    size = 64 if a.quick else 224
    seq = 32 if a.quick else 128
    configs = [
        (f"ResNet-18 b1 {size}x{size}", "resnet18", {"size": size, "batch": 1}),
        (f"ResNet-18 b8 {size}x{size}", "resnet18", {"size": size, "batch": 8}),
        (f"BERT-style seq {seq}", "bert", {"seq": seq}),
    ]
    print("\n## steady-state latency (median of %d runs)" % a.runs)
    header = f"  {'model':24s} {'eager ms':>9s} {'fxhlo ms':>9s} {'eager/fxhlo':>11s} {'frozen ms':>9s} {'eager/frozen':>12s}"
    if not a.skip_inductor:
        header += f" {'inductor ms':>11s} {'inductor/fxhlo':>14s}"
    print(header)
    for label, name, kwargs in configs:
        r = model_latency(name, kwargs, a.runs, not a.skip_inductor)
        line = (f"  {label:24s} {r['eager'] * 1e3:9.1f} {r['fxhlo'] * 1e3:9.1f} {r['eager'] / r['fxhlo']:11.2f}"
                f" {r['fxhlo freeze'] * 1e3:9.1f} {r['eager'] / r['fxhlo freeze']:12.2f}")
        if not a.skip_inductor:
            line += f" {r['inductor'] * 1e3:11.1f} {r['inductor'] / r['fxhlo']:14.2f}"
        print(line)
        extra = f"    first call (compile): fxhlo {r['fxhlo first call']:.1f} s"
        if not a.skip_inductor:
            extra += f", inductor {r['inductor first call']:.1f} s"
        extra += f"; max abs err vs eager: fxhlo {r['fxhlo max abs err']:.2g}"
        if not a.skip_inductor:
            extra += f", inductor {r['inductor max abs err']:.2g}"
        print(extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())

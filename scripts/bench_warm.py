#!/usr/bin/env python3
"""Benchmark of the warm path: the first call of a torch.compile'd model in a new process
whose compile cache already holds the executable (prints its figures; asserts nothing).

Each contender is timed from `torch.compile()` to the end of the first call (Dynamo's scan of
the installed backends' entry points falls in one or the other, depending on the backend).
For each model, in new processes, alternated so that a burst of load on the shared machine hits
every contender alike:
- `aot_eager`: PyTorch's own capture (Dynamo + AOT Autograd) and an eager run: the floor any
  AOT-Autograd backend stands on;
- `fxhlo warm`: `backend="fxhlo"` with the cache folder a cold run filled, and the stages fxhlo
  reports for the graph (`fxhlo.compiled_graphs()[-1].stages`): `export` (the trace built from
  the FX graph, Python), `import` (read into the IR), `lower` (cache key, passes, codegen),
  `load` (the executable from the disk cache), plus the first run (weights uploaded).
fxhlo's share of the warm first call is its first call minus aot_eager's (medians of the same
run). The issue's targets: at most 100 ms for ResNet-18 and 250 ms for BERT-base.

Usage: .venv/bin/python scripts/bench_warm.py [--reps 5] [--models resnet18,bert-base]
Figures are kept in docs/benchmarks.md. Machines here are shared and noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("resnet18", "bert-base")

CHILD = r"""
import json, sys, time
import torch
model_name, backend = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if model_name == "resnet18":
    import torchvision
    model, args = torchvision.models.resnet18().eval(), (torch.randn(1, 3, 224, 224),)
else:
    import transformers
    transformers.logging.set_verbosity_error()
    model = transformers.BertModel(transformers.BertConfig()).eval()  # BERT-base: 12 layers, 768 wide
    args = (torch.randint(0, 1000, (1, 128)),)
stages = {}
if backend == "fxhlo":
    import fxhlo
    from fxhlo.backend import CompiledGraph
    call = CompiledGraph.__call__
    def timed(self, a):
        start = time.perf_counter()
        out = call(self, a)
        stages.setdefault("first_run_s", time.perf_counter() - start)
        return out
    CompiledGraph.__call__ = timed
# From torch.compile() on: a backend named by a string Dynamo does not know yet ("aot_eager")
# makes torch.compile() scan the installed packages' entry points (~0.2 s); a registered one
# ("fxhlo" after `import fxhlo`) makes the first call do that scan instead.
start = time.perf_counter()
compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
with torch.no_grad():
    compiled(*args)
    first = time.perf_counter() - start
result = {"first_call_s": first}
if backend == "fxhlo":
    graph = fxhlo.compiled_graphs()[-1]
    result.update(graph.stages)
    result.update(stages)
    result["disk_hits"] = fxhlo.cache_stats()["disk_hits"]
print("RESULT " + json.dumps(result))
"""


def child(model: str, backend: str, cache: str) -> dict:
    env = dict(os.environ, FXHLO_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-c", CHILD, model, backend], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"{model} {backend} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def ms(values) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values) * 1e3:.0f} [{min(values) * 1e3:.0f}-{max(values) * 1e3:.0f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="new processes per contender and model (default 5)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {','.join(MODELS)}")
    a = ap.parse_args(argv)
    import torch

    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs; medians [min-max] in ms over {a.reps} new processes each")
    for model in a.models.split(","):
        with tempfile.TemporaryDirectory() as cache:
            cold = child(model, "fxhlo", cache)
            runs = {"aot_eager": [], "fxhlo": []}
            for _ in range(a.reps):
                runs["aot_eager"].append(child(model, "aot_eager", cache))
                runs["fxhlo"].append(child(model, "fxhlo", cache))
        warm = runs["fxhlo"]
        if any(r.get("cached") != "disk" for r in warm):
            raise SystemExit(f"{model}: a warm run did not load from the disk cache: {warm}")
        base = statistics.median(r["first_call_s"] for r in runs["aot_eager"])
        first = statistics.median(r["first_call_s"] for r in warm)
        own = ("export_s", "import_s", "lower_s", "load_s", "first_run_s")
        print(f"\n{model}: cold fxhlo first call {cold['first_call_s'] * 1e3:.0f} ms (compile {cold['load_s'] * 1e3:.0f} ms)")
        print(f"  aot_eager first call   {ms([r['first_call_s'] for r in runs['aot_eager']])}")
        print(f"  fxhlo warm first call  {ms([r['first_call_s'] for r in warm])}")
        for stage in own:
            print(f"    {stage[:-2]:<10} {ms([r.get(stage) for r in warm])}")
        print(f"    sum of fxhlo's stages {ms([sum(r.get(s, 0) for s in own) for r in warm])}")
        print(f"  fxhlo's share (warm first call - aot_eager's): {(first - base) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

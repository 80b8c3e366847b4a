"""Correctness and latency of fxhlo on an NVIDIA GPU against PyTorch eager on the same GPU.

Run by ``scripts/gpu_check.sh`` on a machine with a GPU, CUDA PyTorch and the CUDA PJRT plugin
(``jax-cuda13-pjrt`` or ``jax-cuda12-pjrt``). For every model fixture (scripts/gen_fixtures.py,
f32 and bf16) and the larger models (fxhlo.models: ResNet-18, BERT, GPT-2, UNet, f32 and bf16):
the model and its inputs move to ``cuda``, eager runs them, ``torch.compile(backend="fxhlo",
options={"device": "cuda"})`` runs them, and the table prints the largest error, whether it is
within the dtype's tolerance, and the median latency of each (timed blocks, synchronized).
Exit status 1 if any model fails. Latency figures compare within this run only.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

import fxhlo
from fxhlo.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
# Larger models at the sizes the tests use (batch 1; ResNet-18 at 224x224).
LARGE = {"resnet18": {"size": 224}, "bert": {}, "gpt2": {}, "unet": {}}


def _fixture_builders():
    spec = importlib.util.spec_from_file_location("gen_fixtures", ROOT / "scripts" / "gen_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build, list(module.FIXTURE_BUILDERS)


def _bf16(model, args):
    return model.to(torch.bfloat16), tuple(a.to(torch.bfloat16) if a.is_floating_point() else a for a in args)


def _median_ms(fn, runs: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def check(name: str, model, args, runs: int) -> dict:
    model = model.eval().to("cuda")
    args = tuple(a.to("cuda") for a in args)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"device": "cuda"})
    row = {"model": name}
    with torch.no_grad():
        want = model(*args)
        start = time.perf_counter()
        try:
            got = compiled(*args)
        except Exception as e:  # one row per model: report and go on
            row.update(ok=False, error=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            return row
        row["first call s"] = time.perf_counter() - start
        leaves = list(zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)))
        row["max abs err"] = max(((g.float() - w.float()).abs().max().item() for g, w in leaves), default=0.0)
        try:
            for g, w in leaves:
                tol = {"atol": 1e-2, "rtol": 1e-2} if w.dtype in (torch.bfloat16, torch.float16) else {}
                torch.testing.assert_close(g.to(w.device), w, **tol)
            row["ok"] = True
        except AssertionError as e:
            row.update(ok=False, error=str(e).splitlines()[0][:120])
        row["eager ms"] = _median_ms(lambda: model(*args), runs)
        row["fxhlo ms"] = _median_ms(lambda: compiled(*args), runs)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help="timed calls per model and contender (median)")
    ap.add_argument("--only", nargs="*", help="model names to run (default: all)")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_check: PyTorch sees no CUDA device; run this on a machine with an NVIDIA GPU", file=sys.stderr)
        return 2
    build, fixtures = _fixture_builders()
    cases = [(n, lambda n=n: build(n)) for n in fixtures]
    for name, kwargs in LARGE.items():
        cases.append((name, lambda name=name, kwargs=kwargs: MODELS[name](**kwargs)))
        cases.append((f"{name}_bf16", lambda name=name, kwargs=kwargs: _bf16(*MODELS[name](**kwargs))))
    rows = [check(n, *make(), a.runs) for n, make in cases if not a.only or n in a.only]
    print(f"\nfxhlo {fxhlo.__version__ if hasattr(fxhlo, '__version__') else ''} on {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}; median of {a.runs} synchronized calls\n")
    print(f"| {'model':<26} | ok   | {'max abs err':>11} | {'eager ms':>9} | {'fxhlo ms':>9} | {'first call s':>12} |")
    print(f"|{'-' * 28}|------|{'-' * 13}|{'-' * 11}|{'-' * 11}|{'-' * 14}|")
    for r in rows:
        if "max abs err" not in r:
            print(f"| {r['model']:<26} | FAIL | {r['error']}")
            continue
        print(f"| {r['model']:<26} | {'yes ' if r['ok'] else 'FAIL'} | {r['max abs err']:>11.2e} | "
              f"{r.get('eager ms', float('nan')):>9.3f} | {r.get('fxhlo ms', float('nan')):>9.3f} | "
              f"{r['first call s']:>12.2f} |" + ("" if r["ok"] else f" {r['error']}"))
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

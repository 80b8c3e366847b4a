#!/usr/bin/env python3
"""Benchmark of the persistent compile cache (prints its figures; asserts nothing about time).

1. Cold compile against warm start, each in a new process, for ResNet-18 (224x224, batch 1) and
   the BERT-style encoder (fxhlo.models, default configs). Cold: an empty cache folder
   (FXHLO_CACHE_DIR=<new temporary folder>); warm: the folder the cold process just filled.
   Measured inside the child, around the first call of the torch.compile'd model:
   - first call: the whole first call (Dynamo capture + AOT Autograd + fxhlo + first run);
   - capture: from the call to the moment the backend has AOT Autograd's forward graph
     ("trace hand-off");
   - fxhlo.compile: `fxhlo._native.compile` (PJRT client creation, the process's first,
     trace import, passes, codegen, then the cache lookup and either loading the executable
     or compiling it and writing the entry); with FXHLO_LOG its parts: client creation,
     codegen, compile-or-load;
   - first run: the compiled graph's first call (uploads every weight);
   - ready = fxhlo.compile + first run: the time from trace hand-off to the output that is
     fxhlo's own (the issue's target: ResNet-18 within 150 ms in a new process, warm);
   and the child's `fxhlo.cache_stats()` (cold: compiles 1; warm: compiles 0, disk_hits 1).
2. The same for JAX's persistent compilation cache on the same two architectures written in
   jax.numpy/lax (jit, AOT: lower = trace + lowering, compile = XLA compile or cache load,
   then the first run), where jax is importable: by this interpreter or the one given with
   --jax-python (keep jax out of the project's environment: install it elsewhere, e.g.
   `python3 -m venv /tmp/jax-venv && /tmp/jax-venv/bin/pip install "jax[cpu]"`).
3. Per-call cost of a cached one-element `x + 1` through torch.compile: fxhlo, Inductor and
   eager, in one process, alternated in blocks (scripts/bench_backend.py's round_robin).

The repetitions alternate: for each repetition and model, fxhlo cold then warm, then JAX cold
then warm, so that a burst of load on the shared machine hits every contender alike. Figures
are medians with [min-max] over the repetitions.

Usage: .venv/bin/python scripts/bench_cache.py [--reps 5] [--calls 20000]
       [--jax-python PATH] [--models resnet18,bert] [--skip-jax] [--skip-per-call]
Figures are kept in docs/benchmarks.md. Machines here are shared and noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Only the standard library at module level: the JAX children run this file with another
# interpreter, which has neither torch nor fxhlo.

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAMES = ("resnet18", "bert")
# fxhlo.models builder keyword arguments, as python/tests/test_models.py uses them.
CONFIGS = {"resnet18": {"size": 224, "batch": 1}, "bert": {}}
LABELS = {"resnet18": "ResNet-18 b1 224x224", "bert": "BERT-style seq 128"}
CHILD_TIMEOUT_S = 900
JAX_INSTALL_HINT = ('python3 -m venv /tmp/jax-venv && /tmp/jax-venv/bin/pip install "jax[cpu]"; then pass '
                    "--jax-python /tmp/jax-venv/bin/python")


# ---- fxhlo child ----------------------------------------------------------------------------

_DURATION = re.compile(r"([\d.]+)(ns|µs|us|ms|s)$")
_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _duration(text: str) -> float | None:
    """Rust's Debug of a Duration (``812.3µs``, ``5.51ms``, ``1.23s``) in seconds."""
    m = _DURATION.match(text)
    return float(m[1]) * _UNITS[m[2]] if m else None


def _log_time(line: str) -> float | None:
    """The wall-clock time (seconds since the epoch) at the start of a tracing log line."""
    stamp = line.split(" ", 1)[0]
    try:
        return _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def child_fxhlo(model_name: str) -> dict:
    """Runs in a new process: builds the model, times the first call of torch.compile(model,
    backend="fxhlo") and its parts, and returns the figures with fxhlo.cache_stats()."""
    start = time.perf_counter()
    import torch

    import fxhlo
    from fxhlo import _native, backend
    from fxhlo.models import MODELS

    imported = time.perf_counter()
    marks: dict = {}
    compile_native = _native.compile
    compile_forward = backend._compile_forward
    graph_call = backend.CompiledGraph.__call__

    def timed_native(*args, **kwargs):
        marks.setdefault("native_wall", time.time())
        marks.setdefault("native_in", time.perf_counter())
        try:
            return compile_native(*args, **kwargs)
        finally:
            marks.setdefault("native_out", time.perf_counter())

    def timed_forward(*args, **kwargs):
        marks.setdefault("handoff", time.perf_counter())
        return compile_forward(*args, **kwargs)

    def timed_call(self, args):
        first = "run_in" not in marks
        if first:
            marks["run_in"] = time.perf_counter()
        try:
            return graph_call(self, args)
        finally:
            if first:
                marks["run_out"] = time.perf_counter()

    _native.compile = timed_native
    backend._compile_forward = timed_forward
    backend.CompiledGraph.__call__ = timed_call

    model, args = MODELS[model_name](**CONFIGS[model_name])
    compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)
    with torch.no_grad():
        t0 = time.perf_counter()
        got = compiled(*args)
        t1 = time.perf_counter()
        compiled(*args)
        t2 = time.perf_counter()
        # The weights' share of the first run: bump every weight's version counter (values
        # unchanged), so that the next call uploads all of them again, as the first one did.
        for t in [*model.parameters(), *model.buffers()]:
            if t.is_floating_point():
                t.add_(0)
        t3 = time.perf_counter()
        compiled(*args)
        t4 = time.perf_counter()
        want = model(*args)
    leaves = zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want))
    err = max((g - w).abs().max().item() for g, w in leaves)
    native = marks["native_out"] - marks["native_in"]
    run1 = marks["run_out"] - marks["run_in"]
    stats = fxhlo.cache_stats()
    return {
        "import_s": imported - start,
        "first_call_s": t1 - t0,
        "capture_s": marks["handoff"] - t0,
        "trace_json_s": marks["native_in"] - marks["handoff"],
        "native_s": native,
        "run1_s": run1,
        "ready_s": native + run1,
        "handoff_to_output_s": t1 - marks["handoff"],
        "second_call_s": t2 - t1,
        "reupload_call_s": t4 - t3,
        "native_wall": marks["native_wall"],
        "max_abs_err": err,
        "stats": {k: stats[k] for k in ("compiles", "memory_hits", "disk_hits", "misses_by_reason", "bytes_on_disk",
                                        "entries_on_disk")},
    }


def parse_fxhlo_log(stderr: str, result: dict) -> None:
    """Adds what fxhlo's info lines say (client creation, codegen, compile-or-load) to the
    child's result."""
    for line in stderr.splitlines():
        if "PJRT client ready" in line and "client_s" not in result:
            at = _log_time(line)
            if at is not None:
                result["client_s"] = max(0.0, at - result["native_wall"])
        elif line.split(" ", 3)[-1].startswith("fxhlo::compiler: compiled") or " compiled graph=" in line:
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            result["codegen_s"] = _duration(fields.get("codegen_time", ""))
            result["compile_or_load_s"] = _duration(fields.get("compile_time", ""))
            result["cached"] = fields.get("cached")


# ---- JAX child ------------------------------------------------------------------------------


def _jax_resnet18(jnp, lax, rng):
    """ResNet-18 in lax, NHWC: the layout of fxhlo.models.resnet18 (7x7/2 stem, BN, ReLU,
    3x3/2 max pool, four stages of two BasicBlocks with 1x1 downsample shortcuts, average pool,
    fc to 1000); inference batch norm from running statistics. Returns (params, forward, x)."""
    import numpy as np

    def conv_w(k, c_in, c_out):
        return (rng.standard_normal((k, k, c_in, c_out)) * np.sqrt(2.0 / (k * k * c_out))).astype(np.float32)

    def bn_p(c):
        return {"mean": rng.uniform(-0.1, 0.1, c).astype(np.float32), "var": rng.uniform(0.5, 1.5, c).astype(np.float32),
                "gamma": rng.uniform(0.5, 1.5, c).astype(np.float32), "beta": rng.uniform(-0.1, 0.1, c).astype(np.float32)}

    params = {"stem": conv_w(7, 3, 64), "bn": bn_p(64), "stages": []}
    c = 64
    for i, w in enumerate((64, 128, 256, 512)):
        blocks = []
        for j in range(2):
            stride = 2 if i > 0 and j == 0 else 1
            b = {"w1": conv_w(3, c, w), "bn1": bn_p(w), "w2": conv_w(3, w, w), "bn2": bn_p(w)}
            if stride != 1 or c != w:
                b.update(wd=conv_w(1, c, w), bnd=bn_p(w))
            blocks.append(b)
            c = w
        params["stages"].append(blocks)
    params["fc_w"] = (rng.standard_normal((512, 1000)) * 0.04).astype(np.float32)
    params["fc_b"] = np.zeros(1000, np.float32)

    def conv(x, w, stride, pad):
        return lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad)] * 2,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def bn(x, p):
        return (x - p["mean"]) * (p["gamma"] / jnp.sqrt(p["var"] + 1e-5)) + p["beta"]

    def forward(p, x):
        x = jnp.maximum(bn(conv(x, p["stem"], 2, 3), p["bn"]), 0)
        x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)])
        for i, blocks in enumerate(p["stages"]):
            for j, b in enumerate(blocks):
                stride = 2 if i > 0 and j == 0 else 1
                y = jnp.maximum(bn(conv(x, b["w1"], stride, 1), b["bn1"]), 0)
                y = bn(conv(y, b["w2"], 1, 1), b["bn2"])
                shortcut = bn(conv(x, b["wd"], stride, 0), b["bnd"]) if "wd" in b else x
                x = jnp.maximum(y + shortcut, 0)
        return x.mean(axis=(1, 2)) @ p["fc_w"] + p["fc_b"]

    return params, forward, (rng.standard_normal((1, 224, 224, 3)).astype(np.float32),)


def _jax_bert(jnp, lax, rng, vocab=1000, hidden=256, layers=4, heads=4, seq=128, eps=1e-12):
    """The BERT-style encoder of fxhlo.models.bert with its default config (vocab 1000,
    hidden 256, 4 post-LN layers of 4 heads, exact-GELU FFN of 1024, tanh pooler), its inputs
    (the last eighth masked, token types 0 then 1). Returns (params, forward, args)."""
    import jax
    import numpy as np

    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ln_p():
        return {"g": np.ones(hidden, np.float32), "b": np.zeros(hidden, np.float32)}

    def lin(n_in, n_out):
        return {"w": w(n_in, n_out), "b": np.zeros(n_out, np.float32)}

    params = {"word": w(vocab, hidden), "pos": w(512, hidden), "type": w(2, hidden), "ln": ln_p(),
              "layers": [{"q": lin(hidden, hidden), "k": lin(hidden, hidden), "v": lin(hidden, hidden),
                          "o": lin(hidden, hidden), "ln1": ln_p(), "ffn1": lin(hidden, 4 * hidden),
                          "ffn2": lin(4 * hidden, hidden), "ln2": ln_p()} for _ in range(layers)],
              "pooler": lin(hidden, hidden)}

    def layer_norm(x, p):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + eps) * p["g"] + p["b"]

    def dense(x, p):
        return x @ p["w"] + p["b"]

    def split(x):
        b, t, _ = x.shape
        return x.reshape(b, t, heads, hidden // heads).transpose(0, 2, 1, 3)

    def forward(p, ids, mask, types):
        t = ids.shape[1]
        x = jnp.take(p["word"], ids, axis=0) + p["pos"][:t][None]
        x = layer_norm(x + jnp.take(p["type"], types, axis=0), p["ln"])
        keep = (mask != 0)[:, None, None, :]
        for lp in p["layers"]:
            q, k, v = (split(dense(x, lp[n])) for n in ("q", "k", "v"))
            scores = jnp.where(keep, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hidden // heads), -jnp.inf)
            attn = jax.nn.softmax(scores, axis=-1) @ v
            attn = attn.transpose(0, 2, 1, 3).reshape(x.shape)
            x = layer_norm(x + dense(attn, lp["o"]), lp["ln1"])
            x = layer_norm(x + dense(jax.nn.gelu(dense(x, lp["ffn1"]), approximate=False), lp["ffn2"]), lp["ln2"])
        return x, jnp.tanh(dense(x[:, 0], p["pooler"]))

    ids = rng.integers(0, vocab, (1, seq)).astype(np.int32)
    mask = np.ones((1, seq), np.int32)
    mask[:, seq - seq // 8:] = 0
    types = (np.arange(seq) >= seq // 2).astype(np.int32)[None]
    return params, forward, (ids, mask, types)


def child_jax(model_name: str, cache_dir: str) -> dict:
    """Runs in a new process under an interpreter with jax: jits the model with JAX's
    persistent compilation cache in ``cache_dir`` and times trace + lowering, compile (or
    cache load) and the first run."""
    start = time.perf_counter()
    import jax
    import numpy as np
    from jax import lax
    import jax.numpy as jnp

    imported = time.perf_counter()
    jax.config.update("jax_compilation_cache_dir", cache_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    events: dict = {}
    jax.monitoring.register_event_listener(lambda event, **_: events.__setitem__(event, events.get(event, 0) + 1))

    rng = np.random.default_rng(0)
    build = {"resnet18": _jax_resnet18, "bert": _jax_bert}[model_name]
    params, forward, args = build(jnp, lax, rng)
    t0 = time.perf_counter()
    jax.devices()  # the CPU client: created here, before the timed part (fxhlo's is inside its compile)
    t1 = time.perf_counter()
    params, args = jax.device_put((params, args))
    jitted = jax.jit(forward)
    t2 = time.perf_counter()
    lowered = jitted.lower(params, *args)
    t3 = time.perf_counter()
    compiled = lowered.compile()
    t4 = time.perf_counter()
    out = jax.block_until_ready(compiled(params, *args))
    t5 = time.perf_counter()
    jax.block_until_ready(compiled(params, *args))
    t6 = time.perf_counter()
    finite = all(bool(np.isfinite(np.asarray(o)).all()) for o in jax.tree_util.tree_leaves(out))
    entries = [p for p in Path(cache_dir).rglob("*") if p.is_file()]
    return {
        "import_s": imported - start,
        "client_s": t1 - t0,
        "lower_s": t3 - t2,
        "compile_s": t4 - t3,
        "run1_s": t5 - t4,
        "ready_s": t5 - t3,
        "first_call_s": t5 - t2,
        "second_call_s": t6 - t5,
        "finite": finite,
        "jax": jax.__version__,
        "stats": {"cache_hits": events.get("/jax/compilation_cache/cache_hits", 0),
                  "cache_misses": events.get("/jax/compilation_cache/cache_misses", 0),
                  "entries_on_disk": len(entries), "bytes_on_disk": sum(p.stat().st_size for p in entries)},
    }


# ---- parent: processes ----------------------------------------------------------------------


def run_child(python: str, kind: str, model: str, cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FXHLO_", "JAX_", "XLA_"))}
    env.update(FXHLO_CACHE_DIR=cache_dir, FXHLO_LOG="warn,fxhlo::session=info,fxhlo::compiler=info", NO_COLOR="1", JAX_PLATFORMS="cpu")
    cmd = [python, str(Path(__file__).resolve()), "--child", kind, "--models", model, "--cache-dir", cache_dir]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=CHILD_TIMEOUT_S)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} child for {model} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_s"] = wall
    if kind == "fxhlo":
        parse_fxhlo_log(proc.stderr, result)
    return result


def jax_python(requested: str | None) -> str | None:
    """The interpreter to run the JAX children with, or None (with the reason printed)."""
    candidates = [requested] if requested else [sys.executable]
    for python in candidates:
        try:
            probe = subprocess.run([python, "-c", "import jax; print(jax.__version__)"], capture_output=True,
                                   text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
        except OSError:
            continue
        if probe.returncode == 0:
            print(f"jax {probe.stdout.strip()} from {python}")
            return python
    where = requested or "this interpreter"
    print(f"jax is not importable by {where}: the JAX part is skipped. To run it: {JAX_INSTALL_HINT}")
    return None


def cold_and_warm(models, reps: int, jax_py: str | None) -> dict:
    """results[(impl, model, 'cold'|'warm')] = list of the children's results."""
    impls = [("fxhlo", sys.executable)] + ([("jax", jax_py)] if jax_py else [])
    results: dict = {}
    for rep in range(reps):
        for model in models:
            for impl, python in impls:
                folder = tempfile.mkdtemp(prefix=f"bench-cache-{impl}-{model}-")
                try:
                    for mode in ("cold", "warm"):
                        r = run_child(python, impl, model, folder)
                        results.setdefault((impl, model, mode), []).append(r)
                        print(f"  rep {rep + 1}/{reps} {impl:5s} {model:8s} {mode}: first call {r['first_call_s'] * 1e3:7.0f} ms,"
                              f" ready after hand-off {r['ready_s'] * 1e3:7.1f} ms, stats {r['stats']}", flush=True)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
    return results


# ---- parent: per call -----------------------------------------------------------------------


def per_call(calls: int, rounds: int = 10) -> dict:
    """Per-call wall time (seconds) of a cached one-element ``x + 1``: eager, fxhlo and Inductor
    through torch.compile, and fxhlo's compiled graph called directly (what is fxhlo's own:
    no Dynamo guards, no AOT Autograd wrapper); ``rounds`` blocks of ``calls // rounds`` calls
    each, alternated."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fxhlo  # noqa: F401  (registers the backend)
    from bench_backend import mean_call_time, round_robin

    x = torch.tensor([1.5])

    def eager_add(x):
        return x + 1

    # One function per backend: Dynamo caches compiled code per code object.
    def fxhlo_add(x):
        return x + 1

    def inductor_add(x):
        return x + 1

    fx = torch.compile(fxhlo_add, backend="fxhlo", fullgraph=True, dynamic=False)
    ind = torch.compile(inductor_add, fullgraph=True, dynamic=False)
    want = eager_add(x)
    for f in (fx, ind):
        assert torch.equal(f(x), want)
    graph = fxhlo.compiled_graphs()[-1]  # fxhlo's compiled graph, for a call without Dynamo and AOT
    contenders = {"eager": lambda: eager_add(x), "fxhlo": lambda: fx(x), "inductor": lambda: ind(x),
                  "fxhlo graph direct": lambda: graph([x])}
    return round_robin(contenders, rounds, mean_call_time(max(1, calls // rounds)))


# ---- report ---------------------------------------------------------------------------------


def med(values) -> float:
    return statistics.median(values)


def spread(values, scale: float, fmt: str = ".0f") -> str:
    return f"{med(values) * scale:{fmt}} [{min(values) * scale:{fmt}}-{max(values) * scale:{fmt}}]"


def stats_summary(stats: list) -> str:
    """The children's cache counters: each key's value, or its range where they differ."""
    parts = []
    for key in stats[0]:
        values = [json.dumps(s[key], sort_keys=True) for s in stats]
        if len(set(values)) == 1:
            parts.append(f"{key} {values[0]}")
        elif all(isinstance(s[key], (int, float)) for s in stats):
            parts.append(f"{key} {min(s[key] for s in stats)}-{max(s[key] for s in stats)}")
        else:
            parts.append(f"{key} {' | '.join(sorted(set(values)))}")
    return ", ".join(parts)


def report_cache(results: dict, models, impls) -> list:
    """Prints the per-stage table and returns the summary rows."""
    rows = []
    print("\n## cold compile vs warm start, new process each (ms: median [min-max])")
    for impl in impls:
        for model in models:
            cold, warm = results[(impl, model, "cold")], results[(impl, model, "warm")]
            print(f"\n{impl} {LABELS[model]} ({len(cold)} cold, {len(warm)} warm processes)")
            if impl == "fxhlo":
                keys = [("process (whole child)", "process_s"), ("import torch + fxhlo", "import_s"),
                        ("first call", "first_call_s"), ("  capture (Dynamo + AOT)", "capture_s"),
                        ("  trace to JSON", "trace_json_s"), ("  fxhlo.compile", "native_s"),
                        ("    PJRT client creation", "client_s"), ("    codegen", "codegen_s"),
                        ("    PJRT compile / cache load", "compile_or_load_s"), ("  first run", "run1_s"),
                        ("ready = fxhlo.compile + first run", "ready_s"),
                        ("hand-off to output (+ wrappers)", "handoff_to_output_s"), ("second call", "second_call_s"),
                        ("call uploading every weight again", "reupload_call_s")]
            else:
                keys = [("process (whole child)", "process_s"), ("import jax", "import_s"),
                        ("CPU client creation", "client_s"), ("first call = lower + compile + run", "first_call_s"),
                        ("  trace + lower", "lower_s"), ("  XLA compile / cache load", "compile_s"),
                        ("  first run", "run1_s"), ("ready = compile + first run", "ready_s"),
                        ("second call", "second_call_s")]
            print(f"  {'stage':36s} {'cold':>22s} {'warm':>22s} {'cold/warm':>9s}")
            for label, key in keys:
                c = [r[key] for r in cold if r.get(key) is not None]
                w = [r[key] for r in warm if r.get(key) is not None]
                if not c or not w:
                    continue
                fmt = ".1f" if med(c) < 0.2 or med(w) < 0.2 else ".0f"
                ratio = med(c) / med(w) if med(w) > 0 else float("inf")
                print(f"  {label:36s} {spread(c, 1e3, fmt):>22s} {spread(w, 1e3, fmt):>22s} {ratio:9.1f}")
            for mode, rs in (("cold", cold), ("warm", warm)):
                print(f"  {mode} cache stats: {stats_summary([r['stats'] for r in rs])}")
                if impl == "fxhlo":
                    errs = [r["max_abs_err"] for r in rs]
                    cached = sorted({str(r.get("cached")) for r in rs})
                    print(f"  {mode} max abs err vs eager: {max(errs):.2g}; executable from: {', '.join(cached)}")
            rows.append((impl, model, cold, warm))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="cold/warm process pairs per model and implementation (default 5)")
    ap.add_argument("--calls", type=int, default=20000, help="timed calls per contender in the per-call part (default 20000)")
    ap.add_argument("--models", default=",".join(MODEL_NAMES), help="comma-separated, of resnet18,bert")
    ap.add_argument("--jax-python", help="interpreter with jax[cpu] for the JAX children (default: this one, if it has jax)")
    ap.add_argument("--skip-jax", action="store_true")
    ap.add_argument("--skip-per-call", action="store_true")
    ap.add_argument("--child", choices=("fxhlo", "jax"), help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    unknown = set(models) - set(MODEL_NAMES)
    if unknown:
        ap.error(f"unknown model(s) {', '.join(sorted(unknown))}: choose from {', '.join(MODEL_NAMES)}")

    if a.child:
        result = child_fxhlo(models[0]) if a.child == "fxhlo" else child_jax(models[0], a.cache_dir)
        print(json.dumps(result))
        return 0

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}")
    jax_py = None if a.skip_jax else jax_python(a.jax_python)
    impls = ["fxhlo"] + (["jax"] if jax_py else [])
    print(f"\n## cold/warm processes ({a.reps} pairs per model and implementation, alternating)")
    results = cold_and_warm(models, a.reps, jax_py)
    rows = report_cache(results, models, impls)

    calls = None
    if not a.skip_per_call:
        # The per-call part compiles `x + 1` in this process: into a cache folder of its own.
        per_call_dir = tempfile.mkdtemp(prefix="bench-cache-per-call-")
        os.environ["FXHLO_CACHE_DIR"] = per_call_dir
        try:
            import torch

            print(f"\n## per-call cost of a cached one-element x + 1 (torch {torch.__version__}, "
                  f"{torch.get_num_threads()} threads; 10 alternating blocks of {a.calls // 10} calls each)")
            calls = per_call(a.calls)
        finally:
            shutil.rmtree(per_call_dir, ignore_errors=True)
        for k, v in calls.items():
            print(f"  {k:18s} {spread(v, 1e6, '.1f')} us per call")

    print("\n## summary (medians over new processes; ms; x = cold / warm)")
    print(f"  {'':6s} {'model':22s} {'first call: cold':>16s} {'warm':>6s} {'x':>5s}   {'compile: cold':>13s} {'warm':>6s}"
          f" {'x':>5s}   {'ready after hand-off: cold':>26s} {'warm':>6s} {'x':>5s}")
    for impl, model, cold, warm in rows:
        cells = []
        for key in ("first_call_s", "native_s" if impl == "fxhlo" else "compile_s", "ready_s"):
            c, w = med([r[key] for r in cold]), med([r[key] for r in warm])
            cells.append((c, w, c / w))
        (fc, fw, fx), (cc, cw, cx), (rc, rw, rx) = cells
        print(f"  {impl:6s} {LABELS[model]:22s} {fc * 1e3:16.0f} {fw * 1e3:6.0f} {fx:5.1f}   {cc * 1e3:13.0f} {cw * 1e3:6.0f}"
              f" {cx:5.1f}   {rc * 1e3:26.0f} {rw * 1e3:6.0f} {rx:5.1f}")
    if calls:
        print("  per call, cached x + 1 (us): " + ", ".join(f"{k} {med(v) * 1e6:.1f}" for k, v in calls.items()))
    print("  compile: fxhlo = fxhlo._native.compile (PJRT client creation, import, codegen, compile or cache load);"
          " jax = lowered.compile() (its client created before)")
    print("  ready after hand-off = compile + first run; first call = everything from the call to the output")
    return 0


if __name__ == "__main__":
    sys.exit(main())

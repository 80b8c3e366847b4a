"""PyTorch's OpInfo database through fxhlo: the project's op oracle.

Every OpInfo op (``torch.testing._internal.common_methods_invocations.op_db``) with CPU samples
runs through ``torch.compile(fn, backend="fxhlo", fullgraph=True, dynamic=False)`` and is
compared with eager by ``torch.testing.assert_close`` (NaN equal to NaN), or where that fails on
floating outputs, by the float64 rule the fixtures use (``fxhlo::compare``): the same sample run
in eager float64 is the truth, and fxhlo may be at most twice as far from it (root mean square
over the finite elements) as eager is, plus 1e-5, with NaN and Inf where eager has them. Eager's
own floats differ from one CPU to another (AVX2, AVX-512) by more than ``assert_close``'s float32
tolerance for sums and products, so the plain comparison alone passes or fails by machine. An op that fxhlo fails
is run again through ``aot_eager`` (the same capture with eager kernels): where that fails too,
the op is *excluded* (PyTorch cannot capture it; not fxhlo's to fix), otherwise it *fails*, with
the reason: the ATen ops fxhlo does not lower, the error's first line, or the largest error.

    python scripts/opinfo_sweep.py --dtypes float32 --out testsuite/opinfo/results.json
    python scripts/opinfo_sweep.py --ops sin,cumsum -v          # a few ops, reasons printed
    python scripts/opinfo_sweep.py --device cuda --ops nn.functional.batch_norm,nn.functional.layer_norm -v

Ops run in worker processes (``--jobs``) that report one JSON line per op; a worker that dies
(a crash in a compiler) or stalls past ``--timeout`` seconds on one op is replaced, and that op
is recorded as ``crash``/``timeout``, so one bad op never stops the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "float16", "bfloat16", "int64", "bool")
# The device the graphs are captured for (``--device``): ``cpu`` compiles through
# torch.compile; another (``cuda``) captures on fake tensors of that device
# (fxhlo.fake_device) and runs the trace on the CPU plugin, so device variants are found
# without the device.
DEVICE = "cpu"
# The optimization level fxhlo compiles at (``--opt-level``; the records are at the default).
OPT_LEVEL: int | None = None


def op_key(op) -> str:
    """The op's name as OpInfo writes it (``name.variant`` for variants)."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


# ---- the worker: runs ops in this process, one JSON line each -------------------------------


def first_line(e: BaseException) -> str:
    """The error's type and first line (Dynamo wraps a backend's error, "backend='fxhlo'
    raised:": the backend's own is reported). Shared with scripts/hf_sweep.py."""
    inner = getattr(e, "inner_exception", None)
    if inner is not None:
        e = inner
    text = str(e).strip().splitlines()
    line = next((l.strip() for l in text if l.strip()), "")
    return f"{type(e).__name__}: {line}"[:300]


def unsupported(e: BaseException):
    """The ``fxhlo.UnsupportedOpsError`` behind ``e`` (through Dynamo's wrapping and exception
    chains), or None."""
    import fxhlo

    seen, hops = e, 0
    while seen is not None and hops < 20:
        if isinstance(seen, fxhlo.UnsupportedOpsError):
            return seen
        seen = getattr(seen, "inner_exception", None) or seen.__cause__ or seen.__context__
        hops += 1
    return None


def _reason(e: BaseException) -> str:
    """A short, stable reason: the unlowered ATen ops, or the error's type and first line."""
    found = unsupported(e)
    if found is not None:
        return "unlowered: " + ", ".join(sorted({t for t, _, _ in found.ops}))
    return first_line(e)


def _run(op, sample, backend: str | None):
    import torch

    def fn(x, *args, **kwargs):
        return op(x, *args, **kwargs)

    if backend is None:
        return fn(sample.input, *sample.args, **sample.kwargs)
    torch._dynamo.reset()
    if backend == "fxhlo" and DEVICE != "cpu":
        # The graph PyTorch would hand fxhlo on DEVICE, captured on fake tensors, run on the
        # CPU plugin: an import or shape disagreement of a device variant fails the op here.
        from torch.utils import _pytree as pytree

        flat, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        tensors = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]

        def on_tensors(*ts):
            leaves = list(flat)
            for i, t in zip(tensors, ts):
                leaves[i] = t
            x, args, kwargs = pytree.tree_unflatten(leaves, spec)
            return fn(x, *args, **kwargs)

        expected = fn(sample.input, *sample.args, **sample.kwargs)
        leaves, out_spec = pytree.tree_flatten(expected)
        if any(isinstance(v, torch.Tensor) for v in leaves):
            return _on_device(on_tensors, [flat[i] for i in tensors], leaves, out_spec)
        # No tensor out (torch.broadcast_shapes, Tensor.item): nothing for the device; the CPU
        # sweep's torch.compile below is the test, as there.
    options = {"opt_level": OPT_LEVEL} if backend == "fxhlo" and OPT_LEVEL is not None else None
    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False, options=options)
    with torch.no_grad():
        return compiled(sample.input, *sample.args, **sample.kwargs)


def _on_device(on_tensors, tensors, leaves, out_spec):
    """``on_tensors(*tensors)`` captured for DEVICE on fake tensors, its trace run on the CPU
    plugin, the results in eager's structure (``leaves``, ``out_spec``)."""
    import torch
    from torch.utils import _pytree as pytree

    from fxhlo.fake_device import capture_for, run_trace

    d = capture_for(on_tensors, tensors, DEVICE, "opinfo")
    outs = run_trace(d.trace, d.weights, d.inputs)
    # A graph that mutates an input (training batch norm's running stats) returns the new
    # values first: the op's own outputs are the last ones.
    outs = iter(outs[len(outs) - sum(isinstance(v, torch.Tensor) for v in leaves):])
    return pytree.tree_unflatten([next(outs) if isinstance(v, torch.Tensor) else v for v in leaves], out_spec)


def _close(actual, expected) -> str | None:
    """None when equal by ``assert_close`` (NaN = NaN), else the mismatch's first line."""
    import torch

    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False)
    except Exception as e:  # noqa: BLE001 -- any mismatch (type, shape, values) is a failure
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        detail = next((l for l in lines if l.startswith("Greatest absolute")), "")
        return f"mismatch: {lines[0] if lines else type(e).__name__} {detail}".strip()[:300]
    return None


def _within_float64_rule(op, sample, actual, expected) -> bool:
    """Whether ``actual`` (fxhlo) is at most twice as far as ``expected`` (eager) from eager's
    float64 run of the same sample, plus 1e-5 (root mean square error over the elements all
    three have finite), and non-finite exactly where eager is; integer and bool outputs equal."""
    import torch
    from torch.utils._pytree import tree_flatten

    if torch.float64 not in op.supported_dtypes("cpu"):
        return False
    wide = (torch.float32, torch.float16, torch.bfloat16)
    to64 = lambda t: (torch.float64 if t in wide else t) if isinstance(t, torch.dtype) else (  # noqa: E731
        t.double() if t.dtype in wide else t)
    try:
        with torch.no_grad():
            truth = _run(op, sample.transform(to64), None)
    except Exception:  # noqa: BLE001 -- no float64 run: no rule to apply
        return False
    outs = [tree_flatten(v)[0] for v in (actual, expected, truth)]
    if len({len(o) for o in outs}) != 1:
        return False
    for a, e, r in zip(*outs):
        if not all(isinstance(v, torch.Tensor) for v in (a, e, r)):
            if a != e:
                return False
            continue
        if a.shape != e.shape or e.shape != r.shape:
            return False
        if not e.is_floating_point():
            if not torch.equal(a, e):
                return False
            continue
        a, e, r = a.double(), e.double(), r.double()
        finite = torch.isfinite(a) & torch.isfinite(e) & torch.isfinite(r)
        same_non_finite = torch.where(torch.isfinite(e), torch.isfinite(a), (a == e) | (a.isnan() & e.isnan()))
        if not bool(same_non_finite.all()):
            return False
        if not bool(finite.any()):
            continue
        rmse = lambda x: float(((x[finite] - r[finite]) ** 2).mean().sqrt())  # noqa: E731
        if rmse(a) > 2 * rmse(e) + 1e-5:
            return False
    return True


def _samples(op, dtype, count: int):
    import torch

    out = []
    try:
        for sample in op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=False):
            out.append(sample)
            if len(out) == count:
                break
    except Exception as e:  # noqa: BLE001 -- a sample generator that fails excludes the op
        return None, first_line(e)
    return out, None


# Ops whose eager results are uninitialized memory: no run can be compared with another.
UNINITIALIZED = ("empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided")


def check_op(op, dtype: str, count: int) -> dict:
    """One op at one dtype: pass, fail (reason) or excluded (reason)."""
    import torch

    if op.name in UNINITIALIZED:
        return {"status": "excluded", "reason": "eager leaves the values uninitialized"}

    samples, err = _samples(op, dtype, count)
    if samples is None:
        return {"status": "excluded", "reason": f"sample inputs fail: {err}"}
    ran = 0
    for sample in samples:
        try:
            with torch.no_grad():
                expected = _run(op, sample, None)
        except Exception:  # noqa: BLE001 -- eager refuses this sample: not a test of fxhlo
            continue
        ran += 1
        reason = None
        try:
            actual = _run(op, sample, "fxhlo")
            reason = _close(actual, expected)
            if reason is not None and reason.startswith("mismatch") and _within_float64_rule(op, sample, actual, expected):
                reason = None
        except Exception as e:  # noqa: BLE001
            reason = _reason(e)
        if reason is None:
            continue
        try:
            ref = _close(_run(op, sample, "aot_eager"), expected)
        except Exception as e:  # noqa: BLE001
            ref = first_line(e)
        if ref is not None:
            # Nondeterministic ops (random draws, empty) differ from eager through aot_eager too.
            return {"status": "excluded", "reason": f"aot_eager fails too: {ref}", "fxhlo": reason}
        return {"status": "fail", "reason": reason}
    if ran == 0:
        return {"status": "excluded", "reason": f"no {dtype} sample runs in eager"}
    return {"status": "pass", "samples": ran}


def worker(names: list[str], dtypes: list[str], count: int) -> None:
    import warnings

    import torch
    import torch._dynamo

    import fxhlo  # noqa: F401 -- registers the backend
    from torch.testing._internal.common_methods_invocations import op_db

    warnings.filterwarnings("ignore")
    torch._dynamo.config.cache_size_limit = 64
    torch.manual_seed(0)
    by_key = {op_key(op): op for op in op_db}
    for name in names:
        op = by_key[name]
        for dtype in dtypes:
            print(json.dumps({"op": name, "dtype": dtype, "start": True}), flush=True)
            if getattr(torch, dtype) not in op.supported_dtypes("cpu"):
                result = {"status": "unsupported", "reason": f"OpInfo lists no {dtype} on CPU"}
            else:
                t = time.perf_counter()
                result = check_op(op, dtype, count)
                result["seconds"] = round(time.perf_counter() - t, 2)
            print(json.dumps({"op": name, "dtype": dtype, **result}), flush=True)


# ---- the parent: shards ops over workers, survives crashes and stalls -----------------------


def _all_ops() -> list[str]:
    from torch.testing._internal.common_methods_invocations import op_db

    return [op_key(op) for op in op_db]


def sweep(names: list[str], dtypes: list[str], count: int, jobs: int, timeout: float, verbose: bool) -> dict:
    pending = queue.Queue()
    for n in names:
        pending.put(n)
    results: dict[str, dict] = {}
    lock = threading.Lock()

    def lane() -> None:
        while True:
            batch = []
            try:
                while len(batch) < 40:
                    batch.append(pending.get_nowait())
            except queue.Empty:
                pass
            if not batch:
                return
            _run_batch(batch)

    def _run_batch(batch: list[str]) -> None:
        cmd = [sys.executable, __file__, "--worker", "--ops", ",".join(batch), "--dtypes", ",".join(dtypes),
               "--samples", str(count), "--device", DEVICE]
        if OPT_LEVEL is not None:
            cmd += ["--opt-level", str(OPT_LEVEL)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=dict(os.environ, PYTHONWARNINGS="ignore"))
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)], daemon=True).start()
        current = None
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                _record(current, {"status": "fail", "reason": f"timeout: no result in {timeout:.0f} s"})
                break
            if line is None:
                if current is not None:
                    _record(current, {"status": "fail", "reason": f"crash: the worker died (exit {proc.wait()})"})
                break
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue  # something else printed to stdout
            key = (msg["op"], msg["dtype"])
            if msg.get("start"):
                current = key
                continue
            current = None
            _record(key, {k: v for k, v in msg.items() if k not in ("op", "dtype")})
        proc.wait()
        # Ops after the one that crashed or stalled go back in the queue.
        started = {k[0] for k in results_keys()}
        for n in batch:
            if n not in started:
                pending.put(n)

    def results_keys():
        with lock:
            return [tuple(k.split("|")) for k in results]

    def _record(key, result) -> None:
        if key is None:
            return
        with lock:
            results[f"{key[0]}|{key[1]}"] = result
            if verbose or result["status"] == "fail":
                print(f"{key[0]:<40} {key[1]:<9} {result['status']:<11} {result.get('reason', '')}", flush=True)

    threads = [threading.Thread(target=lane) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    table: dict[str, dict] = {}
    for key, result in sorted(results.items()):
        op, dtype = key.split("|")
        table.setdefault(op, {})[dtype] = result
    return table


def summary(table: dict) -> dict:
    counts: dict[str, dict] = {}
    for per_dtype in table.values():
        for dtype, r in per_dtype.items():
            c = counts.setdefault(dtype, {"pass": 0, "fail": 0, "excluded": 0, "unsupported": 0})
            c[r["status"]] += 1
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    ap.add_argument("--dtypes", default="float32", help=f"comma-separated, of {', '.join(DTYPES)}")
    ap.add_argument("--samples", type=int, default=3, help="samples per op and dtype (the first N)")
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds one op may take")
    ap.add_argument("--out", type=Path, help="write the per-op results as JSON")
    ap.add_argument("--device", default="cpu", help="capture for this device: cpu (torch.compile), or cuda "
                    "(fake CUDA tensors, their graph run on the CPU plugin)")
    ap.add_argument("--opt-level", type=int, help="compile at this fxhlo optimization level (default: fxhlo's default)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every op, not only failures")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    global DEVICE, OPT_LEVEL
    DEVICE, OPT_LEVEL = a.device, a.opt_level
    dtypes = [d for d in a.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        ap.error(f"unknown dtype {bad[0]!r}; choose from {', '.join(DTYPES)}")
    if a.worker:
        worker(a.ops.split(","), dtypes, a.samples)
        return 0
    names = _all_ops()
    if a.ops:
        wanted = a.ops.split(",")
        unknown = [n for n in wanted if n not in names]
        if unknown:
            ap.error(f"no OpInfo op {unknown[0]!r}")
        names = wanted
    t = time.perf_counter()
    table = sweep(names, dtypes, a.samples, a.jobs, a.timeout, a.verbose)
    counts = summary(table)
    for dtype, c in counts.items():
        print(f"{dtype}: {c['pass']} pass, {c['fail']} fail, {c['excluded']} excluded, "
              f"{c['unsupported']} not supported by the op ({time.perf_counter() - t:.0f} s)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        # Timings vary from run to run: kept out of the file so that a re-recorded sweep diffs
        # only where a result changed.
        stable = {op: {d: {k: v for k, v in r.items() if k != "seconds"} for d, r in per.items()}
                  for op, per in table.items()}
        a.out.write_text(json.dumps({"samples": a.samples, "ops": stable}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

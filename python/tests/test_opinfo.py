"""PyTorch's OpInfo database as fxhlo's op oracle (scripts/opinfo_sweep.py).

Every OpInfo op runs through ``torch.compile(backend="fxhlo")`` against eager: float32 with the
first three samples, float16/bfloat16/int64/bool with the first one. The results are compared
with the committed ones (``testsuite/opinfo/*.json``, also the OpInfo table of docs/ops.md): the
test fails when an op that passed there fails now. An op that passes now but not there is
printed, to be recorded by re-running the sweep with ``--out``.
"""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

SWEEP = ROOT / "scripts" / "opinfo_sweep.py"
RUNS = {
    "float32": (["--dtypes", "float32", "--samples", "3"], ROOT / "testsuite" / "opinfo" / "float32.json"),
    "other_dtypes": (["--dtypes", "float16,bfloat16,int64,bool", "--samples", "1"],
                     ROOT / "testsuite" / "opinfo" / "other_dtypes.json"),
}


@pytest.mark.sweep
@pytest.mark.parametrize("run", list(RUNS))
def test_opinfo_ops_that_passed_still_pass(run, tmp_path):
    args, committed = RUNS[run]
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(SWEEP), *args, "--jobs", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=3000)
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stderr[-4000:]
    now = json.loads(out.read_text())["ops"]
    before = json.loads(committed.read_text())["ops"]
    def compare(now):
        regressions, fixed = {}, []
        for op, per_dtype in sorted(before.items()):
            for dtype, was in per_dtype.items():
                result = now.get(op, {}).get(dtype, {"status": "missing", "reason": "not run"})
                if was["status"] == "pass" and result["status"] != "pass":
                    regressions[op] = f"{op} [{dtype}]: {result['status']}: {result.get('reason', '')}"
                elif was["status"] != "pass" and result["status"] == "pass":
                    fixed.append(f"{op} [{dtype}]")
        return regressions, fixed

    regressions, fixed = compare(now)
    if regressions:
        # Once more, alone: a worker that stalled on a loaded machine is not a regression.
        print("re-running:\n  " + "\n  ".join(regressions.values()))
        again = tmp_path / "again.json"
        subprocess.run([sys.executable, str(SWEEP), *args, "--jobs", "1", "--ops", ",".join(regressions),
                        "--out", str(again)], capture_output=True, text=True, timeout=3000)
        retried = json.loads(again.read_text())["ops"] if again.exists() else {}
        now = {**now, **retried}
        regressions, _ = compare(now)
    counts = {}
    for per_dtype in now.values():
        for dtype, r in per_dtype.items():
            counts.setdefault(dtype, {}).setdefault(r["status"], 0)
            counts[dtype][r["status"]] += 1
    print(f"OpInfo {run}: {counts}")
    if fixed:
        print(f"now passing ({len(fixed)}; record them: python {SWEEP.relative_to(ROOT)} {' '.join(args)} "
              f"--out {committed.relative_to(ROOT)}):\n  " + "\n  ".join(fixed))
    assert not regressions, f"{len(regressions)} OpInfo op(s) that passed now fail:\n" + "\n".join(regressions.values())
    # The committed results are a real sweep, not an empty file.
    assert sum(1 for d in before.values() for r in d.values() if r["status"] == "pass") > 100


def test_the_float64_rule_accepts_eagers_own_error_and_rejects_more():
    """The sweep's fallback comparison: fxhlo may be up to twice as far as eager from eager's
    float64 run (what another CPU's eager differs by), not further."""
    import importlib.util

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    spec = importlib.util.spec_from_file_location("opinfo_sweep", SWEEP)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    op = next(o for o in op_db if o.name == "matmul" and o.variant_test_name == "")
    torch.manual_seed(0)
    sample = max(op.sample_inputs("cpu", torch.float32), key=lambda s: s.input.numel() * s.args[0].numel())
    with torch.no_grad():
        expected = op(sample.input, *sample.args, **sample.kwargs)
        truth = op(sample.input.double(), *(a.double() for a in sample.args), **sample.kwargs)
    own = expected.double() - truth
    rmse = lambda x: float((x ** 2).mean().sqrt())  # noqa: E731
    print(f"matmul {tuple(expected.shape)}: eager float32 is {rmse(own):.2e} (rms) from float64")
    as_far = (truth + 1.5 * own).float()
    too_far = expected + 1e-3
    assert sweep._within_float64_rule(op, sample, expected, expected)
    assert sweep._within_float64_rule(op, sample, as_far, expected)
    assert not sweep._within_float64_rule(op, sample, too_far, expected)
    nan = expected.clone()
    nan.view(-1)[0] = float("nan")
    assert not sweep._within_float64_rule(op, sample, nan, expected), "a NaN eager does not have fails"

"""The GPU check (scripts/gpu_check.sh, scripts/gpu_check.py) without a GPU: its quick mode runs
the same code path on the CPU plugin and must give a table whose rows compiled, matched eager and
have figures; the pieces a GPU run depends on (finding the CUDA plugin through the import system,
the error measure, the messages when no CUDA device or no plugin is there) are checked here, so
that the check cannot rot between the runs on a GPU machine."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "gpu_check.sh"

gpu_check = load_script("gpu_check")


def run_script(*args, env=None, timeout=900):
    """``scripts/gpu_check.sh run ARGS`` with this interpreter."""
    full_env = dict(os.environ, PYTHON=sys.executable, **(env or {}))
    return subprocess.run(["bash", str(SCRIPT), "run", *args], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def test_plugin_files_are_the_runtimes():
    """gpu_check's early plugin check looks for the files the runtime loads (runtime/src/plugin.rs)."""
    source = (ROOT / "runtime" / "src" / "plugin.rs").read_text()
    for kind, device in (("Cuda", "cuda"), ("Cpu", "cpu")):
        arm = re.search(rf"DeviceKind::{kind} => &\[(.*?)\]", source, re.S)
        assert arm, f"no DeviceKind::{kind} arm in plugin_files"
        assert re.findall(r'"([^"]+)"', arm.group(1)) == gpu_check.PLUGIN_FILES[device]


def test_cuda13_plugin_is_found_through_the_import_system(tmp_path, monkeypatch):
    """jax-cuda13-pjrt installs jax_plugins/xla_cuda13/xla_cuda_plugin.so (jax_plugins is a
    namespace package): options={"device": "cuda"} finds it wherever this interpreter imports it
    from, PYTHONPATH included, and prefers it to the CUDA 12 one."""
    from fxhlo import _plugin

    for version in ("xla_cuda12", "xla_cuda13"):
        package = tmp_path / "jax_plugins" / version
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('the plugin package must not be imported')\n")
        (package / "xla_cuda_plugin.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "jax_plugins" or m.startswith("jax_plugins.")]:
        monkeypatch.delitem(sys.modules, name)
    found = _plugin.find(gpu_check.PLUGIN_FILES["cuda"])
    assert found == str(tmp_path / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so")
    assert "jax_plugins.xla_cuda13" not in sys.modules


def test_relative_error():
    want = (torch.tensor([[1.0, -4.0], [2.0, 0.0]]), {"pooled": torch.tensor([10.0])})
    assert gpu_check.relative_error((want[0].clone(), {"pooled": torch.tensor([10.0])}), want) == 0.0
    # Relative to the largest magnitude of each output, the worst output counts.
    got = (want[0] + 0.04, {"pooled": torch.tensor([10.5])})
    assert gpu_check.relative_error(got, want) == pytest.approx(0.05)
    assert gpu_check.relative_error((want[0], {"pooled": torch.tensor([float("nan")])}), want) == float("inf")
    with pytest.raises(AssertionError, match="shape"):
        gpu_check.relative_error((want[0].T.reshape(4), want[1]), want)
    with pytest.raises(AssertionError, match="torch.bfloat16 on cpu, eager's is torch.float32 on cpu"):
        gpu_check.relative_error((want[0].bfloat16(), want[1]), want)
    with pytest.raises(AssertionError, match="outputs"):
        gpu_check.relative_error(want[0], want)


def test_error_line_is_the_backends_own():
    """A row names the error behind Dynamo's wrapper (BackendCompilerFailed), by its first
    non-empty line."""
    def failing_backend(gm, example_inputs):
        raise ValueError("\ntrace meta says f32[64] but shape inference gives bf16[0]\n  at node 3")

    with pytest.raises(Exception) as caught:
        torch.compile(lambda x: x * 2, backend=failing_backend, fullgraph=True)(torch.ones(2))
    assert type(caught.value).__name__ == "BackendCompilerFailed"
    assert gpu_check._first_line(caught.value) == (
        "ValueError: trace meta says f32[64] but shape inference gives bf16[0]")


def test_an_all_zero_output_is_no_match(monkeypatch):
    """A model whose eager output is all zeros (torchvision's ViT head is zero-initialized) would
    match anything: the case is an error, not a match."""
    def zeros(batch, quick):
        model = torch.nn.Linear(4, 3)
        torch.nn.init.zeros_(model.weight)
        torch.nn.init.zeros_(model.bias)
        return model, (torch.randn(batch, 4),), {}

    monkeypatch.setitem(gpu_check.MODELS, "zeros", zeros)
    row = gpu_check.run_case("zeros", "f32x1", gpu_check.Device("cpu"), {"device": "cpu"}, True, 5, 0.1)
    assert row["match"] is False
    assert "eager's output is all zeros" in row["error"]


def test_table_reports_errors_and_skips():
    report = {"device": "cpu", "blocks": 7, "calls": 10, "variants": ["bf16x1", "f32x1"], "quick": False,
              "per_call": {"eager us": 2.0, "inductor us": 10.0, "fxhlo error": "CompileError: boom"},
              "skipped": 1, "elapsed s": 3.0, "cases": [
                  {"model": "bert", "dtype": "bf16", "batch": 1, "match": True, "fxhlo err": 1e-3, "eager ms": 2.0,
                   "inductor ms": 1.0, "fxhlo ms": 0.5, "fxhlo compile s": 3.0, "inductor compile s": 4.0},
                  {"model": "resnet50", "dtype": "bf16", "batch": 1, "match": False, "fxhlo error": "ShapeError: f32[64]",
                   "eager ms": 3.0, "inductor ms": 2.0},
                  {"model": "resnet50", "dtype": "f32", "batch": 1, "match": False, "skipped": "time budget"}]}
    text = gpu_check.table(report)
    assert "resnet50 bf16x1: fxhlo: ShapeError: f32[64]" in text
    assert "| resnet50           | f32x1   | skipped: time budget" in text
    assert "1 of 2 cases compiled and matched eager" in text and "1 skipped" in text
    assert "fxhlo: CompileError: boom" in text
    assert "Inductor 2.00x, fxhlo 4.00x" in text


def test_no_cuda_device_is_a_clear_exit():
    """Without a CUDA device (hidden here even on a GPU machine) the check says so and exits 2."""
    result = run_script("--quick", env={"CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no CUDA device" in result.stdout


def test_missing_carry_is_a_clear_exit(tmp_path):
    """An interpreter for which neither carry/ nor the checkout has an extension is told what to build."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho cpython-399\n")
    fake.chmod(0o755)
    result = subprocess.run(["bash", str(SCRIPT), "run"], cwd=ROOT, env=dict(os.environ, PYTHON=str(fake)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "scripts/gpu_check.sh build" in result.stderr


@pytest.mark.slow
def test_missing_plugin_is_a_clear_exit(tmp_path):
    """No PJRT plugin for the device: fxhlo's DeviceError, said at once (not a table of failed
    rows), exit 2."""
    result = run_script("--device", "cpu", "--quick", "--json", str(tmp_path / "r.json"),
                        env={"FXHLO_PJRT_PLUGIN": str(tmp_path / "no-plugin.so")})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "fxhlo cannot use the cpu device: DeviceError: PJRT plugin" in result.stdout
    assert "install xla-cpu-pjrt" in result.stdout
    assert json.loads((tmp_path / "r.json").read_text())["error"].startswith("DeviceError")


@pytest.mark.slow
def test_hard_limit_prints_the_table_and_exits(tmp_path):
    """A run past its hard limit (a compile that never returns) still prints the table and the
    JSON, says where it was, and exits 3."""
    result = run_script("--device", "cpu", "--quick", "--hard-limit", "0", "--json", str(tmp_path / "r.json"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "hard time limit (0 s) reached during the per-call check" in result.stdout
    assert "Per call of a cached x + 1" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert "hard time limit" in report["error"]
    assert report["skipped"] == len(report["cases"]) == len(gpu_check.QUICK_MODELS) * len(gpu_check.QUICK_VARIANTS)
    assert "| resnet50           | f32x1   | skipped: hard time limit" in result.stdout


@pytest.mark.slow
def test_quick_run_on_the_cpu_plugin(tmp_path):
    """`scripts/gpu_check.sh run --device cpu --quick`: every case compiles with fxhlo and Inductor,
    matches eager, and has positive figures; the per-call figures are there for all three; the
    table and the JSON under $OUT agree. Then a budget too small for any case skips them all."""
    result = run_script("--device", "cpu", "--quick", env={"OUT": str(tmp_path)})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    for contender in ("eager", "inductor", "fxhlo"):
        assert report["per_call"][f"{contender} us"] > 0, report["per_call"]
    cases = report["cases"]
    assert [(r["model"], r["dtype"], r["batch"]) for r in cases] == [
        (m, v.split("x")[0], int(v.split("x")[1])) for v in gpu_check.QUICK_VARIANTS for m in gpu_check.QUICK_MODELS]
    for r in cases:
        assert r["match"] is True, r
        assert 0 <= r["fxhlo err"] <= gpu_check.TOLERANCE[gpu_check.DTYPES[r["dtype"]]], r
        for key in ("eager ms", "inductor ms", "fxhlo ms", "fxhlo compile s", "inductor compile s"):
            assert r[key] > 0, (key, r)
    assert report["skipped"] == 0
    assert f"{len(cases)} of {len(cases)} cases compiled and matched eager" in result.stdout
    assert re.search(r"\| resnet50 +\| f32x1 +\| yes +\|", result.stdout), result.stdout

    small = run_script("--device", "cpu", "--quick", "--budget", "1", "--json", str(tmp_path / "small.json"))
    assert small.returncode == 1, small.stdout + small.stderr
    report = json.loads((tmp_path / "small.json").read_text())
    assert report["skipped"] == len(cases) and all(r.get("skipped") for r in report["cases"])
    assert "skipping the last" in small.stdout and f"{len(cases)} skipped" in small.stdout

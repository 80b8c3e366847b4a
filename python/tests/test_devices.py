"""Devices through torch.compile: TPU topologies compiled ahead of time on a machine without a
TPU (real libtpu, installed by scripts/setup.sh), and `tpu`/`cuda` failing fast where they are
missing (the device-node folder is injected, so these hold on a TPU or GPU host too)."""

import importlib
import json
import os
import stat
import time
import warnings

import pytest
import torch
from torch import nn

import fxhlo
from fxhlo import _native

from conftest import compile_, raises_options_error


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = nn.Linear(64, 128), nn.Linear(128, 32)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _trace(m, x) -> bytes:
    cap = fxhlo.capture(m, (x,))
    # The module, not the function `fxhlo.export` that shadows it on the package.
    _export = importlib.import_module("fxhlo.export")
    trace, _ = _export.trace_dict(cap, "mlp", os.getcwd(), collect_weights=False)
    return _export.to_json(trace).encode()


@pytest.mark.parametrize("device, needle", [("tpu", "no TPU found"), ("cuda", "no NVIDIA GPU found")])
def test_a_missing_device_fails_in_under_a_second(device, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("FXHLO_DEV_DIR", str(tmp_path))  # an empty /dev: no TPU, no GPU
    m, x = Mlp(), torch.randn(8, 64)
    trace = _trace(m, x)
    start = time.perf_counter()
    with pytest.raises(fxhlo.DeviceError) as info:
        _native.compile(trace, "<mlp>", json.dumps({"device": device}))
    elapsed = time.perf_counter() - start
    print(f"device={device}: failed in {elapsed * 1e3:.1f} ms: {info.value}")
    assert elapsed < 1.0, f"{elapsed:.2f} s"
    assert needle in str(info.value) and str(tmp_path) in str(info.value), info.value
    if device == "tpu":
        assert "tpu:v6e:2x2" in str(info.value), "the message says how to compile ahead of time"
    # Through torch.compile the same error reaches the user.
    with torch.no_grad(), pytest.raises(Exception, match=needle):
        compile_(m, device=device)(x)


@pytest.mark.parametrize("device", ["tpu:", "tpu:v6e 2x2", "gpu:v6e:2x2", 3])
def test_bad_device_names_are_refused(device):
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", options={"device": device})
    raises_options_error(compiled, torch.randn(1, 2), match="tpu:<topology>")


def test_a_tpu_topology_compiles_ahead_of_time_and_runs_eagerly_here():
    torch._dynamo.reset()
    # A batch size of this process's own, so that the first compile is never a hit in a cache
    # folder an earlier run left (a cached executable comes without its cost analysis).
    batch = 8 + os.getpid() % 251
    m, x = Mlp(), torch.randn(batch, 64)
    compiled = compile_(m, device="tpu:v6e:2x2")
    before = len(fxhlo.ahead_of_time_compiles())
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        outs = [compiled(x) for _ in range(3)]
        want = m(x)
    aot = [w for w in caught if issubclass(w.category, fxhlo.AheadOfTimeWarning)]
    assert len(aot) == 1, [str(w.message) for w in caught]
    assert "tpu:v6e:2x2" in str(aot[0].message) and "eager" in str(aot[0].message), aot[0].message
    for out in outs:
        err = (out - want).abs().max().item()
        print(f"eager fallback max abs err {err:.2e}")
        torch.testing.assert_close(out, want)
    results = fxhlo.ahead_of_time_compiles()[before:]
    assert len(results) == 1, results
    r = results[0]
    print({k: v for k, v in r.items() if k != "cost"})
    assert r["target"] == "tpu:v6e:2x2" and r["cached"] is None, r
    assert len(r["key"]) == 64 and r["size"] > 10_000, r
    # XLA's TPU cost model counts at least the two matmuls' multiply-adds (2*M*N*K each).
    matmuls = 2 * batch * 64 * 128 + 2 * batch * 128 * 32
    print(f"flops {r['cost']['flops']:.0f} (matmuls alone: {matmuls})")
    assert r["cost"]["flops"] >= matmuls, r["cost"]

    # The same graph again: the executable comes from the cache, not the TPU compiler.
    torch._dynamo.reset()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        compile_(m, device="tpu:v6e:2x2")(x)
    again = fxhlo.ahead_of_time_compiles()[-1]
    assert again["cached"] in ("memory", "disk") and again["key"] == r["key"], again


def test_a_crash_of_the_tpu_compiler_is_a_compile_error_and_python_lives_on(tmp_path, monkeypatch):
    """The worker stands in for a TPU compiler that dies with SIGSEGV (as libtpu 0.0.52 did on
    every transformer): the crash ends the worker, not this process."""
    worker = tmp_path / "segfaulting-worker"
    # It describes the topology (`--describe <file>`, for the cache key) as libtpu does, then
    # dies compiling.
    topology = ('{"platform_name": "tpu", "platform_version": "v5 lite", "device_count": 4, '
                '"device_kinds": ["TPU v5 lite"], "bounds": [2, 2, 1]}')
    worker.write_text("#!/bin/sh\n"
                      'while [ $# -gt 0 ]; do [ "$1" = --describe ] && { printf %s "$TOPOLOGY" > "$2"; exit 0; }; shift; done\n'
                      "kill -SEGV $$\n")
    monkeypatch.setenv("TOPOLOGY", topology)
    worker.chmod(worker.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FXHLO_AOT_WORKER", str(worker))
    torch._dynamo.reset()
    m, x = Mlp(), torch.randn(8, 64)
    with torch.no_grad(), pytest.raises(Exception) as info:
        compile_(m, device="tpu:v5e:2x2")(x)
    message = str(info.value)
    print(message[:400])
    assert "CompileError" in message and "crashed" in message and "tpu:v5e:2x2" in message, message
    assert "signal 11" in message, message
    # Still alive, and the CPU path works.
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(compile_(m)(x), m(x))

"""The compile cache through torch.compile, each case in fresh Python processes on a cache
folder of its own: a fixed shape compiles once in a process and never again in the next, the
same model traced by another script hits, changed frozen weights miss, a second thread loads
instead of compiling, two processes filling one folder at once both succeed, and settings
(read-only, an unwritable folder, FXHLO_ERROR_ON_COMPILE) behave as documented."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

# A small CNN; each script prints one JSON line: the cache counters and what it computed.
PRELUDE = textwrap.dedent("""
    import json, sys, threading
    import torch
    import fxhlo

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5),
    ).eval()

    def report(**extra):
        stats = fxhlo.cache_stats()
        print(json.dumps({**stats, **extra}))
""")


def child_env(cache_dir, **env) -> dict:
    """This process's environment without fxhlo's settings, with FXHLO_CACHE_DIR=cache_dir."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FXHLO_")}
    environ.update(FXHLO_CACHE_DIR=str(cache_dir), **env)
    return environ


def run(script: str, cache_dir, timeout=300, **env) -> dict:
    """Runs PRELUDE + script in a new interpreter with FXHLO_CACHE_DIR=cache_dir; returns the
    JSON its last stdout line holds (and its stderr under "stderr")."""
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script)], capture_output=True, text=True,
                          env=child_env(cache_dir, **env), cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    print({k: v for k, v in result.items() if k not in ("stderr", "outputs")})
    return result


ONE_SHAPE = """
    f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
    with torch.no_grad():
        y = f(torch.ones(1, 3, 16, 16))
    report(y=y.tolist())
"""

CYCLE = """
    compiled = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
    sizes = [16, 24, 32, 40]
    outputs = {}
    with torch.no_grad():
        for i in range(1000):
            s = sizes[i % 4]
            y = compiled(torch.ones(1, 3, s, s) * (s / 10))
            outputs[s] = y.tolist()
    report(outputs=outputs)
"""


@pytest.mark.slow
def test_four_sizes_compile_four_times_and_a_second_process_not_at_all(tmp_path):
    first = run(CYCLE, tmp_path)
    assert first["compiles"] == 4 and first["entries_on_disk"] == 4, first
    second = run(CYCLE, tmp_path)
    assert second["compiles"] == 0 and second["disk_hits"] == 4, second
    assert second["outputs"] == first["outputs"]


@pytest.mark.slow
def test_the_same_model_from_another_script_hits_and_changed_frozen_weights_miss(tmp_path):
    plain = """
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False, options={"freeze": True})
        with torch.no_grad():
            y = f(torch.ones(1, 3, 16, 16))
        report(y=y.tolist())
    """
    # Another script: other frames compiled first (other graph names), the model called through
    # a wrapper with other local names (other FX node names).
    other = """
        g = torch.compile(lambda a: a * 2 + 1, backend="fxhlo", fullgraph=True, dynamic=False)
        g(torch.ones(3))
        def forward_pass(image_batch):
            features = net(image_batch)
            return features
        f = torch.compile(forward_pass, backend="fxhlo", fullgraph=True, dynamic=False, options={"freeze": True})
        with torch.no_grad():
            y = f(torch.ones(1, 3, 16, 16))
        report(y=y.tolist())
    """
    first = run(plain, tmp_path)
    assert first["compiles"] == 1, first
    second = run(other, tmp_path)
    # One compile: the lambda; the model hits the first script's entry.
    assert second["compiles"] == 1 and second["disk_hits"] == 1 and second["y"] == first["y"], second
    changed = """
        with torch.no_grad():
            net[0].weight.add_(0.5)
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False, options={"freeze": True})
        with torch.no_grad():
            y = f(torch.ones(1, 3, 16, 16))
        report(y=y.tolist())
    """
    third = run(changed, tmp_path, FXHLO_LOG="fxhlo=info")
    assert third["compiles"] == 1 and third["misses_by_reason"] == {"frozen": 1}, third
    assert third["y"] != first["y"]
    assert "the nearest entry of this graph differs in frozen" in third["stderr"], third["stderr"][-2000:]


@pytest.mark.slow
def test_a_second_thread_loads_from_the_cache(tmp_path):
    script = """
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
        x = torch.ones(1, 3, 16, 16)
        with torch.no_grad():
            want = f(x)
        before = fxhlo.cache_stats()
        got = []
        def other():
            with torch.no_grad():
                got.append(f(x))
        t = threading.Thread(target=other)
        t.start(); t.join()
        report(before=before["compiles"], same=bool(torch.equal(got[0], want)))
    """
    r = run(script, tmp_path)
    assert r["before"] == 1 and r["compiles"] == 1 and r["memory_hits"] == 1 and r["same"], r


@pytest.mark.slow
def test_two_processes_on_an_empty_folder_both_succeed_leaving_one_entry(tmp_path):
    script = ONE_SHAPE
    procs = [subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=child_env(tmp_path), cwd=ROOT) for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["y"] == results[1]["y"]
    entries = sorted(f.name for f in tmp_path.iterdir())
    assert len(entries) == 1 and entries[0].endswith(".fxc"), entries
    assert run(script, tmp_path)["compiles"] == 0


@pytest.mark.slow
def test_read_only_never_writes(tmp_path):
    r = run(ONE_SHAPE, tmp_path / "cache", FXHLO_CACHE="read-only")
    assert r["mode"] == "read-only" and r["compiles"] == 1 and not (tmp_path / "cache").exists(), r


@pytest.mark.slow
def test_an_unwritable_folder_warns_once_and_the_model_runs(tmp_path):
    script = """
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
        with torch.no_grad():
            for s in (16, 24, 32):
                f(torch.ones(1, 3, s, s))
        report()
    """
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = run(script, blocker / "cache")
    assert r["compiles"] == 3, r
    warnings = [line for line in r["stderr"].splitlines() if "cannot write to the cache folder" in line]
    assert len(warnings) == 1, r["stderr"][-3000:]


@pytest.mark.slow
def test_error_on_compile_names_what_differs(tmp_path):
    run(ONE_SHAPE, tmp_path)
    strict = """
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
        with torch.no_grad():
            f(torch.ones(1, 3, 16, 16))
            try:
                f(torch.ones(1, 3, 20, 20))
                err = None
            except Exception as e:
                err = str(e)
        report(err=err)
    """
    r = run(strict, tmp_path, FXHLO_ERROR_ON_COMPILE="1")
    assert r["compiles"] == 0 and r["disk_hits"] == 1, r
    assert r["err"] and "FXHLO_ERROR_ON_COMPILE" in r["err"] and "f32[1,3,20,20]" in r["err"], r["err"]


def test_cache_stats_in_this_process():
    import fxhlo

    stats = fxhlo.cache_stats()
    assert set(stats) >= {"compiles", "memory_hits", "disk_hits", "misses_by_reason", "bytes_on_disk"}
    assert stats["mode"] in ("read-write", "read-only", "off")


@pytest.mark.slow
def test_warmup_compiles_each_shape_once_and_a_warm_process_loads_them(tmp_path):
    script = """
        f = torch.compile(net, backend="fxhlo", fullgraph=True, dynamic=False)
        done = fxhlo.warmup(f, [torch.ones(1, 3, s, s) for s in (16, 24)] + [(torch.ones(1, 3, 32, 32),)])
        with torch.no_grad():
            f(torch.ones(1, 3, 24, 24))
        report(done=done)
    """
    cold = run(script, tmp_path)
    assert cold["done"] == {"compiles": 3, "memory_hits": 0, "disk_hits": 0} and cold["compiles"] == 3, cold
    warm = run(script, tmp_path, FXHLO_ERROR_ON_COMPILE="1")
    assert warm["done"] == {"compiles": 0, "memory_hits": 0, "disk_hits": 3}, warm

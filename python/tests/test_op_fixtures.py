"""The per-op fixtures (testsuite/fixtures/ops/) are what scripts/gen_op_tests.py writes, cover
every Core ATen op of the installed torch, and stay small and portable.

"What the script writes" is the rule of `conftest.stale_files`: manifest.json, graph.json and
weights.safetensors byte for byte, reference inputs bit for bit, reference outputs within the
dtype's tolerance (`conftest.REFERENCE_TOLERANCE`, else torch.testing.assert_close's defaults;
NaN equals NaN; integers and bools exactly), since eager PyTorch on another CPU differs in the
last bits."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import COMMITTED, ROOT, stale_files

OPS = COMMITTED / "ops"
SCRIPT = ROOT / "scripts" / "gen_op_tests.py"
REGENERATE = ".venv/bin/python scripts/gen_op_tests.py --jobs 2"


def _load_gen_op_tests():
    spec = importlib.util.spec_from_file_location("gen_op_tests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_op_tests = _load_gen_op_tests()


def _manifest() -> list:
    return json.loads((OPS / "manifest.json").read_text())


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """Every op fixture written again by the script, in a separate process started from another
    working directory (two worker processes: about a minute and a half on two cores)."""
    out = tmp_path_factory.mktemp("ops")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--jobs", "2"],
        cwd=out.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    return out


@pytest.mark.slow
def test_committed_op_fixtures_are_what_the_script_writes(regenerated):
    problems = stale_files(regenerated, OPS, "ops")
    assert not problems, f"{len(problems)} op fixture files differ (run {REGENERATE}):\n" + "\n".join(problems)


def test_the_manifest_lists_every_core_op():
    core = [str(op) for op in gen_op_tests.core_ops()]
    manifest = _manifest()
    listed = [e["op"] for e in manifest]
    assert listed == sorted(listed), "the manifest is sorted by op name"
    assert len(set(listed)) == len(listed), "an op is listed twice"
    missing, extra = sorted(set(core) - set(listed)), sorted(set(listed) - set(core))
    assert not missing and not extra, f"core ops missing from the manifest: {missing}; not core ops: {extra}"
    for e in manifest:
        assert (e["bundle"] is None) != (e["excluded"] is None), f"{e['op']}: exactly one of bundle and excluded"
        if e["bundle"]:
            assert (OPS / e["bundle"] / "graph.json").is_file(), f"{e['op']}: no bundle {e['bundle']}"
            assert e["samples"] > 0 and e["dtypes"] and e["targets"], e["op"]
    no_samples = [e["op"] for e in manifest if e["excluded"] == gen_op_tests.NO_SAMPLES]
    assert not no_samples, f"core ops without samples in scripts/gen_op_tests.py: {no_samples}"


def test_manifest_entries_describe_their_bundles():
    for e in _manifest():
        if not e["bundle"]:
            continue
        trace = json.loads((OPS / e["bundle"] / "graph.json").read_text())
        targets = sorted({n["target"] for n in trace["nodes"] if n["target"] != "getitem"})
        assert e["targets"] == targets, e["op"]
        assert len(e["cases"]) == e["samples"], e["op"]
        ends = [c["outputs"] for c in e["cases"]]
        assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:])), e["op"]
        assert ends[-1][1] == len(trace["outputs"]), f"{e['op']}: cases cover every output"
        sources = {n["source"]["file"] for n in trace["nodes"] if "source" in n}
        assert sources <= {"scripts/gen_op_tests.py"}, f"{e['op']}: non-portable sources {sources}"


def test_all_fixtures_stay_under_10_mb():
    total = sum(f.stat().st_size for f in COMMITTED.rglob("*") if f.is_file())
    assert total < 10_000_000, f"testsuite/fixtures takes {total} bytes"

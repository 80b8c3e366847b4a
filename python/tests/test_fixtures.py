"""The fixtures are deterministic, up to date, portable, and agree with PyTorch eager."""

import json

import pytest
import torch
from safetensors.torch import load_file

from conftest import COMMITTED, NAMES, bundle_files, gen_fixtures

BUNDLE_FILES = ["graph.json", "reference.safetensors", "weights.safetensors"]


def _first_difference(a: bytes, b: bytes) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"sizes {len(a)} and {len(b)}, first difference at byte {i}: {a[i:i + 60]!r} vs {b[i:i + 60]!r}"


def _assert_same_bundle(left, right, what):
    lf, rf = bundle_files(left), bundle_files(right)
    assert sorted(lf) == BUNDLE_FILES, f"{left}: {sorted(lf)}"
    assert sorted(rf) == sorted(lf), f"{what}: files {sorted(rf)} vs {sorted(lf)}"
    for f in lf:
        assert lf[f] == rf[f], f"{what}: {f} differs: {_first_difference(lf[f], rf[f])}"


@pytest.mark.parametrize("name", NAMES)
def test_export_twice_in_one_process_is_byte_identical(exports, name):
    _assert_same_bundle(exports["a"] / f"{name}.fxt", exports["b"] / f"{name}.fxt", "two exports of one model")


@pytest.mark.parametrize("name", NAMES)
def test_export_in_another_process_is_byte_identical(exports, name):
    _assert_same_bundle(exports["a"] / f"{name}.fxt", exports["c"] / f"{name}.fxt", "export in a subprocess")


def test_committed_fixtures_are_what_gen_fixtures_writes(exports):
    # ops/ holds the per-op bundles of scripts/gen_op_tests.py (checked by test_op_fixtures.py).
    committed = sorted(p.name for p in COMMITTED.iterdir() if p.name != "ops")
    assert committed == sorted(f"{n}.fxt" for n in NAMES), "fixtures without a builder, or builders without a fixture"
    stale = []
    for name in NAMES:
        try:
            _assert_same_bundle(exports["c"] / f"{name}.fxt", COMMITTED / f"{name}.fxt", f"{name}.fxt")
        except AssertionError as e:
            stale.append(str(e))
    assert not stale, "stale fixtures (run .venv/bin/python scripts/gen_fixtures.py):\n" + "\n".join(stale)


def test_fixtures_stay_small():
    # Model fixtures stay under 1 MB; the whole tree (with the per-op bundles) under 10 MB.
    models = sum(f.stat().st_size for f in COMMITTED.rglob("*") if f.is_file() and "ops" not in f.relative_to(COMMITTED).parts)
    total = sum(f.stat().st_size for f in COMMITTED.rglob("*") if f.is_file())
    assert models < 1_000_000, f"model fixtures take {models} bytes"
    assert total < 10_000_000, f"fixtures take {total} bytes"


@pytest.mark.parametrize("name", NAMES)
def test_graph_json_is_strict_json_with_portable_sources(name):
    text = (COMMITTED / f"{name}.fxt" / "graph.json").read_text()

    def no_constant(c):
        raise AssertionError(f"{name}: graph.json holds {c}, which is not JSON")

    trace = json.loads(text, parse_constant=no_constant)
    assert (trace["format"], trace["version"], trace["name"]) == ("fxhlo-trace", 1, name)
    sources = [n["source"] for n in trace["nodes"]]
    assert len(sources) == len(trace["nodes"]), "every fixture node has a source location"
    assert {s["file"] for s in sources} == {"scripts/gen_fixtures.py"}
    lines = (gen_fixtures.ROOT / "scripts" / "gen_fixtures.py").read_text().splitlines()
    assert all(1 <= s["line"] <= len(lines) for s in sources)


@pytest.mark.parametrize("name", NAMES)
def test_references_match_a_fresh_eager_run(name):
    bundle = COMMITTED / f"{name}.fxt"
    trace = json.loads((bundle / "graph.json").read_text())
    weights = load_file(bundle / "weights.safetensors")
    reference = load_file(bundle / "reference.safetensors")
    model, args = gen_fixtures.build(name)

    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    keyed = {i["weight"]: i for i in trace["inputs"] if i["kind"] != "user_input"}
    assert sorted(weights) == sorted(keyed)
    unused = sorted(set(state) - set(weights))
    assert set(weights) <= set(state) and all(k.endswith("num_batches_tracked") for k in unused), unused
    for key, tensor in weights.items():
        assert keyed[key]["kind"] == ("parameter" if isinstance(state[key], torch.nn.Parameter) else "buffer")
        assert keyed[key]["meta"]["sizes"] == list(tensor.shape)
        assert torch.equal(tensor, state[key].detach()), key

    users = [i["name"] for i in trace["inputs"] if i["kind"] == "user_input"]
    outputs = sorted((k for k in reference if k.startswith("output.")), key=lambda k: int(k.split(".")[1]))
    assert sorted(reference) == sorted([f"input.{u}" for u in users] + outputs)
    assert len(users) == len(args) == 1, "each fixture has one tensor input"
    x = reference[f"input.{users[0]}"]
    assert x.dtype == args[0].dtype and torch.equal(x, args[0])

    with torch.no_grad():
        eager = model(x)
    eager = eager if isinstance(eager, (tuple, list)) else (eager,)
    assert len(outputs) == len(eager) == len(trace["outputs"])
    for i, e in enumerate(eager):
        ref = reference[f"output.{i}"]
        assert ref.dtype == e.dtype and ref.shape == e.shape
        assert torch.equal(ref, e), f"{name} output {i}: max abs diff {(ref - e).abs().max()}"

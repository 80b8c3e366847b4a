"""The fixtures are deterministic, up to date, portable, and agree with PyTorch eager.

Up to date means what `conftest.stale_files` checks: scripts/gen_fixtures.py, run now, writes
the same graph.json and weights.safetensors byte for byte and the same reference inputs bit for
bit, and its reference outputs agree with the committed ones within the dtype's tolerance
(`conftest.REFERENCE_TOLERANCE`, else torch.testing.assert_close's defaults; NaN equals NaN;
integers and bools exactly): eager PyTorch on another CPU differs in the last bits, so float
references are never compared bit for bit across machines. Two exports on the same machine are
byte-identical, references included.
"""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import COMMITTED, NAMES, bundle_files, first_difference, gen_fixtures, reference_problem, stale_files

BUNDLE_FILES = ["graph.json", "reference.safetensors", "weights.safetensors"]


def _assert_same_bundle(left, right, what):
    """Byte for byte, for two exports on this machine: the same eager kernels give the same bits."""
    lf, rf = bundle_files(left), bundle_files(right)
    assert sorted(lf) == BUNDLE_FILES, f"{left}: {sorted(lf)}"
    assert sorted(rf) == sorted(lf), f"{what}: files {sorted(rf)} vs {sorted(lf)}"
    for f in lf:
        assert lf[f] == rf[f], f"{what}: {f} differs: {first_difference(lf[f], rf[f])}"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_export_twice_in_one_process_is_byte_identical(exports, name):
    _assert_same_bundle(exports["a"] / f"{name}.fxt", exports["b"] / f"{name}.fxt", "two exports of one model")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_export_in_another_process_is_byte_identical(exports, name):
    _assert_same_bundle(exports["a"] / f"{name}.fxt", exports["c"] / f"{name}.fxt", "export in a subprocess")


@pytest.mark.slow
def test_committed_fixtures_are_what_gen_fixtures_writes(exports):
    # ops/ holds the per-op bundles of scripts/gen_op_tests.py (checked by test_op_fixtures.py).
    committed = sorted(p.name for p in COMMITTED.iterdir() if p.name != "ops")
    assert committed == sorted(f"{n}.fxt" for n in NAMES), "fixtures without a builder, or builders without a fixture"
    stale = [p for name in NAMES for p in stale_files(exports["c"] / f"{name}.fxt", COMMITTED / f"{name}.fxt", f"{name}.fxt")]
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
    where = f"{name}.fxt/reference.safetensors"
    key = f"input.{users[0]}"
    x = reference[key]
    assert not reference_problem(where, key, args[0], x), reference_problem(where, key, args[0], x)

    with torch.no_grad():
        eager = model(x)
    eager = eager if isinstance(eager, (tuple, list)) else (eager,)
    assert len(outputs) == len(eager) == len(trace["outputs"])
    problems = [reference_problem(where, f"output.{i}", e, reference[f"output.{i}"]) for i, e in enumerate(eager)]
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)


# ---- the staleness rule, on copies of committed bundles with a changed reference -----------
#
# As if the committed reference had been written on another CPU: `stale_files(committed, copy)`
# compares the copy with the committed bundle standing in for a fresh export.

OPS = COMMITTED / "ops"


def _one_ulp_up(t):
    return torch.nextafter(t, torch.full_like(t, float("inf")))


def _add_at_first(delta):
    def change(t):
        t = t.clone()
        t.view(-1)[0] += delta
        return t
    return change


def _set_first(value):
    def change(t):
        t = t.clone()
        t.view(-1)[0] = value
        return t
    return change


def _copy(bundle, tmp_path, key=None, change=None):
    """A copy of `bundle` under tmp_path whose reference tensor `key` is `change(tensor)`."""
    copy = tmp_path / bundle.name
    shutil.copytree(bundle, copy)
    if key is not None:
        reference = load_file(copy / "reference.safetensors")
        reference[key] = change(reference[key])
        save_file(reference, str(copy / "reference.safetensors"))
    return copy


@pytest.mark.parametrize("bundle", [COMMITTED / "mlp.fxt", COMMITTED / "mlp_bf16.fxt", OPS / "argmax_default.fxt"],
                         ids=lambda b: b.name)
def test_an_unchanged_copy_is_fresh(tmp_path, bundle):
    # Rewritten by safetensors here: the reference compares by tensors, not by file bytes.
    copy = _copy(bundle, tmp_path, "output.0", lambda t: t.clone())
    assert stale_files(bundle, copy, bundle.name) == []


@pytest.mark.parametrize("bundle, dtype", [("mlp.fxt", torch.float32), ("mlp_bf16.fxt", torch.bfloat16)])
def test_outputs_one_ulp_apart_are_fresh(tmp_path, bundle, dtype):
    bundle = COMMITTED / bundle
    copy = _copy(bundle, tmp_path, "output.0", _one_ulp_up)
    changed = load_file(copy / "reference.safetensors")["output.0"]
    original = load_file(bundle / "reference.safetensors")["output.0"]
    assert changed.dtype == dtype and not torch.equal(changed, original), "every element moved by one ulp"
    assert stale_files(bundle, copy, bundle.name) == []


@pytest.mark.parametrize("bundle, key, change, why", [
    ("mlp.fxt", "output.0", _add_at_first(1e-3), "max abs error 0.001"),
    ("mlp_bf16.fxt", "output.0", lambda t: t * 1.1, "Greatest relative difference"),
    ("ops/argmax_default.fxt", "output.1", _add_at_first(1), "bytes differ, max abs error 1"),
    ("mlp.fxt", "input.arg2_1", _one_ulp_up, "must be bit-identical"),
    ("mlp.fxt", "output.0", lambda t: t.double(), "is torch.float64 [2, 4] but a fresh run gives torch.float32 [2, 4]"),
    ("mlp.fxt", "output.0", lambda t: t[:1], "is torch.float32 [1, 4] but a fresh run gives torch.float32 [2, 4]"),
], ids=["f32_by_1e-3", "bf16_by_10_percent", "int_off_by_one", "input_by_one_ulp", "dtype", "shape"])
def test_a_changed_reference_is_stale_and_reported(tmp_path, bundle, key, change, why):
    bundle = COMMITTED / bundle
    copy = _copy(bundle, tmp_path, key, change)
    problems = stale_files(bundle, copy, bundle.name)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{bundle.name}/reference.safetensors: {key} "), problems[0]
    assert why in problems[0], problems[0]


def test_a_16_bit_output_that_cancels_to_near_zero_may_be_an_ulp_of_one_off(tmp_path):
    # As a bf16 convolution whose sum is rounded before the bias is added: a result near zero
    # that is one ulp of 1 (2**-7) away on another CPU is fresh; ten times that is stale.
    bundle = COMMITTED / "mlp_bf16.fxt"
    fresh = _copy(bundle, tmp_path / "fresh", "output.0", _set_first(0.0))
    assert stale_files(fresh, _copy(bundle, tmp_path / "ulp", "output.0", _set_first(2 ** -7)), "b") == []
    problems = stale_files(fresh, _copy(bundle, tmp_path / "ten", "output.0", _set_first(10 * 2 ** -7)), "b")
    assert len(problems) == 1 and "max abs error 0.0781" in problems[0], problems


def test_nan_matches_nan_but_not_a_number(tmp_path):
    bundle = COMMITTED / "mlp.fxt"
    nan = _add_at_first(float("nan"))
    fresh = _copy(bundle, tmp_path / "fresh", "output.0", nan)
    assert stale_files(fresh, _copy(bundle, tmp_path / "same", "output.0", nan), "mlp.fxt") == []
    problems = stale_files(fresh, _copy(bundle, tmp_path / "number", "output.0", lambda t: t.clone()), "mlp.fxt")
    assert len(problems) == 1 and "output.0" in problems[0], problems


def test_missing_tensors_and_changed_graphs_or_weights_are_stale(tmp_path):
    bundle = COMMITTED / "mlp.fxt"
    copy = _copy(bundle, tmp_path)
    reference = load_file(copy / "reference.safetensors")
    del reference["output.0"]
    save_file(reference, str(copy / "reference.safetensors"))
    (copy / "graph.json").write_bytes((copy / "graph.json").read_bytes() + b" ")
    weights = load_file(copy / "weights.safetensors")
    key = sorted(weights)[0]
    weights[key] = _one_ulp_up(weights[key])
    save_file(weights, str(copy / "weights.safetensors"))
    problems = stale_files(bundle, copy, "mlp.fxt")
    assert [p.split(":")[0].split(" ")[0] for p in problems] == [
        "mlp.fxt/graph.json", "mlp.fxt/reference.safetensors", "mlp.fxt/weights.safetensors"], problems
    assert "output.0" in problems[1], problems

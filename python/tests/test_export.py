"""Exporter behaviour on small models: errors, constants, multi-result nodes, scalars."""

import json
import math
import operator

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

import fxhlo
from fxhlo.export import Capture, CapturedInput, encode_float, to_json, trace_dict

from conftest import COMMITTED, ROOT, without_defaults


def _export(model, args, tmp_path, **kw):
    path = fxhlo.export(model, args, tmp_path / "m.fxt", source_root=ROOT, **kw)
    return path, json.loads((path / "graph.json").read_text())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def test_symbolic_size_is_refused_naming_the_input(tmp_path):
    x = torch.randn(4, 3)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(fxhlo.ExportError, match=r"user input 0 \(placeholder arg\d+_1, L\['example_args'\]\[0\]\) has symbolic size s\d+"):
        _export(Linear(), (x,), tmp_path)
    assert not (tmp_path / "m.fxt").exists(), "nothing is written when export fails"


def test_static_export_of_the_same_model_works(tmp_path):
    _, trace = _export(Linear(), (torch.randn(4, 3),), tmp_path)
    assert [i["meta"]["sizes"] for i in trace["inputs"] if i["kind"] == "user_input"] == [[4, 3]]


class Noisy(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x)


def test_random_op_is_refused_naming_the_node(tmp_path):
    with pytest.raises(fxhlo.ExportError, match=r"node random_bits draws random numbers \(from aten\.rand_like\.default, a random op\)"):
        _export(Noisy(), (torch.randn(2, 3),), tmp_path)


class TrainingDropout(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5, training=True)


def test_dropout_in_training_is_refused_and_vanishes_in_eval(tmp_path):
    with pytest.raises(fxhlo.ExportError, match=r"native_dropout.*random op"):
        _export(TrainingDropout(), (torch.randn(2, 3),), tmp_path)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)).train()
    _, trace = _export(model, (torch.randn(2, 3),), tmp_path)  # export puts the model in eval mode
    assert not any("dropout" in n["target"] for n in trace["nodes"])


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count += 1
        return x * 2


def test_buffer_mutation_is_refused(tmp_path):
    with pytest.raises(fxhlo.ExportError, match="mutates an input or buffer"):
        _export(Counter(), (torch.randn(3),), tmp_path)


class _Cache:
    """An output object pytree cannot flatten, holding tensors (as transformers' DynamicCache)."""

    def __init__(self, keys, values):
        self.keys, self.values = keys, values


class ReturnsACache(torch.nn.Module):
    def forward(self, x):
        return x + 1, _Cache(x * 2, x * 3)


def test_an_output_object_that_is_not_a_pytree_is_refused_by_name(tmp_path):
    # Not a mutation, which the count mismatch used to be reported as.
    with pytest.raises(fxhlo.ExportError, match=r"returns _Cache, which is not a tensor.*use_cache=False") as e:
        _export(ReturnsACache(), (torch.randn(3),), tmp_path)
    assert "mutates" not in str(e.value)


class WithConstants(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.offset = torch.arange(3.0)  # a plain tensor attribute: neither parameter nor buffer

    def forward(self, x):
        return (self.lin(x) + torch.tensor([1.0, 2.0, float("inf")])) * self.scale + self.offset


def test_parameters_buffers_and_constants_are_stored_by_key(tmp_path):
    model = WithConstants()
    path, trace = _export(model, (torch.randn(2, 3),), tmp_path)
    kinds = {i["weight"]: i["kind"] for i in trace["inputs"] if "weight" in i}
    constant = next(n["name"] for n in trace["inputs"] if n["kind"] == "constant" and n["weight"].startswith("_constant."))
    assert kinds == {"lin.weight": "parameter", "lin.bias": "parameter", "scale": "buffer", "offset": "constant",
                     f"_constant.{constant}": "constant"}
    weights = load_file(path / "weights.safetensors")
    assert sorted(weights) == sorted(kinds)
    assert torch.equal(weights["offset"], model.offset)
    assert torch.equal(weights["scale"], model.scale)
    assert torch.equal(weights[f"_constant.{constant}"], torch.tensor([1.0, 2.0, float("inf")]))
    names = {i["name"] for i in trace["inputs"]}
    used = {a["tensor"] for n in trace["nodes"] for a in n["args"] if isinstance(a, dict) and "tensor" in a}
    assert constant in used and names >= used - {n["name"] for n in trace["nodes"]}


class Swapped(torch.nn.Module):
    def forward(self, a, b):
        return b * 2 + a  # uses b first: Dynamo's placeholder order is not the argument order


def test_reference_inputs_are_bound_by_identity(tmp_path):
    a, b = torch.randn(3), torch.randn(3)
    path, trace = _export(Swapped(), (a, b), tmp_path)
    ref = load_file(path / "reference.safetensors")
    users = [i["name"] for i in trace["inputs"] if i["kind"] == "user_input"]
    mul = next(n for n in trace["nodes"] if n["target"] == "aten.mul.Tensor")
    b_name = mul["args"][0]["tensor"]
    (a_name,) = set(users) - {b_name}
    assert torch.equal(ref[f"input.{b_name}"], b) and torch.equal(ref[f"input.{a_name}"], a)
    assert torch.equal(ref["output.0"], b * 2 + a)


class NonFinite(torch.nn.Module):
    def forward(self, x):
        return x.masked_fill(x > 0, float("nan")).clamp(min=float("-inf"), max=float("inf"))


def test_non_finite_floats_are_strings(tmp_path):
    path, trace = _export(NonFinite(), (torch.randn(4),), tmp_path)
    text = (path / "graph.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    floats = [a["float"] for n in trace["nodes"] for a in n["args"] if isinstance(a, dict) and "float" in a]
    assert {"nan", "-inf", "inf"} <= set(floats), floats
    assert encode_float(0.1) == 0.1 and json.loads(json.dumps(encode_float(1e-300))) == 1e-300
    assert [encode_float(v) for v in (math.inf, -math.inf, math.nan, -0.0)] == ["inf", "-inf", "nan", -0.0]


def test_floats_round_trip_and_ints_stay_ints():
    values = [0.1, 1 / 3, 1e-5, 5e-324, 1.7976931348623157e308, -2.5]
    text = to_json({"floats": values, "int": 3, "ints": [1, -2]})
    back = json.loads(text)
    assert back["floats"] == values and all(type(v) is float for v in back["floats"])
    assert type(back["int"]) is int and back["ints"] == [1, -2]


def test_getitem_of_a_multi_result_node():
    trace = json.loads((COMMITTED / "cnn.fxt" / "graph.json").read_text())
    by_name = {n["name"]: n for n in trace["nodes"]}
    pool = next(n for n in trace["nodes"] if n["target"] == "aten.max_pool2d_with_indices.default")
    assert [m["dtype"] for m in pool["meta"]] == ["f32", "i64"]
    getitems = [n for n in trace["nodes"] if n["target"] == "getitem" and n["args"][0] == {"tensor": pool["name"]}]
    assert getitems, "the pooled values are selected with getitem"
    for g in getitems:
        producer, index = g["args"]
        assert set(index) == {"int"} and g["kwargs"] == {}
        assert g["meta"] == [by_name[producer["tensor"]]["meta"][index["int"]]]


def _layer_norm_graph(select):
    """A hand-built graph: native_layer_norm whose mean and rstd results are None (as for ops
    that skip outputs they are not asked for), then getitem `select`."""
    x = torch.randn(2, 4)
    graph = torch.fx.Graph()
    p = graph.placeholder("x")
    p.meta["val"] = x
    ln = graph.call_function(torch.ops.aten.native_layer_norm.default, (p, [4], None, None, 1e-5))
    ln.meta["val"] = (torch.empty(2, 4), None, None)
    g = graph.call_function(operator.getitem, (ln, select))
    g.meta["val"] = ln.meta["val"][select]
    graph.output((g,))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    return Capture(gm, [CapturedInput("user_input", None, x, 0)], [x])


def test_none_results_keep_their_position_as_null(tmp_path):
    trace, _ = trace_dict(_layer_norm_graph(0), "ln", tmp_path)
    ln, g = trace["nodes"]
    f32 = {"dtype": "f32", "sizes": [2, 4], "strides": [4, 1], "storage_offset": 0}
    assert ln["meta"] == [f32, None, None]
    assert g["args"] == [{"tensor": ln["name"]}, {"int": 0}] and g["meta"] == [f32]
    assert json.loads(to_json(trace))["nodes"][0]["meta"] == [f32, None, None]  # written as null
    with pytest.raises(fxhlo.ExportError, match=r"node getitem \(getitem\) selects result 1 of native_layer_norm\w*, which is None"):
        trace_dict(_layer_norm_graph(1), "ln", tmp_path)


def test_reexport_without_reference_removes_a_stale_one(tmp_path):
    path, _ = _export(Linear(), (torch.randn(2, 3),), tmp_path)
    (path / "graph.bin").write_bytes(b"stale")
    fxhlo.export(Linear(), (torch.randn(2, 3),), path, reference=False)
    assert sorted(f.name for f in path.iterdir()) == ["graph.json", "weights.safetensors"]


def test_export_replaces_files_atomically(tmp_path):
    """Each file is written to a temporary file and renamed over the old one: a reader that
    opened the old file reads it whole (an in-place write truncates it under the reader), and
    no temporary file is left."""
    path = tmp_path / "m.fxt"
    path.mkdir()
    readers = {}
    for name in ("graph.json", "weights.safetensors", "reference.safetensors"):
        (path / name).write_bytes(b"old contents")
        readers[name] = open(path / name, "rb")
    fxhlo.export(Linear(), (torch.randn(2, 3),), path, source_root=ROOT)
    for name, f in readers.items():
        with f:
            assert f.read() == b"old contents", name
    assert json.loads((path / "graph.json").read_text())["format"] == "fxhlo-trace"
    assert load_file(path / "weights.safetensors")
    assert sorted(p.name for p in path.iterdir()) == ["graph.json", "reference.safetensors", "weights.safetensors"]


# ---- one capture path: the backend's ---------------------------------------------------------


class Counting:
    """A Dynamo backend that counts the graphs it is given and runs them in eager."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def test_export_leaves_the_users_compiled_models_compiled(tmp_path):
    """The export does not reset Dynamo: models compiled before it (with any backend, of the
    class exported or of another) keep their compiled code, and calling them again compiles
    nothing; nor does exporting the same class more often than Dynamo's recompile limit fail."""
    from torch._dynamo.utils import counters

    x = torch.randn(4, 3)
    counting, user = Counting(), Linear()
    ours = torch.compile(user, backend=counting, fullgraph=True, dynamic=False)
    eager = torch.compile(WithConstants(), backend="eager", fullgraph=True, dynamic=False)
    fxhlo_compiled = torch.compile(Swapped(), backend="fxhlo", fullgraph=True, dynamic=False)
    with torch.no_grad():
        want = (ours(x), eager(torch.randn(2, 3)), fxhlo_compiled(x, x))
    assert counting.graphs == 1
    compiled_before = len(fxhlo.compiled_graphs())
    for i in range(torch._dynamo.config.recompile_limit + 2):
        _export(Linear(), (torch.randn(2, 3),), tmp_path / str(i))
    _export(user, (x,), tmp_path / "user")  # the very model the user compiled
    graphs_before = counters["stats"]["unique_graphs"]
    with torch.no_grad():
        got = (ours(x), eager(torch.randn(2, 3)), fxhlo_compiled(x, x))
    assert counters["stats"]["unique_graphs"] == graphs_before, "calling the compiled models compiled again"
    assert counting.graphs == 1
    assert len(fxhlo.compiled_graphs()) == compiled_before
    assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])


def test_an_exported_model_is_not_kept_alive_by_the_capture(tmp_path):
    import gc
    import weakref

    model = Linear()
    ref = weakref.ref(model)
    _export(model, (torch.randn(2, 3),), tmp_path)
    del model
    gc.collect()
    assert ref() is None, "Dynamo (or fxhlo) still holds the exported model"


class NeedsEveryLegalization(torch.nn.Module):
    """Each line needs one legalization: cholesky's error check (effect tokens), a number read
    from a tensor returned as one (scalars as tensors), a complex constant (complex numbers)."""

    def forward(self, m, z):
        return torch.linalg.cholesky(m), torch.tensor(m.sum().item()), z - 1j


def _every_legalization_args():
    m = torch.randn(4, 4, dtype=torch.float64)
    return m @ m.T + 4 * torch.eye(4, dtype=torch.float64), torch.randn(3, dtype=torch.complex64)


def test_a_model_that_needs_the_legalizations_exports(tmp_path):
    args = _every_legalization_args()
    path, trace = _export(NeedsEveryLegalization(), args, tmp_path)
    targets = {n["target"] for n in trace["nodes"]}
    assert not targets & {"aten._local_scalar_dense.default", "aten.scalar_tensor.default"}, targets
    assert "aten.complex.default" in targets and not any("with_effects" in t for t in targets), targets
    assert [i["kind"] for i in trace["inputs"]] == ["user_input", "user_input"], "no token input"
    ref = load_file(path / "reference.safetensors")
    want = NeedsEveryLegalization()(*args)
    assert len(trace["outputs"]) == 3 and all(torch.equal(ref[f"output.{i}"], w) for i, w in enumerate(want))


def test_the_export_writes_the_graph_the_backend_compiles(tmp_path):
    """The trace fxhlo.export writes is the one the backend hands the compiler (its `trace` dump),
    node for node and input for input."""
    import os

    for model, args in ((WithConstants(), (torch.randn(2, 3),)), (NeedsEveryLegalization(), _every_legalization_args())):
        dump = tmp_path / f"dump-{type(model).__name__}"
        compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False,
                                 options={"dump": "trace", "dump_dir": dump})
        with torch.no_grad():
            compiled(*args)
        (folder,) = dump.iterdir()
        compiled_trace = json.loads((folder / "00-trace.json").read_text())
        path = fxhlo.export(model, args, tmp_path / f"{type(model).__name__}.fxt", source_root=os.getcwd())
        exported = json.loads((path / "graph.json").read_text())
        for key in ("inputs", "nodes", "outputs"):
            assert without_defaults(exported[key]) == without_defaults(compiled_trace[key]), f"{type(model).__name__}: {key} differ"

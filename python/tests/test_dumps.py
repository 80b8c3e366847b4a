"""Dumps of compiles that fail before the Rust pipeline has a trace it can import: a trace
handed over as Python objects that does not fit the schema, and a graph the exporter refuses
(an ExportError). With dumping on, each leaves a folder with what failed and the error, and the
error says where (docs/dumps.md, "A failed compile's dump")."""

import json

import pytest
import torch

import fxhlo
from fxhlo import _native


def _folders(root):
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def _bad_trace():
    """A trace dict with an input kind no trace has, a value JSON cannot hold (an object), a
    non-finite float, a dict key that is not a str and a list that holds itself."""
    loop = []
    loop.append(loop)
    return {"format": "fxhlo-trace", "version": 1, "name": "bad_graph",
            "inputs": [{"name": "x", "kind": "weird"}],
            "extra": {"obj": object(), "nan": float("nan"), 3: "three", "loop": loop, "t": (1, 2)}}


def test_a_trace_that_does_not_fit_the_schema_leaves_its_trace_error_and_command(tmp_path, monkeypatch):
    monkeypatch.delenv("FXHLO_DUMP", raising=False)
    with pytest.raises(fxhlo.CompileError) as info:
        _native.compile(_bad_trace(), "<bad_graph>", '{"device": "cpu"}', "stablehlo", None, str(tmp_path))
    (folder,) = _folders(tmp_path)
    message = str(info.value)
    assert "does not fit fxhlo's schema" in message and "unknown variant" in message, message
    assert f"dumped to {folder}" in message, message
    # Named like a trace file that fails to import: the trace's name and digest.
    assert folder.name.startswith("bad_graph-") and len(folder.name) == len("bad_graph-") + 8, folder.name
    assert sorted(p.name for p in folder.iterdir()) == ["00-trace.json", "command.txt", "error.txt", "report.json",
                                                       "report.txt"]
    trace = json.loads((folder / "00-trace.json").read_text())
    assert trace["inputs"] == [{"name": "x", "kind": "weird"}] and trace["name"] == "bad_graph", trace
    extra = trace["extra"]
    assert extra["obj"].startswith("<object object at "), extra
    assert extra["nan"] == "nan" and extra["3"] == "three" and extra["t"] == [1, 2], extra
    assert isinstance(extra["loop"], list), extra
    error = (folder / "error.txt").read_text()
    assert error.startswith("failed at: import\n") and "<bad_graph>: the trace does not fit" in error, error
    command = (folder / "command.txt").read_text().strip()
    assert command == f"fxhlo compile {folder / '00-trace.json'}", command
    assert message.rstrip().endswith(f"reproduce with: {command}"), message


def test_a_trace_that_does_not_fit_the_schema_writes_nothing_with_dumping_off(tmp_path, monkeypatch):
    monkeypatch.delenv("FXHLO_DUMP", raising=False)
    monkeypatch.setenv("FXHLO_DUMP_DIR", str(tmp_path))
    with pytest.raises(fxhlo.CompileError) as info:
        _native.compile(_bad_trace(), "<bad_graph>", '{"device": "cpu"}')
    assert "dumped to" not in str(info.value) and not _folders(tmp_path)


def _to_float(x):
    return x.float() * 2


def test_a_graph_the_exporter_refuses_leaves_its_fx_graph_and_error(tmp_path):
    # uint16 is no dtype of fxhlo's traces: the exporter refuses the input before any trace.
    x = torch.zeros(3, dtype=torch.uint16)
    torch._dynamo.reset()
    c = torch.compile(_to_float, backend="fxhlo", fullgraph=True, dynamic=False,
                      options={"dump": "import", "dump_dir": str(tmp_path)})
    with pytest.raises(Exception) as info:
        c(x)
    (folder,) = _folders(tmp_path)
    message = str(info.value)
    assert "dtype torch.uint16 is not supported" in message, message
    assert f"dumped to {folder}" in message, message
    assert folder.name.startswith("fxhlo_") and folder.name.rsplit("-", 1)[1].isalnum(), folder.name
    assert sorted(p.name for p in folder.iterdir()) == ["error.txt", "fx-graph.py", "fx-nodes.txt", "report.json",
                                                       "report.txt"]
    graph = (folder / "fx-graph.py").read_text()
    assert "def forward" in graph and "aten._to_copy.default" in graph and "aten.mul.Tensor" in graph, graph
    nodes = (folder / "fx-nodes.txt").read_text().splitlines()
    assert "\tplaceholder\t" in nodes[1] and nodes[1].endswith("uint16[3] on cpu"), nodes
    assert any("\tcall_function\taten.mul.Tensor\tfloat32[3] on cpu" in n for n in nodes), nodes
    error = (folder / "error.txt").read_text()
    assert error.startswith("failed at: export\nExportError: dtype torch.uint16 is not supported"), error
    assert "Traceback (most recent call last):" in error and "in dtype_name" in error, error
    assert "error: export: ExportError: dtype torch.uint16" in (folder / "report.txt").read_text()


def test_a_graph_the_exporter_refuses_writes_nothing_with_dumping_off(tmp_path, monkeypatch):
    monkeypatch.delenv("FXHLO_DUMP", raising=False)
    monkeypatch.setenv("FXHLO_DUMP_DIR", str(tmp_path))
    torch._dynamo.reset()
    c = torch.compile(_to_float, backend="fxhlo", fullgraph=True, dynamic=False)
    with pytest.raises(Exception) as info:
        c(torch.zeros(3, dtype=torch.uint16))
    assert "dtype torch.uint16 is not supported" in str(info.value) and "dumped to" not in str(info.value)
    assert not _folders(tmp_path)

"""Exporter: capture a model the way the torch.compile backend sees it and write a trace bundle.

Capture is Dynamo (``fullgraph=True, dynamic=False``) followed by AOT Autograd with the core ATen
decompositions under ``torch.no_grad()``: the graph written is the one a backend receives.
The bundle format is specified in ``docs/trace-format.md``.
"""

from __future__ import annotations

import json
import operator
import os
import re
from pathlib import Path

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd

FORMAT = "fxhlo-trace"
SCHEMA_VERSION = 1

_DTYPES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool",
}


class ExportError(Exception):
    """The model cannot be expressed as an fxhlo trace (the message says why)."""


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ExportError(f"dtype {dtype} is not supported by fxhlo; supported: {sorted(_DTYPES.values())}")


def capture(model: torch.nn.Module, example_args: tuple):
    """Returns (aot_graph_module, placeholder_kinds, eager_outputs).

    placeholder_kinds[i] is ("parameter"|"buffer"|"user_input", fqn_or_None) for the i-th
    placeholder of the AOT graph.
    """
    names = {}
    for fqn, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), ("parameter", fqn))
    for fqn, b in model.named_buffers(remove_duplicate=False):
        names.setdefault(id(b), ("buffer", fqn))
    result = {}

    def fw_compiler(gm, _inputs):
        result["gm"] = gm
        return gm.forward

    aot = aot_autograd(fw_compiler=fw_compiler, decompositions=core_aten_decompositions())

    def backend(gm, example_inputs):
        # Dynamo hands real tensors here, so parameters are identified by identity; AOT
        # Autograd keeps its placeholders in the same order.
        result["kinds"] = [names.get(id(t), ("user_input", None)) for t in example_inputs]
        return aot(gm, example_inputs)

    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
        outputs = compiled(*example_args)
    torch._dynamo.reset()
    return result["gm"], result["kinds"], outputs


def _meta(val) -> dict:
    if not isinstance(val, torch.Tensor):
        raise ExportError(f"expected a tensor value, found {type(val).__name__}")
    for s in val.shape:
        if not isinstance(s, int):
            raise ExportError(f"symbolic size {s}: fxhlo specializes shapes (use dynamic=False)")
    return {
        "dtype": dtype_name(val.dtype),
        "sizes": list(val.shape),
        "strides": list(val.stride()),
        "storage_offset": int(val.storage_offset()),
    }


def _arg(a):
    if isinstance(a, torch.fx.Node):
        return {"tensor": a.name}
    if a is None:
        return "none"
    if isinstance(a, bool):
        return {"bool": a}
    if isinstance(a, int):
        return {"int": a}
    if isinstance(a, float):
        return {"float": a}
    if isinstance(a, str):
        return {"string": a}
    if isinstance(a, torch.dtype):
        return {"dtype": dtype_name(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).replace("torch.", "")}
    if isinstance(a, (list, tuple)):
        if all(isinstance(x, torch.fx.Node) for x in a) and a:
            return {"tensors": [x.name for x in a]}
        if all(isinstance(x, bool) for x in a) and a:
            return {"bools": list(a)}
        if all(isinstance(x, int) and not isinstance(x, bool) for x in a):
            return {"ints": list(a)}
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in a):
            return {"floats": [float(x) for x in a]}
    raise ExportError(f"argument {a!r} of type {type(a).__name__} cannot be serialized")


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _source(node, root: Path):
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    file, line = frames[-1]
    # Paths relative to the working directory keep traces free of machine-specific prefixes.
    try:
        file = os.path.relpath(file, root) if Path(file).resolve().is_relative_to(root) else file
    except ValueError:
        pass
    return {"file": file, "line": int(line)}


def _target(node) -> str:
    if node.target is operator.getitem:
        return "getitem"
    name = str(node.target)  # e.g. "aten.addmm.default"
    return name if name.startswith("aten.") else f"aten.{name}"


def trace_dict(gm, kinds, name: str, root: Path) -> dict:
    inputs, nodes, outputs = [], [], []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(kinds):
        raise ExportError(f"{len(placeholders)} placeholders but {len(kinds)} captured inputs")
    for node, (kind, fqn) in zip(placeholders, kinds):
        spec = {"name": node.name, "kind": kind, "meta": _meta(node.meta["val"])}
        if fqn is not None:
            spec["weight"] = fqn
        inputs.append(spec)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            val = node.meta.get("val")
            metas = [_meta(v) for v in val] if isinstance(val, (tuple, list)) else [_meta(val)]
            spec = {
                "name": node.name,
                "target": _target(node),
                "args": [_arg(a) for a in node.args],
                "kwargs": {k: _arg(v) for k, v in sorted(node.kwargs.items())},
                "meta": metas,
            }
            src = _source(node, root)
            if src:
                spec["source"] = src
            nodes.append(spec)
        elif node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            outputs = [_arg(o) for o in outs]
        elif node.op != "placeholder":
            raise ExportError(f"FX node {node.name} has op {node.op}, which traces cannot hold")
    return {
        "format": FORMAT,
        "version": SCHEMA_VERSION,
        "name": name,
        "decomposition_table": "core_aten",
        "inputs": inputs,
        "nodes": nodes,
        "outputs": outputs,
    }


_NUMBER_LIST = re.compile(r"\[\s*(-?\d[\d\s,.eE+-]*?)\s*\]")


def to_json(trace: dict) -> str:
    """Indented JSON with number lists kept on one line, for people reading the trace."""
    text = json.dumps(trace, indent=1)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def export(model: torch.nn.Module, example_args: tuple, path, reference: bool = True, name=None) -> Path:
    """Captures ``model`` on ``example_args`` and writes the bundle folder ``path``.

    With ``reference=True`` the eager outputs for ``example_args`` are stored beside the graph.
    """
    from safetensors.torch import save_file

    path = Path(path)
    model = model.eval()
    gm, kinds, _ = capture(model, example_args)
    trace = trace_dict(gm, kinds, name or path.stem, Path.cwd().resolve())
    path.mkdir(parents=True, exist_ok=True)
    (path / "graph.json").write_text(to_json(trace))
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    weights = {i["weight"]: state[i["weight"]].detach().contiguous() for i in trace["inputs"] if "weight" in i}
    save_file(weights, str(path / "weights.safetensors"))
    if reference:
        with torch.no_grad():
            out = model(*example_args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        user = [i["name"] for i in trace["inputs"] if i["kind"] == "user_input"]
        tensors = [a for a in example_args if isinstance(a, torch.Tensor)]
        ref = {f"input.{n}": t.detach().contiguous() for n, t in zip(user, tensors)}
        ref.update({f"output.{i}": o.detach().contiguous() for i, o in enumerate(outs)})
        save_file(ref, str(path / "reference.safetensors"))
    return path

"""Exporter: capture a model the way the torch.compile backend sees it and write a trace bundle.

Capture is the backend's own (:func:`fxhlo.graph_capture.capture`): Dynamo (``fullgraph=True,
dynamic=False``), AOT Autograd with fxhlo's decompositions under ``torch.no_grad()`` and the
legalizations of :mod:`fxhlo.legalize`, so the graph written is the one the backend compiles.
The bundle format is specified in ``docs/trace-format.md``; ``frontend/src/schema`` reads it.

Everything written is deterministic: the same model and inputs give byte-identical files, in
one process or in several (names come from FX, keys are sorted, floats are written by ``repr``,
which round-trips exactly).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import operator
import os
import re
from pathlib import Path

import torch

# Defined elsewhere, and part of this module's interface: the exporter's error, and the capture
# it writes (`fxhlo.export.capture` is the one capture path, the backend's).
from . import _compat
from .errors import ExportError  # noqa: F401
from .graph_capture import Capture, CapturedInput, capture  # noqa: F401

FORMAT = "fxhlo-trace"
SCHEMA_VERSION = 1
DECOMPOSITION_TABLE = "core_aten"

# The files of a bundle.
GRAPH_JSON = "graph.json"
WEIGHTS = "weights.safetensors"
REFERENCE = "reference.safetensors"
# Written by other tools from graph.json; a stale copy would shadow a new graph.json.
_DERIVED = ("graph.bin",)

_DTYPES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}

# Prefix of the weights key of a lifted constant that has no attribute name of its own.
CONSTANT_PREFIX = "_constant."

_TORCH_DIR = Path(torch.__file__).resolve().parent
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ExportError(f"dtype {dtype} is not supported by fxhlo; supported: {sorted(_DTYPES.values())}") from None


# ---- graph -> trace dict --------------------------------------------------------------------


def _check_static(val: torch.Tensor, what: str) -> None:
    for field, dims in (("size", val.shape), ("stride", val.stride()), ("storage offset", [val.storage_offset()])):
        for s in dims:
            if not isinstance(s, int):
                raise ExportError(
                    f"{what} has symbolic {field} {s} (shape {tuple(val.shape)}): fxhlo specializes "
                    "shapes; do not mark dimensions dynamic (torch._dynamo.mark_dynamic) when exporting"
                )


def _meta(val, what: str) -> dict:
    if not isinstance(val, torch.Tensor):
        kind = "symbolic " if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)) else ""
        raise ExportError(f"{what}: expected a tensor value, found {kind}{type(val).__name__} {val!r}")
    _check_static(val, what)
    return {
        "dtype": dtype_name(val.dtype),
        "sizes": list(val.shape),
        "strides": list(val.stride()),
        "storage_offset": int(val.storage_offset()),
    }


def encode_float(x: float):
    """A float as graph.json holds it: the number itself, or ``"inf"``, ``"-inf"``, ``"nan"``
    (JSON has no literal for those; ``json.dumps`` would write ``Infinity``, which is not JSON)."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _schema_type(node: torch.fx.Node, position) -> str:
    """The declared type of an argument (by index or keyword name), e.g. ``List[Tensor]``."""
    schema = _compat.schema(node.target)
    if schema is None:
        return ""
    for i, arg in enumerate(schema.arguments):
        if position == i or position == arg.name:
            return str(arg.type)
    return ""


def _describe_node(node: torch.fx.Node) -> str:
    target = "getitem" if node.target is operator.getitem else node.target
    return f"node {node.name} ({target})"


def _arg(a, node: torch.fx.Node, position=None):
    """One argument, externally tagged (see docs/trace-format.md)."""
    where = f"{_describe_node(node)} argument {position}"
    if isinstance(a, torch.fx.Node):
        if "fxhlo_subgraph" in a.meta:
            return {"graph": a.meta["fxhlo_subgraph"]}
        val = a.meta.get("val")
        if a.op != "get_attr" and not isinstance(val, (torch.Tensor, list, tuple)):
            raise ExportError(f"{where} is {a.name}, a symbolic value ({val!r}): fxhlo specializes shapes")
        return {"tensor": a.name}
    if a is None:
        return "none"
    if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise ExportError(f"{where} is symbolic ({a}): fxhlo specializes shapes")
    if isinstance(a, bool):
        return {"bool": a}
    if isinstance(a, int):
        return {"int": a}
    if isinstance(a, float):
        return {"float": encode_float(a)}
    if isinstance(a, str):
        return {"string": a}
    if isinstance(a, torch.dtype):
        return {"dtype": dtype_name(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).replace("torch.", "")}
    if isinstance(a, torch.layout):
        # ATen's layout arguments are all `Layout?`, where None means strided.
        if a == torch.strided:
            return "none"
        raise ExportError(f"{where}: layout {a} is not supported (only torch.strided)")
    if isinstance(a, (list, tuple)):
        items = list(a)
        if not items:
            if isinstance(node.target, _compat.HigherOrderOperator):
                return {"tensors": []}  # the operands of a control-flow op
            declared = _schema_type(node, position)
            if "Optional[Tensor]" in declared:
                return {"optional_tensors": []}
            if "Tensor" in declared:
                return {"tensors": []}
            if "float" in declared:
                return {"floats": []}
            if "bool" in declared:
                return {"bools": []}
            return {"ints": []}
        if any(isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)) for x in items):
            raise ExportError(f"{where} holds symbolic values ({items}): fxhlo specializes shapes")
        if all(isinstance(x, torch.fx.Node) for x in items):
            return {"tensors": [x.name for x in items]}
        if all(isinstance(x, torch.fx.Node) or x is None for x in items):
            return {"optional_tensors": [None if x is None else x.name for x in items]}
        if all(isinstance(x, bool) for x in items):
            return {"bools": items}
        if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            return {"ints": items}
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
            return {"floats": [encode_float(x) for x in items]}
    raise ExportError(f"{where}: {a!r} of type {type(a).__name__} cannot be serialized")


def _kwargs(node: torch.fx.Node) -> dict:
    out = {}
    for k, v in sorted(node.kwargs.items()):
        if k == "layout" and v == torch.strided:
            continue  # the default; every fxhlo tensor is strided
        out[k] = _arg(v, node, k)
    return out


def _source(node: torch.fx.Node, root: Path):
    """The last user frame of the node's stack trace: frames inside torch itself are skipped, and a
    file inside ``root`` is written relative to it (with ``/``)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    for file, line in reversed(_FRAME.findall(trace)):
        shown = _shown_file(file, root)
        if shown is not None:
            return {"file": shown, "line": int(line)}
    return None


@functools.lru_cache(maxsize=4096)
def _shown_file(file: str, root: Path):
    """``file`` as a trace names it (relative to ``root`` when inside it), or None for a frame
    of torch itself or a pseudo-file (``<string>``). Memoized: a graph's hundreds of nodes come
    from a few files, and resolving a path costs file-system calls (BERT-base: 0.5 s of its
    warm start was spent here, node by node)."""
    if file.startswith("<"):
        return None
    path = Path(file).resolve()
    if path.is_relative_to(_TORCH_DIR):
        return None
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return file


# Higher-order ops a trace holds, with their subgraphs (``{"graph": name}`` arguments).
_CONTROL_FLOW = {"cond", "while_loop"}


def _target(node: torch.fx.Node) -> str:
    if node.target is operator.getitem:
        return "getitem"
    if isinstance(node.target, _compat.OpOverload):
        return str(node.target)  # e.g. "aten.addmm.default"
    if isinstance(node.target, _compat.HigherOrderOperator) and node.target.name() in _CONTROL_FLOW:
        return f"higher_order.{node.target.name()}"
    raise ExportError(f"node {node.name} calls {node.target!r}, which is not an ATen operator")


def _subgraph_module(node: torch.fx.Node):
    """The GraphModule a ``get_attr`` node fetches (a control-flow branch or body), or None."""
    if node.op != "get_attr":
        return None
    value = operator.attrgetter(node.target)(node.graph.owning_module)
    return value if isinstance(value, torch.fx.GraphModule) else None


def _subgraphs(gm: torch.fx.GraphModule, prefix: str, root: Path, out: list) -> None:
    """Appends to ``out`` the subgraph of every ``get_attr`` of a GraphModule in ``gm`` (nested
    ones too), each named ``prefix + target`` and marked on its node (``meta["fxhlo_subgraph"]``)
    for the arguments that refer to it."""
    for node in gm.graph.nodes:
        sub = _subgraph_module(node)
        if sub is None:
            continue
        name = prefix + node.target
        node.meta["fxhlo_subgraph"] = name
        _subgraphs(sub, name + "/", root, out)
        inputs, nodes, outputs = [], [], []
        producers = {}
        for n in sub.graph.nodes:
            if n.op == "placeholder":
                inputs.append({"name": n.name, "kind": "user_input", "meta": _meta(n.meta["val"], f"input {n.name} of subgraph {name}")})
            elif n.op == "call_function":
                nodes.append(_node_entry(n, producers, root))
            elif n.op == "output":
                outs = n.args[0] if isinstance(n.args[0], (tuple, list)) else (n.args[0],)
                outputs.extend(_arg(o, n, i) for i, o in enumerate(outs))
            elif _subgraph_module(n) is None:
                raise ExportError(f"subgraph {name}: FX node {n.name} ({n.op}) cannot be traced: a control-flow "
                                  "branch or body takes tensors only as its operands")
        out.append({"name": name, "inputs": inputs, "nodes": nodes, "outputs": outputs})


# Ops tagged nondeterministic_seeded that are deterministic with these arguments (dropout
# probability 0 or not training): name of the probability argument, name of the train flag.
_DROPOUT_ARGS = {
    "native_dropout": ("p", "train"),
    "dropout": ("p", "train"),
    "feature_dropout": ("p", "train"),
    "alpha_dropout": ("p", "train"),
    "lstm": ("dropout", "train"),
    "gru": ("dropout", "train"),
    "rnn_tanh": ("dropout", "train"),
    "rnn_relu": ("dropout", "train"),
}


def _check_random(node: torch.fx.Node) -> None:
    """Refuses random ops: a trace must compute the same values as its stored reference."""
    op = node.target
    if not isinstance(op, _compat.OpOverload) or torch.Tag.nondeterministic_seeded not in op.tags:
        return
    names = [a.name for a in _compat.schema(op).arguments]
    bound = dict(zip(names, node.args))
    bound.update(node.kwargs)
    defaults = {a.name: a.default_value for a in _compat.schema(op).arguments if a.has_default_value()}
    get = lambda k: bound.get(k, defaults.get(k))  # noqa: E731
    name = _compat.schema(op).name.split("::")[-1]
    if "dropout_p" in names and get("dropout_p") == 0:
        return  # fused attention without dropout
    if name in _DROPOUT_ARGS:
        p, train = _DROPOUT_ARGS[name]
        if get(train) is False or get(p) == 0:
            return
    raise ExportError(
        f"node {node.name} calls {op}, a random op: a trace must be deterministic "
        "(export in eval mode, and do not draw random numbers in forward)"
    )


def _describe_input(node: torch.fx.Node, inp: CapturedInput) -> str:
    where = f"placeholder {node.name}" + (f", {inp.source}" if inp.source else "")
    if inp.kind == "user_input":
        return f"user input {inp.user_index} ({where})"
    if inp.key is not None:
        return f"{inp.kind} {inp.key} ({where})"
    return f"input {node.name}" + (f" ({inp.source})" if inp.source else "")


def _unread_result(node: torch.fx.Node, index: int, val) -> bool:
    """Whether result ``index`` of a multi-result node is one a trace writes as ``null``: not a
    tensor (``None``, or the ints a fused attention kernel returns beside its tensors), or a
    tensor of a dtype fxhlo has no type for that no ``getitem`` reads (flash attention's
    ``uint64`` RNG state)."""
    if not isinstance(val, torch.Tensor):
        return True
    if val.dtype in _DTYPES:
        return False
    return not any(u.target is operator.getitem and u.args[1] == index for u in node.users)


def _result_metas(node: torch.fx.Node, producers: dict) -> list:
    """One meta per result. A multi-result op keeps every position; a result that is not a
    tensor (some ops return None for outputs they do not compute, the fused attention kernels
    ints) or that nothing reads and fxhlo cannot type has the meta ``None`` (``null``)."""
    what = _describe_node(node)
    if node.target is operator.getitem:
        producer, index = node.args
        vals = producers.get(producer.name)
        if vals is not None and not isinstance(vals[index], torch.Tensor):
            found = "None" if vals[index] is None else f"not a tensor ({type(vals[index]).__name__})"
            raise ExportError(f"{what} selects result {index} of {producer.name}, which is {found}")
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        if all(not isinstance(v, torch.Tensor) for v in val):
            raise ExportError(f"{what} returns no tensor")
        producers[node.name] = list(val)
        return [None if _unread_result(node, i, v) else _meta(v, f"{what} result {i}") for i, v in enumerate(val)]
    if val is None:
        raise ExportError(f"{what} returns no tensor (ops run only for side effects cannot be traced)")
    return [_meta(val, what)]


def node_spec(node: torch.fx.Node, producers: dict) -> dict:
    """The trace entry of a call_function node (without its source line), or ExportError when
    the trace cannot hold it (a random op, a target that is not ATen, an argument or result of
    a kind traces do not have). ``producers`` maps the names of multi-result nodes seen so far
    to their results (filled in here). fallback="eager" asks it of one node at a time."""
    _check_random(node)
    return {
        "name": node.name,
        "target": _target(node),
        "args": [_arg(a, node, i) for i, a in enumerate(node.args)],
        "kwargs": _kwargs(node),
        "meta": _result_metas(node, producers),
    }


def _node_entry(node: torch.fx.Node, producers: dict, root: Path) -> dict:
    """:func:`node_spec` with the node's source line (relative to ``root``) when it has one."""
    spec = node_spec(node, producers)
    src = _source(node, root)
    if src:
        spec["source"] = src
    return spec


def trace_dict(cap: Capture, name: str, root: Path, collect_weights: bool = True):
    """Returns ``(trace, weights)``: the graph.json content and the tensors of
    weights.safetensors by key (an empty dict without ``collect_weights``: the backend passes
    weights at run time and needs no copy)."""
    gm = cap.gm
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(cap.inputs):
        raise ExportError(f"{len(placeholders)} placeholders but {len(cap.inputs)} captured inputs")
    # Symbolic sizes first, so that the error names the tensor input and not the size variable.
    for node, inp in zip(placeholders, cap.inputs):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            _check_static(val, _describe_input(node, inp))
    inputs, nodes, outputs, weights = [], [], [], {}

    owners = {}  # weights key -> (tensor, description) of the first input that uses it

    def add_weight(key, tensor, what):
        # One tensor under two placeholders (Dynamo and AOT Autograd normally pass it once) is
        # one weight; two different tensors under one key would load the same values into both.
        if key in owners:
            first, first_what = owners[key]
            if first is tensor:
                return
            raise ExportError(f"{what}: weights key {key} also names {first_what}, a different tensor "
                              "(two inputs cannot share one key)")
        owners[key] = (tensor, what)
        if collect_weights:
            weights[key] = tensor.detach().clone(memory_format=torch.contiguous_format)

    for node, inp in zip(placeholders, cap.inputs):
        what = _describe_input(node, inp)
        if inp.kind == "symbolic":
            raise ExportError(f"{what} is the symbolic value {inp.value!r}: fxhlo specializes shapes")
        spec = {"name": node.name, "kind": inp.kind, "meta": _meta(node.meta["val"], what)}
        if inp.kind != "user_input":
            spec["weight"] = inp.key if inp.key is not None else CONSTANT_PREFIX + node.name
            add_weight(spec["weight"], inp.value, what)
        inputs.append(spec)
    subgraphs = []
    _subgraphs(gm, "", root, subgraphs)
    producers = {}
    for node in gm.graph.nodes:
        if node.op == "call_function":
            nodes.append(_node_entry(node, producers, root))
        elif node.op == "get_attr" and "fxhlo_subgraph" in node.meta:
            continue  # written among the subgraphs
        elif node.op == "get_attr":
            # A tensor constant created in forward (torch.tensor(...)), lifted into the graph
            # module: it becomes a constant input after the placeholders.
            value = operator.attrgetter(node.target)(gm)
            if not isinstance(value, torch.Tensor):
                raise ExportError(f"get_attr node {node.name} holds a {type(value).__name__}, not a tensor")
            what = f"constant {node.name}"
            spec = {"name": node.name, "kind": "constant", "meta": _meta(value, what),
                    "weight": CONSTANT_PREFIX + node.name}
            add_weight(spec["weight"], value, what)
            inputs.append(spec)
        elif node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            for i, o in enumerate(outs):
                if not isinstance(o, torch.fx.Node):
                    raise ExportError(f"graph output {i} is {o!r}, not a tensor")
                outputs.append(_arg(o, node, i))
        elif node.op != "placeholder":
            raise ExportError(f"FX node {node.name} has op {node.op}, which traces cannot hold")
    if cap.outputs is not None and len(outputs) != len(cap.outputs):
        opaque = sorted({type(o).__name__ for o in cap.outputs if not isinstance(o, torch.Tensor)})
        if opaque:
            # An object pytree cannot flatten (transformers' DynamicCache): Dynamo returns its
            # tensors as more graph outputs, which no output of the trace can name.
            raise ExportError(
                f"the model returns {', '.join(opaque)}, which is not a tensor, tuple, list or dict: Dynamo "
                f"returns the tensors inside it as separate graph values ({len(outputs)} for the model's "
                f"{len(cap.outputs)} outputs), which a trace cannot name. Export a wrapper that returns only "
                "tensors (for a Hugging Face model: call it with use_cache=False, or return "
                "out.last_hidden_state)"
            )
        raise ExportError(
            f"the graph returns {len(outputs)} values for the model's {len(cap.outputs)} outputs: the "
            "model mutates an input or buffer (e.g. batch norm in training mode), which traces cannot express"
        )
    trace = {
        "format": FORMAT,
        "version": SCHEMA_VERSION,
        "name": name,
        "decomposition_table": DECOMPOSITION_TABLE,
        "inputs": inputs,
        "nodes": nodes,
        "outputs": outputs,
    }
    if subgraphs:
        trace["subgraphs"] = subgraphs
    return trace, weights


# ---- writing --------------------------------------------------------------------------------


def _scalar(v) -> str:
    return json.dumps(v, allow_nan=False)


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _emit(v, level: int) -> str:
    if isinstance(v, dict):
        if not v:
            return "{}"
        pad = " " * (level + 1)
        body = ",\n".join(f"{pad}{_scalar(k)}: {_emit(x, level + 1)}" for k, x in v.items())
        return "{\n" + body + "\n" + " " * level + "}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        if all(_is_scalar(x) for x in v):
            return "[" + ", ".join(_scalar(x) for x in v) + "]"
        pad = " " * (level + 1)
        body = ",\n".join(pad + _emit(x, level + 1) for x in v)
        return "[\n" + body + "\n" + " " * level + "]"
    return _scalar(v)


def to_json(trace: dict) -> str:
    """JSON indented by one space, with lists of scalars kept on one line for people reading the
    trace. Never writes ``NaN`` or ``Infinity`` (not JSON): non-finite floats are strings."""
    return _emit(trace, 0) + "\n"


def _float64_reference(model: torch.nn.Module, example_args, out: list) -> dict:
    """``float64.output.<i>`` -> the float64 eager value of each floating output ``out[i]``."""
    import copy

    def widen(v):
        return v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v

    try:
        model64 = copy.deepcopy(model).double()
        with torch.no_grad():
            out64 = _compat.pytree.tree_leaves(model64(*_compat.pytree.tree_map(widen, example_args)))
    except Exception as e:  # noqa: BLE001 - any failure of the model in float64 is the user's to see
        raise ExportError(f"reference_f64: the model does not run in float64: {type(e).__name__}: {e}") from e
    if len(out64) != len(out):
        raise ExportError(f"reference_f64: the float64 model returns {len(out64)} values, the model {len(out)}")
    return {f"float64.output.{i}": o64.detach().double().contiguous()
            for i, (o, o64) in enumerate(zip(out, out64)) if o.is_floating_point()}


_TMP_COUNTER = itertools.count()  # temporary file names of one process never collide


def _write_atomic(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temporary file in the same folder, renamed over
    ``path``: a concurrent reader (``fxhlo run``, another process) sees the old file or the
    new one, never a partial one. The Rust side does the same (``frontend/src/atomic.rs``)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_TMP_COUNTER)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def export(model: torch.nn.Module, example_args, path, reference: bool = True, name=None,
           source_root=None, reference_f64: bool = False) -> Path:
    """Captures ``model`` (put in eval mode) on ``example_args`` and writes the bundle folder ``path``.

    With ``reference=True`` the inputs and the eager outputs are stored beside the graph.
    ``reference_f64=True`` also stores a float64 eager run (a copy of the model and its floating
    inputs in float64) as ``float64.output.<i>`` for every floating output: ``fxhlo run --check``
    then judges a floating output by how far it is from the float64 run compared with how far
    eager is (the rule of PyTorch's accuracy checker for compiled models).
    Source locations are written relative to ``source_root`` (default: the working directory)
    when they lie inside it.
    """
    from safetensors.torch import save

    if isinstance(example_args, torch.Tensor):
        example_args = (example_args,)
    example_args = tuple(example_args)
    path = Path(path)
    root = Path(source_root if source_root is not None else Path.cwd()).resolve()
    model = model.eval()
    cap = capture(model, example_args)
    trace, weights = trace_dict(cap, name or path.stem, root)

    ref = None
    if reference:
        with torch.no_grad():
            out = _compat.pytree.tree_leaves(model(*example_args))
        if len(out) != len(trace["outputs"]) or not all(isinstance(o, torch.Tensor) for o in out):
            kinds = [type(o).__name__ for o in out]
            raise ExportError(f"the model returns {kinds}; the graph returns {len(trace['outputs'])} tensors")
        ref = {}
        for spec, inp in zip(trace["inputs"], cap.inputs):
            if inp.kind == "user_input":
                ref[f"input.{spec['name']}"] = inp.value.detach().clone(memory_format=torch.contiguous_format)
        for i, o in enumerate(out):
            ref[f"output.{i}"] = o.detach().clone(memory_format=torch.contiguous_format)
        if reference_f64:
            ref.update(_float64_reference(model, example_args, out))

    path.mkdir(parents=True, exist_ok=True)
    _write_atomic(path / GRAPH_JSON, to_json(trace).encode())
    _write_atomic(path / WEIGHTS, save(weights))
    stale = list(_DERIVED)
    if ref is not None:
        _write_atomic(path / REFERENCE, save(ref))
    else:
        stale.append(REFERENCE)
    for f in stale:
        (path / f).unlink(missing_ok=True)
    return path

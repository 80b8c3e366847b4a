"""Diffusion UNets (diffusers) through `torch.compile(backend="fxhlo")`, compared with eager, and
the naming of graph inputs they exposed: Dynamo reaches their submodules through `__dict__`,
`getattr`, `ModuleList`s and plain lists, and every weight must still get its own fully
qualified name (a parameter of `down_blocks.0` and one of `up_blocks.0` once shared a key)."""

import json

import pytest
import torch
from torch import nn

import fxhlo
from fxhlo.graph_capture import classify
from fxhlo.export import Capture, CapturedInput, trace_dict

import diffusers  # installed by scripts/setup.sh: a missing one fails the tests, never skips them
from conftest import compile_


def assert_close(got, want, what, atol=1e-4, rtol=1e-4):
    err = (got.double() - want.double()).abs().max().item()
    print(f"{what}: max abs error {err:.3g} (output magnitude {want.abs().max().item():.3g})")
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol)


def classified(fn, *args, **kwargs):
    """The CapturedInputs fxhlo's backend makes of Dynamo's graph of `fn(*args, **kwargs)`
    (Dynamo and the classification only: nothing is compiled)."""
    seen = []

    def backend(gm, example_inputs):
        seen.append(classify(gm, example_inputs))
        return gm.forward

    with torch.no_grad():
        torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)(*args, **kwargs)
    (inputs,) = seen
    return inputs


def resolve(root, key):
    """The object at the dotted path `key` below `root` (attributes, list indices, dict keys)."""
    obj = root
    for step in key.split("."):
        if isinstance(obj, (list, tuple)):
            obj = obj[int(step)]
        elif isinstance(obj, dict):
            obj = obj[step]
        else:
            obj = getattr(obj, step)
    return obj


# ---- the UNets ------------------------------------------------------------------------------


def unet2d():
    torch.manual_seed(0)
    model = diffusers.UNet2DModel(
        sample_size=32, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
        norm_num_groups=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    ).eval()
    return model, (torch.randn(1, 3, 32, 32), torch.tensor([10])), {}


def unet2d_condition():
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(
        sample_size=16, block_out_channels=(32, 64), layers_per_block=1, cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    ).eval()
    return model, (torch.randn(1, 4, 16, 16), torch.tensor([10])), {"encoder_hidden_states": torch.randn(1, 4, 32)}


@pytest.mark.slow
@pytest.mark.parametrize("build", [unet2d, unet2d_condition])
def test_unet_matches_eager(build, tmp_path):
    model, args, kwargs = build()
    with torch.no_grad():
        want = model(*args, **kwargs).sample
        got = compile_(model, dump=str(tmp_path))(*args, **kwargs).sample
    assert_close(got, want, build.__name__)
    # Every parameter is a weight under its own name, the model's own: the keys the exporter
    # writes, the same in any process.
    (folder,) = tmp_path.iterdir()
    trace = json.loads((folder / "00-trace.json").read_text())
    params = sorted(spec["weight"] for spec in trace["inputs"] if spec["kind"] == "parameter")
    assert params == sorted(name for name, _ in model.named_parameters())
    assert [spec["kind"] for spec in trace["inputs"]].count("user_input") == len(args) + len(kwargs)


# ---- naming graph inputs --------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.register_buffer("shift", torch.randn(n))
        self.scale = torch.randn(n)  # a plain tensor attribute: a constant

    def forward(self, x):
        return self.lin(x) * self.scale + self.shift


OFFSET = torch.randn(4)


class Paths(nn.Module):
    """Submodules that Dynamo reaches by every route it has."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first = Block()
        self.stack = nn.ModuleList([Block(), Block()])
        self.named = nn.ModuleDict({"p": Block(), "q": Block()})
        self.plain = [Block(), Block()]  # a Python list: not registered, not in named_parameters
        self.last = Block()

    def forward(self, x, *args, **kwargs):
        x = self.__dict__["_modules"]["first"](x)
        for block in self.stack:
            x = block(x)
        for _, block in self.named.items():
            x = block(x)
        for block in self.plain:
            x = block(x)
        x = getattr(self, "last")(x)
        return x + args[0] * kwargs["gain"] + OFFSET


def test_keys_name_each_tensor_by_its_path_whatever_route_dynamo_takes():
    model = Paths().eval()
    x, extra, gain = torch.randn(2, 4), torch.randn(4), torch.randn(4)
    inputs = classified(model, x, extra, gain=gain)
    weights = [i for i in inputs if i.kind != "user_input"]
    for i in weights:
        target = OFFSET if i.key == "OFFSET" else resolve(model, i.key)
        assert i.value is target, f"key {i.key} names another tensor"
    assert len({i.key for i in weights}) == len(weights)
    kinds = {i.key: i.kind for i in weights}
    registered = {n: "parameter" for n, _ in model.named_parameters()} | {n: "buffer" for n, _ in model.named_buffers()}
    plain = {f"plain.{k}.lin.{p}": "parameter" for k in "01" for p in ("weight", "bias")} | {
        f"plain.{k}.shift": "buffer" for k in "01"}
    constants = {f"{m}.scale": "constant" for m in ("first", "stack.0", "stack.1", "named.p", "named.q",
                                                    "plain.0", "plain.1", "last")}
    assert kinds == registered | plain | constants | {"OFFSET": "constant"}
    # The call's tensors, reached as L['x'], L['args'][0] and L['kwargs']['gain'], stay inputs.
    users = [i for i in inputs if i.kind == "user_input"]
    assert sorted(i.user_index for i in users) == [0, 1, 2]
    assert {id(i.value) for i in users} == {id(x), id(extra), id(gain)}
    # Dynamo's source names are kept for messages.
    assert any(i.source == "L['args'][0]" for i in users)

    with torch.no_grad():
        want = model(x, extra, gain=gain)
        got = compile_(model)(x, extra, gain=gain)
    assert_close(got, want, "paths", atol=1e-5, rtol=1e-5)


def test_keys_of_a_function_of_two_models_start_with_their_argument_names():
    a, b = Block().eval(), Block().eval()
    inputs = classified(lambda m1, m2, x: m1(x) + m2(x), a, b, torch.randn(2, 4))
    keys = sorted(i.key for i in inputs if i.kind != "user_input")
    assert keys == sorted(f"{m}.{k}" for m in ("m1", "m2") for k in ("lin.weight", "lin.bias", "shift", "scale"))


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied: one tensor, two names

    def forward(self, ids):
        return self.head(self.embed(ids))


def test_tied_weights_are_one_input_under_the_first_name(tmp_path):
    model, ids = Tied().eval(), torch.tensor([[1, 2, 3]])
    inputs = classified(model, ids)
    assert [(i.kind, i.key) for i in inputs if i.kind != "user_input"] == [("parameter", "embed.weight")]
    with torch.no_grad():
        assert_close(compile_(model)(ids), model(ids), "tied weights", atol=1e-5, rtol=1e-5)
    bundle = fxhlo.export(model, (ids,), tmp_path / "tied.fxt")
    trace = json.loads((bundle / "graph.json").read_text())
    assert [s["weight"] for s in trace["inputs"] if s["kind"] == "parameter"] == ["embed.weight"]


def _two_weights_graph(w1, w2):
    """A hand-built graph x * w1 + w2 whose two weights are bound to one key."""
    x = torch.randn(4)
    graph = torch.fx.Graph()
    nodes = []
    for name, val in (("x", x), ("w1", w1), ("w2", w2)):
        p = graph.placeholder(name)
        p.meta["val"] = val
        nodes.append(p)
    mul = graph.call_function(torch.ops.aten.mul.Tensor, (nodes[0], nodes[1]))
    mul.meta["val"] = x * w1
    add = graph.call_function(torch.ops.aten.add.Tensor, (mul, nodes[2]))
    add.meta["val"] = x * w1 + w2
    graph.output((add,))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    inputs = [CapturedInput("user_input", None, x, 0), CapturedInput("parameter", "w", w1, None, "first"),
              CapturedInput("parameter", "w", w2, None, "second")]
    return Capture(gm, inputs, None)


def test_one_key_for_one_tensor_is_one_weight_for_two_a_clear_error(tmp_path):
    w = torch.randn(4)
    trace, weights = trace_dict(_two_weights_graph(w, w), "same", tmp_path)
    assert [s.get("weight") for s in trace["inputs"]] == [None, "w", "w"] and list(weights) == ["w"]
    with pytest.raises(fxhlo.ExportError, match=r"parameter w \(placeholder w2, second\): weights key w also "
                                                r"names parameter w \(placeholder w1, first\), a different tensor"):
        trace_dict(_two_weights_graph(w, torch.randn(4)), "different", tmp_path)


table = torch.randn(4)


class SameName(nn.Module):
    """A tensor attribute and a global of one name: both are keyed `table`."""

    def __init__(self):
        super().__init__()
        self.table = torch.randn(4)

    def forward(self, x):
        return x * self.table + table


def test_two_tensors_under_one_key_through_the_backend_is_a_clear_error():
    # Dynamo wraps the backend's error in its own (BackendCompilerFailed).
    with pytest.raises(Exception, match=r"CompileError: .*constant table \(placeholder \w+, G\['table'\]\): weights "
                                        r"key table also names constant table \(placeholder \w+, L\['self'\]\.table\), "
                                        r"a different tensor"):
        with torch.no_grad():
            compile_(SameName())(torch.randn(4))

"""The torch.compile backend: `torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)`
on the model fixtures and the larger standard graphs, compared with eager; PyTorch's calling
conventions; every option; resident weights; errors."""

import importlib
import json
import threading
import warnings

import pytest
import torch
from torch import nn

import fxhlo
from fxhlo.models import MODELS

from conftest import NAMES, ROOT, BufferCounter, compile_, gen_fixtures, without_defaults, raises_options_error


def tolerance(dtype):
    return (1e-2, 1e-2) if dtype in (torch.float16, torch.bfloat16) else (1e-5, 1e-5)


def assert_matches(got, want, what):
    """Leaves of `got` and `want` (nested the same way) agree; prints the largest error."""
    got_leaves, got_spec = torch.utils._pytree.tree_flatten(got)
    want_leaves, want_spec = torch.utils._pytree.tree_flatten(want)
    assert got_spec == want_spec, f"{what}: structure {got_spec} vs eager {want_spec}"
    worst = 0.0
    for g, w in zip(got_leaves, want_leaves):
        if not isinstance(w, torch.Tensor):
            assert g == w, f"{what}: {g!r} vs eager {w!r}"
            continue
        assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g} vs {w}"
        if g.numel():
            worst = max(worst, (g.double() - w.double()).abs().max().item())
        atol, rtol = tolerance(w.dtype)
        torch.testing.assert_close(g, w, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")
    print(f"{what}: max abs error {worst:.3g}")


def last_graph():
    graphs = fxhlo.compiled_graphs()
    assert graphs, "no graph was compiled by fxhlo"
    return graphs[-1]


# ---- models ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_fixture_model_matches_eager(name):
    model, args = gen_fixtures.build(name)
    with torch.no_grad():
        want = model(*args)
        got = compile_(model)(*args)
    assert_matches(got, want, name)


# Batch 1; ResNet-18 at 224x224 (the sizes the benchmark uses are in bench_backend.py).
STANDARD = {"resnet18": {"size": 224}, "bert": {}, "gpt2": {}, "unet": {}}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STANDARD))
def test_standard_model_matches_eager(name):
    model, args = MODELS[name](**STANDARD[name])
    with torch.no_grad():
        want = model(*args)
        compiled = compile_(model)
        got = compiled(*args)
        again = compiled(*args)
    assert_matches(got, want, name)
    assert_matches(again, want, f"{name} (second call)")


def test_same_trace_and_executable_as_the_exporter(tmp_path):
    """A graph compiled through torch.compile and the same model exported to a bundle are the
    same trace, and lower to the same StableHLO."""
    model, args = gen_fixtures.build("cnn")
    with torch.no_grad():
        compile_(model, dump=str(tmp_path / "dump"))(*args)
    (folder,) = (tmp_path / "dump").iterdir()
    dumped = json.loads((folder / "00-trace.json").read_text())
    bundle = fxhlo.export(model, args, tmp_path / "cnn.fxt", name=dumped["name"], source_root=ROOT)
    exported = json.loads((bundle / "graph.json").read_text())
    assert without_defaults(dumped) == without_defaults(exported)
    from fxhlo import _native
    exe = _native.compile((bundle / "graph.json").read_bytes(), str(bundle), '{"device": "cpu"}', None)
    (module,) = folder.glob("*-stablehlo.mlir")
    assert exe.mlir == module.read_text()


# ---- calling conventions --------------------------------------------------------------------


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(6, 4)


def test_none_and_nested_outputs():
    class M(Linear):
        def forward(self, x):
            y = self.fc(x)
            return {"pair": (y.relu(), None), "list": [y.sum(0), {"deep": y * 2}], "n": 3}

    m, x = M(), torch.randn(5, 6)
    with torch.no_grad():
        assert_matches(compile_(m)(x), m(x), "nested outputs")


def test_outputs_that_alias_each_other():
    class M(Linear):
        def forward(self, x):
            y = self.fc(x) + 1
            return y, y.view(-1), y.t(), y[1:, ::2]

    m, x = M(), torch.randn(5, 6)
    with torch.no_grad():
        got, want = compile_(m)(x), m(x)
    assert_matches(got, want, "aliasing outputs")
    # The views see their base, as in eager: a write through one shows in the others.
    got[0][0, 0] = 100.0
    assert got[1][0].item() == 100.0 and got[2][0, 0].item() == 100.0
    assert got[2].stride() == want[2].stride()


def test_input_passed_through_is_the_input_itself():
    def f(x, y):
        return x, y * 2, x.view(-1)

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    got = compile_(f)(x, y)
    assert got[0] is x, "an output that is an input must be that input, not a copy"
    assert got[2].data_ptr() == x.data_ptr(), "a view of an input must alias the input"
    assert_matches(got, f(x, y), "pass-through")


def test_input_mutation_is_copied_back():
    def f(x, y):
        x.add_(y)
        y.mul_(2)
        return (x * y).sum()

    x, y = torch.randn(4, 3), torch.randn(4, 3)
    xe, ye = x.clone(), y.clone()
    want = f(xe, ye)
    got = compile_(f)(x, y)
    assert_matches(got, want, "mutation result")
    assert_matches((x, y), (xe, ye), "mutated inputs")


def test_buffer_mutation_is_seen_by_the_next_call():
    m, e = BufferCounter(), BufferCounter()
    c = compile_(m)
    for i in range(3):
        x = torch.full((3,), float(i + 1))
        assert_matches(c(x), e(x), f"call {i}")
    assert_matches(m.total, e.total, "buffer after 3 calls")
    # The buffer changed on every call (copy back bumps its version): given to the device every
    # call (shared: a view of the buffer's storage on the CPU plugin).
    stats = last_graph().executable.stats()
    assert given(stats, "weight") == 3, stats


@pytest.mark.parametrize("make", [
    pytest.param(lambda: torch.randn(6, 5).t(), id="transposed"),
    pytest.param(lambda: torch.randn(5, 12)[:, ::2], id="strided"),
    pytest.param(lambda: torch.randn(7, 6)[2:], id="storage_offset"),
    pytest.param(lambda: torch.randn(1, 6).expand(5, 6), id="expanded"),
    pytest.param(lambda: torch.randn(2, 3, 5, 6).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)[1, 2], id="channels_last_slice"),
])
def test_non_contiguous_inputs(make):
    m = Linear()
    with torch.no_grad():
        x = make()
        assert not x.is_contiguous() or x.storage_offset() > 0
        assert_matches(compile_(m.fc)(x), m.fc(x), "non-contiguous input")


def test_python_scalars():
    def f(x, k: float, n: int, flag: bool):
        return x * k + n if flag else x - n

    x = torch.randn(4)
    c = compile_(f)
    for args in [(2.5, 3, True), (2.5, 3, True), (-1.25, 7, True), (2.5, 3, False)]:
        assert_matches(c(x, *args), f(x, *args), f"scalars {args}")


def test_dropout_compiles_in_training_and_is_the_identity_in_eval():
    # Random ops compile (python/tests/test_random.py checks their distributions).
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    x = torch.randn(200, 4)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", fxhlo.FallbackWarning)
        out = compile_(m, fallback="eager")(x)
        dense = m[0](x)
    kept = out != 0
    print(f"dropout(0.5) in training kept {kept.float().mean():.3f} of the outputs")
    assert 0.4 < kept.float().mean().item() < 0.6
    torch.testing.assert_close(out[kept], dense[kept] * 2)
    m.eval()
    torch._dynamo.reset()
    with torch.no_grad():
        assert_matches(compile_(m)(x), m(x), "dropout in eval mode")


def test_outputs_are_ordinary_tensors_with_their_own_memory():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        c = compile_(m.fc)
        a, b = c(x), c(x)
    assert type(a) is torch.Tensor and a.device.type == "cpu" and a.is_contiguous()
    assert a.data_ptr() != b.data_ptr()
    a.add_(1)  # writable, and not shared with the next result
    assert not torch.equal(a, b)


def test_runs_from_another_thread():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        c = compile_(m.fc)
        want = c(x)
    result = {}

    def work():
        with torch.no_grad():
            result["out"] = c(x)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert_matches(result["out"], want, "other thread")


def test_with_autograd_enabled_the_backward_runs_eagerly():
    m = Linear()
    x = torch.randn(3, 6)
    out = compile_(m.fc)(x)
    assert out.requires_grad
    out.square().sum().backward()
    got = m.fc.weight.grad.clone()
    m.fc.weight.grad = None
    m.fc(x).square().sum().backward()
    assert_matches(got, m.fc.weight.grad, "weight gradient")


# ---- resident weights -----------------------------------------------------------------------


def given(stats: dict, what: str) -> int:
    """How many ``what`` (``"weight"`` or ``"input"``) tensors the calls so far gave the device:
    uploaded (copied), or shared (the device buffer a view of the tensor's memory)."""
    return stats[f"{what}_uploads"] + stats[f"{what}_shares"]


def test_unchanged_weights_are_uploaded_once_and_updates_are_seen():
    m = Linear()
    x = torch.randn(3, 6)
    with torch.no_grad():
        run = compile_(m.fc)
        for _ in range(5):
            assert_matches(run(x), m.fc(x), "unchanged weights")
        stats = last_graph().executable.stats()
        assert stats["calls"] == 5 and given(stats, "weight") == 2 and given(stats, "input") == 5, stats
        m.fc.weight.mul_(-3.0)  # in place: same tensor object, version counter bumped
        assert_matches(run(x), m.fc(x), "after an in-place update")
        assert given(last_graph().executable.stats(), "weight") == 3
        m.fc.bias.copy_(torch.ones(4))
        assert_matches(run(x), m.fc(x), "after a copy_ into the bias")
        assert given(last_graph().executable.stats(), "weight") == 4
        run(x)
        assert given(last_graph().executable.stats(), "weight") == 4


def test_weights_under_inference_mode_have_no_version_and_are_uploaded_each_call():
    with torch.inference_mode():
        m = Linear()
        x = torch.randn(3, 6)
        run = compile_(m.fc)
        run(x)
        run(x)
        assert_matches(run(x), m.fc(x), "inference mode")
    assert given(last_graph().executable.stats(), "weight") == 6


# ---- options --------------------------------------------------------------------------------


def test_unknown_option_raises_at_the_first_call_listing_the_valid_ones():
    # torch.compile itself checks nothing: the hook Dynamo calls when it resolves a backend gets
    # no arguments, so the options are checked where the backend is handed them, at its first
    # call, before anything is captured.
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", options={"devcie": "cpu"})
    message = str(raises_options_error(compiled, torch.randn(1, 2), match="devcie"))
    assert all(k in message for k in fxhlo.OPTIONS), message


@pytest.mark.parametrize("options, needle", [
    ({"device": "gpu"}, "valid devices are cpu, cuda, tpu"),
    ({"fallback": "warn"}, "'error', 'eager'"),
    ({"freeze": "yes"}, "True or False"),
    ({"dump": 3}, "folder path"),
    ({"dump": "import,dse"}, "unknown stage `dse`"),
    ({"dump": "all", "dump_dir": 3}, "dump_dir"),
])
def test_bad_option_values(options, needle):
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", options=options)
    raises_options_error(compiled, torch.randn(1, 2), match=needle)


def test_refused_options_raise_on_every_call():
    # Nothing is compiled (or cached) for a region whose options are refused.
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", options={"freeze": "yes"})
    for _ in range(2):
        raises_options_error(compiled, torch.randn(1, 2), match="True or False")


def test_dynamic_true_is_refused():
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", dynamic=True)
    raises_options_error(compiled, torch.randn(1, 2), match="dynamic=False")


def test_automatic_dynamic_shapes_are_refused_when_called():
    f = torch.compile(lambda x: x + 1, backend="fxhlo", fullgraph=True)  # dynamic not given
    f(torch.ones(3))
    with pytest.raises(Exception, match="dynamic=False"):
        f(torch.ones(5))


def test_mode_is_refused():
    compiled = torch.compile(nn.Linear(2, 2), backend="fxhlo", mode="max-autotune")
    raises_options_error(compiled, torch.randn(1, 2), match="mode")


def test_device_cpu():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        assert_matches(compile_(m.fc, device="cpu")(x), m.fc(x), "device=cpu")
    assert last_graph().executable.device == "cpu"


def test_device_tpu_on_a_machine_without_one():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad(), pytest.raises(Exception) as info:
        compile_(m.fc, device="tpu")(x)
    message = str(info.value)
    assert "DeviceError" in message and "TPU" in message, message


def test_a_missing_device_raises_even_with_fallback_eager():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad(), pytest.raises(Exception, match="DeviceError"):
        compile_(m.fc, device="tpu", fallback="eager")(x)


def test_native_compile_names_an_unknown_option():
    from fxhlo import _native

    trace = (ROOT / "testsuite" / "fixtures" / "mlp.fxt" / "graph.json").read_bytes()
    with pytest.raises(ValueError, match="unknown field `devise`"):
        _native.compile(trace, "<mlp>", '{"devise": "cpu"}')


def test_dump_writes_every_stage(tmp_path):
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        compile_(m.fc, dump=str(tmp_path))(x)
    (folder,) = tmp_path.iterdir()
    # The .svg files need Graphviz; XLA's folder is there when XLA compiled (a cache miss).
    files = sorted(p.name for p in folder.iterdir() if p.suffix != ".svg" and not p.name.endswith("-xla"))
    # device-layout lays the linear weight out for the CPU kernels: the one pass that changes it.
    assert files == ["00-trace.json", "01-import.dot", "01-import.gir", "02-after-device-layout.dot",
                     "02-after-device-layout.gir", "03-stablehlo.mlir", "cache-key.json", "report.json",
                     "report.txt"], files
    key = json.loads((folder / "cache-key.json").read_text())
    assert key["inputs"] == ["parameter f32[4,6]", "parameter f32[4]", "user_input f32[3,6]"], key
    assert len(key["digest"]) == 64 and key["options"].startswith("device=cpu"), key
    assert folder.name == f"{json.loads((folder / '00-trace.json').read_text())['name']}-{key['digest'][:8]}"
    trace = json.loads((folder / "00-trace.json").read_text())
    assert [n["target"] for n in trace["nodes"]] == ["aten.permute.default", "aten.addmm.default"]
    assert "aten.addmm" in (folder / "01-import.gir").read_text()
    assert "stablehlo.dot_general" in (folder / "03-stablehlo.mlir").read_text()
    report = (folder / "report.txt").read_text()
    assert "PJRT compile" in report and "cache: " in report, report
    assert folder.name.startswith(trace["name"] + "-")


def test_dump_filter_and_folder(tmp_path):
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        compile_(m.fc, dump="import,stablehlo", dump_dir=tmp_path)(x)
    (folder,) = tmp_path.iterdir()
    files = sorted(p.name for p in folder.iterdir())
    # Numbered as a full dump numbers them (device-layout's file is 02, filtered out).
    assert files == ["01-import.gir", "03-stablehlo.mlir", "cache-key.json", "report.json", "report.txt"], files


@torch.library.custom_op("fxhlotest::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def uses_unsupported(x):
    return twice(x + 1).sin() + twice(x).cos()


def test_unsupported_ops_with_fallback_error_lists_every_one():
    with pytest.raises(Exception) as info:
        compile_(uses_unsupported)(torch.randn(3))
    message = str(info.value)
    assert "UnsupportedOpsError" in message and "2 op(s)" in message, message
    for node in ("twice", "twice_1"):
        assert f"fxhlotest.twice.default at node `{node}`" in message, message
    assert "test_backend.py:" in message, "the source line of each op is named"
    ops = info.value.inner_exception.ops
    assert [(t, n) for t, n, _ in ops] == [("fxhlotest.twice.default", "twice"), ("fxhlotest.twice.default", "twice_1")]


def test_a_graph_that_fails_import_leaves_its_trace_error_and_command_in_its_dump(tmp_path, monkeypatch):
    """With dumping on, a graph whose trace fails to import (here shape inference disagreeing
    with the trace's metadata, as the CUDA variants' statistics did) is dumped: the trace, the
    error (stage, node, op) and the command that fails the same way, and the error says where."""
    exporter = importlib.import_module("fxhlo.export")  # `fxhlo.export` is the function
    real = exporter.trace_dict

    def wrong_meta(*args, **kwargs):
        trace, weights = real(*args, **kwargs)
        meta = trace["nodes"][0]["meta"][0]
        meta["sizes"] = [s + 1 for s in meta["sizes"]]
        return trace, weights

    monkeypatch.setattr(exporter, "trace_dict", wrong_meta)
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad(), pytest.raises(Exception) as info:
        compile_(m.fc, dump="stablehlo", dump_dir=tmp_path)(x)
    (folder,) = tmp_path.iterdir()
    message = str(info.value)
    assert isinstance(info.value.inner_exception, fxhlo.CompileError), message
    assert f"dumped to {folder}" in message, message
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["00-trace.json", "command.txt", "error.txt", "report.json", "report.txt"], files
    error = (folder / "error.txt").read_text()
    assert error.startswith("failed at: import\n") and "(aten.permute.default)" in error, error
    trace = json.loads((folder / "00-trace.json").read_text())
    assert folder.name.startswith(trace["name"] + "-")
    assert (folder / "command.txt").read_text().strip() == f"fxhlo compile {folder / '00-trace.json'}"


def test_an_op_fxhlo_does_not_know_leaves_its_trace_error_and_command_in_its_dump(tmp_path):
    with pytest.raises(Exception) as info:
        compile_(uses_unsupported, dump="import", dump_dir=tmp_path)(torch.randn(3))
    (folder,) = tmp_path.iterdir()
    message = str(info.value)
    # Still the error the eager fallback reads, with where the dump is.
    assert isinstance(info.value.inner_exception, fxhlo.UnsupportedOpsError), message
    assert f"dumped to {folder}" in message, message
    files = {p.name for p in folder.iterdir()}
    assert {"00-trace.json", "01-import.gir", "error.txt", "command.txt"} <= files, files
    # The command reads the dump's own 01-import.gir: the graph is not written twice.
    assert "graph.gir" not in files, files
    error = (folder / "error.txt").read_text()
    assert error.startswith("failed at: codegen\n") and "fxhlotest.twice.default at node `twice`" in error, error
    assert (folder / "command.txt").read_text().startswith(f"fxhlo compile {folder / '01-import.gir'} --target cpu")


def test_unsupported_ops_with_fallback_eager_warns_once_and_runs():
    x = torch.randn(3)
    c = compile_(uses_unsupported, fallback="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = c(x), c(x)
    ours = [w for w in caught if issubclass(w.category, fxhlo.FallbackWarning)]
    assert len(ours) == 1 and "fxhlotest.twice.default" in str(ours[0].message), [str(w.message) for w in caught]
    assert_matches((first, second), (uses_unsupported(x), uses_unsupported(x)), "eager fallback")
    # Only the op runs in eager: `x + 1` before it and `sin`, `cos`, `+` after it compile
    # (test_fallback.py tests the split).
    assert "2 part(s) compiled by fxhlo" in str(ours[0].message), str(ours[0].message)


def test_freeze_compiles_weights_in_as_constants():
    model, args = gen_fixtures.build("cnn")
    with torch.no_grad():
        want = model(*args)
        run = compile_(model, freeze=True)
        assert_matches(run(*args), want, "freeze=True")
        exe = last_graph().executable
        kinds = [how for _, how in exe.inputs]
        # Every weight the graph reads (conv, batch-norm statistics, linear) is compiled in.
        assert kinds.count("input") == 1 and "resident" not in kinds and kinds.count("frozen") >= 10, kinds
        assert exe.stats()["weight_uploads"] == 0
        assert "stablehlo.constant" in exe.mlir and "dense<\"0x" in exe.mlir
        # Frozen means frozen: a later update of the model is not seen (documented).
        for p in model.parameters():
            p.mul_(0.5)
        assert_matches(run(*args), want, "frozen weights after the model changed")


def test_freeze_large_weights_are_bound_parameters_at_o1_and_bytecode_at_o0():
    # A 64x64 weight (4096 elements) is over LARGE_CONSTANT_ELEMENTS: at -O1 the
    # `hoist-large-constants` pass makes it a parameter bound to its bytes, uploaded once per
    # thread's client (the caller still passes only x); the 8x64 one (512) stays a constant. At
    # -O0 both are constants, and the module reaches PJRT as MLIR bytecode whose text form
    # elides the large one.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).eval()
    x = torch.randn(5, 64)
    with torch.no_grad():
        want = model(x)
        for level in (1, 0):
            torch._dynamo.reset()
            run = compile_(model, freeze=True, opt_level=level)
            assert_matches(run(x), want, f"freeze=True, large weights, -O{level}")
            exe = last_graph().executable
            assert [how for _, how in exe.inputs].count("input") == 1, exe.inputs
            main = next(line for line in exe.mlir.splitlines() if "func.func @main" in line)
            if level == 1:
                assert len(exe.bound) == 1 and "__elided__" not in exe.mlir, (exe.bound, main)
                assert main.count("%arg") == 2, main
                # Another thread loads the executable on its own client and uploads the bound
                # weight there.
                got = []
                t = threading.Thread(target=lambda: got.append(run(x)))
                t.start()
                t.join()
                assert_matches(got[0], want, "freeze=True, bound weight, another thread")
            else:
                assert exe.bound == [] and "__elided__" in exe.mlir, exe.mlir[:2000]
                assert main.count("%arg") == 1, main


def test_freeze_keeps_mutated_buffers_as_inputs():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", torch.zeros(3))
            self.register_buffer("scale", torch.full((3,), 2.0))

        def forward(self, x):
            self.total.add_(x)
            return self.total * self.scale

    m, e = Counter(), Counter()
    run = compile_(m, freeze=True)
    for i in range(3):
        x = torch.full((3,), float(i + 1))
        assert_matches(run(x), e(x), f"call {i}")
    kinds = dict(last_graph().executable.inputs)
    assert sorted(kinds.values()) == ["frozen", "input", "resident"], kinds


def test_outputs_outlive_the_compiled_graph_and_die_on_any_thread():
    """Outputs own their device buffers (handed over without a copy): they stay valid after the
    graph, Dynamo's cache and the executable are gone, and can be freed from another thread."""
    import gc

    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        want = m.fc(x)
        outs = [compile_(m.fc)(x) for _ in range(3)]
    torch._dynamo.reset()
    gc.collect()
    assert not fxhlo.compiled_graphs()
    for out in outs:
        assert_matches(out, want, "output after the executable is gone")
    t = threading.Thread(target=lambda: outs.clear())
    t.start()
    t.join()
    assert outs == []


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool])
def test_every_dtype_in_and_out(dtype):
    def f(x):
        return x, (x > 0) if dtype != torch.bool else ~x, x.flip(0)

    x = (torch.randn(4, 5) * 50).to(dtype)
    got = compile_(f)(x)
    assert got[0] is x
    assert_matches(got, f(x), f"{dtype}")


@pytest.mark.slow
def test_backend_name_works_without_importing_fxhlo():
    """The package's torch_dynamo_backends entry point makes backend="fxhlo" resolve in a
    process that never imports fxhlo itself."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "f = torch.compile(lambda x: x * 3, backend='fxhlo', fullgraph=True, dynamic=False)\n"
        "out = f(torch.arange(4.0))\n"
        "assert out.tolist() == [0.0, 3.0, 6.0, 9.0], out\n"
        "print('fxhlo' in torch._dynamo.list_backends(), 'fxhlo.backend' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"], proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("level, info_shown", [(None, False), ("0", True)])
def test_xla_info_logs_hidden_unless_asked(level, info_shown):
    """``import fxhlo`` sets TF_CPP_MIN_LOG_LEVEL=1 when unset: the CPU plugin's INFO line about
    the one device fxhlo asks for stays off stderr; a user's own level wins."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    code = (
        "import torch, fxhlo\n"
        "f = torch.compile(lambda x: x + 1, backend='fxhlo', fullgraph=True, dynamic=False)\n"
        "assert f(torch.zeros(3)).tolist() == [1.0, 1.0, 1.0]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert ("cpu_device_count set via create_options: 1" in proc.stderr) == info_shown, proc.stderr


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_max_pool_without_indices_matches_eager_nan_included(dtype):
    """When the graph never reads max pooling's indices, fxhlo lowers a plain max window;
    PyTorch propagates NaN through it, and so must fxhlo."""
    x = (torch.randn(2, 3, 9, 9) * 10).to(dtype)
    if dtype.is_floating_point:
        x[0, 1, 4, 4] = float("nan")
        x[1, 2, 0, 0] = float("-inf")
    pool = nn.MaxPool2d(3, stride=2, padding=1)
    got, want = compile_(pool)(x), pool(x)
    assert torch.isnan(want).any() == (dtype != torch.int64)
    torch.testing.assert_close(got, want, equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("shape, pool", [
    ((2, 5, 11, 13), nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)),
    ((1, 4, 12, 10), nn.MaxPool2d((2, 3), stride=(2, 1), dilation=(2, 1))),
    ((3, 6, 17), nn.MaxPool1d(4, stride=3, padding=2)),
    ((1, 2, 5, 6, 7), nn.MaxPool3d(2, stride=(1, 2, 2), padding=1)),
    ((5, 9, 9), nn.MaxPool2d(3, stride=2)),  # no batch dim: computed in place, not channels-last
])
def test_max_pool_windows_computed_channels_last_match_eager(shape, pool):
    """The indices-free max window is computed channels-last (transposed in and out) where the
    input has batch and channel dims; padding, dilation, ceil_mode and 1d/3d windows must come
    out as eager computes them, and the result feeds a following op in the usual layout."""
    x = torch.randn(*shape) * 10

    def f(x):
        return pool(x) * 2 + 1

    got, want = compile_(f)(x), f(x)
    print(f"{pool}: max abs err {(got - want).abs().max().item():.2g}")
    torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_long_executions_let_other_python_threads_run():
    """An execution that takes long releases the GIL: another Python thread runs while the graph
    executes. The executable's counters say where a call is: `Executable.run` counts each input
    upload just before the execution and the call just after it, in Rust, running no Python code
    in between; a thread that reads them in between therefore ran while the execution was in
    progress, which a call holding the GIL never lets it do (a holder is only asked to switch
    while it runs bytecode, whatever the switch interval). That observation is the pass
    criterion; the deadline only bounds a failure, so a slow machine just takes more calls.
    The cyclic GC is off meanwhile: a finalizer it ran inside the call would run bytecode."""
    import gc
    import time

    w = torch.randn(256, 256) / 16

    def chain(x):
        for _ in range(20):
            x = torch.tanh(x @ w)
        return x

    x = torch.randn(256, 256)
    run = compile_(chain)
    run(x)  # compiles; the next call executes after a long (>= 200 us) one, so it releases the GIL
    exe = last_graph().executable
    before = exe.stats()
    start = time.perf_counter()
    run(x)
    took = time.perf_counter() - start
    after = exe.stats()
    assert after["calls"] == before["calls"] + 1, (before, after)
    per_call = given(after, "input") - given(before, "input")
    assert per_call >= 1, (before, after)
    # `input_uploads - per_call * calls` is `idle` between calls, and `idle + per_call` inside a
    # call from its last upload until its execution has finished.
    idle = given(after, "input") - per_call * after["calls"]
    seen, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            s = exe.stats()
            if given(s, "input") - per_call * s["calls"] == idle + per_call:
                seen.append(s)
                return

    watcher = threading.Thread(target=watch)
    collecting = gc.isenabled()
    gc.disable()
    watcher.start()
    calls, deadline = 0, time.monotonic() + 60
    try:
        while not seen and time.monotonic() < deadline:
            run(x)
            calls += 1
    finally:
        stop.set()
        watcher.join()
        if collecting:
            gc.enable()
    assert seen, (f"in {calls} calls of {took * 1e3:.1f} ms each, another Python thread never ran "
                  "while the graph executed: the call holds the GIL")
    print(f"another thread ran during call {calls} (one call takes {took * 1e3:.1f} ms): {seen[0]}")


def test_executable_rejects_inputs_that_do_not_match_with_a_clear_error():
    m, x = Linear(), torch.randn(3, 6)
    with torch.no_grad():
        compile_(m.fc)(x)
    exe = last_graph().executable
    names = [n for n, _ in exe.inputs]
    args = [m.fc.weight.detach(), m.fc.bias.detach(), x]
    with pytest.raises(ValueError, match=r"takes 3 inputs, got 2"):
        exe.run(args[:2])
    bad = list(args)
    bad[2] = x.double()
    with pytest.raises(ValueError, match=rf"input 2 \(`{names[2]}`\) is torch.float64 \[3, 6\] but the graph was compiled for torch.float32 \[3, 6\]"):
        exe.run(bad)
    bad[2] = torch.randn(4, 6)
    with pytest.raises(ValueError, match=r"\[4, 6\] but the graph was compiled for torch.float32 \[3, 6\]"):
        exe.run(bad)
    assert torch.allclose(exe.run(args)[0], m.fc(x))

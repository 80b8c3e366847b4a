"""fxhlo._compat on the installed PyTorch: each shim gives what fxhlo needs of it.

One test per private API (or per small group used together). They run on whatever PyTorch the
environment has: the project's pinned release in CI, another one under
``scripts/test_torch_compat.sh <version>`` (docs/compat.md). A test here fails when a release
renames or changes an API fxhlo relies on, before the tests that go through it fail for reasons
harder to read."""

import sympy
import torch
from torch import nn

from fxhlo import _compat
from fxhlo import decompositions as fxhlo_decompositions
from fxhlo.graph_capture import classify

aten = torch.ops.aten


def _recording_backend(record):
    """A Dynamo backend that calls ``record(gm, example_inputs)`` and runs the graph as is."""

    def backend(gm, example_inputs):
        record(gm, example_inputs)
        return gm.forward

    return backend


# ---- Dynamo and AOT Autograd ----------------------------------------------------------------


def test_aot_autograd_hands_the_forward_compiler_a_graph_of_decomposed_aten_ops():
    seen = []

    def fw_compiler(gm, _inputs):
        seen.append({n.target for n in gm.graph.nodes if n.op == "call_function"})
        return _compat.make_boxed_func(gm.forward)

    backend = _compat.aot_autograd(fw_compiler=fw_compiler, decompositions=_compat.core_aten_decompositions())
    fn = torch.compile(lambda x: torch.nn.functional.silu(x) * 2, backend=backend, fullgraph=True, dynamic=False)
    x = torch.randn(5)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), torch.nn.functional.silu(x) * 2)
    (targets,) = seen
    assert all(isinstance(t, _compat.OpOverload) for t in targets), targets
    assert aten.silu.default not in targets and aten.sigmoid.default in targets, targets


def test_make_boxed_func_takes_its_arguments_as_one_list():
    boxed = _compat.make_boxed_func(lambda a, b: (a - b,))
    assert getattr(boxed, "_boxed_call", False)
    assert boxed([torch.tensor(3.0), torch.tensor(1.0)]) == (torch.tensor(2.0),)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.fc(x) * self.scale


def test_input_sources_name_parameters_buffers_and_user_inputs():
    captured = []
    net = _Net()
    fn = torch.compile(net, backend=_recording_backend(lambda gm, ex: captured.append(classify(gm, ex))),
                       fullgraph=True, dynamic=False)
    fn(torch.randn(4, 3))
    (inputs,) = captured
    kinds = sorted((i.kind, i.key) for i in inputs)
    assert kinds == [("buffer", "scale"), ("parameter", "fc.bias"), ("parameter", "fc.weight"), ("user_input", None)]
    where = [i.source for i in inputs if i.kind == "user_input"]
    assert where == ["L['x']"], where


def test_input_source_and_its_name():
    sources = []
    fn = torch.compile(lambda x: x + 1, backend=_recording_backend(
        lambda gm, ex: sources.extend(_compat.input_source(n) for n in gm.graph.nodes if n.op == "placeholder")),
        fullgraph=True, dynamic=False)
    fn(torch.ones(2))
    (source,) = sources
    assert isinstance(source, _compat.sources.LocalSource) and source.local_name == "x"
    assert _compat.source_name(source) == "L['x']"
    assert _compat.source_name(None) is None


def test_source_classes_fxhlo_reads_exist():
    # graph_capture.InputOrigin walks these; a release that renames one would leave weights
    # unnamed (a different failure, harder to trace back to here).
    for name in ("Source", "ChainedSource", "LocalSource", "GlobalSource", "NNModuleSource", "ParamBufferSource",
                 "AttrSource", "GenericAttrSource", "GetItemSource", "DictGetItemSource", "DictSubclassGetItemSource"):
        assert isinstance(getattr(_compat.sources, name, None), type), name


def test_assume_static_by_default_is_false_inside_a_dynamic_region():
    seen = []
    record = _recording_backend(lambda gm, ex: seen.append(_compat.assume_static_by_default()))
    torch.compile(lambda x: x * 2, backend=record, dynamic=False)(torch.ones(3))
    torch.compile(lambda x: x * 3, backend=record, dynamic=True)(torch.ones(4))
    assert seen == [True, False]
    assert _compat.assume_static_by_default()


def test_compile_once_caches_and_forget_compiled_drops_only_that_function():
    calls = []
    backend = _recording_backend(lambda gm, ex: calls.append(gm))

    def f(x):
        return x.cos() + 1

    compiled = _compat.compile_once(f, backend)
    x = torch.ones(3)
    torch.testing.assert_close(compiled(x), f(x))
    compiled(x)
    assert len(calls) == 1  # cached on f's code object
    _compat.forget_compiled(f)
    compiled(x)
    assert len(calls) == 2  # compiled again


def test_compile_once_refuses_a_graph_break():
    def f(x):
        print("a graph break")
        return x + 1

    try:
        _compat.compile_once(f, _recording_backend(lambda gm, ex: None))(torch.ones(2))
    except Exception as e:  # Dynamo's Unsupported; its class moved between releases
        assert "print" in str(e) or "graph break" in str(e).lower(), e
    else:
        raise AssertionError("compile_once compiled a function with a graph break whole")
    finally:
        _compat.forget_compiled(f)


def test_backend_error_unwraps_the_backends_own_exception():
    error = ValueError("the backend's own")

    def failing(gm, example_inputs):
        raise error

    def f(x):
        return x - 1

    try:
        _compat.compile_once(f, failing)(torch.ones(2))
    except Exception as e:
        assert _compat.backend_error(e) is error
    else:
        raise AssertionError("the failing backend did not fail the compile")
    finally:
        _compat.forget_compiled(f)
    assert _compat.backend_error(error) is error


def test_register_backend_makes_a_name_torch_compile_accepts_once():
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    _compat.register_backend("fxhlo_compat_test", backend)
    _compat.register_backend("fxhlo_compat_test", backend)  # a second registration is a no-op
    torch.compile(lambda x: x * 5, backend="fxhlo_compat_test")(torch.ones(2))
    assert len(calls) == 1
    import fxhlo  # noqa: F401 - registers "fxhlo"
    assert "fxhlo" in torch._dynamo.list_backends()


def test_current_compile_id_inside_and_outside_a_compile():
    ids = []
    torch.compile(lambda x: x + 2, backend=_recording_backend(lambda gm, ex: ids.append(_compat.current_compile_id())))(
        torch.ones(2))
    (cid,) = ids
    assert isinstance(cid, tuple) and len(cid) == 2 and all(isinstance(i, int) for i in cid), cid
    assert _compat.current_compile_id() is None


def test_mutated_inputs_are_the_graph_inputs_the_forward_writes():
    seen = []

    def fw_compiler(gm, _inputs):
        seen.append(_compat.mutated_inputs())
        return _compat.make_boxed_func(gm.forward)

    def f(x, y):
        z = x * 2  # x first: Dynamo numbers the graph's inputs in the order the code uses them
        y.add_(1)
        return z * y

    x, y = torch.ones(3), torch.ones(3)
    with torch.no_grad():
        torch.compile(f, backend=_compat.aot_autograd(fw_compiler=fw_compiler), fullgraph=True, dynamic=False)(x, y)
    assert seen == [{1}], seen
    assert torch.equal(y, torch.full((3,), 2.0))
    assert _compat.mutated_inputs() == set()


def test_forward_metadata_and_plain_runtime():
    seen = []

    def fw_compiler(gm, _inputs):
        meta = _compat.forward_metadata()
        seen.append((meta is not None and len(meta.input_info), _compat.plain_runtime(meta)))
        return _compat.make_boxed_func(gm.forward)

    def pure(x, y):
        return x * y + 1

    def mutating(x, y):
        y.add_(1)
        return x * y

    def aliasing(x, y):
        return x.view(-1), x * y

    with torch.no_grad():
        for f in (pure, mutating, aliasing):
            torch.compile(f, backend=_compat.aot_autograd(fw_compiler=fw_compiler), fullgraph=True,
                          dynamic=False)(torch.ones(3), torch.ones(3))
    assert seen == [(2, True), (2, False), (2, False)], seen
    assert _compat.forward_metadata() is None and not _compat.plain_runtime(None)


# ---- ops and decompositions -----------------------------------------------------------------


def test_op_types():
    assert isinstance(aten.add.Tensor, _compat.OpOverload)
    assert not isinstance(aten.add, _compat.OpOverload)
    assert isinstance(torch.ops.higher_order.cond, _compat.HigherOrderOperator)
    assert isinstance(torch.ops.higher_order.while_loop, _compat.HigherOrderOperator)


def test_schema_names_the_op_and_its_arguments():
    s = _compat.schema(aten.add.Tensor)
    assert s.name == "aten::add"
    assert [a.name for a in s.arguments] == ["self", "other", "alpha"]
    assert [str(a.type) for a in s.arguments[:2]] == ["Tensor", "Tensor"]  # legalize.py reads "Tensor"
    alpha = s.arguments[2]
    assert alpha.has_default_value() and alpha.default_value == 1 and alpha.kwarg_only
    assert _compat.schema(torch.sin) is None


def test_aten_op_finds_overloads_and_packets_and_none_for_what_this_release_lacks():
    assert _compat.aten_op("round.decimals") is aten.round.decimals
    assert _compat.aten_op("addmv") is aten.addmv
    assert _compat.aten_op("fxhlo_no_such_op.default") is None
    assert _compat.aten_op("add.fxhlo_no_such_overload") is None


def test_a_rule_for_an_op_this_release_lacks_is_skipped(monkeypatch):
    # torch 2.11 has no aten.linalg_matrix_sqrth: a rule for it must not stop the table.
    monkeypatch.setitem(fxhlo_decompositions._OWN_DECOMPOSITIONS, "fxhlo_no_such_op.default", lambda x: x)
    monkeypatch.setattr(fxhlo_decompositions, "_EXTRA_DECOMPOSITIONS",
                        (*fxhlo_decompositions._EXTRA_DECOMPOSITIONS, "fxhlo_no_such_op"))
    table = fxhlo_decompositions.decompositions.__wrapped__()
    assert aten.round.decimals in table and aten.addmv.default in table
    assert not any("fxhlo_no_such_op" in str(op) for op in table)


def test_decomposition_tables():
    core = _compat.core_aten_decompositions()
    assert aten.silu.default in core
    assert aten.addmv.default in _compat.get_decompositions([aten.addmv])
    assert aten.addmv.default in _compat.decomposition_table


def test_has_composite_implicit_kernel():
    assert _compat.has_composite_implicit_kernel(aten.linear.default)
    assert not _compat.has_composite_implicit_kernel(aten.add.Tensor)


def test_while_loop_runs_eagerly():
    (i, total) = _compat.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i),
                                    (torch.tensor(0), torch.tensor(0)))
    assert int(i) == 4 and int(total) == 6


def test_make_fx_traces_aten_ops_with_a_decomposition_table():
    gm = _compat.make_fx(lambda x: torch.nn.functional.silu(x) + 1,
                         decomposition_table=_compat.get_decompositions([aten.silu]))(torch.ones(3))
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert aten.add.Tensor in targets and aten.silu.default not in targets, targets


# ---- fake tensors and symbolic shapes -------------------------------------------------------


def test_fake_tensor_mode_makes_tensors_of_any_device_without_it():
    with _compat.FakeTensorMode(allow_non_fake_inputs=True) as mode:
        t = mode.from_tensor(torch.ones(2, 3)).to("cuda")
        u = torch.empty(4, device="cuda", dtype=torch.bfloat16)
    assert t.device.type == "cuda" and t.shape == (2, 3)
    assert u.device.type == "cuda" and u.dtype == torch.bfloat16


def test_detect_fake_mode_finds_the_mode_of_fake_values():
    mode = _compat.FakeTensorMode()
    with mode:
        fake = torch.empty(2, 3)
    assert _compat.detect_fake_mode([fake]) is mode
    assert _compat.detect_fake_mode([torch.empty(2)]) is None
    assert _compat.shape_env(mode) is None and _compat.shape_env(None) is None


def test_runtime_assertions_sym_expr_and_free_symbols_of_unbacked_sizes():
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = _compat.FakeTensorMode(shape_env=ShapeEnv())
    env = _compat.shape_env(mode)
    assert env is not None
    u0, u1 = env.create_unbacked_symint(), env.create_unbacked_symint()
    torch._check(u0 + u1 == 6)  # as Dynamo asserts split sizes read with tolist()
    (expr,) = _compat.runtime_assertions(env)
    s0, s1 = _compat.sym_expr(env, u0), _compat.sym_expr(env, u1)
    assert isinstance(s0, sympy.Symbol) and expr == sympy.Eq(s0 + s1, 6), expr
    with mode:
        t = torch.empty(u0, 3)
        static = torch.empty(2, 3)
    assert _compat.free_symbols(t) == {s0}
    assert not _compat.free_symbols(static)


def test_no_internal_overlap():
    assert _compat.no_internal_overlap(torch.zeros(3, 4))
    assert _compat.no_internal_overlap(torch.zeros(4, 3).t())
    assert not _compat.no_internal_overlap(torch.zeros(3).expand(4, 3))


def test_size_stride_check_accepts_a_match_and_raises_on_a_mismatch():
    check = _compat.size_stride_check()
    assert check is not None, "every supported release has it"
    x = torch.zeros(4, 3)
    check(x, (4, 3), (3, 1))
    for sizes, strides in [((4, 2), (3, 1)), ((4, 3), (1, 4)), ((3, 4), (4, 1))]:
        try:
            check(x if sizes != (3, 4) else x.t(), sizes, strides)
        except AssertionError:
            continue
        raise AssertionError(f"{sizes} {strides} passed the check")


def test_pytree_flattens_and_maps_nested_outputs():
    nested = (torch.ones(1), [torch.zeros(2), {"a": torch.ones(3)}])
    assert [t.numel() for t in _compat.pytree.tree_leaves(nested)] == [1, 2, 3]
    doubled = _compat.pytree.tree_map(lambda t: t * 2, nested)
    assert doubled[1][1]["a"].sum().item() == 6.0

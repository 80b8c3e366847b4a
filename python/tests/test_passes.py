"""fxhlo's graph passes from PyTorch: ``options={"opt_level": 0}`` runs none (XLA alone), the
default ``1`` the pipeline for the device. On the CPU plugin that rewrites depthwise
convolutions as sums of taps (``depthwise-conv-taps``); both levels must match eager."""

import re

import pytest
import torch

import fxhlo

from conftest import raises_options_error


def compile_at(model, level):
    torch._dynamo.reset()
    return torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False, options={"opt_level": level})


def grouped_convolutions(mlir: str) -> int:
    return len([g for g in re.findall(r"feature_group_count = (\d+)", mlir) if int(g) > 1])


def matching_eager_at_both_levels(name, model, x):
    """Compiles ``model`` at -O0 and -O1, checks each against eager on ``x`` and yields
    ``(level, StableHLO module)``."""
    with torch.no_grad():
        want = model(x)
        for level in (0, 1):
            before = len(fxhlo.compiled_graphs())
            got = compile_at(model, level)(x)
            err = (got - want).abs().max().item()
            print(f"{name} -O{level}: max abs err {err:.2e} (outputs up to {want.abs().max():.2e})")
            # Random weights give logits near 1e-9: compare relative to their size.
            assert err <= 1e-4 * max(want.abs().max().item(), 1e-30)
            (graph,) = fxhlo.compiled_graphs()[before:]
            yield level, graph.executable.mlir


@pytest.mark.slow
def test_mobilenet_matches_eager_at_both_levels_and_o1_has_no_grouped_convolution():
    torchvision = pytest.importorskip("torchvision", reason="scripts/setup.sh installs torchvision")
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v3_small().eval()
    for level, mlir in matching_eager_at_both_levels("mobilenet_v3_small", model, torch.randn(1, 3, 96, 96)):
        grouped = grouped_convolutions(mlir)
        print(f"  grouped convolutions in the module: {grouped}")
        assert (grouped > 0) if level == 0 else (grouped == 0)


@pytest.mark.slow
def test_depthwise_layers_match_eager_in_every_form():
    torch.manual_seed(1)
    layers = [
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=8),
        torch.nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8, bias=False),
        torch.nn.Conv2d(8, 8, 3, dilation=2, padding=2, groups=8),
        torch.nn.Conv2d(8, 8, 7, padding=3, groups=8),
        torch.nn.Conv2d(8, 16, 3, padding=1, groups=8),  # channel multiplier 2: left as a convolution
    ]
    x = torch.randn(2, 8, 13, 11)
    with torch.no_grad():
        for layer in layers:
            for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
                m, xi = layer.to(dtype).eval(), x.to(dtype)
                want = m(xi)
                got = compile_at(m, 1)(xi)
                err = (got.float() - want.float()).abs().max().item()
                print(f"{layer} {dtype}: max abs err {err:.2e}")
                assert got.dtype == want.dtype and got.shape == want.shape
                torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)


def test_opt_level_is_checked():
    with pytest.raises(Exception, match="opt_level=3.*valid levels are 0 to 2"):
        compile_at(torch.nn.Linear(2, 2), 3)(torch.randn(1, 2))


def test_passes_and_max_passes_choose_what_runs():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1, groups=4), torch.nn.ReLU()).eval()
    x = torch.randn(1, 4, 8, 8)
    runs = {
        "default": {},
        "passes=[]": {"passes": []},
        "passes=[depthwise-conv-taps]": {"passes": ["depthwise-conv-taps"]},
        "max_passes=1 (dce only)": {"max_passes": 1},
    }
    grouped = {}
    with torch.no_grad():
        want = model(x)
        for what, options in runs.items():
            torch._dynamo.reset()
            before = len(fxhlo.compiled_graphs())
            got = torch.compile(model, backend="fxhlo", fullgraph=True, options=options)(x)
            torch.testing.assert_close(got, want)
            (graph,) = fxhlo.compiled_graphs()[before:]
            grouped[what] = grouped_convolutions(graph.executable.mlir)
    print(grouped)
    assert grouped == {"default": 0, "passes=[]": 1, "passes=[depthwise-conv-taps]": 0, "max_passes=1 (dce only)": 1}


def test_the_python_default_level_is_the_compilers():
    """``BackendOptions`` writes the default level out (importing fxhlo does not load the
    extension); it must be the one the compiler, the CLI and the docs call the default."""
    from fxhlo import _native

    assert fxhlo.BackendOptions().opt_level == _native.DEFAULT_OPT_LEVEL
    assert fxhlo.BackendOptions.parse({}).opt_level == _native.DEFAULT_OPT_LEVEL
    assert "2 (default)" in fxhlo.OPTIONS["opt_level"], fxhlo.OPTIONS["opt_level"]


def test_unknown_pass_names_list_the_valid_ones():
    compiled = torch.compile(torch.nn.Linear(2, 2), backend="fxhlo", options={"passes": ["dce", "fold-all"]})
    raises_options_error(compiled, torch.randn(1, 2),
                         match=r"unknown pass\(es\) 'fold-all'; valid passes: .*depthwise-conv-taps")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shufflenet_v2_x0_5", "squeezenet1_1", "regnet_y_400mf"])
def test_channels_last_models_match_eager_and_convolve_channels_last(name):
    """`channels-last` on models whose ops between convolutions vary: ShuffleNet's channel
    shuffle (a view to 5-D, a transpose, a view back) and channel split, SqueezeNet's
    concatenations and ceil-mode max pools, RegNet's grouped convolutions and squeeze-excite."""
    torchvision = pytest.importorskip("torchvision", reason="scripts/setup.sh installs torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    for level, mlir in matching_eager_at_both_levels(name, model, torch.randn(2, 3, 64, 64)):
        nhwc = mlir.count("#stablehlo.conv<[b, 0, 1, f]")
        print(f"  channels-last convolutions in the module: {nhwc}")
        assert (nhwc > 0) if level == 1 else (nhwc == 0)


def test_o2_matches_eager_and_reports_each_pass_with_the_egraph_summary():
    # Two permutes that compose to the identity around a linear layer: the e-graph folds them.
    class Permuted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(6, 5)

        def forward(self, x):
            return self.linear(x.permute(0, 2, 1).permute(0, 2, 1)).relu()

    torch.manual_seed(3)
    model, x = Permuted().eval(), torch.randn(2, 4, 6)
    with torch.no_grad():
        want = model(x)
        got = compile_at(model, 2)(x)
    err = (got - want).abs().max().item()
    print(f"-O2 max abs err {err:.2e}")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    passes = fxhlo.compiled_graphs()[-1].stages["passes"]
    names = [p["name"] for p in passes]
    assert names == fxhlo._native.pipeline_names(2), names
    # On the CPU plugin `-O2`'s e-graph is `eqsat-layout` (with the channels-last rules).
    (eqsat,) = [p for p in passes if p["name"] == "eqsat-layout"]
    print(eqsat)
    assert "e-nodes" in eqsat["summary"] and "stop " in eqsat["summary"], eqsat
    assert all(p["s"] >= 0 and p["nodes_after"] > 0 for p in passes)
    assert all(p["summary"] is None for p in passes if p["name"] != "eqsat-layout")


@pytest.mark.parametrize("heads,n,d", [(16, 1024, 8), (2, 2048, 16), (2, 4096, 8)])
def test_large_attention_runs_in_loops_over_blocks_and_matches_eager(heads, n, d):
    """`batch-blocks` on PyTorch's own attention (`F.scaled_dot_product_attention`, decomposed
    as on the CPU): 16 heads of 4 MB scores loop over blocks of heads; 2 heads of 16 MB loop
    over single heads (16 MB is no longer a product to split); 2 heads of 64 MB loop over the
    heads with each head's rows in a nested loop. Values match eager; the module has the loops
    (`stablehlo.while`) and `-O1`'s does not."""
    torch.manual_seed(4)
    q, k, v = (torch.randn(1, heads, n, d) for _ in range(3))
    f = torch.nn.functional.scaled_dot_product_attention
    with torch.no_grad():
        want = f(q, k, v)
        modules = {}
        for level in (1, 2):
            got = compile_at(f, level)(q, k, v)
            err = (got - want).abs().max().item()
            print(f"{heads} x {n} x {d} -O{level}: max abs err {err:.2e}")
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            modules[level] = fxhlo.compiled_graphs()[-1].executable.mlir
    loops = {level: m.count("stablehlo.while") for level, m in modules.items()}
    print(f"  while loops in the module: {loops}")
    assert loops[1] == 0
    assert loops[2] == (2 if n == 4096 else 1), loops


def test_the_channels_last_rules_match_eager_and_convolve_channels_last():
    """`eqsat-layout` (the e-graph's channels-last rules, `-O2`'s on the CPU plugin, in the
    `channels-last` pass's place): a ResNet-style block with batch norm, a max pool, a residual sum,
    squeeze-excitation (a mean kept as [N, C, 1, 1] scaling the channels) and a mean over H
    and W, through `torch.compile`; every convolution in the module is channels-last."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(16)
            self.conv = torch.nn.Conv2d(16, 16, 3, padding=1)
            self.bn2 = torch.nn.BatchNorm2d(16)
            self.se = torch.nn.Conv2d(16, 16, 1)

        def forward(self, x):
            y = torch.nn.functional.max_pool2d(self.bn1(self.stem(x)).relu(), 2)
            z = self.bn2(self.conv(y)).relu() + y
            z = z * torch.sigmoid(self.se(z.mean((2, 3), keepdim=True)))
            return z.mean((2, 3))

    torch.manual_seed(0)
    model = Block().eval()
    for bn in (model.bn1, model.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 32, 32)
    from fxhlo import _native

    assert "eqsat-layout" in _native.pipeline_names(2) and "channels-last" not in _native.pipeline_names(2)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)
    with torch.no_grad():
        want, got = model(x), compiled(x)
    err = (got - want).abs().max().item()
    print(f"eqsat-layout: max abs err {err:.2e}")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    graph = fxhlo.compiled_graphs()[-1]
    (layout,) = [p for p in graph.stages["passes"] if p["name"] == "eqsat-layout"]
    print(layout["summary"])
    assert "conv-channels-last" in layout["summary"] and "rewrote the graph" in layout["summary"], layout
    mlir = graph.executable.mlir
    nchw, nhwc = mlir.count("#stablehlo.conv<[b, f, 0, 1]"), mlir.count("#stablehlo.conv<[b, 0, 1, f]")
    print(f"convolutions: {nhwc} channels-last, {nchw} channels-first")
    assert nchw == 0 and nhwc > 0, mlir

"""``torch.cond`` and ``torch.while_loop`` compiled by fxhlo as ``stablehlo.case`` and
``stablehlo.while``: the branch and the trip count are decided on the device at run time, so one
compile serves every predicate and every count. Each result is compared with eager PyTorch."""

import subprocess
import warnings

import pytest
import torch
from torch._higher_order_ops import while_loop

import fxhlo
from test_op_regressions import compiled

from conftest import ROOT


def run_fxhlo(fn, *args):
    """``fn`` compiled by fxhlo (nothing may fall back to eager) and called on ``args``."""
    c = compiled(fn)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", fxhlo.FallbackWarning)
        return c(*args)


def assert_matches(what, got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    for g, w in zip(got, want, strict=True):
        err = (g.double() - w.double()).abs().max().item() if w.numel() else 0.0
        print(f"{what}: {w.dtype}{list(w.shape)} max abs err {err:.2e}")
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w)


class Gate(torch.nn.Module):
    """A branch on the data: either branch reads the module's parameters."""

    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.cond(x.mean() > 0, lambda h: self.up(h).relu(), lambda h: self.down(h).sigmoid() * 2, (x,))


def test_cond_takes_either_branch_from_one_compile():
    torch.manual_seed(0)
    model = Gate()
    c = compiled(model)
    before = len(fxhlo.compiled_graphs())
    x = torch.randn(3, 4)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", fxhlo.FallbackWarning)
        for sign in (1.0, -1.0, 1.0):
            xs = x.abs() * sign
            assert_matches(f"cond, mean {xs.mean():+.2f}", c(xs), model(xs))
    graphs = fxhlo.compiled_graphs()[before:]
    assert len(graphs) == 1, "one compile serves both branches"
    assert "stablehlo.case" in graphs[0].executable.mlir


def newton_sqrt(a, steps):
    """sqrt(a) by Newton's iteration, `steps` (a tensor) times: the trip count is data."""

    def cond_fn(i, x):
        return i < steps

    def body_fn(i, x):
        return i + 1, 0.5 * (x + a / x)

    return while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), torch.ones_like(a)))


def test_while_loop_runs_a_data_dependent_number_of_steps():
    a = torch.tensor([2.0, 9.0, 0.25, 100.0])
    c = compiled(newton_sqrt)
    with torch.no_grad():
        for n in (0, 1, 3, 12):
            steps = torch.tensor(n)
            got = c(a, steps)
            assert_matches(f"while_loop, {n} steps", got, newton_sqrt(a, steps))
            assert got[0].item() == n
    torch.testing.assert_close(c(a, torch.tensor(12))[1], a.sqrt())


@pytest.mark.slow
def test_nested_control_flow_and_several_carried_values():
    def collatz_steps(n):
        """Steps of the Collatz map to reach 1, a cond inside a while body."""

        def cond_fn(v, count):
            return v > 1

        def body_fn(v, count):
            nxt = torch.cond(v % 2 == 0, lambda u: u // 2, lambda u: 3 * u + 1, (v,))
            return nxt, count + 1

        return while_loop(cond_fn, body_fn, (n, torch.zeros_like(n)))

    for start in (1, 6, 27):
        n = torch.tensor(start)
        got = run_fxhlo(collatz_steps, n)
        want = collatz_steps(n)
        assert_matches(f"collatz({start})", got, want)
    # Hand arithmetic: 6 -> 3 -> 10 -> 5 -> 16 -> 8 -> 4 -> 2 -> 1 is 8 steps; 27 takes 111.
    assert run_fxhlo(collatz_steps, torch.tensor(6))[1].item() == 8
    assert run_fxhlo(collatz_steps, torch.tensor(27))[1].item() == 111


def test_loop_invariant_operands_and_tensors_from_outside():
    w = torch.randn(5, 5) * 0.3
    b = torch.randn(5)

    def rnn(x, steps):
        def cond_fn(i, h):
            return i < steps

        def body_fn(i, h):
            return i + 1, torch.tanh(h @ w + b)

        return while_loop(cond_fn, body_fn, (torch.tensor(0), x))[1]

    x = torch.randn(2, 5)
    assert_matches("rnn by while_loop", run_fxhlo(rnn, x, torch.tensor(7)), rnn(x, torch.tensor(7)))


def test_exported_control_flow_runs_in_the_cli(tmp_path, fxhlo_cli):
    """A trace bundle holds the subgraphs; `fxhlo run --check` compiles and checks it."""
    torch.manual_seed(1)
    model = Gate().eval()
    bundle = fxhlo.export(model, (torch.randn(3, 4),), tmp_path / "gate.fxt", reference=True, name="gate")
    text = (bundle / "graph.json").read_text()
    assert '"subgraphs"' in text and '"graph":' in text
    proc = subprocess.run([str(fxhlo_cli), "run", str(bundle), "--check"], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    print(proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.returncode == 0, proc.stderr

"""Regenerates the test fixtures (trace bundles with weights and PyTorch references).

Run from the repository root with the project's venv:
    .venv/bin/python scripts/gen_fixtures.py
Every model is built with a fixed seed, so the output is deterministic.
"""

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import fxhlo  # noqa: E402

FIXTURES = ROOT / "testsuite" / "fixtures"


class MLP(torch.nn.Module):
    """Two linear layers with a ReLU between them: the walking skeleton's model."""

    def __init__(self, d_in=8, d_hidden=16, d_out=4):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.fc2 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(2, 8)
    out = fxhlo.export(model, (x,), FIXTURES / "mlp.fxt", reference=True, name="mlp")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

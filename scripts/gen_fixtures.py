"""Regenerates the test fixtures (trace bundles with weights and PyTorch references).

Run from the repository root with the project's venv (setup.sh installs the fxhlo package):
    .venv/bin/python scripts/gen_fixtures.py [--out DIR] [NAME ...]
Every model is built with a fixed seed, so the output is deterministic.
"""

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import fxhlo

ROOT = Path(__file__).resolve().parents[1]


# mlp.fxt records the line of MLP.forward's return (30): moving it changes that fixture.
class MLP(torch.nn.Module):
    """Two linear layers with a ReLU between them: the walking skeleton's model."""

    def __init__(self, d_in=8, d_hidden=16, d_out=4):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.fc2 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    """Conv-BN-ReLU twice with max and average pooling, global (adaptive) pooling, flatten,
    a linear classifier and softmax."""

    def __init__(self, c_in=3, c1=4, c2=8, classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c1, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c2)
        self.fc = nn.Linear(c2, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return F.softmax(self.fc(x), dim=-1)


class ResNetBlock(nn.Module):
    """A ResNet basic block with a strided 1x1 conv-BN downsample shortcut."""

    def __init__(self, c_in=4, c_out=8, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


def split_heads(x, heads):
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x):
    b, h, t, hd = x.shape
    return x.transpose(1, 2).reshape(b, t, h * hd)


class TransformerEncoder(nn.Module):
    """A post-norm transformer encoder layer written out: multi-head self-attention through
    scaled_dot_product_attention, residuals, layer norms, an exact-GELU MLP."""

    def __init__(self, d=16, heads=2, d_ff=32):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = (split_heads(y, self.heads) for y in self.qkv(x).chunk(3, dim=-1))
        x = self.ln1(x + self.proj(merge_heads(F.scaled_dot_product_attention(q, k, v))))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class GPTBlock(nn.Module):
    """Token and position embeddings, one pre-norm block of causal self-attention (explicit
    lower-triangular mask filled with -inf) and a tanh-GELU MLP, final norm and linear head."""

    def __init__(self, vocab=32, context=8, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        q, k, v = (split_heads(y, self.heads) for y in self.qkv(self.ln1(x)).chunk(3, dim=-1))
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=idx.device))
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        x = x + self.proj(merge_heads(att @ v))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return self.head(self.ln_f(x))


class UNetBlock(nn.Module):
    """A U-Net level: GroupNorm-SiLU-conv down (stride 2), GroupNorm-SiLU-conv, nearest 2x
    upsampling, concatenation with the skip connection, conv."""

    def __init__(self, c=8, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c)
        self.down = nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.norm2 = nn.GroupNorm(groups, c)
        self.mid = nn.Conv2d(c, c, 3, padding=1)
        self.out = nn.Conv2d(2 * c, c, 3, padding=1)

    def forward(self, x):
        h = self.down(F.silu(self.norm1(x)))
        h = self.mid(F.silu(self.norm2(h)))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        return self.out(torch.cat([h, x], dim=1))


def _mlp():
    torch.manual_seed(0)
    model = MLP()
    return model, (torch.randn(2, 8),)


def _seeded(cls, *input_shape, **kw):
    def build():
        torch.manual_seed(0)
        model = cls(**kw)
        return model, (torch.randn(*input_shape),)
    return build


def _gpt_block():
    torch.manual_seed(0)
    model = GPTBlock()
    return model, (torch.randint(0, 32, (2, 8), dtype=torch.int64),)


# name -> builder returning (model, example_args); every builder seeds torch first.
FIXTURE_BUILDERS = {
    "mlp": _mlp,
    "cnn": _seeded(CNN, 2, 3, 8, 8),
    "resnet_block": _seeded(ResNetBlock, 2, 4, 8, 8),
    "transformer_encoder": _seeded(TransformerEncoder, 2, 8, 16),
    "gpt_block": _gpt_block,
    "unet_block": _seeded(UNetBlock, 2, 8, 8, 8),
}


def _bf16(builder):
    """The same model (same seed) in bfloat16: parameters, buffers and floating inputs converted
    with ``.to(torch.bfloat16)``; integer inputs (token ids) stay int64. The reference is
    PyTorch eager in bfloat16."""
    def build():
        model, args = builder()
        cast = tuple(a.to(torch.bfloat16) if a.is_floating_point() else a for a in args)
        return model.to(torch.bfloat16), cast
    return build


# Every model again in bfloat16, as `<name>_bf16`.
FIXTURE_BUILDERS.update({f"{name}_bf16": _bf16(b) for name, b in list(FIXTURE_BUILDERS.items())})
FIXTURES = ROOT / "testsuite" / "fixtures"


def build(name):
    """The fixture's model (in eval mode) and example arguments."""
    model, args = FIXTURE_BUILDERS[name]()
    return model.eval(), args


def export_fixture(name, out_dir=FIXTURES, model_and_args=None) -> Path:
    """Writes ``<out_dir>/<name>.fxt``; source locations are relative to the repository root."""
    model, args = model_and_args or build(name)
    path = fxhlo.export(model, args, Path(out_dir) / f"{name}.fxt", reference=True, name=name, source_root=ROOT)
    check_portable(path)
    return path


def check_portable(bundle: Path):
    """Fails when a source location would carry a path of this machine into the fixture."""
    import json

    trace = json.loads((bundle / "graph.json").read_text())
    for node in trace["nodes"]:
        file = node.get("source", {}).get("file", "")
        if file.startswith("/") or file.startswith("..") or "site-packages" in file:
            raise SystemExit(f"{bundle}: node {node['name']} has the non-portable source file {file!r}")


def summary(bundle: Path) -> str:
    import json

    trace = json.loads((bundle / "graph.json").read_text())
    kinds = {}
    for i in trace["inputs"]:
        kinds[i["kind"]] = kinds.get(i["kind"], 0) + 1
    targets = sorted({n["target"] for n in trace["nodes"]})
    multi = sorted({n["target"] for n in trace["nodes"] if len(n["meta"]) > 1})
    sizes = ", ".join(f"{f.name} {f.stat().st_size} B" for f in sorted(bundle.iterdir()))
    inputs = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return (f"{trace['name']}: inputs: {inputs}; {len(trace['nodes'])} nodes, {len(targets)} targets"
            f" ({len(multi)} multi-output: {', '.join(multi) or '-'}); outputs {len(trace['outputs'])}\n"
            f"  files: {sizes}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURES, help="folder to write <name>.fxt into")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"fixtures to write (default: all of {', '.join(FIXTURE_BUILDERS)})")
    opts = parser.parse_args(argv)
    unknown = [n for n in opts.names if n not in FIXTURE_BUILDERS]
    if unknown:
        parser.error(f"unknown fixture {', '.join(unknown)}; known: {', '.join(FIXTURE_BUILDERS)}")
    for name in opts.names or FIXTURE_BUILDERS:
        path = export_fixture(name, opts.out)
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        print(f"wrote {shown}")
        print("  " + summary(path))


if __name__ == "__main__":
    main()

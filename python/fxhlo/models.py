"""Standard architectures written with ``torch.nn`` only, for end-to-end tests on real graphs.

No torchvision, transformers or diffusers: each model follows the published layout of its
family, with random weights from a fixed seed. ``MODELS`` maps a name to a builder returning
``(model in eval mode, example_args)``; builders seed torch themselves, so a model and its
inputs are the same in every process.

- ``resnet18``: torchvision's ResNet-18 (conv7x7/2, BN, ReLU, maxpool3x3/2, four stages of two
  BasicBlocks with 1x1 conv-BN downsample shortcuts, adaptive average pool, fc to 1000).
- ``bert``: a BERT-style encoder (word + position + token-type embeddings with LayerNorm,
  post-LN layers of masked multi-head self-attention and a GELU FFN, a tanh pooler).
- ``gpt2``: a GPT-2-style decoder (token + position embeddings, pre-LN blocks of causal
  self-attention and a tanh-GELU MLP, final LayerNorm, LM head tied to the token embedding).
- ``unet``: a diffusion UNet block (sinusoidal timestep embedding and MLP, ResNet blocks of
  GroupNorm-SiLU-conv with the timestep embedding added, self-attention over spatial positions,
  strided-conv downsampling, nearest upsampling, skip concatenation).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# ---- ResNet-18 ------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet with BasicBlocks (``layers=(2, 2, 2, 2)`` is ResNet-18), with its
    weight initialisation (Kaiming-normal convs, BN weight 1 and bias 0)."""

    def __init__(self, layers=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        c = widths[0]
        stages = []
        for i, (n, w) in enumerate(zip(layers, widths)):
            blocks = [BasicBlock(c, w, 1 if i == 0 else 2)] + [BasicBlock(w, w) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            c = w
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(c, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def randomize_batch_norm_stats(model: nn.Module):
    """Gives every BatchNorm running statistics and an affine transform away from the identity
    (as a trained network has), so that inference-mode BN is not a no-op."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)


# ---- attention helpers ----------------------------------------------------------------------


def split_heads(x, heads: int):
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x):
    b, h, t, hd = x.shape
    return x.transpose(1, 2).reshape(b, t, h * hd)


# ---- BERT -----------------------------------------------------------------------------------


class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        q, k, v = (split_heads(f(x), self.heads) for f in (self.query, self.key, self.value))
        return self.output(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))


class BertLayer(nn.Module):
    """Post-LN: ``LN(x + attn(x))``, then ``LN(x + FFN(x))`` with an exact-GELU FFN."""

    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.ffn_output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, mask):
        x = self.attention_norm(x + self.attention(x, mask))
        return self.output_norm(x + self.ffn_output(F.gelu(self.intermediate(x))))


class BertEncoder(nn.Module):
    """A BERT-style encoder. ``forward(input_ids, attention_mask, token_type_ids)`` returns the
    last hidden state ``[b, t, hidden]`` and the pooled ``[CLS]`` state ``[b, hidden]``. The
    mask (1 = attend, 0 = padding) becomes a boolean key mask for every head."""

    def __init__(self, vocab=1000, hidden=256, layers=4, heads=4, intermediate=None, max_positions=512,
                 type_vocab=2, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate or 4 * hidden, eps) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        # BERT's initialisation: normal(0, 0.02) weights, zero biases.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask, token_type_ids):
        t = input_ids.shape[1]
        positions = torch.arange(t, device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
        x = self.embedding_norm(x + self.token_type_embeddings(token_type_ids))
        mask = attention_mask[:, None, None, :].bool()
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


# ---- GPT-2 ----------------------------------------------------------------------------------


class GPT2Block(nn.Module):
    """Pre-LN: ``x + attn(LN(x))`` with causal attention, then ``x + MLP(LN(x))``."""

    def __init__(self, hidden: int, heads: int, eps: float):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        q, k, v = (split_heads(y, self.heads) for y in self.c_attn(self.ln_1(x)).chunk(3, dim=-1))
        x = x + self.c_proj(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """A GPT-2-style decoder: ``forward(input_ids)`` returns logits ``[b, t, vocab]``. The LM
    head shares its weight with the token embedding."""

    def __init__(self, vocab=1000, context=64, hidden=256, layers=4, heads=4, eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(context, hidden)
        self.h = nn.ModuleList(GPT2Block(hidden, heads, eps) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=eps)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        # GPT-2's initialisation: normal(0, 0.02), residual projections scaled by 1/sqrt(2 n).
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(torch.arange(t, device=input_ids.device))[None]
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- diffusion UNet -------------------------------------------------------------------------


class TimestepEmbedding(nn.Module):
    """Sinusoidal embedding of the timestep (``[cos, sin]`` of ``t * freqs``), then
    Linear-SiLU-Linear. The frequencies are a buffer, computed once in eager."""

    def __init__(self, channels: int, dim: int, max_period: float = 10000.0):
        super().__init__()
        half = channels // 2
        self.register_buffer("freqs", torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half))
        self.linear_1 = nn.Linear(channels, dim)
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, t):
        args = t[:, None].to(self.freqs.dtype) * self.freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        return self.linear_2(F.silu(self.linear_1(emb)))


class ResnetBlock(nn.Module):
    """GroupNorm-SiLU-conv, plus the projected timestep embedding per channel,
    GroupNorm-SiLU-conv, residual (1x1 conv when the channel count changes)."""

    def __init__(self, c_in: int, c_out: int, temb: int, groups: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, c_out)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.shortcut = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.shortcut(x) + h


class SpatialSelfAttention(nn.Module):
    """GroupNorm, then single-head self-attention over the ``h * w`` positions, residual."""

    def __init__(self, c: int, groups: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)
        self.to_qkv = nn.Linear(c, 3 * c)
        self.to_out = nn.Linear(c, c)

    def forward(self, x):
        b, c, h, w = x.shape
        y = self.norm(x).reshape(b, c, h * w).transpose(1, 2)
        q, k, v = (z[:, None] for z in self.to_qkv(y).chunk(3, dim=-1))
        y = self.to_out(F.scaled_dot_product_attention(q, k, v)[:, 0])
        return x + y.transpose(1, 2).reshape(b, c, h, w)


class UNetBlock(nn.Module):
    """A two-level diffusion UNet: ``forward(x, t)`` with ``x`` ``[b, c_in, s, s]`` and the
    timestep ``t`` ``[b]`` returns ``[b, c_in, s, s]``.

    conv_in → ResnetBlock(c) [skip] → strided conv (s/2) → ResnetBlock(c → 2c) → mid:
    ResnetBlock, SpatialSelfAttention, ResnetBlock → nearest 2x upsampling + conv → concat
    with skip → ResnetBlock(3c → c) → GroupNorm-SiLU-conv_out."""

    def __init__(self, c_in=3, c=32, groups=8):
        super().__init__()
        temb = 4 * c
        self.time_embedding = TimestepEmbedding(c, temb)
        self.conv_in = nn.Conv2d(c_in, c, 3, padding=1)
        self.down_block = ResnetBlock(c, c, temb, groups)
        self.downsample = nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.down_block2 = ResnetBlock(c, 2 * c, temb, groups)
        self.mid_block1 = ResnetBlock(2 * c, 2 * c, temb, groups)
        self.mid_attention = SpatialSelfAttention(2 * c, groups)
        self.mid_block2 = ResnetBlock(2 * c, 2 * c, temb, groups)
        self.upsample_conv = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.up_block = ResnetBlock(3 * c, c, temb, groups)
        self.norm_out = nn.GroupNorm(groups, c)
        self.conv_out = nn.Conv2d(c, c_in, 3, padding=1)

    def forward(self, x, t):
        temb = self.time_embedding(t)
        skip = self.down_block(self.conv_in(x), temb)
        h = self.down_block2(self.downsample(skip), temb)
        h = self.mid_block2(self.mid_attention(self.mid_block1(h, temb)), temb)
        h = self.upsample_conv(F.interpolate(h, scale_factor=2, mode="nearest"))
        h = self.up_block(torch.cat([h, skip], dim=1), temb)
        return self.conv_out(F.silu(self.norm_out(h)))


# ---- builders -------------------------------------------------------------------------------


def resnet18(size: int = 224, batch: int = 1, seed: int = 0):
    torch.manual_seed(seed)
    model = ResNet((2, 2, 2, 2))
    randomize_batch_norm_stats(model)
    return model.eval(), (torch.randn(batch, 3, size, size),)


def bert(seq: int = 128, batch: int = 1, seed: int = 0, **config):
    """BERT inputs: random token ids, a mask padding the last eighth of every sequence, and
    token types 0 for the first half and 1 for the second."""
    torch.manual_seed(seed)
    model = BertEncoder(**config)
    vocab = model.word_embeddings.num_embeddings
    input_ids = torch.randint(0, vocab, (batch, seq), dtype=torch.int64)
    attention_mask = torch.ones(batch, seq, dtype=torch.int64)
    attention_mask[:, seq - seq // 8:] = 0
    token_type_ids = (torch.arange(seq) >= seq // 2).to(torch.int64).expand(batch, seq).contiguous()
    return model.eval(), (input_ids, attention_mask, token_type_ids)


def gpt2(seq: int = 64, batch: int = 1, seed: int = 0, **config):
    torch.manual_seed(seed)
    model = GPT2(context=max(seq, config.pop("context", seq)), **config)
    vocab = model.wte.num_embeddings
    return model.eval(), (torch.randint(0, vocab, (batch, seq), dtype=torch.int64),)


def unet(size: int = 32, batch: int = 1, seed: int = 0, **config):
    torch.manual_seed(seed)
    model = UNetBlock(**config)
    c_in = model.conv_in.in_channels
    return model.eval(), (torch.randn(batch, c_in, size, size), torch.full((batch,), 500.0))


# name -> builder returning (model in eval mode, example_args); every builder seeds torch first.
MODELS = {
    "resnet18": resnet18,
    "bert": bert,
    "gpt2": gpt2,
    "unet": unet,
}

"""Every Transformers model type, built small, through fxhlo, aot_eager and eager.

For each model type in ``transformers.models.auto.configuration_auto.CONFIG_MAPPING_NAMES``
(nothing is downloaded: ``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``) the sweep builds the
type's default config with small sizes (width 64, 2 layers, 4 heads, 4 experts of which 2 per
token, 64x64 images, ...; sub-configs alike, falling back to fewer overrides, then to the
defaults, where a smaller config does not build or run), instantiates the base model with
``AutoModel.from_config`` (``torch.manual_seed(0)``, ``.eval()``) and calls it under
``torch.no_grad()`` with ``input_ids`` [1, 8] and/or ``pixel_values``, whichever its forward
takes (types that want other inputs, audio for one, are *skipped*). The eager output is the
reference for

    torch.compile(model, backend="aot_eager", fullgraph=False, dynamic=False)
    torch.compile(model, backend="fxhlo",     fullgraph=False, dynamic=False)

(``torch._dynamo.reset()`` before each): every tensor of the output, flattened, must match with
rtol = atol = 1e-4 (NaN equal to NaN); the largest absolute error is recorded. Per type:
``status_eager`` ok / eager_error / skipped (these two are excluded), ``status_aot_eager`` and
``status_fxhlo`` pass / fail / crash / timeout, with ``reason`` (fxhlo's: the ATen ops it does not
lower, else the error's first line; eager's where it is the one that failed).

    .venv/bin/python scripts/hf_sweep.py --out /tmp/hf_sweep/result.json
    .venv/bin/python scripts/hf_sweep.py --types bert,gpt2,mixtral -v   # a few types, each printed

Types run in worker processes, ``--batch`` types each, one worker at a time (``--jobs`` for
more); a worker that dies (a crash in a compiler) or stalls past ``--timeout`` seconds in one
phase (build+eager, aot_eager, fxhlo) is replaced and that phase is recorded as crash/timeout,
so one bad model never stops the sweep. Runtime: a small model takes some 3-30 s (build, two
compiles); all 822 types (about half of them skipped or failing in eager within a second or
two) took 52 minutes on a shared 2-core machine under ``nice -n 15``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from opinfo_sweep import first_line, unsupported  # this folder is on sys.path when a script runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOL = 1e-4
SEQ = 8
IMAGE = 64
VOCAB = 256
TOKEN_ID_SUFFIXES = ("_token_id", "_token_index", "_token_ids")
MAX_PARAMS = 60_000_000  # a config that does not shrink below this is not run (memory, time)
PHASES = ("eager", "aot_eager", "fxhlo")

# ---- small configs --------------------------------------------------------------------------

HIDDEN = ("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "emb_dim", "word_embed_proj_dim")
LAYERS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "encoder_layers", "decoder_layers",
          "num_decoder_layers", "num_encoder_layers", "depth")
HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads", "decoder_attention_heads")
KV_HEADS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num")
FFN = ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim", "hidden_dim",
       "ffn_hidden_size", "dim_feedforward")
POSITIONS = ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_sequence_length")
EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts", "n_experts")
TOP_K = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "n_activated_experts", "num_selected_experts", "moe_k")
EXPERT_FFN = ("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
              "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size")
MOE_KEYS = EXPERTS
# Overrides by level: "small" shrinks everything; "small_wide_heads" keeps the type's own head
# size (2 heads of it: models that hard-code a rotary split of it, Qwen2-VL's M-RoPE sections);
# "small_mrope" is "small" with an M-RoPE section list written into rope_parameters for the models
# that hard-code one for the full-size head when the config has none (GLM-4V);
# "text" and "text_wide_heads" leave image geometry alone; "layers" only cuts depth, experts and
# vocabulary (widths stay: a config whose widths are tied up in ways the rules do not know);
# "default" is the type's own config.
LEVELS = ("small", "small_wide_heads", "small_mrope", "text", "text_wide_heads", "layers", "default")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _init_names(cls) -> set[str] | None:
    """The config class's constructor arguments (its dataclass fields, else its signature)."""
    import inspect

    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls) if f.init}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return None
    return {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"}


def _special_ids(cfg) -> set[int]:
    """Every token id the config (and its sub-configs) names: the vocabulary must hold them."""
    from transformers import PreTrainedConfig

    ids = set()
    for k, v in vars(cfg).items():
        if isinstance(v, PreTrainedConfig):
            ids |= _special_ids(v)
        elif k.endswith(TOKEN_ID_SUFFIXES):
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if _is_int(x) and 0 <= x < 10_000_000:
                    ids.add(x)
    return ids


def _split_evenly(parts: list[int], total: int) -> list[int]:
    """``parts`` scaled to add up to ``total`` (each at least 1): an M-RoPE section list for a
    smaller head."""
    scaled = [max(1, x * total // max(1, sum(parts))) for x in parts]
    scaled[-1] += total - sum(scaled)
    return scaled


@dataclasses.dataclass(frozen=True)
class Vocab:
    """The small vocabulary: ``size`` ids, the config's special token ids at or above it moved
    to free ids below it (``remap``). A config naming too many special ids keeps them all and
    grows ``size`` past the largest."""

    size: int
    remap: dict

    @classmethod
    def plan(cls, cfg) -> "Vocab":
        ids = _special_ids(cfg)
        big = sorted(i for i in ids if i >= VOCAB)
        free = [i for i in range(VOCAB - 1, 2, -1) if i not in ids]
        if len(big) > len(free) // 2:
            return cls(max(ids) + 1, {})
        return cls(VOCAB, dict(zip(big, free)))

    def token(self, v):
        if isinstance(v, (list, tuple)):
            return type(v)(self.token(x) for x in v)
        return self.remap.get(v, v) if _is_int(v) else v


def _overrides(cfg, level: str, vocab: Vocab) -> dict:
    """The small values for one config (not its sub-configs), by ``level``."""
    d = {k: v for k, v in vars(cfg).items() if not k.startswith("_")}
    out: dict = {}
    for k, v in d.items():
        if k.endswith(TOKEN_ID_SUFFIXES) and vocab.token(v) != v:
            out[k] = vocab.token(v)

    def put(keys, value, only_if_larger=True):
        for k in keys:
            v = d.get(k)
            if (_is_int(v) or isinstance(v, float)) and (v > value or not only_if_larger):
                out[k] = value

    old_layers = next((d[k] for k in LAYERS if _is_int(d.get(k))), None)
    put(LAYERS, 2)
    for k in ("vocab_size", "vocab_size_per_layer_input"):
        if k in d and (d[k] is None or _is_int(d[k])):
            out[k] = vocab.size
    moe = any(_is_int(d.get(k)) and d[k] > 1 for k in EXPERTS)
    put(EXPERTS, 4)
    put(TOP_K, 2)
    for k in TOP_K:
        if moe and k in d and d[k] is None:
            out[k] = 2  # a MoE config that leaves it to the checkpoint
    put(("num_kv_shared_layers",), 0)
    put(("width_coefficient", "depth_coefficient"), 1.0)
    put(("n_shared_experts", "num_shared_experts"), 1)
    put(("n_group", "topk_group"), 1)
    put(("first_k_dense_replace",), 1)
    put(("decoder_sparse_step", "moe_layer_freq"), 1)
    if isinstance(d.get("mlp_only_layers"), list):
        out["mlp_only_layers"] = []
    if isinstance(d.get("depths"), (list, tuple)) and all(_is_int(x) for x in d["depths"]):
        out["depths"] = type(d["depths"])([1] * len(d["depths"]))
    # GPT-Neo's [[["global", "local"], 6]]: one repeat of the pattern.
    types = d.get("attention_types")
    if isinstance(types, (list, tuple)) and types and isinstance(types[0], (list, tuple)) and len(types[0]) == 2:
        out["attention_types"] = [[list(types[0][0]), max(1, 2 // max(1, len(types[0][0])))]]
    # Per-layer lists (layer_types, ...) as long as the old depth: keep the first layers.
    if _is_int(old_layers) and old_layers >= 6:
        for k, v in d.items():
            if isinstance(v, (list, tuple)) and len(v) == old_layers and k not in out:
                out[k] = v[:2]
    if level == "layers":
        return out
    heads_int = next((d[k] for k in HEADS if k in d), None)
    hidden_int = next((d[k] for k in HIDDEN if _is_int(d.get(k))), None)
    own_head = d.get("head_dim") if _is_int(d.get("head_dim")) else (
        hidden_int // heads_int if _is_int(hidden_int) and _is_int(heads_int) and heads_int else None)
    wide = level.endswith("wide_heads") and _is_int(own_head) and _is_int(heads_int)
    if wide:
        put(HIDDEN, 2 * own_head)
        put(HEADS, 2)
        for k in KV_HEADS:
            v = d.get(k)
            if _is_int(v) and v > 1:
                out[k] = 2 if v == heads_int else 1
    else:
        if not isinstance(heads_int, (list, tuple)):
            put(HIDDEN, 64)
        put(HEADS, 4)
        for k in KV_HEADS:
            v = d.get(k)
            if _is_int(v) and v > 1:
                out[k] = 4 if v == heads_int else 2
        for k, v in d.items():
            if k.endswith(("head_dim", "d_kv", "kv_channels")) and _is_int(v) and v > 16:
                out[k] = 16
        if "head_dim" in d and d["head_dim"] is None and _is_int(heads_int):
            out["head_dim"] = 16  # models that read config.head_dim as it is
    # Per-stage widths (ResNet, ConvNeXt, ...): 16, 32, 64, ...
    if isinstance(d.get("hidden_sizes"), (list, tuple)) and all(_is_int(x) for x in d["hidden_sizes"]):
        out["hidden_sizes"] = type(d["hidden_sizes"])(16 * 2**i for i in range(len(d["hidden_sizes"])))
    put(FFN, 64)
    put(EXPERT_FFN, 32)
    put(("kv_lora_rank", "q_lora_rank"), 32)
    put(POSITIONS, 128)
    rope = d.get("rope_parameters") or d.get("rope_scaling")
    key = "rope_parameters" if d.get("rope_parameters") else "rope_scaling"
    if not wide and isinstance(rope, dict) and isinstance(rope.get("mrope_section"), (list, tuple)):
        half = out.get("head_dim", 16) // 2
        out[key] = {**rope, "mrope_section": _split_evenly(list(rope["mrope_section"]), half)}
    elif level == "small_mrope" and isinstance(rope, dict) and "mrope_section" not in rope:
        factor = rope.get("partial_rotary_factor") or d.get("partial_rotary_factor") or 1.0
        half = max(3, int(out.get("head_dim", 16) * factor) // 2)
        out[key] = {**rope, "mrope_section": _split_evenly([16, 24, 24], half)}
    if "pad_token_id" in d and d["pad_token_id"] is None:
        out["pad_token_id"] = 0  # models that compare ids with it (ESM); 0 is never an input id
    if level.startswith("text"):
        return out
    if _is_int(d.get("image_size")) and d["image_size"] > IMAGE:
        out["image_size"] = IMAGE
    elif isinstance(d.get("image_size"), (list, tuple)) and len(d["image_size"]) == 2:
        out["image_size"] = type(d["image_size"])([IMAGE, IMAGE])
    if "image_size" in out and _is_int(d.get("patch_size")) and d["patch_size"] > 8:
        out["patch_size"] = 8
    # Image tokens pooled from the (now 8x8) patch grid (Gemma 3's 256 = 16x16 would not fit).
    put(("mm_tokens_per_image",), 16)
    return out


def small_config(cfg, level: str, vocab: Vocab):
    """``cfg`` rebuilt with the ``level`` overrides, sub-configs first (passed as dicts, as a
    saved config passes them)."""
    from transformers import PreTrainedConfig

    cls = type(cfg)
    names = _init_names(cls)
    kwargs = {}
    for k, v in vars(cfg).items():
        if isinstance(v, PreTrainedConfig) and (names is None or k in names):
            kwargs[k] = small_config(v, level, vocab).to_dict()
    for k, v in _overrides(cfg, level, vocab).items():
        if names is None or k in names:
            kwargs[k] = v
    return cls(**kwargs)


def config_tree(cfg):
    from transformers import PreTrainedConfig

    yield cfg
    for v in vars(cfg).values():
        if isinstance(v, PreTrainedConfig):
            yield from config_tree(v)


def is_moe(cfg) -> bool:
    return any(_is_int(getattr(c, k, None)) and getattr(c, k) > 1 for c in config_tree(cfg) for k in MOE_KEYS)


# ---- inputs ---------------------------------------------------------------------------------


def _find(cfg, names, default):
    for c in config_tree(cfg):
        for n in names:
            v = getattr(c, n, None)
            if v is not None:
                return v
    return default


def _pixel_values(cfg):
    import torch

    size = _find(cfg, ("image_size",), IMAGE)
    h, w = (size, size) if _is_int(size) else (tuple(size) + (IMAGE, IMAGE))[:2]
    channels = _find(cfg, ("num_channels", "in_channels"), 3)
    g = torch.Generator().manual_seed(1)
    return torch.randn(1, int(channels) if _is_int(channels) else 3, int(h), int(w), generator=g)


def _image_token(cfg):
    for c in config_tree(cfg):
        for n in ("image_token_id", "image_token_index"):
            v = getattr(c, n, None)
            if _is_int(v):
                return v
    return None


def _text_ids(cfg, vocab: Vocab, n: int):
    import torch

    special = _special_ids(cfg)
    allowed = [i for i in range(3, min(vocab.size, VOCAB)) if i not in special] or [0]
    g = torch.Generator().manual_seed(2)
    pick = torch.randint(0, len(allowed), (n,), generator=g)
    return torch.tensor([[allowed[i] for i in pick.tolist()]], dtype=torch.long)


def _feature_rows(out) -> int:
    import torch

    if hasattr(out, "pooler_output") and isinstance(getattr(out, "pooler_output"), (torch.Tensor, list, tuple)):
        out = out.pooler_output
    elif hasattr(out, "to_tuple"):
        out = out.to_tuple()[0]
    if isinstance(out, torch.Tensor):
        return out.numel() // out.shape[-1]
    if isinstance(out, (list, tuple)):
        return sum(_feature_rows(o) for o in out)
    raise TypeError(f"image features of type {type(out).__name__}")


def _grid_pixels(cfg):
    """Qwen2-VL-style vision input: flattened patches and their ``image_grid_thw`` (one image,
    one frame, a 2m x 2m patch grid for an m x m spatial merge)."""
    import torch

    vc = next((c for c in config_tree(cfg) if _is_int(getattr(c, "temporal_patch_size", None))
               or _is_int(getattr(c, "spatial_merge_size", None))), cfg)
    p = getattr(vc, "patch_size", 14)
    p = p if _is_int(p) else 14
    tp = getattr(vc, "temporal_patch_size", 1)
    tp = tp if _is_int(tp) else 1
    m = getattr(vc, "spatial_merge_size", 1)
    m = m if _is_int(m) else 1
    ch = getattr(vc, "in_channels", None) or getattr(vc, "num_channels", None) or 3
    side = 2 * m
    g = torch.Generator().manual_seed(1)
    pv = torch.randn(side * side, int(ch) * tp * p * p, generator=g)
    return {"pixel_values": pv, "image_grid_thw": torch.tensor([[1, side, side]])}


def input_skip(params) -> str | None:
    """The reason a forward with these parameters is not run, or None."""
    if "input_ids" in params or "pixel_values" in params:
        return None
    required = [n for n, p in params.items()
                if p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"]
    first = required or [n for n in params if n not in ("self", "args", "kwargs")][:1]
    return f"skipped: forward takes neither input_ids nor pixel_values (wants {', '.join(first[:3]) or '?'})"


def input_candidates(model, cfg, vocab: Vocab):
    """(label, kwargs factory) pairs to try in order, or a skip reason."""
    import inspect

    import torch

    params = inspect.signature(model.forward).parameters
    skip = input_skip(params)
    if skip is not None:
        return skip
    has_ids, has_pix = "input_ids" in params, "pixel_values" in params
    extra = {}
    if "use_cache" in params:
        extra["use_cache"] = False

    def finish(kw):
        # Encoder-decoders get the same ids as decoder input; BLIP's Q-Former its own copy.
        for name in ("decoder_input_ids", "qformer_input_ids"):
            if name in params and "input_ids" in kw:
                kw[name] = kw["input_ids"][:, :SEQ].clone()
        return {**kw, **extra}

    def image():
        return _grid_pixels(cfg) if "image_grid_thw" in params else {"pixel_values": _pixel_values(cfg)}

    cands = []
    if has_ids and has_pix:
        token = _image_token(cfg)
        if token is not None and hasattr(model, "get_image_features"):
            def image_tokens():
                img = image()
                with torch.no_grad():
                    rows = _feature_rows(model.get_image_features(**img))
                if rows > 1024:
                    raise ValueError(f"{rows} image features")
                text = _text_ids(cfg, vocab, SEQ)
                start, end = _find(cfg, ("vision_start_token_id",), None), _find(cfg, ("vision_end_token_id",), None)
                middle = ([start] if _is_int(start) else []) + [token] * rows + ([end] if _is_int(end) else [])
                ids = torch.cat([text[:, :4], torch.tensor([middle], dtype=torch.long), text[:, 4:]], 1)
                return finish({"input_ids": ids, **img})
            cands.append(("input_ids+image_tokens+pixel_values", image_tokens))
        cands.append(("input_ids+pixel_values", lambda: finish({"input_ids": _text_ids(cfg, vocab, SEQ), **image()})))
    if has_ids:
        cands.append(("input_ids", lambda: finish({"input_ids": _text_ids(cfg, vocab, SEQ)})))
    if has_pix:
        cands.append(("pixel_values", lambda: finish(image())))
    return cands


# ---- comparing outputs ----------------------------------------------------------------------


def flatten(out, prefix="out") -> list:
    """(path, tensor) for every tensor in a model output (ModelOutput, tuples, dicts, caches)."""
    import torch

    if isinstance(out, torch.Tensor):
        return [(prefix, out)]
    if hasattr(out, "to_tuple") and hasattr(out, "keys"):
        return [t for k in out.keys() for t in flatten(out[k], f"{prefix}.{k}")]
    if isinstance(out, dict):
        return [t for k in sorted(out, key=str) for t in flatten(out[k], f"{prefix}.{k}")]
    if isinstance(out, (list, tuple)):
        return [t for i, v in enumerate(out) for t in flatten(v, f"{prefix}[{i}]")]
    return []


def compare(actual, expected) -> tuple[str | None, float]:
    """(None or the first mismatch, largest absolute error over all floating tensors)."""
    import torch

    a, e = flatten(actual), flatten(expected)
    if [p for p, _ in a] != [p for p, _ in e]:
        return f"mismatch: output structure differs ({len(a)} vs {len(e)} tensors)", None
    worst, first = 0.0, None
    for (path, x), (_, y) in zip(a, e):
        if x.shape != y.shape or x.dtype != y.dtype:
            first = first or f"mismatch: {path} is {x.dtype}{list(x.shape)}, eager {y.dtype}{list(y.shape)}"
            continue
        if x.is_floating_point() or x.is_complex():
            diff = (x.detach().double() - y.detach().double()).abs()
            both_nan = torch.isnan(x) & torch.isnan(y)
            diff = torch.where(both_nan, torch.zeros_like(diff), diff)
            if diff.numel():
                m = torch.nan_to_num(diff, nan=float("inf")).max().item()
                worst = max(worst, m)
        try:
            torch.testing.assert_close(x, y, rtol=TOL, atol=TOL, equal_nan=True)
        except AssertionError as err:
            lines = [l.strip() for l in str(err).splitlines() if l.strip()]
            detail = next((l for l in lines if l.startswith("Greatest absolute")), lines[0] if lines else "")
            first = first or f"mismatch: {path}: {detail}"[:300]
    return first, worst


# ---- the worker: runs types in this process, one JSON line per phase -------------------------


def _emit(t: str, phase: str, **kw) -> None:
    print(json.dumps({"type": t, "phase": phase, **kw}), flush=True)


def _model_class(cfg):
    """AutoModel's class for the config, or None where the mapping does not say."""
    from transformers import AutoModel

    try:
        cls = AutoModel._model_mapping[type(cfg)]
    except Exception:  # noqa: BLE001 -- no entry: from_config says why later
        return None
    return cls[0] if isinstance(cls, (list, tuple)) else cls


def _build(model_type: str):
    """(model, config, level, picked) for the smallest level that builds and runs in eager,
    ``picked`` being (inputs label, kwargs, eager output, inputs that failed, levels that
    failed) or a skip reason; raises with every level's reason."""
    import inspect

    import torch
    from transformers import AutoConfig, AutoModel

    base = AutoConfig.for_model(model_type)
    cls = _model_class(base)
    try:
        skip = input_skip(inspect.signature(cls.forward).parameters) if cls is not None else None
    except Exception:  # noqa: BLE001 -- a placeholder class (a missing dependency): from_config says why
        skip = None
    if skip is not None:
        return None, base, None, skip
    vocab = Vocab.plan(base)
    errors = []
    seen = set()
    for level in LEVELS:
        try:
            cfg = base if level == "default" else small_config(base, level, vocab)
            key = cfg.to_json_string()
            if key in seen:
                continue  # the same config as a level already tried
            seen.add(key)
            try:
                with torch.device("meta"):
                    meta = AutoModel.from_config(cfg)
                n = sum(p.numel() for p in meta.parameters())
                del meta
            except Exception:  # noqa: BLE001 -- a model that cannot be built on meta
                if level == "default":
                    raise
                n = 0  # small by construction
            if n > MAX_PARAMS:
                errors.append(f"{level}: {n / 1e6:.0f}M parameters")
                continue
            torch.manual_seed(0)
            model = AutoModel.from_config(cfg).eval()
            cands = input_candidates(model, cfg, vocab)
            if isinstance(cands, str):
                return model, cfg, level, cands
            tried = []
            for label, make in cands:
                try:
                    kwargs = make()
                    torch.manual_seed(0)
                    with torch.no_grad():
                        expected = model(**kwargs)
                    return model, cfg, level, (label, kwargs, expected, tried, errors)
                except Exception as e:  # noqa: BLE001 -- try the next inputs
                    tried.append(f"{label}: {first_line(e)}")
            errors.append(f"{level}: " + "; ".join(tried))
        except Exception as e:  # noqa: BLE001 -- try the next level
            errors.append(f"{level}: {first_line(e)}")
            if isinstance(e, ImportError) or "Unrecognized configuration class" in str(e):
                break  # the same at every level: a missing library, no AutoModel class
    raise RuntimeError(" | ".join(errors))


def check_type(model_type: str, skip_aot: bool) -> None:
    import torch

    _emit(model_type, "eager", start=True)
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    if model_type not in MODEL_MAPPING_NAMES:
        _emit(model_type, "eager", result={"status_eager": "skipped", "reason": "skipped: no AutoModel class for the type"})
        return
    try:
        model, cfg, level, picked = _build(model_type)
    except Exception as e:  # noqa: BLE001
        reason = " ".join(f"eager_error: {e}".split())  # one line, as every other reason
        _emit(model_type, "eager", result={"status_eager": "eager_error", "reason": reason[:600]})
        return
    if isinstance(picked, str):
        result = {"status_eager": "skipped", "reason": picked}
        if level is not None:
            result["config"] = level
        _emit(model_type, "eager", result=result)
        return
    label, kwargs, expected, tried, level_errors = picked
    info = {"status_eager": "ok", "config": level, "inputs": label, "model_class": type(model).__name__,
            "moe": is_moe(cfg), "params": sum(p.numel() for p in model.parameters())}
    if tried:
        info["inputs_failed"] = [t[:200] for t in tried]
    if level_errors:
        info["config_failed"] = [t[:300] for t in level_errors]
    torch.manual_seed(0)
    with torch.no_grad():
        again = model(**kwargs)
    if compare(again, expected)[0] is not None:
        info["eager_nondeterministic"] = True
    _emit(model_type, "eager", result=info)

    census_due = False
    for backend in ("aot_eager", "fxhlo"):
        if backend == "aot_eager" and skip_aot:
            continue
        _emit(model_type, backend, start=True)
        res: dict = {}
        try:
            torch._dynamo.reset()
            compiled = torch.compile(model, backend=backend, fullgraph=False, dynamic=False)
            torch.manual_seed(0)
            with torch.no_grad():
                actual = compiled(**kwargs)
            reason, err = compare(actual, expected)
            res["max_err"] = err
            res["status"] = "pass" if reason is None else "fail"
            if reason is not None:
                res["reason"] = reason
        except Exception as e:  # noqa: BLE001
            res["status"] = "fail"
            if backend == "fxhlo":
                census_due = True
            unsup = unsupported(e) if backend == "fxhlo" else None
            if unsup is not None:
                ops = sorted({str(t) for t, _, _ in unsup.ops})
                res["ops"] = ops
                res["reason"] = "unlowered: " + ", ".join(ops)
            else:
                res["reason"] = first_line(e)
        finally:
            torch._dynamo.reset()
        _emit(model_type, backend, result=res)
    if census_due:
        _emit(model_type, "census", start=True)
        _emit(model_type, "census", result=census(model, kwargs))


def census(model, kwargs) -> dict:
    """Every graph's fate when fxhlo's first failure does not stop the run: a backend that hands
    each Dynamo graph to fxhlo and runs in eager the graphs fxhlo refuses, collecting the
    unlowered ops of all of them (the plain run names only the first failing graph's)."""
    import fxhlo
    import torch

    ops: set[str] = set()
    errors: list[str] = []
    graphs = [0, 0]

    def backend(gm, example_inputs):
        graphs[0] += 1
        try:
            return fxhlo.fxhlo_backend(gm, example_inputs)
        except Exception as e:  # noqa: BLE001 -- recorded; the graph runs in eager
            graphs[1] += 1
            unsup = unsupported(e)
            if unsup is not None:
                ops.update(str(t) for t, _, _ in unsup.ops)
            else:
                errors.append(first_line(e))
            return gm.forward

    out = {}
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, fullgraph=False, dynamic=False)
        torch.manual_seed(0)
        with torch.no_grad():
            compiled(**kwargs)
    except Exception as e:  # noqa: BLE001
        out["census_error"] = first_line(e)
    finally:
        torch._dynamo.reset()
    out.update({"ops_all": sorted(ops), "graphs": graphs[0], "graphs_failed": graphs[1]})
    if errors:
        out["errors_all"] = sorted(set(errors))
    return out


def worker(types: list[str], skip_aot: set[str]) -> None:
    import logging
    import warnings

    import torch
    import torch._dynamo

    import fxhlo  # noqa: F401 -- registers the backend
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    torch._dynamo.config.cache_size_limit = 64
    for t in types:
        check_type(t, t in skip_aot)
        _emit(t, "done")


# ---- the parent: batches types over workers, survives crashes and stalls ---------------------


def all_types() -> list[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return sorted(CONFIG_MAPPING_NAMES)


def _merge(rec: dict, phase: str, result: dict) -> None:
    if phase in ("eager", "census"):
        rec.update(result)
        return
    rec[f"status_{phase}"] = result["status"]
    if phase == "fxhlo":
        for k in ("reason", "ops", "max_err"):
            if k in result:
                rec[k] = result[k]
    else:
        if "reason" in result:
            rec["reason_aot_eager"] = result["reason"]
        if "max_err" in result:
            rec["max_err_aot_eager"] = result["max_err"]


def sweep(types: list[str], batch: int, jobs: int, timeout: float, verbose: bool) -> dict:
    pending: collections.deque = collections.deque((t, False) for t in types)
    records: dict[str, dict] = {}
    lock = threading.Lock()
    done_count = [0]
    started = time.perf_counter()

    def report(t: str) -> None:
        r = records[t]
        done_count[0] += 1
        if verbose or r.get("status_fxhlo") not in (None, "pass"):
            st = "/".join(str(r.get(f"status_{p}", "-")) for p in PHASES)
            print(f"[{done_count[0]:>4}/{len(types)} {time.perf_counter() - started:6.0f}s] {t:<36} {st:<22} "
                  f"{r.get('reason', '')[:200]}", flush=True)

    def run_batch(items: list[tuple[str, bool]]) -> None:
        names = [t for t, _ in items]
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--types", ",".join(names)]
        skip = [t for t, s in items if s]
        if skip:
            cmd += ["--skip-aot", ",".join(skip)]
        with tempfile.TemporaryFile("w+") as err:
            env = dict(os.environ, PYTHONWARNINGS="ignore", FXHLO_CACHE=os.environ.get("FXHLO_CACHE", "off"))
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)], daemon=True).start()
            current = None  # (type, phase) in progress
            finished: set[str] = set()
            while True:
                try:
                    line = lines.get(timeout=timeout)
                except queue.Empty:
                    proc.kill()
                    failure = ("timeout", f"timeout: no result in {timeout:.0f} s")
                    break
                if line is None:
                    code = proc.wait()
                    err.seek(0)
                    tail = [l.strip() for l in err.read().splitlines() if l.strip()][-1:]
                    failure = ("crash", f"crash: the worker died (exit {code}){': ' + tail[0][:200] if tail else ''}")
                    break
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue  # something else printed to stdout
                t, phase = msg["type"], msg["phase"]
                with lock:
                    rec = records.setdefault(t, {"type": t})
                    if phase == "done":
                        current = None
                        finished.add(t)
                        report(t)
                    elif msg.get("start"):
                        current = (t, phase)
                    else:
                        _merge(rec, phase, msg["result"])
            proc.wait()
        with lock:
            if current is not None:
                t, phase = current
                status, reason = failure
                rec = records.setdefault(t, {"type": t})
                finished.add(t)
                if phase == "eager":
                    rec.update({"status_eager": "eager_error", "reason": f"eager_error: {reason}"})
                elif phase == "aot_eager":
                    rec["status_aot_eager"] = status
                    rec["reason_aot_eager"] = reason
                    finished.discard(t)
                    pending.appendleft((t, True))  # fxhlo still runs, without aot_eager
                elif phase == "census":
                    rec["census_error"] = reason
                else:
                    rec["status_fxhlo"] = status
                    rec["reason"] = reason
                if t in finished:
                    report(t)
            if current is None and not finished:
                # The worker died before its first type (an import failed): record that type
                # as failed, so that the sweep moves on.
                t = items[0][0]
                records.setdefault(t, {"type": t}).update(
                    {"status_eager": "eager_error", "reason": f"eager_error: {failure[1]}"})
                finished.add(t)
                report(t)
            # Types after the one that crashed or stalled go back in the queue, in order.
            for item in reversed(items):
                if item[0] not in finished and item[0] != (current or ("",))[0]:
                    pending.appendleft(item)

    def lane() -> None:
        while True:
            with lock:
                items = [pending.popleft() for _ in range(min(batch, len(pending)))]
            if not items:
                return
            run_batch(items)

    threads = [threading.Thread(target=lane) for _ in range(jobs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {t: records[t] for t in sorted(records)}


def summary(table: dict) -> str:
    rows = list(table.values())
    ran = [r for r in rows if r.get("status_eager") == "ok"]
    c = collections.Counter(r.get("status_eager", "?") for r in rows)
    aot = collections.Counter(r.get("status_aot_eager", "not run") for r in ran)
    fx = collections.Counter(r.get("status_fxhlo", "not run") for r in ran)
    fx_only = [r for r in ran if r.get("status_aot_eager") == "pass" and r.get("status_fxhlo") != "pass"]
    out = [
        f"types: {len(rows)}  (eager ok {c['ok']}, eager_error {c['eager_error']}, skipped {c['skipped']})",
        f"run in eager:                 {len(ran)}",
        f"aot_eager matches eager:      {aot['pass']}  (" + ", ".join(f"{k} {v}" for k, v in sorted(aot.items())) + ")",
        f"fxhlo matches eager:          {fx['pass']}  (" + ", ".join(f"{k} {v}" for k, v in sorted(fx.items())) + ")",
        f"fxhlo fails, aot_eager passes: {len(fx_only)}",
    ]
    ops = collections.Counter(op for r in ran for op in r.get("ops", []))
    ops_all = collections.Counter(op for r in ran for op in r.get("ops_all", []))
    if ops or ops_all:
        out.append("\nfxhlo: unlowered ops, types that name each (first failing graph / all graphs):")
        out += [f"  {ops[op]:>4} / {ops_all[op]:>4}  {op}"
                for op in sorted(set(ops) | set(ops_all), key=lambda o: (-ops[o], -ops_all[o], o))]
    other = collections.Counter(r.get("reason", "")[:120] for r in ran
                                if r.get("status_fxhlo") not in ("pass", None) and not r.get("ops"))
    if other:
        out.append("\nfxhlo: other failure reasons (types):")
        out += [f"  {n:>4}  {reason}" for reason, n in other.most_common()]
    moe = [r for r in ran if r.get("moe")]
    if moe:
        out.append(f"\nMoE types run in eager: {len(moe)}, fxhlo matches {sum(r.get('status_fxhlo') == 'pass' for r in moe)}")
        for r in moe:
            out.append(f"  {r['type']:<28} aot_eager {r.get('status_aot_eager', '-'):<8} fxhlo {r.get('status_fxhlo', '-'):<8} "
                       f"{r.get('reason', '')[:150]}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", help="comma-separated model types (default: all)")
    ap.add_argument("--batch", type=int, default=10, help="types per worker process")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds one phase of one type may take")
    ap.add_argument("--out", type=Path, help="write the per-type results as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every type, not only fxhlo failures")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-aot", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.types.split(","), set(filter(None, a.skip_aot.split(","))))
        return 0
    names = all_types()
    if a.types:
        wanted = [t for t in a.types.split(",") if t]
        unknown = [t for t in wanted if t not in names]
        if unknown:
            ap.error(f"no model type {unknown[0]!r} in CONFIG_MAPPING_NAMES")
        names = wanted
    t = time.perf_counter()
    table = sweep(names, a.batch, a.jobs, a.timeout, a.verbose)
    print()
    print(summary(table))
    print(f"\n({time.perf_counter() - t:.0f} s)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        # No timings: a re-recorded sweep diffs only where a result changed.
        stable = {k: {f: v for f, v in r.items() if f != "type"} for k, r in table.items()}
        a.out.write_text(json.dumps({"tolerance": TOL, "types": stable}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Larger real graphs (fxhlo.models: ResNet-18, a BERT encoder, a GPT-2 decoder, a diffusion
UNet), exported at test time and run through `fxhlo run --check` on the PJRT CPU plugin."""

import os
import re
import subprocess
import time

import pytest
from safetensors import safe_open

import fxhlo
from fxhlo.models import MODELS

from conftest import ROOT

# name -> builder keyword arguments (batch 1 everywhere; ResNet-18 at its ImageNet size).
CONFIGS = {
    "resnet18": {"size": 224},
    "bert": {},
    "gpt2": {},
    "unet": {},
}
CLI_TIMEOUT_S = 600


def test_every_model_has_a_config():
    assert sorted(CONFIGS) == sorted(MODELS)


def _timings(stdout: str, stderr: str) -> str:
    compiled = re.search(r"codegen ([\d.]+) ms, PJRT compile ([\d.]+) ms", stdout)
    ran = re.findall(r"ran executable .*elapsed_us=([\d.]+)", stderr)
    return (f"codegen {compiled[1] if compiled else '?'} ms, PJRT compile {compiled[2] if compiled else '?'} ms, "
            f"run {f'{float(ran[-1]) / 1e3:.1f}' if ran else '?'} ms")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_model_matches_pytorch_through_the_cli(name, tmp_path, fxhlo_cli):
    model, args = MODELS[name](**CONFIGS[name])
    start = time.perf_counter()
    bundle = fxhlo.export(model, args, tmp_path / f"{name}.fxt", reference=True, name=name, source_root=ROOT)
    exported = time.perf_counter()
    with safe_open(bundle / "reference.safetensors", "pt") as f:
        n_outputs = sum(k.startswith("output.") for k in f.keys())

    # The executable's trace line carries the run time; NO_COLOR keeps it parseable.
    env = dict(os.environ, FXHLO_LOG="warn,fxhlo_runtime::executable=trace", NO_COLOR="1")
    try:
        proc = subprocess.run([str(fxhlo_cli), "run", str(bundle), "--check"], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: `fxhlo run --check` ran past {CLI_TIMEOUT_S} s")
    finished = time.perf_counter()

    lines = proc.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    print(f"\n{name}: export {exported - start:.2f} s, fxhlo run {finished - exported:.2f} s "
          f"({_timings(proc.stdout, proc.stderr)})\n{name}: {last}")
    assert proc.returncode == 0 and last.startswith("check: PASS"), (
        f"{name}: fxhlo run --check exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    assert f" outputs={n_outputs} " in last, f"{name}: {n_outputs} reference outputs, but: {last}"

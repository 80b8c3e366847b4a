#!/usr/bin/env bash
# fxhlo under another PyTorch release: makes (once) a second environment with that release and
# runs the fast pytest tier and the model checks there. docs/compat.md has the supported range
# and the last results.
#
#   scripts/test_torch_compat.sh 2.11          # torch 2.11.* (the newest 2.11 release)
#   scripts/test_torch_compat.sh 2.11.0        # exactly torch 2.11.0
#   scripts/test_torch_compat.sh 2.11 -x -k cache   # further arguments go to pytest
#
# Needs the project's environment first (scripts/setup.sh: .venv/ and the built extension
# python/fxhlo/_native*.so). Builds nothing: the extension talks to torch only through Python,
# so the one built for the project's torch serves every release.
#
# The second environment, .venv-torch-<version>/ (gitignored), is small: it holds torch and the
# matching torchvision (installed without their dependencies), and of their dependencies only
# those .venv/ lacks or has in a version that does not satisfy them. A .pth file puts, after its
# own site-packages, this checkout's python/ folder (so `import fxhlo` is this checkout's, with
# the built extension) and .venv/'s site-packages (everything else: numpy, pytest, the PJRT
# plugin, transformers, diffusers, and the CUDA libraries `import torch` loads). Its own
# site-packages comes first, so its torch is the one imported (checked before the tests run).
# CUDA libraries are taken from .venv/ when it has them in the same major version (CUDA keeps
# its libraries compatible within a major), triton (GPU code generation only) in any version.
#
# What runs (FAST_MARKERS, MODEL_TESTS and MODEL_MARKERS below; docs/compat.md says the same):
#   1. the fast pytest tier: python/tests -m "not slow and not sweep"
#   2. the model checks: the slow tests of test_models.py (ResNet-18, BERT, GPT-2 and a UNet
#      exported and run through `fxhlo run --check`, which needs target/debug/fxhlo from
#      scripts/setup.sh; a deep CNN under the float64 rule), test_passes.py (torchvision's
#      MobileNetV3, ShuffleNet, SqueezeNet, RegNet through torch.compile) and test_moe.py
#      (three Hugging Face MoE models through torch.compile): about 2 minutes. Left out: the
#      diffusers UNets of test_diffusers.py (4 minutes; run them by naming the file as a pytest
#      argument) and the OpInfo sweep.
# The summary line at the end gives each part's counts and time; the exit status is non-zero
# when either part fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

FAST_MARKERS="not slow and not sweep"
MODEL_TESTS=(python/tests/test_models.py python/tests/test_passes.py python/tests/test_moe.py)
MODEL_MARKERS="slow"

usage() { echo "usage: scripts/test_torch_compat.sh <torch version, e.g. 2.11 or 2.11.0> [pytest arguments]" >&2; exit 2; }
[[ $# -ge 1 && $1 =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || usage
VERSION="$1"
shift
if [[ $VERSION =~ ^[0-9]+\.[0-9]+$ ]]; then TORCH_SPEC="torch==$VERSION.*"; else TORCH_SPEC="torch==$VERSION"; fi

MAIN_PY="$ROOT/.venv/bin/python"
[[ -x $MAIN_PY ]] || { echo "$ROOT/.venv is missing: run scripts/setup.sh first" >&2; exit 1; }
compgen -G "python/fxhlo/_native*.so" >/dev/null ||
  { echo "python/fxhlo/_native*.so is missing: run scripts/setup.sh first (it builds the extension)" >&2; exit 1; }

VENV="$ROOT/.venv-torch-$VERSION"
PY="$VENV/bin/python"
step() { printf '\n==> torch %s: %s\n' "$VERSION" "$*"; }

# ---- 1. the environment (skipped when it has the right torch already) -------------------------
installed_torch() { "$PY" -c 'from importlib.metadata import version; print(version("torch"))' 2>/dev/null || true; }
matches() { # $1: an installed version, against VERSION's prefix
  [[ $1 == "$VERSION" || $1 == "$VERSION".* || $1 == "$VERSION"+* ]]
}
if [[ -x $PY ]] && matches "$(installed_torch)" && [[ -f $VENV/.fxhlo-compat-ready ]]; then
  step "environment $(basename "$VENV") ready (torch $(installed_torch))"
else
  if [[ ! -x $PY ]]; then
    step "creating $(basename "$VENV")"
    "$MAIN_PY" -m venv "$VENV"
  fi
  step "resolving $TORCH_SPEC and a matching torchvision (pip --dry-run: metadata only)"
  REPORT="$VENV/resolution.json"
  "$PY" -m pip install --quiet --disable-pip-version-check --dry-run --ignore-installed \
    --report "$REPORT" "$TORCH_SPEC" torchvision
  # Which resolved packages to install here: torch, torchvision, and each dependency that the
  # main environment lacks or has in a version the resolved requirements exclude.
  mapfile -t INSTALL < <("$MAIN_PY" - "$REPORT" <<'EOF'
import json
import sys
from importlib.metadata import PackageNotFoundError, version

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

report = json.load(open(sys.argv[1]))
resolved = {canonicalize_name(i["metadata"]["name"]): i for i in report["install"]}
env = default_environment()
wanted = {}  # name -> [specifier, ...] from the requirements of every resolved package
for item in resolved.values():
    extras = ["", *(item.get("requested_extras") or [])]
    for line in item["metadata"].get("requires_dist") or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in extras):
            wanted.setdefault(canonicalize_name(req.name), []).append(req.specifier)


def reusable_whatever_the_minor(name, have, want):
    # CUDA libraries (nvidia-*, and cuda-* for the toolkit's metapackage and bindings): the same
    # major serves (CUDA keeps libraries compatible within a major); triton compiles GPU code
    # only, so any version serves `import torch` here.
    if name == "triton":
        return True
    return name.startswith(("nvidia-", "cuda-")) and have.major == want.major


for name, item in sorted(resolved.items()):
    meta = item["metadata"]
    pin = f"{meta['name']}=={meta['version']}"
    if name in ("torch", "torchvision"):
        print(pin)
        continue
    try:
        have = Version(version(name))
    except PackageNotFoundError:
        print(pin)
        continue
    if reusable_whatever_the_minor(name, have, Version(meta["version"])):
        continue
    if not all(have in spec for spec in wanted.get(name, [])):
        print(pin)
EOF
  )
  step "installing without dependencies: ${INSTALL[*]}"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "${INSTALL[@]}"
  rm -f "$REPORT"
fi

# The .pth: this checkout's python/ first, then the main environment's site-packages. Rewritten
# every run (cheap), so a moved checkout still points at itself.
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
MAIN_SITE="$("$MAIN_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\n%s\n' "$ROOT/python" "$MAIN_SITE" > "$SITE/zz-fxhlo-compat.pth"

# The environment must import its own torch (not the main environment's) and this checkout's fxhlo.
"$PY" - "$VERSION" "$ROOT/python" <<'EOF'
import os
import sys

import torch

import fxhlo

version, python_dir = sys.argv[1], sys.argv[2]
base = torch.__version__.split("+")[0]
assert base == version or base.startswith(version + "."), f"imported torch {torch.__version__} from {torch.__file__}"
assert os.path.realpath(torch.__file__).startswith(os.path.realpath(sys.prefix)), torch.__file__
assert os.path.realpath(fxhlo.__file__).startswith(os.path.realpath(python_dir)), fxhlo.__file__
print(f"torch {torch.__version__}, fxhlo from {os.path.relpath(os.path.dirname(fxhlo.__file__))}")
EOF
touch "$VENV/.fxhlo-compat-ready"

# ---- 2. the tests ---------------------------------------------------------------------------
status=0
run_pytest() { # $1: label; the rest: pytest arguments. Prints "label: <pytest's summary> (N s)".
  local label=$1 log="$VENV/pytest-$1.log" start=$SECONDS rc=0
  shift
  "$PY" -m pytest -q -p no:cacheprovider "$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
  # pytest's closing line: "3 failed, 306 passed, ... in 57.1s", "2 skipped, ... in 3.1s", "no tests ran in 0.5s".
  local closing
  closing="$(grep -E '^=* ?([0-9]+ [a-z]+|no tests ran).* in [0-9.]+s' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//' || true)"
  SUMMARY+=("$label: ${closing:-no pytest summary, exit status $rc} ($((SECONDS - start)) s)")
  ((rc == 0)) || status=1
}
SUMMARY=()
step "fast tier: pytest python/tests -m \"$FAST_MARKERS\""
run_pytest fast python/tests -m "$FAST_MARKERS" "$@"
step "model checks: pytest ${MODEL_TESTS[*]} -m $MODEL_MARKERS"
run_pytest models "${MODEL_TESTS[@]}" -m "$MODEL_MARKERS" "$@"

echo
echo "torch $(installed_torch) (scripts/test_torch_compat.sh $VERSION):"
printf '  %s\n' "${SUMMARY[@]}"
exit $status

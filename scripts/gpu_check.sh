#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build fxhlo, then print a table of correctness and latency
# of every model fixture and the larger models on the GPU against PyTorch eager on the same GPU
# (scripts/gpu_check.py). Uses a virtual environment that sees the system's packages, so that
# the machine's CUDA PyTorch and CUDA PJRT plugin (jax-cuda13-pjrt or jax-cuda12-pjrt) are the
# ones used; installs the CUDA plugin there only if it is missing. Arguments go to gpu_check.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv-gpu"
PY="${PYTHON:-python3}"
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv --system-site-packages "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_check: this Python's PyTorch sees no CUDA GPU (a CUDA build of torch and an NVIDIA GPU are needed)" >&2
  exit 2
fi
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(0 if (u.find_spec('jax_plugins.xla_cuda13') or u.find_spec('jax_plugins.xla_cuda12')) else 1)" 2>/dev/null; then
  "$VENV/bin/pip" install -q jax-cuda13-pjrt
fi
"$VENV/bin/pip" install -q "maturin>=1.7,<2" safetensors
# The Rust build (MLIR 22 and the toolchain: scripts/setup.sh installs them on Debian).
if ! command -v cargo >/dev/null || [[ ! -d /usr/lib/llvm-22/lib/cmake/mlir ]]; then
  "$ROOT/scripts/setup.sh"
fi
VIRTUAL_ENV="$VENV" "$VENV/bin/maturin" develop --release -m python/Cargo.toml
exec "$VENV/bin/python" scripts/gpu_check.py "$@"

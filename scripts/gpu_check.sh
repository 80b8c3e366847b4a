#!/usr/bin/env bash
# The GPU check: fxhlo against PyTorch eager and Inductor on an NVIDIA GPU (scripts/gpu_check.py).
#
#   scripts/gpu_check.sh build          # on a machine that builds fxhlo (Rust, MLIR): fills carry/
#   scripts/gpu_check.sh run [ARGS]     # on the GPU machine, from the repository root, carry/ present
#   scripts/gpu_check.sh run --device cpu --quick   # the same code path on the CPU plugin (a test)
#
# The GPU machine needs CUDA PyTorch, torchvision, transformers, diffusers and the CUDA PJRT plugin
# (`jax-cuda13-pjrt`, imported as `jax_plugins.xla_cuda13`), but no Rust toolchain and no network:
# `build` compiles the extension here for that machine's Python (CPython 3.12 by default, without
# a 3.12 interpreter: PyO3 gets a config file) and puts it with the Python package into
# carry/site/fxhlo; `run` puts carry/site first on PYTHONPATH. ARGS go to gpu_check.py (--help).
#
# build's settings (environment):
#   GPU_CHECK_PY=3.12          the CPython version to build for (3.10 and later)
#   GPU_CHECK_PYTHON=python3.12 an interpreter of that version to check that the extension loads
#                              (optional: torch is not needed there)
#   CARGO_TARGET_DIR=...       cargo's target folder; default target/gpu-check, so the build never
#                              replaces the regular extension's target/release/lib_native.so (the
#                              first build there compiles everything, MLIR bindings included)
# run's settings: PYTHON (default: python3), OUT (a folder: gpu_check.json is written there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

build() {
  local ver="${GPU_CHECK_PY:-3.12}"
  [[ "$ver" =~ ^3\.[0-9]+$ ]] || { echo "gpu_check build: GPU_CHECK_PY must look like 3.12, not '$ver'" >&2; exit 2; }
  local tag="cpython-${ver/./}-x86_64-linux-gnu"
  local target="${CARGO_TARGET_DIR:-$ROOT/target/gpu-check}"
  command -v cargo >/dev/null || { echo "gpu_check build: cargo not found (build where scripts/setup.sh was run)" >&2; exit 2; }
  rm -rf carry && mkdir -p carry
  # PyO3 without an interpreter: the ABI facts of the target CPython (a shared libpython, not
  # abi3). The extension links MLIR statically and needs only glibc and libstdc++ there.
  cat > carry/pyo3-config.txt <<EOF
implementation=CPython
version=$ver
shared=true
abi3=false
lib_name=python$ver
pointer_width=64
suppress_build_script_link_lines=false
EOF
  echo "gpu_check build: cargo build --release -p fxhlo-python for CPython $ver into $target"
  PYO3_CONFIG_FILE="$ROOT/carry/pyo3-config.txt" CARGO_TARGET_DIR="$target" \
    cargo build --release --quiet -p fxhlo-python
  mkdir -p carry/site
  # The package as git sees it (tracked and new files), without built extensions or bytecode.
  git ls-files -co --exclude-standard -- python/fxhlo | grep -v -E '(__pycache__|\.py[co]$|\.so$)' |
    while read -r f; do mkdir -p "carry/site/$(dirname "${f#python/}")"; cp "$f" "carry/site/${f#python/}"; done
  cp "$target/release/lib_native.so" "carry/site/fxhlo/_native.$tag.so"
  strip "carry/site/fxhlo/_native.$tag.so"
  # The extension loads in that Python (when this machine has one: its own torch is not needed).
  local py="${GPU_CHECK_PYTHON:-python$ver}"
  if "$py" -c 'import sys; sys.exit(0 if sys.version_info[:2] == tuple(map(int, sys.argv[1].split("."))) else 1)' "$ver" 2>/dev/null; then
    "$py" -c 'import importlib.util as u, sys; s = u.spec_from_file_location("fxhlo._native", sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); print("gpu_check build: the extension loads in Python", sys.version.split()[0])' \
      "carry/site/fxhlo/_native.$tag.so"
  else
    echo "gpu_check build: no Python $ver here to load the extension in (GPU_CHECK_PYTHON names one); not checked"
  fi
  {
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!carry' || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) for CPython $ver"
    echo "needs glibc: $(objdump -T "carry/site/fxhlo/_native.$tag.so" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)"
    echo "needs libstdc++: $(objdump -T "carry/site/fxhlo/_native.$tag.so" | grep -o 'GLIBCXX_[0-9.]*' | sort -V | tail -1)"
  } > carry/BUILD-INFO
  cat carry/BUILD-INFO
  echo "gpu_check build: $(du -sh carry | cut -f1) in carry/ (extension $(du -h "carry/site/fxhlo/_native.$tag.so" | cut -f1))"
}

run() {
  local py="${PYTHON:-python3}" have site=""
  have="$("$py" -c 'import sys; print(f"cpython-{sys.version_info[0]}{sys.version_info[1]}")')" ||
    { echo "gpu_check run: cannot run $py (PYTHON names the interpreter)" >&2; exit 2; }
  # The carried build, or else this checkout's own (a development machine, e.g. for --device cpu):
  # the first with an extension for this Python.
  for candidate in carry/site python; do
    if compgen -G "$candidate/fxhlo/_native.$have-*.so" >/dev/null; then site="$ROOT/$candidate"; break; fi
  done
  if [[ -z "$site" ]]; then
    local built
    # (No carry/ at all is not an error here: `ls` fails, and pipefail must not end the script.)
    built="$(ls carry/site/fxhlo/ 2>/dev/null | sed -n 's/^_native\.\(cpython-[0-9]*\)-.*\.so$/\1/p' | head -1 || true)"
    if [[ -n "$built" ]]; then
      echo "gpu_check run: carry/ has fxhlo built for $built but $py is $have: rebuild it with GPU_CHECK_PY=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")') scripts/gpu_check.sh build" >&2
    else
      echo "gpu_check run: carry/site/fxhlo is missing: run 'scripts/gpu_check.sh build' on a machine with the Rust toolchain and bring carry/ along" >&2
    fi
    exit 2
  fi
  echo "gpu_check run: fxhlo from ${site#"$ROOT"/}"
  PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" exec "$py" "$ROOT/scripts/gpu_check.py" "$@"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  run) shift; run "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac

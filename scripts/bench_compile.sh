#!/usr/bin/env bash
# Compile-time benchmark (issue: codegen must stay under 5 % of total compile time): exports
# the ResNet-18 (224x224) and BERT-style (seq 128) graphs of python/fxhlo/models.py, builds the
# release CLI, and prints `fxhlo bench` for each (median of cold compiles: codegen vs PJRT
# compile; steady-state run latency). Usage: scripts/bench_compile.sh [OUT_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh" >/dev/null
OUT="${1:-$(mktemp -d)}"
.venv/bin/python - "$OUT" <<'PY'
import sys
from pathlib import Path
import fxhlo
from fxhlo.models import MODELS
out = Path(sys.argv[1])
for name in ("resnet18", "bert"):
    model, args = MODELS[name]()
    fxhlo.export(model, args, out / f"{name}.fxt", reference=True, name=name)
    print(f"exported {name}")
PY
cargo build --release --quiet -p fxhlo-cli
for name in resnet18 bert; do
  echo
  target/release/fxhlo bench "$OUT/$name.fxt" --compiles 3 --runs 20
done

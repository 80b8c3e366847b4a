#!/usr/bin/env bash
# The main job: set up what is missing, then compile and run the bundled MLP trace on the PJRT
# CPU plugin, print its outputs and check them against PyTorch's stored reference.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"
echo
exec cargo run --quiet -p fxhlo-cli -- run testsuite/fixtures/mlp.fxt --check "$@"

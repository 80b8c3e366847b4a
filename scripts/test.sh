#!/usr/bin/env bash
# Every test: set up what is missing, then run the Rust test suites (unit, integration, the
# end-to-end tests on the real PJRT CPU plugin, the CLI) and the Python tests (the exporter,
# fixture freshness), and print one summary line.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh" || exit 1
echo
LOG="$(mktemp)"
# The tests start from an empty compile cache of their own and leave the user's untouched.
export FXHLO_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$LOG" "$FXHLO_CACHE_DIR"' EXIT

status=0
cargo test --workspace 2>&1 | tee "$LOG" || status=$?
rust_passed=$(grep -Eo 'test result: [A-Za-z]+\. [0-9]+ passed' "$LOG" | awk '{s+=$4} END {print s+0}')
rust_failed=$(grep -Eo '[0-9]+ failed;' "$LOG" | awk '{s+=$1} END {print s+0}')
if [[ $status -ne 0 && $rust_failed -eq 0 ]]; then
  echo "cargo test failed before running every test (exit $status); see above" >&2
  rust_failed=1
fi

echo
pystatus=0
.venv/bin/python -m pytest python/tests -q -p no:cacheprovider 2>&1 | tee "$LOG" || pystatus=$?
py_passed=$(tail -n 3 "$LOG" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
py_failed=$(tail -n 3 "$LOG" | grep -Eo '[0-9]+ (failed|error|errors)' | awk '{s+=$1} END {print s+0}')
if [[ $pystatus -ne 0 && $py_failed -eq 0 ]]; then
  echo "pytest failed (exit $pystatus); see above" >&2
  py_failed=1
fi

passed=$((rust_passed + py_passed))
failed=$((rust_failed + py_failed))
echo
echo "rust: $rust_passed passed, $rust_failed failed"
echo "python: $py_passed passed, $py_failed failed"
if [[ $passed -eq 0 ]]; then
  echo "no test ran" >&2
  failed=1
fi
echo "total: $passed passed, $failed failed"
[[ $status -eq 0 && $pystatus -eq 0 && $failed -eq 0 ]]

#!/usr/bin/env bash
# Every test: set up what is missing, then run the Rust test suites (unit, integration, the
# end-to-end tests on the real PJRT CPU plugin, the CLI) and print one summary line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"
echo
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
status=0
cargo test --workspace 2>&1 | tee "$LOG" || status=$?
# One closing line over all test binaries (cargo prints one per binary).
passed=$(grep -Eo 'test result: [A-Za-z]+\. [0-9]+ passed' "$LOG" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed;' "$LOG" | awk '{s+=$1} END {print s+0}')
echo
if [[ $status -ne 0 && $failed -eq 0 ]]; then
  echo "cargo test failed before running every test (exit $status); see above" >&2
fi
if [[ $passed -eq 0 && $status -eq 0 ]]; then
  echo "no test ran" >&2
  status=1
fi
echo "rust: $passed passed, $failed failed"
exit $status

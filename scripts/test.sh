#!/usr/bin/env bash
# The test command, in two tiers. Both set up what is missing first (scripts/setup.sh), print the
# 20 slowest tests of each part and end with one summary line that names the tier.
#
#   scripts/test.sh          The full suite (what .ci/run runs): every Rust test of the workspace
#                            (unit, integration, the end-to-end tests on the real PJRT CPU plugin,
#                            every Core ATen op, the CLI with its ahead-of-time TPU compiles), the
#                            doctests, and every pytest test (the backend, the exporter, fixture
#                            freshness, the OpInfo sweep, the larger models, the wheel).
#   scripts/test.sh --fast   The fast tier, for iterating: the ir, passes and frontend crates, the
#                            golden files (testsuite filetests) and the fixtures end to end on the
#                            CPU plugin, and pytest without the tests marked `slow` or `sweep`
#                            (python/pyproject.toml says what each marker means). It is not the
#                            full suite, and its summary says so.
#
# Options:
#   --fast         run the fast tier instead of the full suite
#   --no-nextest   run the Rust tests with `cargo test` even where cargo-nextest is installed
#                  (without nextest that is the default: the same tests, but per-binary times
#                  instead of per-test ones)
#   -h, --help     print this
set -uo pipefail
# One block, read whole before it runs: editing this file during a run does not change that run.
{
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"

  usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

  tier=full
  use_nextest=auto
  for arg in "$@"; do
    case "$arg" in
      --fast) tier=fast ;;
      --no-nextest) use_nextest=no ;;
      -h | --help) usage; exit 0 ;;
      *) printf 'scripts/test.sh: unknown argument %s\n\n' "$arg" >&2; usage >&2; exit 2 ;;
    esac
  done

  # What the fast tier runs of the Rust tests: these crates whole, and of the end-to-end binary
  # (fxhlo-testsuite's tests/main.rs) these modules: the golden files and the fixtures on the CPU
  # plugin. The rest (every Core ATen op, the CLI with its TPU compiles, the runtime, the cache)
  # is left to the full suite.
  FAST_CRATES=(fxhlo-ir fxhlo-passes fxhlo-frontend)
  FAST_TESTSUITE_MODULES=(golden fixtures)
  # What the fast tier leaves out of pytest (the markers are registered in python/pyproject.toml).
  FAST_PYTEST_MARKERS="not slow and not sweep"
  rust_tier="the crates ${FAST_CRATES[*]}, and of fxhlo-testsuite $(printf '%s:: ' "${FAST_TESTSUITE_MODULES[@]}")only"
  SLOWEST=20

  "$ROOT/scripts/setup.sh" || exit 1
  echo
  LOG="$(mktemp)"
  # The tests start from an empty compile cache of their own and leave the user's untouched.
  export FXHLO_CACHE_DIR="$(mktemp -d)"
  trap 'rm -rf "$LOG" "$FXHLO_CACHE_DIR"' EXIT

  if [[ $use_nextest == auto ]] && cargo nextest --version >/dev/null 2>&1; then
    runner=cargo-nextest
  else
    runner="cargo test"
  fi
  echo "==> $tier tier$([[ $tier == full ]] && echo " (the full suite)"): Rust tests with $runner, then pytest"
  echo

  # ---- Rust ---------------------------------------------------------------------------------
  rust_passed=0 rust_failed=0 rust_skipped=0
  add_cargo_test_counts() {
    # Adds the counts of every libtest summary in $LOG: `test result: ok. 5 passed; 0 failed; 1 ignored; ...`
    local p f i
    read -r p f i < <(grep -E '^test result: ' "$LOG" |
      awk '{for (k = 1; k <= NF; k++) { if ($(k+1) ~ /^passed/) p += $k; if ($(k+1) ~ /^failed/) f += $k; if ($(k+1) ~ /^ignored/) i += $k }}
           END {print p+0, f+0, i+0}')
    rust_passed=$((rust_passed + p)) rust_failed=$((rust_failed + f)) rust_skipped=$((rust_skipped + i))
  }
  slowest_test_binaries() {
    # cargo test reports no per-test times (libtest's --report-time is unstable): the test
    # binaries instead, from libtest's `Running <target> (<binary>)` or `Doc-tests <crate>`,
    # `running <n> tests` and `finished in <t>s`, each binary labelled with its package by the
    # `# binary <file> <package>` lines of cargo_test.
    awk '/^# binary / {pkg[$3] = $4}
         /^ *Running / {n = split($NF, path, "/"); bin = path[n]; sub(/\)$/, "", bin); sub(/^ *Running /, ""); sub(/ \(.*\)$/, ""); what = pkg[bin] ": " $0}
         /^ *Doc-tests / {sub(/^ */, ""); what = $0}
         /^running [0-9]+ tests?$/ {n = $2}
         /^test result: / && n > 0 {match($0, /finished in [0-9.]+s/); t = substr($0, RSTART + 12, RLENGTH - 13)
                                    printf "%9.3fs  %s (%d tests)\n", t, what, n}' "$LOG" |
      sort -rn | head -n "$SLOWEST"
  }
  cargo_test() {
    # cargo_test <cargo test args> [-- <libtest args>]: builds the tests, writing which package
    # each test binary belongs to into $LOG (`# binary <file> <package>`), then runs them.
    # Appends to $LOG; sets $status on failure.
    local cargo_args=() artifacts
    while [[ $# -gt 0 && $1 != -- ]]; do cargo_args+=("$1"); shift; done
    artifacts="$(mktemp)"
    cargo test --no-run --message-format=json-render-diagnostics "${cargo_args[@]}" > "$artifacts" || status=1
    # Package ids are `path+file:///<dir>#<name>@<version>`, or `...<dir>#<version>` when the
    # folder has the package's name.
    sed -nE 's/^\{"reason":"compiler-artifact","package_id":"([^"]*)".*"executable":"([^"]*)".*/\1 \2/p' "$artifacts" |
      awk '{n = split($2, path, "/"); id = $1; name = id; sub(/^.*#/, "", name)
            if (name ~ /@/) sub(/@.*/, "", name); else { sub(/#.*/, "", id); m = split(id, dir, "/"); name = dir[m] }
            print "# binary", path[n], name}' >> "$LOG"
    rm -f "$artifacts"
    cargo test --no-fail-fast "${cargo_args[@]}" "$@" 2>&1 | tee -a "$LOG" || status=1
  }
  doctest_packages() {
    # The workspace's libraries whose doctests `cargo test --workspace` runs: `cargo test --doc`
    # would also run those of the crates that set `doctest = false`.
    cargo metadata --no-deps --format-version 1 | .venv/bin/python -c 'import json, sys
m = json.load(sys.stdin)
ids = set(m["workspace_members"])
libs = ("lib", "rlib", "proc-macro")
print("\n".join(p["name"] for p in m["packages"] if p["id"] in ids
                and any(t.get("doctest") and set(t["kind"]) & set(libs) for t in p["targets"])))'
  }

  status=0
  rust_start=$SECONDS
  if [[ $runner == cargo-nextest ]]; then
    if [[ $tier == fast ]]; then
      modules="$(IFS='|'; echo "${FAST_TESTSUITE_MODULES[*]}")"
      cargo nextest run "${FAST_CRATES[@]/#/-p}" -p fxhlo-testsuite \
        -E "not package(fxhlo-testsuite) or test(/^($modules)::/)" \
        --no-fail-fast --status-level pass --final-status-level fail 2>&1 | tee "$LOG" || status=$?
    else
      cargo nextest run --workspace --no-fail-fast --status-level pass --final-status-level fail 2>&1 | tee "$LOG" || status=$?
    fi
    summary="$(grep -E '^ *Summary \[' "$LOG" | tail -n 1)"
    count() { grep -Eo "[0-9]+ $1" <<<"$summary" | awk '{s += $1} END {print s+0}'; }
    rust_passed=$(count passed)
    rust_failed=$(($(count failed) + $(count 'timed out')))
    rust_skipped=$(count skipped)
    slowest="$(grep -E '^ *[A-Z]+ +\[ *[0-9.]+s\]' "$LOG" | sed -E 's/^ *([A-Z]+) +\[ *([0-9.]+)s\] (\( *[0-9]+\/[0-9]+\) )?/\2 \1 /' |
      sort -rn | head -n "$SLOWEST" | awk '{t = $1; $1 = ""; printf "%9.3fs %s\n", t, $0}')"
    if [[ $status -ne 0 && $rust_failed -eq 0 ]]; then
      echo "cargo nextest failed before running every test (exit $status); see above" >&2
      rust_failed=1
    fi
    if [[ $tier == full ]]; then
      # nextest does not run doctests.
      echo
      mapfile -t doc_packages < <(doctest_packages)
      docstatus=0
      : > "$LOG"
      if ((${#doc_packages[@]})); then
        cargo test --doc "${doc_packages[@]/#/-p}" 2>&1 | tee "$LOG" || docstatus=$?
      fi
      before=$rust_failed
      add_cargo_test_counts
      if [[ $docstatus -ne 0 && $rust_failed -eq $before ]]; then
        echo "cargo test --doc failed (exit $docstatus); see above" >&2
        rust_failed=$((rust_failed + 1))
      fi
      [[ $docstatus -eq 0 ]] || status=$docstatus
    fi
    echo
    echo "==> the $SLOWEST slowest Rust tests (cargo-nextest)"
    echo "$slowest"
  else
    : > "$LOG"
    if [[ $tier == fast ]]; then
      cargo_test "${FAST_CRATES[@]/#/-p}"
      cargo_test -p fxhlo-testsuite --test main -- "${FAST_TESTSUITE_MODULES[@]/%/::}"
    else
      cargo_test --workspace
    fi
    add_cargo_test_counts
    if [[ $status -ne 0 && $rust_failed -eq 0 ]]; then
      echo "cargo test failed before running every test; see above" >&2
      rust_failed=1
    fi
    echo
    echo "==> the $SLOWEST slowest Rust test binaries (cargo test has no per-test times; cargo-nextest does)"
    slowest_test_binaries
  fi
  rust_s=$((SECONDS - rust_start))
  echo
  echo "==> rust: $rust_passed passed, $rust_failed failed (${rust_s} s)$([[ $tier == fast ]] && echo "; $rust_tier")"

  # ---- Python -------------------------------------------------------------------------------
  echo
  py_start=$SECONDS
  pystatus=0
  markers=()
  [[ $tier == fast ]] && markers=(-m "$FAST_PYTEST_MARKERS")
  .venv/bin/python -m pytest python/tests -q -p no:cacheprovider --durations="$SLOWEST" "${markers[@]}" 2>&1 | tee "$LOG" || pystatus=$?
  tail_="$(tail -n 3 "$LOG")"
  pycount() { grep -Eo "[0-9]+ ($1)\\b" <<<"$tail_" | awk '{s += $1} END {print s+0}'; }
  py_passed=$(pycount passed)
  py_failed=$(pycount 'failed|error|errors')
  py_skipped=$(pycount skipped)
  py_deselected=$(pycount deselected)
  if [[ $pystatus -ne 0 && $py_failed -eq 0 ]]; then
    echo "pytest failed (exit $pystatus); see above" >&2
    py_failed=1
  fi
  py_s=$((SECONDS - py_start))

  # ---- Summary ------------------------------------------------------------------------------
  passed=$((rust_passed + py_passed))
  failed=$((rust_failed + py_failed))
  skipped=$((rust_skipped + py_skipped))
  echo
  if [[ $tier == fast ]]; then
    echo "fast tier (scripts/test.sh --fast), not the full suite:"
    echo "  rust ($runner): $rust_passed passed, $rust_failed failed (${rust_s} s); $rust_tier"
    echo "  python (pytest -m \"$FAST_PYTEST_MARKERS\"): $py_passed passed, $py_failed failed (${py_s} s); $py_deselected deselected, left to the full suite"
  else
    echo "full suite (scripts/test.sh):"
    echo "  rust ($runner$([[ $runner == cargo-nextest ]] && echo ", doctests with cargo test --doc")): $rust_passed passed, $rust_failed failed (${rust_s} s)"
    echo "  python (pytest): $py_passed passed, $py_failed failed (${py_s} s)"
  fi
  # The fast tier's Rust count of skipped tests mixes #[ignore]d ones with those outside the tier
  # (nextest counts both as skipped): it is not printed. None counts as passed.
  if [[ $tier == full && $skipped -gt 0 ]]; then
    echo "  skipped (not run, not counted as passed): $rust_skipped Rust (#[ignore]d), $py_skipped pytest"
  elif [[ $py_skipped -gt 0 ]]; then
    echo "  skipped (not run, not counted as passed): $py_skipped pytest"
  fi
  if [[ $passed -eq 0 ]]; then
    echo "no test ran" >&2
    failed=$((failed + 1))
  fi
  if [[ $tier == fast ]]; then
    echo "fast tier: $passed passed, $failed failed in $((rust_s + py_s)) s (not the full suite: scripts/test.sh runs it)"
  else
    echo "full suite: $passed passed, $failed failed in $((rust_s + py_s)) s"
  fi
  [[ $status -eq 0 && $pystatus -eq 0 && $failed -eq 0 ]]
  exit
}

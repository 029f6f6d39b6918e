#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole
# test suite and ends with one line `N passed, N failed, N skipped`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

results="$SPMD_BUILD/test-results"
rm -rf "$results" && mkdir -p "$results"

# lit: the FileCheck/verify-diagnostics suite (test/), integration tests included.
"${SPMD_LIT[@]}" -sv --xunit-xml-output "$results/lit.xml" "$SPMD_BUILD/test" || true

# The compilers under AddressSanitizer + UndefinedBehaviorSanitizer (their own
# build, build-sanitize/): every test that runs only them and FileCheck.
source "$SPMD_ROOT/scripts/sanitize.sh"
mapfile -t sanitized < <("$SPMD_PYTHON" "$SPMD_ROOT/scripts/sanitizer_tests.py" \
  "$SPMD_ROOT/test" --under "$SPMD_SANITIZE_BUILD/test")
"${SPMD_LIT[@]}" -sv --xunit-xml-output "$results/lit-sanitize.xml" \
  "${sanitized[@]}" || true

# A short, bounded fuzzing run (scripts/fuzz.sh): a crash fails it.
SPMD_FUZZ_XML="$results/fuzz.xml" bash "$SPMD_ROOT/scripts/fuzz.sh" \
  "${SPMD_FUZZ_SECONDS:-60}" || true

# Every report by name: one that a killed or crashed run did not write
# counts as a failure.
exec "$SPMD_PYTHON" "$SPMD_ROOT/scripts/summarize_tests.py" \
  "$results/lit.xml" "$results/lit-sanitize.xml" "$results/fuzz.xml"

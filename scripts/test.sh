#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole
# test suite and ends with one line `N passed, N failed, N skipped`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

results="$SPMD_BUILD/test-results"
rm -rf "$results" && mkdir -p "$results"

# lit: the FileCheck/verify-diagnostics suite (test/), integration tests included.
"${SPMD_LIT[@]}" -sv --xunit-xml-output "$results/lit.xml" "$SPMD_BUILD/test" || true

exec "$SPMD_PYTHON" "$SPMD_ROOT/scripts/summarize_tests.py" "$results"/*.xml

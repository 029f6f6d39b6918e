#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the
# worked example through spmd-opt. (The end-to-end distributed run replaces
# this once the distribution passes and the runtime exist.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

example="$SPMD_ROOT/examples/linear_mse_sgd.mlir"
echo "== spmd-opt $example --canonicalize --cse"
echo "   (parse, verify every spmd constraint, fold, print)"
spmd-opt "$example" --canonicalize --cse
echo "== the same program in generic form parses back to the same IR:"
if diff <(spmd-opt "$example") \
        <(spmd-opt "$example" --mlir-print-op-generic | spmd-opt) >/dev/null; then
  echo "   round trip OK"
else
  echo "   round trip FAILED"; exit 1
fi

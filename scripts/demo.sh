#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, compiles the
# example train step (examples/mlp_train_step.mlir) for 2 ranks and for a
# single device, runs both (mpirun), and prints each step's loss and the
# largest deviation of the distributed run from the single-device one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

example="$SPMD_ROOT/examples/mlp_train_step.mlir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
llvm=/usr/lib/llvm-22
blas=$(sed -n 's/^SPMD_BLAS_LIBRARY:FILEPATH=//p' "$SPMD_BUILD/CMakeCache.txt")
run=("$llvm/bin/mlir-runner" -e main -entry-point-result=void
     "-shared-libs=$SPMD_BUILD/lib/libSpmdRuntime.so,$blas,$llvm/lib/libmlir_runner_utils.so,$llvm/lib/libmlir_c_runner_utils.so")

echo "== compile: spmd-opt --spmd-distribute --spmd-lower-to-cpu ($example)"
spmd-opt "$example" --spmd-distribute -o "$work/local.mlir"
echo "   collectives in the 2-rank program:"
grep -oE "spmd\.(all_reduce|all_gather|reduce_scatter|all_to_all|broadcast)" \
  "$work/local.mlir" | sort | uniq -c | sed 's/^/     /'
spmd-opt "$work/local.mlir" --spmd-lower-to-cpu -o "$work/dist.mlir"
sed 's/shape = 2/shape = 1/' "$example" |
  spmd-opt --spmd-distribute --spmd-lower-to-cpu -o "$work/ref.mlir"

echo "== run: 2 ranks (mpirun -np 2) and the single-device reference"
timeout 300 mpirun --oversubscribe --bind-to none -np 2 "${run[@]}" "$work/dist.mlir" > "$work/dist.out"
timeout 300 mpirun --oversubscribe --bind-to none -np 1 "${run[@]}" "$work/ref.mlir" > "$work/ref.out"

"$SPMD_PYTHON" - "$work/ref.out" "$work/dist.out" <<'PY'
import re, sys
num = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")
def tensors(path):
    chunks = open(path).read().split("Unranked Memref")[1:]
    return [[float(v) for v in num.findall(c.split("data =", 1)[1])] for c in chunks]
ref, dist = tensors(sys.argv[1]), tensors(sys.argv[2])
losses = [i for i, t in enumerate(ref) if len(t) == 1][:5]
print(f"{'step':>4}  {'loss (2 ranks)':>14}  {'loss (1 device)':>15}  {'|diff|':>8}")
for s, i in enumerate(losses, 1):
    print(f"{s:>4}  {dist[i][0]:>14.6f}  {ref[i][0]:>15.6f}  {abs(dist[i][0] - ref[i][0]):>8.1e}")
worst = max(abs(a - b) for r, d in zip(ref, dist) for a, b in zip(r, d))
n = sum(len(t) for t in ref)
print(f"max deviation over {n} printed values (losses, parameters, optimizer state): {worst:.1e}")
sys.exit(0 if worst <= 1e-5 and len(ref) == len(dist) else 1)
PY

echo
echo "== Python: spmd.compile on a PyTorch train step (examples/train_mlp.py, 2 ranks)"
timeout 600 mpirun --oversubscribe --bind-to none -np 2 \
  "$SPMD_PYTHON" "$SPMD_ROOT/examples/train_mlp.py" --steps 20

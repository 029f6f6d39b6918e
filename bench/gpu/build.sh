#!/usr/bin/env bash
# Builds what bench/gpu/check.sh runs on a GPU machine (which has CUDA, NCCL
# and PyTorch but no LLVM/MLIR and no MPI): the gradient step of
# grad_step.mlir.in compiled ahead of time for the GPU (spmd-gpu-opt
# --spmd-lower-to-nvvm, cubins for sm_90) and linked against
# libSpmdGpuRuntime, plus the same step compiled for the CPU path and run
# here, whose outputs the GPU run is checked against. Everything lands in
# bench/gpu/out (a few MiB; carry that folder).
#
#   bash bench/gpu/build.sh [B K N]       (default 4096 1024 1024)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/setup.sh"
B=${1:-4096} K=${2:-1024} N=${3:-1024}
here="$SPMD_ROOT/bench/gpu"
out="$here/out"
llvm=/usr/lib/llvm-22
if [ ! -f "$SPMD_BUILD/lib/libSpmdGpuRuntime.so" ]; then
  echo "bench/gpu: libSpmdGpuRuntime was not built (no CUDA/NCCL found)" >&2
  exit 1
fi
cuda=$(sed -n 's/^SPMD_CUDA_ROOT:[A-Z]*=//p' "$SPMD_BUILD/CMakeCache.txt")
cuda=${cuda:-/usr/local/cuda}
blas=$(sed -n 's/^SPMD_BLAS_LIBRARY:FILEPATH=//p' "$SPMD_BUILD/CMakeCache.txt")
triple=$("$llvm/bin/llvm-config" --host-target)
rm -rf "$out" && mkdir -p "$out"
sed -e "s/@B@/$B/g; s/@K@/$K/g; s/@N@/$N/g" "$here/grad_step.mlir.in" \
  > "$out/grad_step.mlir"
spmd-opt "$out/grad_step.mlir" --spmd-distribute -o "$out/local.mlir"

echo "== GPU: spmd-gpu-opt --spmd-lower-to-nvvm (sm_90)"
spmd-gpu-opt "$out/local.mlir" --spmd-lower-to-nvvm="cuda-toolkit=$cuda" \
  | "$llvm/bin/mlir-translate" --mlir-to-llvmir -o "$out/gpu.ll"
"$llvm/bin/llc" -O2 -mtriple="$triple" --relocation-model=pic -filetype=obj \
  "$out/gpu.ll" -o "$out/gpu.o"
c++ -O2 -std=c++17 -I"$SPMD_ROOT/include" -DB="$B" -DK="$K" -DN="$N" \
  "$here/grad_step_bench.cpp" "$out/gpu.o" -o "$out/grad_step_gpu" \
  -L"$SPMD_BUILD/lib" -lSpmdGpuRuntime -L"$cuda/lib64/stubs" -lcuda \
  -Wl,-rpath,'$ORIGIN':"$cuda/lib64"
cp "$SPMD_BUILD/lib/libSpmdGpuRuntime.so" "$out/"

echo "== CPU path: spmd-opt --spmd-lower-to-cpu, run here for the reference"
spmd-opt "$out/local.mlir" --spmd-lower-to-cpu \
  | "$llvm/bin/mlir-translate" --mlir-to-llvmir -o "$out/cpu.ll"
"$llvm/bin/llc" -O2 -mtriple="$triple" --relocation-model=pic -filetype=obj \
  "$out/cpu.ll" -o "$out/cpu.o"
c++ -O2 -std=c++17 -I"$SPMD_ROOT/include" -DSPMD_CPU -DB="$B" -DK="$K" \
  -DN="$N" "$here/grad_step_bench.cpp" "$out/cpu.o" -o "$out/grad_step_cpu" \
  -L"$SPMD_BUILD/lib" -lSpmdRuntime "$blas" -L"$llvm/lib" -lmlir_c_runner_utils \
  -Wl,-rpath,"$SPMD_BUILD/lib:$llvm/lib"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun --oversubscribe -np 1 "$out/grad_step_cpu" "$out/cpu_ref.bin"
cp "$here/check.sh" "$here/torch_eager.py" "$out/"
rm -f "$out"/*.ll "$out"/*.o "$out"/grad_step_cpu
echo "sizes: $B $K $N" > "$out/sizes.txt"
du -sh "$out"

#!/usr/bin/env bash
# Builds what bench/gpu/check.sh runs on a GPU machine (which has CUDA, NCCL
# and PyTorch but no LLVM/MLIR and no MPI), ahead of time, linked against
# libSpmdGpuRuntime: the gradient step of grad_step.mlir.in (B x K -> N),
# the example train step (examples/mlp_train_step.mlir, 5 steps of SGD with
# momentum, train_step_main.cpp), every collective (a group of 1) and the
# programs spmd.compile builds for four PyTorch models and for bench/gpt.py's
# small GPT, compiled with spmd-gpu-opt
# --spmd-lower-to-nvvm (cubins for sm_90); plus both compiled for the CPU
# path and run here, whose outputs the GPU runs are checked against.
# Everything lands in bench/gpu/out (a few MiB; carry that folder).
#
# --emulate builds the same for the GPU emulator instead (test support's
# spmd-lower-to-emulator: kernels compiled for the host;
# bench/gpu/out-emulated), so that check.sh can be tried here:
#   bash bench/gpu/build.sh --emulate 256 128 64 && bash bench/gpu/out-emulated/check.sh
#
#   bash bench/gpu/build.sh [--emulate] [B K N]     (default 4096 1024 1024)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/setup.sh"
emulate=0
if [ "${1:-}" = --emulate ]; then
  emulate=1
  shift
fi
B=${1:-4096} K=${2:-1024} N=${3:-1024}
here="$SPMD_ROOT/bench/gpu"
out="$here/out"
lower="--spmd-lower-to-nvvm=cuda-toolkit=CUDA"
link_extra=()
if [ $emulate = 1 ]; then
  out="$here/out-emulated"
  # Test support (test/lib/GpuEmulator): the same host code, kernels for
  # the host.
  lower="--spmd-lower-to-emulator"
  link_extra=(-rdynamic)
fi
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

# The example train step with its C interface, on one device (mesh of 1).
sed '/^func.func private @printMemrefF32/,$d' "$SPMD_ROOT/examples/mlp_train_step.mlir" \
  | sed -E '/^func.func @(init|train_step|dump)\(/ s/ \{$/ attributes {llvm.emit_c_interface} {/' \
  | sed 's/shape = 2/shape = 1/' | spmd-opt --spmd-distribute -o "$out/train_local.mlir"

# Every collective on one GPU (a group of 1), and the programs spmd.compile
# builds for four PyTorch models (mesh of 1; 3 steps from fixed state), one
# of them also under torch.autocast(bfloat16) (NAME_bf16).
inputs="$SPMD_ROOT/test/Codegen/GPU/Inputs"
sed -e s/NP/1/g -e s/ROWSG/4/g -e s/COLSG/8/g -e s/COLSS/8/g \
  "$inputs/collectives.mlir" > "$out/collectives_local.mlir"
models="mlp_sgd norm_adam transformer embed_adamw norm_adam_bf16"
declare -A model_flags=(
  [mlp_sgd]="-DROWS=8 -DXC=6 -DX_I64=0 -DX_RANGE=1 -DYC=4 -DY_I64=0 -DY_RANGE=1"
  [norm_adam]="-DROWS=8 -DXC=6 -DX_I64=0 -DX_RANGE=1 -DYC=0 -DY_I64=1 -DY_RANGE=5"
  [transformer]="-DROWS=8 -DXC=6 -DX_I64=1 -DX_RANGE=16 -DYC=0 -DY_I64=1 -DY_RANGE=3"
  [embed_adamw]="-DROWS=8 -DXC=5 -DX_I64=1 -DX_RANGE=20 -DYC=3 -DY_I64=0 -DY_RANGE=1"
  [norm_adam_bf16]="-DROWS=8 -DXC=6 -DX_I64=0 -DX_RANGE=1 -DYC=0 -DY_I64=1 -DY_RANGE=5"
)
for m in $models; do
  case_kind=("$m")
  [[ $m == *_bf16 ]] && case_kind=("${m%_bf16}" bf16)
  (cd "$SPMD_ROOT/test/Python" &&
    "$SPMD_PYTHON" emit_program.py "${case_kind[0]}" 1 "${case_kind[@]:1}") \
    | spmd-opt --pass-pipeline="builtin.module(inline, symbol-dce, spmd-distribute, func.func(spmd-overlap-collectives))" \
      -o "$out/${m}_local.mlir"
done

# bench/gpt.py's small GPT (4 layers, d=128, block 64, batch 16, AdamW), the
# whole batch on one GPU: timed on the device next to PyTorch eager and
# torch.compile (bench/gpu/torch_gpt.py).
# (The emulator's dry run: a tiny one; emulated kernels run on the CPU.)
gpt_config=small
[ $emulate = 1 ] && gpt_config=tiny
gpt_flags=$(cd "$SPMD_ROOT" && "$SPMD_PYTHON" bench/gpu/emit_gpt.py "$gpt_config" --flags)
(cd "$SPMD_ROOT" && "$SPMD_PYTHON" bench/gpu/emit_gpt.py "$gpt_config") \
  | spmd-opt --pass-pipeline="builtin.module(inline, symbol-dce, spmd-distribute, func.func(spmd-overlap-collectives))" \
    -o "$out/gpt_local.mlir"
# bench/gpt2.py's GPT-2 124M (batch 4 x 128 tokens, AdamW with decay
# groups): real size, checked by its loss only (its state is gigabytes of
# text) and timed next to eager and torch.compile. Not for the emulator.
gpt2=0
if [ $emulate = 0 ] && [ "${SPMD_GPU_SKIP_GPT2:-0}" != 1 ]; then
  gpt2=1
  gpt2_flags=$(cd "$SPMD_ROOT" && "$SPMD_PYTHON" bench/gpu/emit_gpt.py gpt2 --flags)
  (cd "$SPMD_ROOT" && "$SPMD_PYTHON" bench/gpu/emit_gpt.py gpt2) \
    | spmd-opt --pass-pipeline="builtin.module(inline, symbol-dce, spmd-distribute, func.func(spmd-overlap-collectives))" \
      -o "$out/gpt2_local.mlir"
fi
# gpu NAME LOCAL.mlir DRIVER.cpp [FLAGS...]: the GPU executable out/NAME.
gpu() {
  local name=$1 local_mlir=$2 driver=$3
  shift 3
  spmd-gpu-opt "$local_mlir" "${lower/CUDA/$cuda}" \
    | "$llvm/bin/mlir-translate" --mlir-to-llvmir -o "$out/$name.ll"
  "$llvm/bin/llc" -O2 -mtriple="$triple" --relocation-model=pic -filetype=obj \
    "$out/$name.ll" -o "$out/$name.o"
  c++ -O2 -std=c++17 -I"$SPMD_ROOT/include" "$@" "$driver" "$out/$name.o" \
    -o "$out/$name" "${link_extra[@]}" -L"$SPMD_BUILD/lib" -lSpmdGpuRuntime \
    -L"$cuda/lib64/stubs" -lcuda -Wl,-rpath,'$ORIGIN':"$cuda/lib64"
}

# cpu NAME LOCAL.mlir DRIVER.cpp REF.bin [FLAGS...]: the CPU path's outputs.
cpu() {
  local name=$1 local_mlir=$2 driver=$3 ref=$4
  shift 4
  spmd-opt "$local_mlir" --spmd-lower-to-cpu \
    | "$llvm/bin/mlir-translate" --mlir-to-llvmir -o "$out/$name.ll"
  "$llvm/bin/llc" -O2 -mtriple="$triple" --relocation-model=pic -filetype=obj \
    "$out/$name.ll" -o "$out/$name.o"
  c++ -O2 -std=c++17 -I"$SPMD_ROOT/include" -DSPMD_CPU "$@" "$driver" \
    "$out/$name.o" -o "$out/$name" -L"$SPMD_BUILD/lib" -lSpmdRuntime "$blas" \
    -L"$llvm/lib" -lmlir_c_runner_utils -Wl,-rpath,"$SPMD_BUILD/lib:$llvm/lib"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe -np 1 "$out/$name" "$out/$ref"
}

echo "== GPU: spmd-gpu-opt $lower"
gpu grad_step_gpu "$out/local.mlir" "$here/grad_step_bench.cpp" \
  -DB="$B" -DK="$K" -DN="$N"
gpu train_step_gpu "$out/train_local.mlir" "$here/train_step_main.cpp"
gpu collectives_gpu "$out/collectives_local.mlir" "$inputs/collectives_main.cpp"
# spmd.attention / attention_grad (masked, causal) on the runtime's fused
# kernels, checked against a float64 reference by the driver itself.
gpu attention_gpu "$inputs/attention.mlir" "$inputs/attention_main.cpp"
for m in $models; do
  # shellcheck disable=SC2086 # the flags are words
  gpu "${m}_gpu" "$out/${m}_local.mlir" "$inputs/bridge_step_main.cpp" \
    ${model_flags[$m]}
done
# shellcheck disable=SC2086
gpu gpt_gpu "$out/gpt_local.mlir" "$inputs/bridge_step_main.cpp" $gpt_flags
if [ $gpt2 = 1 ]; then
  # shellcheck disable=SC2086
  gpu gpt2_gpu "$out/gpt2_local.mlir" "$inputs/bridge_step_main.cpp" $gpt2_flags
fi
cp "$SPMD_BUILD/lib/libSpmdGpuRuntime.so" "$out/"

echo "== CPU path: spmd-opt --spmd-lower-to-cpu, run here for the references"
cpu grad_step_cpu "$out/local.mlir" "$here/grad_step_bench.cpp" cpu_ref.bin \
  -DB="$B" -DK="$K" -DN="$N"
cpu train_step_cpu "$out/train_local.mlir" "$here/train_step_main.cpp" \
  train_ref.bin
for m in $models; do
  # shellcheck disable=SC2086
  cpu "${m}_cpu" "$out/${m}_local.mlir" "$inputs/bridge_step_main.cpp" \
    "${m}_ref.txt" ${model_flags[$m]}
done
# shellcheck disable=SC2086
cpu gpt_cpu "$out/gpt_local.mlir" "$inputs/bridge_step_main.cpp" gpt_ref.txt \
  $gpt_flags
if [ $gpt2 = 1 ]; then
  # shellcheck disable=SC2086
  cpu gpt2_cpu "$out/gpt2_local.mlir" "$inputs/bridge_step_main.cpp" \
    gpt2_ref.txt $gpt2_flags
fi
# The bridge's device layer, for python_views.py (torch only, no spmd
# package: that needs the toolchain).
mkdir -p "$out/spmd_device"
: > "$out/spmd_device/__init__.py"
cp "$SPMD_ROOT/python/spmd/_device.py" "$SPMD_ROOT/python/spmd/_errors.py" \
  "$out/spmd_device/"
cp "$here/check.sh" "$here/torch_eager.py" "$here/torch_gpt.py" \
  "$here/python_views.py" \
  "$SPMD_ROOT/bench/gpt.py" "$SPMD_ROOT/bench/gpt2.py" \
  "$SPMD_ROOT/test/Integration/Collectives/check_collectives.py" \
  "$SPMD_ROOT/python/spmd/timeline.py" "$out/"
if [ $emulate = 1 ]; then
  # check.sh runs against the emulator's libraries instead of CUDA's.
  echo "$SPMD_BUILD/lib/gpu-emulator" > "$out/emulated"
fi
rm -f "$out"/*.ll "$out"/*.o "$out"/*_cpu
echo "sizes: $B $K $N" > "$out/sizes.txt"
echo "$gpt_config" > "$out/gpt_config.txt"
du -sh "$out"

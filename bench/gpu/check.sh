#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU (CUDA 13, NCCL, PyTorch; no LLVM/MLIR,
# no MPI) from the folder bench/gpu/build.sh filled (bench/gpu/out), in well
# under 5 minutes: the GPU-compiled gradient step checked against the CPU
# path's outputs, its step time, the same step in PyTorch eager on the same
# GPU, and a short table last.
#
#   bash bench/gpu/out/check.sh          (or from the repository root:
#   bash bench/gpu/check.sh, which uses bench/gpu/out)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$here
[ -f "$out/grad_step_gpu" ] || out=$here/out
if [ ! -x "$out/grad_step_gpu" ]; then
  echo "bench/gpu: $out/grad_step_gpu missing: run bench/gpu/build.sh first" >&2
  exit 1
fi
read -r _ B K N < "$out/sizes.txt"
python=${PYTHON:-python3}
# NCCL and cuBLAS: the CUDA install, else the nvidia-* wheels PyTorch uses.
wheels=$("$python" - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for base in site.getsitepackages():
    dirs += glob.glob(os.path.join(base, "nvidia", "*", "lib"))
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH="$out:/usr/local/cuda/lib64:${wheels:+$wheels:}${LD_LIBRARY_PATH:-}"
nvidia-smi -L 2>/dev/null | head -1

echo "== spmd: GPU-compiled step vs the CPU path"
timeout 120 "$out/grad_step_gpu" "$out/cpu_ref.bin" | tee "$out/gpu.txt"
gpu_rc=${PIPESTATUS[0]}
echo "== PyTorch eager on the same GPU"
timeout 120 "$python" "$out/torch_eager.py" "$B" "$K" "$N" | tee "$out/torch.txt"
torch_rc=${PIPESTATUS[0]}

check=$(sed -n 's/^check: .*: \(OK\|WRONG\)$/\1/p' "$out/gpu.txt")
dev=$(sed -n 's/^check: .*deviation \([^:]*\):.*/\1/p' "$out/gpu.txt")
spmd_ms=$(sed -n 's/^time: spmd \([0-9.]*\) ms.*/\1/p' "$out/gpu.txt")
torch_ms=$(sed -n 's/^time: torch eager \([0-9.]*\) ms.*/\1/p' "$out/torch.txt")
echo
echo "| gradient step $B x $K -> $N, 1 GPU | value |"
echo "|---|---|"
echo "| spmd GPU vs CPU path (max rel. dev.) | ${dev:-n/a} ${check:-FAILED (rc $gpu_rc)} |"
echo "| spmd step time (ms) | ${spmd_ms:-n/a} |"
echo "| PyTorch eager step time (ms) | ${torch_ms:-n/a (rc $torch_rc)} |"
[ "$check" = OK ] && [ "$torch_rc" = 0 ]

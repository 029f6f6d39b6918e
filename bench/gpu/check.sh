#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU (CUDA 13, NCCL, PyTorch; no LLVM/MLIR,
# no MPI) from the folder bench/gpu/build.sh filled (bench/gpu/out), in well
# under 5 minutes: the GPU-compiled gradient step checked against the CPU
# path's outputs, its step time, the same step in PyTorch eager on the same
# GPU, the example train step (5 steps of SGD with momentum, parameters and
# optimizer state on the GPU) checked against the CPU path, every collective
# (a group of 1), the fused attention kernels against a float64 reference,
# the programs spmd.compile builds for four PyTorch models
# (and one under torch.autocast bfloat16) vs the CPU path, the same as CUDA
# graphs (SPMD_CUDA_GRAPH=1), bench/gpt.py's small GPT checked then timed
# (also as a CUDA graph) next to PyTorch eager and torch.compile on the same
# GPU, bench/gpt2.py's GPT-2 124M likewise (its loss checked), spmd.compile's device layer (state buffers as CUDA tensors,
# python_views.py), and a short table last. A folder built with `build.sh --emulate` runs the same against
# the GPU emulator (no GPU; PyTorch's row is skipped).
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
emulated=""
if [ -f "$out/emulated" ]; then
  emulated=$(cat "$out/emulated")
  export LD_LIBRARY_PATH="$emulated:$LD_LIBRARY_PATH"
  echo "GPU emulator: $emulated"
else
  nvidia-smi -L 2>/dev/null | head -1
fi

echo "== spmd: GPU-compiled step vs the CPU path"
timeout 120 "$out/grad_step_gpu" "$out/cpu_ref.bin" | tee "$out/gpu.txt"
gpu_rc=${PIPESTATUS[0]}
echo "== the example train step (5 steps) vs the CPU path"
timeout 60 "$out/train_step_gpu" "$out/train_ref.bin" | tee "$out/train.txt"
train_rc=${PIPESTATUS[0]}
echo "== every collective (a group of 1)"
timeout 60 "$out/collectives_gpu" > "$out/collectives.out"
coll_rc=$?
# Plain Python: any python3 runs it (a traceback or a mismatch is a failure
# in the table below, never "ok").
"$python" "$out/check_collectives.py" 1 < "$out/collectives.out" \
  > "$out/collectives.txt" 2>&1
coll_check_rc=$?
cat "$out/collectives.txt"
echo "== fused attention kernels (masked, causal; forward and backward) vs a float64 reference"
timeout 120 "$out/attention_gpu" | tee "$out/attention.txt"
attention_rc=${PIPESTATUS[0]}
echo "== spmd.compile programs of 4 PyTorch models (3 steps; one also under autocast bf16) vs the CPU path"
for m in mlp_sgd norm_adam transformer embed_adamw norm_adam_bf16; do
  echo -n "$m: "
  timeout 60 "$out/${m}_gpu" "$out/${m}_ref.txt" || echo "$m FAILED (rc $?)"
done | tee "$out/models.txt"
echo "== the same programs with steps 2 and 3 as one CUDA graph (SPMD_CUDA_GRAPH=1: captured once, replayed)"
for m in mlp_sgd norm_adam transformer embed_adamw norm_adam_bf16; do
  echo -n "$m: "
  SPMD_CUDA_GRAPH=1 timeout 60 "$out/${m}_gpu" "$out/${m}_ref.txt" ||
    echo "$m FAILED (rc $?)"
done | tee "$out/graphs.txt"
gpt_config=$(cat "$out/gpt_config.txt")
echo "== bench/gpt.py's $gpt_config GPT on this GPU: 3 steps vs the CPU path, then 20 timed; with a CUDA graph; PyTorch eager and torch.compile"
SPMD_TIME_STEPS=20 timeout 180 "$out/gpt_gpu" "$out/gpt_ref.txt" | tee "$out/gpt.txt"
gpt_rc=${PIPESTATUS[0]}
SPMD_CUDA_GRAPH=1 SPMD_TIME_STEPS=20 timeout 180 "$out/gpt_gpu" "$out/gpt_ref.txt" |
  tee "$out/gpt_graph.txt"
gpt_graph_rc=${PIPESTATUS[0]}
if [ -z "$emulated" ]; then
  timeout 300 "$python" "$out/torch_gpt.py" "$gpt_config" 20 |
    tee "$out/torch_gpt.txt"
  torch_gpt_rc=${PIPESTATUS[0]}
else
  echo "emulated: no GPU for PyTorch" > "$out/torch_gpt.txt"
  torch_gpt_rc=0
fi
gpt2_line="not built"
if [ -x "$out/gpt2_gpu" ]; then
  echo "== GPT-2 124M (bench/gpt2.py, batch 4 x 128 tokens, AdamW): the loss after 3 steps vs the CPU path, then 10 timed; with a CUDA graph; PyTorch eager and torch.compile"
  SPMD_TIME_STEPS=10 timeout 300 "$out/gpt2_gpu" "$out/gpt2_ref.txt" | tee "$out/gpt2.txt"
  gpt2_rc=${PIPESTATUS[0]}
  SPMD_CUDA_GRAPH=1 SPMD_TIME_STEPS=10 timeout 300 "$out/gpt2_gpu" "$out/gpt2_ref.txt" |
    tee "$out/gpt2_graph.txt"
  gpt2_graph_rc=${PIPESTATUS[0]}
  if [ -z "$emulated" ]; then
    timeout 400 "$python" "$out/torch_gpt.py" gpt2 10 | tee "$out/torch_gpt2.txt"
  fi
  g2_check=$(sed -n 's/^bridge step: .*deviation \([^:]*\): \(OK\|WRONG\)$/\1 \2/p' "$out/gpt2.txt")
  g2_ms=$(sed -n 's/^time: rank 0: spmd \([0-9.]*\) ms.*/\1/p' "$out/gpt2.txt")
  g2_graph_ms=$(sed -n 's/^time: rank 0: spmd (CUDA graph) \([0-9.]*\) ms.*/\1/p' "$out/gpt2_graph.txt")
  g2_eager=$(sed -n 's/^time: torch eager \([0-9.]*\) ms.*/\1/p' "$out/torch_gpt2.txt" 2>/dev/null)
  g2_compile=$(sed -n 's/^time: torch.compile \([0-9.]*\) ms.*/\1/p' "$out/torch_gpt2.txt" 2>/dev/null)
  gpt2_line="loss ${g2_check:-FAILED (rc $gpt2_rc)}; step ms: spmd ${g2_ms:-n/a} / CUDA graph ${g2_graph_ms:-n/a (rc $gpt2_graph_rc)} / torch eager ${g2_eager:-n/a} / torch.compile ${g2_compile:-n/a}"
fi
echo "== spmd.compile's GPU target: state buffers as CUDA tensors (python/spmd/_device.py)"
if [ -z "$emulated" ]; then
  timeout 120 "$python" "$out/python_views.py" "$out" 2>&1 | tee "$out/views.txt"
  views_rc=${PIPESTATUS[0]}
else
  echo "python views: n/a (emulated)" | tee "$out/views.txt"
  views_rc=0
fi
echo "== a step trace of the transformer program (SPMD_TRACE; kernels, GEMMs, collectives on their streams)"
rm -rf "$out/trace-transformer"
SPMD_TRACE="$out/trace-transformer" timeout 60 "$out/transformer_gpu" \
  "$out/transformer_ref.txt" > /dev/null 2>&1
trace_rc=$?
"$python" "$out/timeline.py" "$out/trace-transformer" \
  -o "$out/transformer-trace.png" --last 2 > "$out/trace.txt" 2>&1
trace_draw_rc=$?
cat "$out/trace.txt"
if [ -z "$emulated" ]; then
  echo "== PyTorch eager on the same GPU"
  timeout 120 "$python" "$out/torch_eager.py" "$B" "$K" "$N" | tee "$out/torch.txt"
  torch_rc=${PIPESTATUS[0]}
else
  echo "emulated: no GPU for PyTorch" > "$out/torch.txt"
  torch_rc=0
fi

check=$(sed -n 's/^check: .*: \(OK\|WRONG\)$/\1/p' "$out/gpu.txt")
dev=$(sed -n 's/^check: .*max relative deviation \([^ ]*\) (gpu vs cpu path \([^,]*\),.*/\1 (vs CPU path \2)/p' "$out/gpu.txt")
spmd_ms=$(sed -n 's/^time: spmd \([0-9.]*\) ms.*/\1/p' "$out/gpu.txt")
torch_ms=$(sed -n 's/^time: torch eager \([0-9.]*\) ms.*/\1/p' "$out/torch.txt")
train=$(sed -n 's/^train step: .*: \(OK\|WRONG\)$/\1/p' "$out/train.txt")
train_dev=$(sed -n 's/^train step: .*deviation \([^:]*\):.*/\1/p' "$out/train.txt")
echo
echo "| ${emulated:+EMULATED, no GPU: }gradient step $B x $K -> $N, 1 GPU | value |"
echo "|---|---|"
echo "| spmd GPU vs float64 reference (max rel. dev.) | ${dev:-n/a} ${check:-FAILED (rc $gpu_rc)} |"
echo "| spmd step time (ms) | ${spmd_ms:-n/a} |"
if [ -n "$emulated" ]; then
  torch_cell="n/a (emulated)"
else
  torch_cell=${torch_ms:-"n/a (rc $torch_rc)"}
fi
echo "| PyTorch eager step time (ms) | $torch_cell |"
echo "| example train step, 5 steps vs CPU path (max rel. dev.) | ${train_dev:-n/a} ${train:-FAILED (rc $train_rc)} |"
coll=$(sed -n 's/^\([0-9]* of [0-9]*\) collectives ok$/\1/p' "$out/collectives.txt")
if [ "$coll_rc" = 0 ] && [ "$coll_check_rc" = 0 ] && [ -n "$coll" ]; then
  coll_cell="$coll ok"
else
  coll_cell="FAILED (run rc $coll_rc, check rc $coll_check_rc${coll:+, $coll ok})"
fi
echo "| collectives (group of 1) | $coll_cell |"
attention_ok=$(grep -c ': OK$' "$out/attention.txt")
echo "| fused attention, forward + backward, masked and causal (8 checks) | $attention_ok of 8 OK (rc $attention_rc) |"
models_ok=$(grep -c ': OK$' "$out/models.txt")
echo "| spmd.compile programs, 4 models (+1 autocast bf16) vs CPU path | $models_ok of 5 OK |"
graphs_ok=$(grep -c ': OK$' "$out/graphs.txt")
echo "| the same as CUDA graphs (SPMD_CUDA_GRAPH=1) vs CPU path | $graphs_ok of 5 OK |"
gpt_check=$(sed -n 's/^bridge step: .*deviation \([^:]*\): \(OK\|WRONG\)$/\1 \2/p' "$out/gpt.txt")
gpt_graph_check=$(sed -n 's/^bridge step: .*: \(OK\|WRONG\)$/\1/p' "$out/gpt_graph.txt")
gpt_ms=$(sed -n 's/^time: rank 0: spmd \([0-9.]*\) ms.*/\1/p' "$out/gpt.txt")
gpt_graph_ms=$(sed -n 's/^time: rank 0: spmd (CUDA graph) \([0-9.]*\) ms.*/\1/p' "$out/gpt_graph.txt")
torch_gpt_ms=$(sed -n 's/^time: torch eager \([0-9.]*\) ms.*/\1/p' "$out/torch_gpt.txt")
compiled_gpt_ms=$(sed -n 's/^time: torch.compile \([0-9.]*\) ms.*/\1/p' "$out/torch_gpt.txt")
echo "| $gpt_config GPT (bench/gpt.py), spmd program vs CPU path, 3 steps (+ as a CUDA graph) | ${gpt_check:-FAILED (rc $gpt_rc)} (graph: ${gpt_graph_check:-FAILED (rc $gpt_graph_rc)}) |"
if [ -n "$emulated" ]; then
  gpt_torch_cells="n/a (emulated) / n/a (emulated)"
else
  gpt_torch_cells="${torch_gpt_ms:-n/a (rc $torch_gpt_rc)} / ${compiled_gpt_ms:-n/a}"
fi
echo "| $gpt_config GPT step ms: spmd / spmd CUDA graph / torch eager / torch.compile${emulated:+ (emulated: not GPU times)} | ${gpt_ms:-n/a} / ${gpt_graph_ms:-n/a} / $gpt_torch_cells |"
trace_line=$(sed -n 's/^rank 0: \(.*\)$/\1/p' "$out/trace.txt")
if [ "$trace_rc" = 0 ] && [ "$trace_draw_rc" = 0 ] && [ -n "$trace_line" ]; then
  trace_cell="$trace_line ($out/transformer-trace.png)"
else
  trace_cell="FAILED (run rc $trace_rc, draw rc $trace_draw_rc)"
fi
echo "| step trace, transformer program (3 steps) | $trace_cell |"
echo "| GPT-2 124M (bench/gpt2.py), batch 4 x 128: loss vs CPU path; step ms | $gpt2_line |"
views=$(sed -n 's/^python views: //p' "$out/views.txt")
echo "| spmd.compile GPU target: state as CUDA tensors | ${views:-FAILED} (rc $views_rc) |"
[ "$check" = OK ] && [ "$train" = OK ] && [ "$torch_rc" = 0 ] &&
  [ "$coll_cell" = "12 of 12 ok" ] && [ "$models_ok" = 5 ] &&
  [ "$graphs_ok" = 5 ] && [ "${gpt_check##* }" = OK ] &&
  [ "$gpt_graph_check" = OK ] && [ "$torch_gpt_rc" = 0 ] &&
  [ "$attention_ok" = 8 ] && [ "$attention_rc" = 0 ] &&
  [ "$trace_rc" = 0 ] && [ "$trace_draw_rc" = 0 ] && [ -n "$trace_line" ] &&
  [ "$views_rc" = 0 ] && [ -n "$views" ] &&
  { [ ! -x "$out/gpt2_gpu" ] || [ "${g2_check##* }" = OK ]; }

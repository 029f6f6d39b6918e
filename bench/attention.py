#!/usr/bin/env python3
"""Causal self-attention, forward + backward: spmd.attention vs the
materialized form, side by side in one run. Not a test: prints figures.

Per sequence length T (default 512 and 2048; batch 1, 8 heads, head size 64,
one thread per process), each in its own process:
  * spmd.compile with SDPA traced as spmd.attention (flash kernels);
  * spmd.compile with SPMD_ATTENTION=math: the scores, probabilities and
    their gradients materialized (T x T per head), as eager's math path;
  * eager PyTorch (its CPU flash kernel), for reference.
The step: loss = sum(SDPA(q, k, v, is_causal=True) * w), backward, SGD on
q, k, v (held as parameters). Reported: the steady step median, and the
peak bytes of the buffers the compiled program allocates during a step
(spmd.memory_stats(); parameters and optimizer state are the same for both
and not counted; the flash kernels' scratch, a few 64 x 128 blocks and one
float per query row, is added). The floor is the causal attention's matmul
FLOPs (half of 14 T^2 d per head: forward QK^T and PV, backward QK^T again,
dV, dP, dQ, dK) at this core's sgemm rate; the math form does all 12 T^2 d
of its six matmuls, masked half included.

    python3 bench/attention.py [--lengths 512 2048] [--steps 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from gpt import sgemm_gflops  # this core's sgemm rate, as bench/gpt.py's

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADS, HEAD_DIM = 8, 64


def worker(mode, T, steps, out):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.q, self.k, self.v = (
                nn.Parameter(torch.randn(1, HEADS, T, HEAD_DIM, generator=g))
                for _ in range(3))

        def forward(self, w):
            out = F.scaled_dot_product_attention(self.q, self.k, self.v,
                                                 is_causal=True)
            return (out * w).sum()

    def step(model, opt, w):
        loss = model(w)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    model = Attention()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    w = torch.randn(1, HEADS, T, HEAD_DIM,
                    generator=torch.Generator().manual_seed(1))
    result = {}
    if mode == "eager":
        run = step
    else:
        import spmd
        run = spmd.compile()(step)
    t0 = time.perf_counter()
    run(model, opt, w)
    result["first"] = time.perf_counter() - t0
    if mode != "eager":
        spmd.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = run(model, opt, w)
        times.append(time.perf_counter() - t0)
    result["median"] = statistics.median(times)
    result["loss"] = float(loss)
    if mode != "eager":
        stats = spmd.memory_stats()
        result["peak"] = stats["transient_peak_bytes"] - stats["live_bytes"]
    json.dump(result, open(out, "w"))


def launch(mode, T, steps, tmp):
    out = os.path.join(tmp, f"{mode}-{T}.json")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    env["SPMD_ATTENTION"] = "math" if mode == "math" else "fused"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode,
           "--length", str(T), "--steps", str(steps), "--out", out]
    if mode != "eager":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "1",
               "-x", "PYTHONPATH", "-x", "SPMD_ATTENTION"] + cmd
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"{mode} T={T} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.load(open(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--worker")
    ap.add_argument("--length", type=int)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.length, args.steps, args.out)
        return
    gflops = sgemm_gflops()
    print(f"# Causal self-attention forward + backward, batch 1, {HEADS} "
          f"heads, head size {HEAD_DIM}, 1 thread")
    print("| T | spmd.attention ms | materialized ms | fused / "
          "materialized | eager (flash) ms | floor ms | spmd.attention "
          "peak MiB | materialized peak MiB |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for T in args.lengths:
            runs = {m: launch(m, T, args.steps, tmp)
                    for m in ("fused", "math", "eager")}
            scratch = 4 * (3 * 64 * 128 + 64 * HEAD_DIM + T)
            fused_peak = (runs["fused"]["peak"] + scratch) / 2 ** 20
            math_peak = runs["math"]["peak"] / 2 ** 20
            floor = 7 * T * T * HEAD_DIM * HEADS / (gflops * 1e9)
            f, m = runs["fused"]["median"], runs["math"]["median"]
            print(f"| {T} | {f * 1e3:.1f} | {m * 1e3:.1f} | {f / m:.2f} | "
                  f"{runs['eager']['median'] * 1e3:.1f} | {floor * 1e3:.1f} "
                  f"| {fused_peak:.1f} | {math_peak:.1f} |")
            print(f"  losses: spmd.attention {runs['fused']['loss']:.4f}, "
                  f"materialized {runs['math']['loss']:.4f}, eager "
                  f"{runs['eager']['loss']:.4f}; first call s: "
                  f"{runs['fused']['first']:.1f} / {runs['math']['first']:.1f}")
    print(f"floor: causal attention matmul FLOPs at {gflops:.0f} GFLOP/s "
          "(this core's sgemm)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A nanoGPT-style train step: spmd.compile vs DDP vs eager vs torch.compile.

Not a test: prints figures. One run measures, side by side on this machine
(one thread per process):
  * spmd.compile on 2 ranks (mpirun): the first call split by compile phase
    (from an empty compile cache), the steady step median, peak RSS per
    rank, and a second process's time from `import torch` to its first
    step done when the program is already cached;
  * DDP (gloo) on 2 ranks, the same per-rank batch;
  * eager PyTorch, one process, the whole global batch;
  * torch.compile (inductor), one process, the whole global batch;
and the ratios spmd / DDP and spmd / eager. The floor is the step's matmul
FLOPs per rank at this core's measured sgemm rate.

    python3 bench/gpt.py [--config small|large|both] [--steps 20]
                         [--attention sdpa|manual]

Configurations: small = 4 layers, 4 heads, d=128, block 64, vocabulary 65,
tied head, AdamW, global batch 16 (8 rows per rank); large = 6 layers,
8 heads, d=256, block 128, same vocabulary and batch. Attention is
F.scaled_dot_product_attention(is_causal=True) as nanoGPT calls it (compiled:
spmd.attention), or with --attention manual the matmul + masked softmax form.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

T_START = time.perf_counter()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "small": dict(layers=4, heads=4, dim=128, block=64, vocab=65, batch=16),
    "large": dict(layers=6, heads=8, dim=256, block=128, vocab=65, batch=16),
}


def build_model(cfg):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    SDPA = os.environ.get("GPT_ATTENTION", "sdpa") == "sdpa"

    class Block(nn.Module):
        def __init__(self, d, h, T):
            super().__init__()
            self.h = h
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.register_buffer(
                "mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
            k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
            v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
            if SDPA:  # nanoGPT's `flash` path (torch >= 2.0)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (
                    1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0,
                                      float("-inf")).softmax(-1)
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, T = c["dim"], c["block"]
            self.wte = nn.Embedding(c["vocab"], d)
            self.wpe = nn.Embedding(T, d)
            self.blocks = nn.ModuleList(
                [Block(d, c["heads"], T) for _ in range(c["layers"])])
            self.lnf = nn.LayerNorm(d)
            self.head = nn.Linear(d, c["vocab"], bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            B, T = idx.shape
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.head(self.lnf(x))

    torch.manual_seed(0)
    return GPT(cfg)


def train_step(model, opt, x, y):
    import torch.nn.functional as F
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def matmul_flops(cfg, rows):
    """Forward + backward matmul FLOPs of `rows` sequences (3x forward)."""
    L, d, T, V = cfg["layers"], cfg["dim"], cfg["block"], cfg["vocab"]
    tokens = rows * T
    linear = L * (3 * d * d + d * d + 8 * d * d) + V * d
    attention = L * 2 * T * d  # QK^T and att @ V per token
    return 3 * 2 * tokens * (linear + attention)


def peak_rss_mib():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


def worker(mode, cfg, steps, warmup, out):
    import torch
    torch.set_num_threads(1)
    import_done = time.perf_counter()
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    world, rank = 1, 0
    step = train_step
    if mode in ("spmd", "spmd-cached"):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import spmd
        world, rank = spmd.world_size(), spmd.rank()
        step = spmd.compile()(train_step)
    elif mode == "ddp":
        import torch.distributed as dist
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    elif mode == "torch.compile":
        model = torch.compile(model)
    gen = torch.Generator().manual_seed(1234)
    B, T, V = cfg["batch"], cfg["block"], cfg["vocab"]
    x = torch.randint(0, V, (B, T), generator=gen)
    y = torch.randint(0, V, (B, T), generator=gen)
    rows = B // world
    x, y = x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]
    times = []
    setup_done = time.perf_counter()
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        loss = step(model, opt, x, y)
        loss = float(loss)
        times.append(time.perf_counter() - t0)
        if i == 0:
            first_done = time.perf_counter()
    result = dict(mode=mode, rank=rank, first=times[0],
                  median=statistics.median(times[warmup:]),
                  rss=peak_rss_mib(), loss=loss,
                  import_to_first=first_done - import_done,
                  setup=setup_done - import_done,
                  start_to_first=first_done - T_START)
    if mode.startswith("spmd"):
        result["phases"] = step.compile_times
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)


def sgemm_gflops():
    """This core's single-thread sgemm rate (the floor's yardstick)."""
    import torch
    torch.set_num_threads(1)
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    for _ in range(3):
        a @ b
    t0 = time.perf_counter()
    n = 20
    for _ in range(n):
        a @ b
    return n * 2 * 512 ** 3 / (time.perf_counter() - t0) / 1e9


def launch(mode, config, args, tmp, env, ranks):
    out = os.path.join(tmp, f"{config}-{mode}")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode,
           "--config", config, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--out", out]
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none",
               "-np", str(ranks)] + cmd
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"{config} {mode} failed:\n{proc.stdout}\n{proc.stderr}")
    return [json.load(open(f"{out}.{r}")) for r in range(ranks)]


def report(config, cfg, runs, gflops):
    spmd, cached, ddp, eager = (runs["spmd"], runs["spmd-cached"],
                                runs["ddp"], runs["eager"])
    tc = runs.get("torch.compile")
    slow = lambda rs, k: max(r[k] for r in rs)  # noqa: E731
    print(f"\n## {config}: {cfg['layers']} layers, {cfg['heads']} heads, "
          f"d={cfg['dim']}, block {cfg['block']}, vocabulary {cfg['vocab']}, "
          f"tied head, AdamW, global batch {cfg['batch']} "
          f"({cfg['batch'] // 2} rows per rank), 2 ranks, 1 thread each, "
          f"attention {os.environ.get('GPT_ATTENTION', 'sdpa')}")
    rows = [("spmd.compile (2 ranks)", spmd), ("DDP gloo (2 ranks)", ddp),
            ("eager, 1 process, whole batch", eager)]
    if tc:
        rows.append(("torch.compile, 1 process, whole batch", tc))
    print(f"| | first call s | steady step ms (median) | peak RSS MiB per rank |")
    print("|---|---|---|---|")
    for name, rs in rows:
        print(f"| {name} | {slow(rs, 'first'):.1f} | "
              f"{slow(rs, 'median') * 1e3:.1f} | "
              f"{', '.join(str(r['rss']) for r in rs)} |")
    phases = spmd[0]["phases"]
    print("spmd first call by phase (rank 0, s): " + ", ".join(
        f"{k} {v:.2f}" for k, v in phases.items()))
    c = cached[0]["phases"]
    print(f"spmd cached program, second process: import torch -> first step "
          f"done {slow(cached, 'import_to_first'):.2f} s (whole process "
          f"{slow(cached, 'start_to_first'):.2f} s; model, AdamW, spmd "
          f"set-up {slow(cached, 'setup'):.2f} s, fake run "
          f"{c.get('trace (fake)', 0):.2f} s, make_fx "
          f"{c.get('trace (make_fx)', 0):.2f} s, import "
          f"{c.get('import (torch-mlir)', 0):.2f} s; target <= 3 s); floor, "
          f"eager's "
          f"own import torch -> first step done: "
          f"{slow(eager, 'import_to_first'):.2f} s")
    floor = matmul_flops(cfg, cfg["batch"] // 2) / (gflops * 1e9)
    s = slow(spmd, "median")
    print(f"floor (matmul FLOPs per rank at {gflops:.0f} GFLOP/s sgemm): "
          f"{floor * 1e3:.1f} ms")
    print(f"ratios: spmd / DDP {s / slow(ddp, 'median'):.2f} (target <= 0.8),"
          f" spmd / eager {s / slow(eager, 'median'):.2f} (target <= 0.6)"
          + (f", spmd / torch.compile {s / slow(tc, 'median'):.2f}"
             if tc else ""))
    print(f"losses after the run: spmd {spmd[0]['loss']:.5f}, "
          f"DDP {ddp[0]['loss']:.5f}, eager {eager[0]['loss']:.5f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="both",
                    choices=["small", "large", "both"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skip-torch-compile", action="store_true")
    ap.add_argument("--attention", choices=["sdpa", "manual"],
                    default="sdpa",
                    help="F.scaled_dot_product_attention(is_causal=True), as "
                    "nanoGPT on torch 2 (spmd.attention when compiled), or "
                    "written out as matmul + masked softmax + matmul")
    ap.add_argument("--worker")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, CONFIGS[args.config], args.steps, args.warmup,
               args.out)
        return
    gflops = sgemm_gflops()
    configs = ["small", "large"] if args.config == "both" else [args.config]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT="29531",
                   SPMD_COMPILE_CACHE=os.path.join(tmp, "cache"),
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"),
                   GPT_ATTENTION=args.attention)
        for config in configs:
            runs = {}
            runs["spmd"] = launch("spmd", config, args, tmp, env, 2)
            runs["spmd-cached"] = launch("spmd-cached", config, args, tmp,
                                         env, 2)
            runs["ddp"] = launch("ddp", config, args, tmp, env, 2)
            runs["eager"] = launch("eager", config, args, tmp, env, 1)
            if not args.skip_torch_compile:
                runs["torch.compile"] = launch("torch.compile", config, args,
                                               tmp, env, 1)
            report(config, CONFIGS[config], runs, gflops)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Activation checkpointing's memory and time: spmd.compile with
activation_checkpointing False / "selective" / "full" on a GPT-2-shaped
model whose activations dominate (issue #42: 4 layers, d=512, 8 heads,
vocabulary 1024, sequence 512, batch 4, AdamW), one process per mode, one
thread. Per mode: the step's transient peak (spmd.memory_stats: measured
by the runtime's allocator, and as planned by spmd-plan-memory), its ratio
to no checkpointing, the state, peak RSS, the step median of 3 and the
final loss against eager's (same seed and data). The target: "full"
halves the transient peak (peak - state) at an equal loss.

    python3 bench/activation_checkpointing.py [--layers 4] [--dim 512]
        [--seq 512] [--batch 4] [--modes none,selective,full]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    dim, heads = args.dim, args.heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up = nn.Linear(dim, 4 * dim)
            self.down = nn.Linear(4 * dim, dim)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(args.vocab, dim)
            nn.init.normal_(self.wte.weight, std=0.02)
            self.blocks = nn.ModuleList([Block() for _ in range(args.layers)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, args.vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            x = self.wte(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    data = [(torch.randint(0, args.vocab, (args.batch, args.seq),
                           generator=gen),
             torch.randint(0, args.vocab, (args.batch, args.seq),
                           generator=gen)) for _ in range(args.steps)]

    def step(model, opt, x, y):
        loss = F.cross_entropy(model(x).view(-1, args.vocab), y.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return model, opt, data, step


def child(args):
    """One mode in this process: prints a JSON line."""
    model, opt, data, step = build(args)
    result = {"mode": args.child}
    if args.child == "eager":
        losses = [float(step(model, opt, x, y).detach()) for x, y in data]
        result["loss"] = losses[-1]
    else:
        import spmd
        policy = {"none": False}.get(args.child, args.child)
        compiled = spmd.compile(activation_checkpointing=policy)(step)
        times, loss = [], None
        for x, y in data:
            spmd.reset_peak_memory_stats()
            start = time.perf_counter()
            loss = float(compiled(model, opt, x, y))
            times.append(time.perf_counter() - start)
        stats = spmd.memory_stats()
        result.update(
            loss=loss, step=statistics.median(times[1:]),
            transient=stats["transient_peak_bytes"],
            planned=stats["planned_transient_peak_bytes"],
            state=stats["state_bytes"])
    status = open("/proc/self/status").read()
    result["rss"] = int(status.split("VmHWM:")[1].split()[0]) * 1024
    print("RESULT " + json.dumps(result), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--modes", default="none,selective,full")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    results = {}
    for mode in ["eager"] + args.modes.split(","):
        cmd = [sys.executable, os.path.abspath(__file__), "--child", mode] + \
            [f"--{k}={getattr(args, k)}" for k in
             ("layers", "dim", "heads", "vocab", "seq", "batch", "steps")]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
        if out.returncode != 0 or not line:
            sys.exit(f"{mode} failed:\n{out.stderr[-3000:]}")
        results[mode] = json.loads(line[0][len("RESULT "):])
    mib = 2 ** 20
    print(f"GPT-2-shaped: {args.layers} layers, d={args.dim}, "
          f"vocabulary {args.vocab}, sequence {args.seq}, batch {args.batch}, "
          "1 process, 1 thread; eager's peak RSS "
          f"{results['eager']['rss'] / mib:.0f} MiB")
    print("| activation_checkpointing | transient peak MiB (measured / "
          "planned) | vs none | state MiB | peak RSS MiB | step s | "
          "loss vs eager |")
    print("|---|---|---|---|---|---|---|")
    base = results.get("none", {}).get("transient")
    for mode in args.modes.split(","):
        r = results[mode]
        ratio = f"{r['transient'] / base:.2f}x" if base else "-"
        print(f"| {mode} | {r['transient'] / mib:.1f} / "
              f"{r['planned'] / mib:.1f} | {ratio} | {r['state'] / mib:.1f} "
              f"| {r['rss'] / mib:.0f} | {r['step']:.2f} | "
              f"{abs(r['loss'] - results['eager']['loss']):.1e} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""spmd.TensorParallel vs eager single-process training over the global
batch: losses and every parameter and optimizer-state tensor (gathered with
spmd.full_state_dict).

    tp_check.py CASE [--tp-size T] [--fully-shard] [--steps N]

mlp: train_check's Linear(6, 16) Colwise -> ReLU -> Linear(16, 4) Rowwise,
SGD momentum.
embedding: token embedding Rowwise (vocabulary split), position embedding
Colwise (embedding dimension split), a replicated Linear head, Adam.
attention: a pre-norm self-attention block (2 heads) with q/k/v Colwise and
the output projection Rowwise (Megatron's split), a Colwise/Rowwise MLP,
AdamW. The ranks of one TP group pass the same rows; data parallelism on
the mesh's first axis (fully_shard: FSDP x TP).
"""

import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd
from train_check import (GLOBAL_BATCH, MLP, full_state_diffs, make_step,
                         report_state_bytes)


class Block(nn.Module):
    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        # No key bias: its gradient is zero up to rounding (softmax ignores a
        # per-query constant) and AdamW would normalize the noise.
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm(x)

        def split(z):
            return z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(h)), split(self.k(h)),
                                           split(self.v(h)), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        x = x + self.down(F.gelu(self.up(x)))
        return self.head(x.mean(dim=1))


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(16, 8)
        self.pos = nn.Embedding(5, 8)
        self.fc = nn.Linear(8, 3)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.fc(F.gelu(x).mean(dim=1))


def setup(case):
    torch.manual_seed(0)
    if case == "embedding":
        model = Embed()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        plan = {"tok": spmd.RowwiseParallel(), "pos": spmd.ColwiseParallel()}
        return model, opt, F.cross_entropy, plan
    if case == "mlp":
        model = MLP()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        plan = {"fc1": spmd.ColwiseParallel(), "fc2": spmd.RowwiseParallel()}
        return model, opt, F.mse_loss, plan
    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    plan = {"q": spmd.ColwiseParallel(), "k": spmd.ColwiseParallel(),
            "v": spmd.ColwiseParallel(), "proj": spmd.RowwiseParallel(),
            "up": spmd.ColwiseParallel(), "down": spmd.RowwiseParallel()}
    return model, opt, F.cross_entropy, plan


def data(case, gen):
    if case == "embedding":
        return (torch.randint(0, 16, (GLOBAL_BATCH, 5), generator=gen),
                torch.randint(0, 3, (GLOBAL_BATCH,), generator=gen))
    if case == "mlp":
        return (torch.randn(GLOBAL_BATCH, 6, generator=gen),
                torch.randn(GLOBAL_BATCH, 4, generator=gen))
    return (torch.randn(GLOBAL_BATCH, 5, 8, generator=gen),
            torch.randint(0, 3, (GLOBAL_BATCH,), generator=gen))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["mlp", "attention", "embedding"])
    parser.add_argument("--tp-size", type=int, default=2)
    parser.add_argument("--fully-shard", action="store_true")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()
    rank, world = spmd.rank(), spmd.world_size()
    model, opt, loss_fn, plan = setup(args.case)
    ref_model, ref_opt, _, _ = setup(args.case)

    step = make_step(loss_fn)
    dp = spmd.DataParallel(
        parallel_style="fully_shard" if args.fully_shard else "replicate")
    mode = spmd.TensorParallel(plan, tp_size=args.tp_size, data_parallel=dp)
    compiled = spmd.compile(parallel_mode=mode)(step)
    groups = world // args.tp_size
    local = GLOBAL_BATCH // groups
    part = slice((rank // args.tp_size) * local,
                 (rank // args.tp_size + 1) * local)
    gen = torch.Generator().manual_seed(1)
    worst = 0.0
    for i in range(1, args.steps + 1):
        x, y = data(args.case, gen)
        loss = compiled(model, opt, x[part], y[part])
        ref = step(ref_model, ref_opt, x, y).detach()
        diffs = {"loss": (loss - ref).abs().item()}
        diffs.update(full_state_diffs(model, opt, ref_model, ref_opt))
        name, diff = max(diffs.items(), key=lambda kv: kv[1])
        worst = max(worst, diff)
        if rank == 0:
            print(f"step {i}: loss {loss.item():.6f} eager {ref.item():.6f}; "
                  f"max |diff| {diff:.1e} ({name})")
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    report_state_bytes(model, opt, ref_model, ref_opt, rank)
    ok = worst <= args.tol
    if rank == 0:
        first, second = {"mlp": ("fc1", "fc2"), "attention": ("q", "proj"),
                         "embedding": ("tok", "pos")}[args.case]
        print(f"local shapes: {first} {shapes[first + '.weight']}, "
              f"{second} {shapes[second + '.weight']}")
        print(f"{args.case} tp={args.tp_size} mesh {groups}x{args.tp_size}"
              f"{' fully_shard' if args.fully_shard else ''}: "
              f"{'OK' if ok else 'MISMATCH'} max deviation {worst:.1e} over "
              f"{args.steps} steps on {world} ranks")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

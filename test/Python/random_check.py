#!/usr/bin/env python3
"""Random ops in a compiled step (Philox on global element indices): the
program on N ranks draws what it draws on one, new numbers every call, with
the statistics torch's ops promise.

    mpirun -np N python3 random_check.py train OUT   (writes losses and a
        parameter checksum per step to OUT; run on 1, 2 and 4 ranks and
        compare the files)
    mpirun -np N python3 random_check.py stats       (prints keep rate,
        scale, uniform and normal moments, and whether masks change)
    python3 random_check.py compare OUT1 OUT2        (max difference)
"""

import sys

import torch
import torch.nn as nn

import spmd

ROWS = 16


class DropoutMLP(nn.Module):
    """torch.nn's own Dropout between two Linear layers, plus Gaussian input
    noise (randn_like) as some augmentations do."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = x + 0.05 * torch.randn_like(x)
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class Draws(nn.Module):
    """Returns what the random ops draw for an input of ones."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        kept = nn.functional.dropout(x * self.scale, p=0.3, training=True)
        return kept, torch.rand_like(x), torch.randn_like(x)


def train(out_path):
    torch.manual_seed(0)
    model = DropoutMLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @spmd.compile()
    def step(model, opt, x, y):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    rank, world = spmd.rank(), spmd.world_size()
    gen = torch.Generator().manual_seed(1)
    lines = []
    for i in range(4):
        x, y = torch.randn(ROWS, 8, generator=gen), torch.randn(ROWS, 4,
                                                                generator=gen)
        local = ROWS // world
        loss = step(model, opt, x[rank * local:(rank + 1) * local],
                    y[rank * local:(rank + 1) * local])
        total = sum(p.detach().double().sum().item()
                    for p in model.parameters())
        lines.append(f"step {i + 1}: loss {loss.item():.7f} "
                     f"params {total:.7f}")
    if rank == 0:
        open(out_path, "w").write("\n".join(lines) + "\n")
        print("\n".join(lines))


def stats():
    torch.manual_seed(0)
    model = Draws()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)

    @spmd.compile()
    def step(model, opt, x):
        kept, u, z = model(x)
        kept.sum().backward()
        opt.step()
        opt.zero_grad()
        return kept, u, z

    rank, world = spmd.rank(), spmd.world_size()
    n = 40000
    x = torch.ones(n // world)
    kept1, u, z = step(model, opt, x)
    kept2, _, _ = step(model, opt, x)
    if rank != 0:
        return
    keep_rate = (kept1 != 0).double().mean().item()
    scales = kept1[kept1 != 0].unique()
    print(f"keep rate {keep_rate:.3f} (expected 0.700 +- 0.01): "
          f"{'OK' if abs(keep_rate - 0.7) < 0.01 else 'BAD'}")
    print(f"kept values {scales.tolist()} (expected [1/0.7]): "
          f"{'OK' if torch.allclose(scales, torch.tensor([1 / 0.7])) else 'BAD'}")
    changed = (kept1 != kept2).double().mean().item()
    print(f"masks differ between calls: {changed:.2f} of elements: "
          f"{'OK' if changed > 0.3 else 'BAD'}")
    print(f"uniform: min {u.min().item():.4f} max {u.max().item():.4f} "
          f"mean {u.mean().item():.3f}: "
          f"{'OK' if u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 else 'BAD'}")
    print(f"normal: mean {z.mean().item():.3f} std {z.std().item():.3f}: "
          f"{'OK' if abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02 else 'BAD'}")
    print(f"programs compiled: {len(step.cache)}")


def eval_mode():
    """model.eval() after training calls compiles an evaluation program (no
    dropout), and model.train() goes back to the training one."""
    torch.manual_seed(0)
    model = Draws()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)

    @spmd.compile()
    def step(model, opt, x):
        kept = nn.functional.dropout(x * model.scale, p=0.3,
                                     training=model.training)
        kept.sum().backward()
        opt.step()
        opt.zero_grad()
        return kept

    x = torch.ones(1000 // spmd.world_size())
    train_zeros = (step(model, opt, x) == 0).sum().item()
    model.eval()
    eval_zeros = (step(model, opt, x) == 0).sum().item()
    model.train()
    again_zeros = (step(model, opt, x) == 0).sum().item()
    if spmd.rank() == 0:
        print(f"dropped: train {train_zeros > 0}, eval {eval_zeros}, "
              f"train again {again_zeros > 0}; programs compiled: "
              f"{len(step.cache)}")


def compare(reference, other):
    """Max difference of the numbers two `train` runs printed."""
    import re
    nums = [[float(v) for v in re.findall(r"-?\d+\.\d+", open(p).read())]
            for p in (reference, other)]
    if len(nums[0]) != len(nums[1]) or not nums[0]:
        print("FAIL: the runs printed different numbers of values")
        return 1
    worst = max(abs(a - b) for a, b in zip(*nums))
    ok = worst <= 1e-5
    print(f"max |diff| {worst:.1e} over {len(nums[0])} values: "
          f"{'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2])
    elif sys.argv[1] == "eval":
        eval_mode()
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        stats()

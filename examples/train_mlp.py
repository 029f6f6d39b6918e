#!/usr/bin/env python3
"""Trains a small classifier with spmd.compile on every rank of an MPI job
and prints the loss curve; at the end, the same training done eagerly on one
device over the whole batch, for comparison.

    mpirun -np 2 python3 examples/train_mlp.py [--steps 20]

Each rank feeds its own slice of the global batch (Shard(0)); the returned
loss is the global-batch loss, and after every step the model's parameters
and the optimizer's state hold the updated values on every rank.
"""

import argparse

import torch
import torch.nn as nn

import spmd


class Classifier(nn.Module):
    def __init__(self, features=16, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.LayerNorm(hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def make_model():
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    return model, opt


loss_fn = nn.CrossEntropyLoss()


@spmd.compile()
def train_step(model, opt, x, y):
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def batches(steps, size, gen):
    # A learnable synthetic task: the class is the arg-max of 4 projections.
    projection = torch.randn(16, 4, generator=gen)
    for _ in range(steps):
        x = torch.randn(size, 16, generator=gen)
        yield x, (x @ projection).argmax(dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="global batch")
    args = parser.parse_args()

    rank, world = spmd.rank(), spmd.world_size()
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} must divide by {world} ranks")
    local = args.batch // world
    model, opt = make_model()
    losses = []
    for x, y in batches(args.steps, args.batch, torch.Generator().manual_seed(1)):
        mine = slice(rank * local, (rank + 1) * local)
        losses.append(train_step(model, opt, x[mine], y[mine]).item())

    # The same training, eagerly, on one device over the whole batch.
    ref, ref_opt = make_model()
    ref_losses = []
    for x, y in batches(args.steps, args.batch, torch.Generator().manual_seed(1)):
        loss = loss_fn(ref(x), y)
        loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        ref_losses.append(loss.item())

    if rank == 0:
        print(f"spmd.compile: {world} ranks x {local} rows "
              f"(global batch {args.batch}), AdamW")
        print(f"{'step':>4}  {'loss':>9}  {'eager, 1 device':>15}")
        for i, (a, b) in enumerate(zip(losses, ref_losses), 1):
            bar = "#" * int(30 * a / losses[0])
            print(f"{i:>4}  {a:>9.6f}  {b:>15.6f}  {bar}")
        worst = max(abs(a - b) for a, b in zip(losses, ref_losses))
        params = max((p - q).abs().max().item()
                     for p, q in zip(model.parameters(), ref.parameters()))
        print(f"max |loss diff| {worst:.1e}, max |parameter diff| {params:.1e}")
        if max(worst, params) > 1e-5:
            raise SystemExit("the compiled training diverged from eager")


if __name__ == "__main__":
    main()

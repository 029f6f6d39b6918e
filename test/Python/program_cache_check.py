#!/usr/bin/env python3
"""A step whose program may be in the compile cache from an earlier
process: trained on this rank's rows against eager over the global batch
(losses, parameters, AdamW state after three steps), whether the program was
found by the step's ops (_program_cache.py) or traced.

    program_cache_check.py ACTIVATION [--scale S]

The variants have the same parameters, shapes and optimizer and differ only
in the ops the step runs (relu / gelu) or in the value of a constant tensor
the step makes (`--scale`): each must get its own
program."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd


class Net(nn.Module):
    def __init__(self, activation, scale):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 4)
        self.activation = activation
        self.scale = scale

    def forward(self, x):
        act = F.gelu if self.activation == "gelu" else F.relu
        # A constant the step makes: in the digest by its bytes.
        scale = torch.tensor([self.scale, 1.0, 0.5, self.scale])
        return self.fc2(act(self.fc1(x))) * scale


def step(model, opt, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("activation", choices=["relu", "gelu"])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    ref, model = (Net(args.activation, args.scale),
                  Net(args.activation, args.scale))
    model.load_state_dict(ref.state_dict())
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=0.01)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    world, rank = spmd.world_size(), spmd.rank()
    x, y = torch.randn(4 * world, 6), torch.randn(4 * world, 4)
    rows = slice(rank * 4, (rank + 1) * 4)
    compiled = spmd.compile()(step)
    worst = 0.0
    for i in range(3):
        want = step(ref, ref_opt, x, y).detach()
        got = compiled(model, opt, x[rows], y[rows])
        worst = max(worst, float((want - got).abs()))
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        worst = max(worst, float((p - q).abs().max()))
        for key in ("exp_avg", "exp_avg_sq"):
            worst = max(worst, float(
                (ref_opt.state[p][key] - opt.state[q][key]).abs().max()))
    assert worst < 1e-5, worst
    if rank == 0:
        print(f"program_cache {args.activation} {args.scale}: OK "
              f"(max deviation {worst:.1e})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Float tensors compared with integer scalars inside a compiled step, as
PyTorch's own code writes them (F.cosine_embedding_loss: `target == 1`):
torch-mlir folded `aten.eq.Scalar` of a constant float tensor and an integer
to false, so `torch.ones(n) == 1` was all False and the loss 0. Each
function's compiled result against eager, on this rank's rows."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd


class Identity(nn.Module):
    def forward(self, a, b):
        return a


CASES = {
    "eq": lambda model, a, b: (torch.ones(a.shape[0]) == 1).float() + a[:, 0],
    "ne": lambda model, a, b: (torch.ones(a.shape[0]) != 1).float() + a[:, 0],
    "lt": lambda model, a, b: (torch.ones(a.shape[0]) < 2).float() + a[:, 0],
    "ge": lambda model, a, b: (torch.full((a.shape[0],), 3.0) >= 3).float()
    + a[:, 0],
    "int_eq": lambda model, a, b: (torch.arange(a.shape[0]) == 3).float()
    + a[:, 0],
    "cosine_embedding_loss": lambda model, a, b: F.cosine_embedding_loss(
        a, b, torch.ones(a.shape[0])),
    "cosine_embedding_loss_neg": lambda model, a, b: F.cosine_embedding_loss(
        a, b, -torch.ones(a.shape[0]), margin=0.1),
}

torch.manual_seed(0)
a, b = torch.randn(8, 4), torch.randn(8, 4)
rank, world = spmd.rank(), spmd.world_size()
n = 8 // world
mine = (a[rank * n:(rank + 1) * n], b[rank * n:(rank + 1) * n])
for name, fn in CASES.items():
    got = spmd.compile()(fn)(Identity(), *mine)
    want = fn(Identity(), *mine)
    diff = (got - want).abs().max().item()
    if rank == 0:
        print(f"{name}: {'OK' if diff < 1e-6 else 'WRONG'} {diff:g}")

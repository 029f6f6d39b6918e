"""Two compiled steps of a small MLP (for SPMD_TRACE runs)."""
import torch
import torch.nn as nn

import spmd

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@spmd.compile()
def step(model, opt, x):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


x = torch.randn(4, 6)
for _ in range(2):
    step(model, opt, x)

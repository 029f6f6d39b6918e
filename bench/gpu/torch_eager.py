#!/usr/bin/env python3
"""The gradient step of grad_step.mlir.in in PyTorch eager on the GPU: the
same data formula, loss sum((x @ w - y)^2), gradient x^T (x @ w - y).
Prints the mean step time (after warm-up) in the table format of check.sh.

    python3 torch_eager.py B K N [REPEATS]
"""
import sys
import time

import torch

B, K, N = (int(v) for v in sys.argv[1:4])
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 20
dev = torch.device("cuda")
i = torch.arange(B, dtype=torch.float64).unsqueeze(1)
k = torch.arange(K, dtype=torch.float64)
n = torch.arange(N, dtype=torch.float64)
x = torch.sin(0.3 * (i % 97) + 0.7 * (k % 89)).float().to(dev)
kk = torch.arange(K).unsqueeze(1)
w = (0.01 * ((kk * 7 + torch.arange(N) * 3) % 23 - 11).double()).float().to(dev)
y = torch.cos(0.2 * (i % 83) - 0.5 * (n % 79)).float().to(dev)


def step():
    d = x @ w - y
    return (d * d).sum(), x.t() @ d


for _ in range(2):
    step()
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(repeats):
    loss, grad = step()
torch.cuda.synchronize()
ms = (time.perf_counter() - start) * 1000 / repeats
print(f"time: torch eager {ms:.3f} ms per step ({B} x {K} x {N}, mean of "
      f"{repeats}); loss {loss.item():.6f}")

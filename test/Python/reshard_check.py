#!/usr/bin/env python3
"""fully_shard's reshard_after_forward on an MLP (6 x Linear(256, 256),
batch 8 per rank, AdamW): both settings train as eager does. The compiled
program's buffer peak (spmd.memory_stats: transient buffers, state aside)
is printed for each, not checked: on the CPU path other buffers dominate it
today (docs/Rationale.md, "fully_shard ...").

    reshard_check.py [BUCKET_MB]
"""

import sys

import torch
import torch.nn.functional as F

import spmd

WIDTH, LAYERS, BATCH = 256, 6, 8
BUCKET_MB = float(sys.argv[1]) if len(sys.argv) > 1 else 25.0


def make():
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def step(model, opt, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def run(reshard, rank, world):
    model, opt = make()
    ref, ref_opt = make()
    compiled = spmd.compile(parallel_mode=spmd.DataParallel(
        parallel_style="fully_shard", reshard_after_forward=reshard,
        bucket_cap_mb=BUCKET_MB))(step)
    gen = torch.Generator().manual_seed(1)
    worst = 0.0
    for i in range(3):
        x = torch.randn(BATCH * world, WIDTH, generator=gen)
        y = torch.randn(BATCH * world, WIDTH, generator=gen)
        part = slice(rank * BATCH, (rank + 1) * BATCH)
        if i == 1:
            spmd.reset_peak_memory_stats()
        loss = compiled(model, opt, x[part], y[part])
        worst = max(worst, abs(loss.item() - step(ref, ref_opt, x, y).item()))
    peak = spmd.memory_stats()["transient_peak_bytes"]
    full = spmd.full_state_dict(model)
    for k, v in ref.state_dict().items():
        worst = max(worst, (full[k] - v).abs().max().item())
    return peak, worst


def main():
    rank, world = spmd.rank(), spmd.world_size()
    params = LAYERS * (WIDTH * WIDTH + WIDTH) * 4
    results = {r: run(r, rank, world) for r in (False, True)}
    # 2% of one step's update (lr 1e-3): AdamW divides by sqrt(v), so in
    # the elements whose gradient is ~1e-6 (a batch sum that cancels) the
    # gradients' float32 rounding, which any change of summation order or
    # of tanh's last bit moves, reaches the parameters as 0.7-1.2% of a
    # step (glibc's tanhf 7.1e-6, a correctly rounded tanh 1.2e-5); a wrong
    # gradient or update moves them by a whole step.
    ok = all(w <= 2e-5 for _, w in results.values())
    if rank == 0:
        mib = 1 << 20
        for r, (peak, worst) in results.items():
            print(f"reshard_after_forward={r}: program buffers' peak "
                  f"{peak / mib:.2f} MiB (all parameters gathered: "
                  f"{params / mib:.2f} MiB); max deviation {worst:.1e}")
        print(f"peak with / without re-gathering: "
              f"{results[True][0] / results[False][0]:.2f}x")
        print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/gpt.py's train step (CONFIG: small or large; AdamW; the whole
batch) in PyTorch on one GPU: eager, then torch.compile (inductor), each
timed after warm-up (median, the device synchronized every step). Prints
lines check.sh reads:

    time: torch eager X ms per step
    time: torch.compile Y ms per step (first call Z s)
    launches: torch eager N kernels per step (profiler)

The kernel count is what issue #19 compares the compiled step's launches
with (bench/gpu/eager_ops.py counts eager's ops on the CPU: a floor).

    python3 torch_gpt.py [small|large|gpt2] [STEPS]
"""
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# gpt.py: beside this file in the folder build.sh fills, else in bench/.
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import gpt  # noqa: E402

NAME = sys.argv[1] if len(sys.argv) > 1 else "small"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
if NAME == "gpt2":  # bench/gpt2.py's GPT-2 124M, batch 4 x 128 tokens
    import gpt2
    cfg = dict(batch=4, block=128, vocab=50257)
    build_model, make_opt, train_step = gpt2.gpt2, gpt2.adamw, \
        gpt2.train_step
else:
    cfg = gpt.CONFIGS[NAME]
    build_model, train_step = gpt.build_model, gpt.train_step

    def make_opt(model):
        return torch.optim.AdamW(model.parameters(), lr=1e-3)
dev = torch.device("cuda")
gen = torch.Generator().manual_seed(1234)
x = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["block"]),
                  generator=gen).to(dev)
y = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["block"]),
                  generator=gen).to(dev)


def timed(model, label):
    opt = make_opt(model)
    t0 = time.perf_counter()
    train_step(model, opt, x, y)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    for _ in range(3):
        train_step(model, opt, x, y)
    ms = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        train_step(model, opt, x, y)
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    print(f"time: {label} {statistics.median(ms):.3f} ms per step "
          f"(first call {first:.1f} s)", flush=True)
    try:
        count_kernels(model, opt, label)
    except Exception as err:  # a profiler without CUPTI: the times stand
        print(f"launches: {label} not counted: {type(err).__name__}: "
              f"{err}"[:300])


def count_kernels(model, opt, label):
    """The device kernels (and memsets/copies) of one step, from PyTorch's
    profiler (CUPTI)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        train_step(model, opt, x, y)
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events()
                  if e.device_type == DeviceType.CUDA)
    print(f"launches: {label} {kernels} kernels per step (profiler)",
          flush=True)


def model():
    return (build_model() if NAME == "gpt2" else build_model(cfg)).to(dev)


timed(model(), "torch eager")
try:
    timed(torch.compile(model()), "torch.compile")
except Exception as err:  # inductor needs a compiler and triton
    print(f"torch.compile failed: {type(err).__name__}: {err}"[:300])

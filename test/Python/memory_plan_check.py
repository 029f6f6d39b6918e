#!/usr/bin/env python3
"""A step's memory, planned and measured, on 2 ranks: a small GPT-shaped
model (embedding, 2 blocks of attention + MLP, tied head) with AdamW under
replicate and fully_shard.

    memory_plan_check.py stats STYLE
                                 spmd.memory_stats() after 3 steps under
                                 replicate or fully_shard (one per process:
                                 state stays for the life of the process):
                                 state by category against the model's own
                                 sizes, the planned transient peak within
                                 10% of the measured one
    memory_plan_check.py limit   SPMD_MEMORY_LIMIT below the plan: the first
                                 call is refused on every rank, nothing runs
    memory_plan_check.py first-call
                                 the resident memory the first call adds
                                 (the process's, not the program's
                                 allocator's), one 256 MiB parameter P,
                                 AdamW: the trace's high-water mark grows
                                 by no copy of P (its stand-ins are never
                                 touched), and the whole call by less than
                                 the program's state and transient peak
                                 less P/2 (the model's own P handed back)
"""

import os
import sys

import torch

import spmd
from tiny_gpt import TinyGPT, lm_step as step

VOCAB, DIM, SEQ, HEADS = 512, 64, 32, 4


def run(style):
    torch.manual_seed(0)
    model = TinyGPT(VOCAB, DIM, HEADS, layers=2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    param_bytes = sum(p.numel() * 4 for p in model.parameters())
    compiled = spmd.compile(parallel_mode=spmd.DataParallel(style))(step)
    gen = torch.Generator().manual_seed(1)
    rank = spmd.rank()
    for _ in range(3):
        x = torch.randint(0, VOCAB, (2, SEQ), generator=gen)
        y = torch.randint(0, VOCAB, (2, SEQ), generator=gen)
        spmd.reset_peak_memory_stats()
        compiled(model, opt, x[rank:rank + 1], y[rank:rank + 1])
    return spmd.memory_stats(), param_bytes


def stats(style):
    rank = spmd.rank()
    if True:
        s, param_bytes = run(style)
        planned, measured = s["planned_transient_peak_bytes"], \
            s["transient_peak_bytes"]
        parts = (s["planned_activations_bytes"] + s["planned_gradients_bytes"]
                 + s["planned_communication_bytes"])
        checks = {
            "planned within 10% of measured":
                abs(planned - measured) <= 0.1 * measured,
            "peak = state + transient":
                s["peak_bytes"] == s["state_bytes"] + measured and
                s["planned_peak_bytes"] == s["state_bytes"] + planned,
            "categories add up":
                parts == planned and s["state_bytes"] == sum(
                    s[k] for k in ("parameters_bytes", "gradients_bytes",
                                   "optimizer_state_bytes",
                                   "other_state_bytes")),
            # AdamW: two moments per parameter (and a step counter each).
            "optimizer state = 2 x parameters":
                2 * s["parameters_bytes"] <= s["optimizer_state_bytes"] <=
                2 * s["parameters_bytes"] + 4 * 64,
        }
        if style == "replicate":
            checks["parameters = the model's"] = \
                s["parameters_bytes"] == param_bytes
            checks["no collective output at the peak or some"] = \
                s["planned_communication_bytes"] >= 0
        else:
            # Each rank holds the largest chunk of each parameter.
            checks["parameters about half the model's"] = \
                param_bytes / 2 <= s["parameters_bytes"] <= \
                param_bytes / 2 + 4 * 64 * 32
            checks["gathered parameters at the peak"] = \
                s["planned_communication_bytes"] > 0
        bad = [k for k, ok in checks.items() if not ok]
        if rank == 0:
            print(f"{style}: planned {planned} B, measured {measured} B, "
                  f"state {s['state_bytes']} B: "
                  + ("OK" if not bad else "WRONG " + ", ".join(bad)),
                  flush=True)
    if rank == 0:
        print(f"{style} state bytes {s['state_bytes']}", flush=True)


def limit():
    try:
        run("replicate")
    except MemoryError as err:
        print(f"rank {spmd.rank()}: refused: {err}", flush=True)
        return
    print(f"rank {spmd.rank()}: ran: WRONG", flush=True)


def _status_mib(key):
    with open("/proc/self/status") as f:
        return int(f.read().split(key + ":")[1].split()[0]) / 1024


def _reset_high_water_mark():
    # Linux: "5" resets VmHWM to VmRSS.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def first_call():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8192, 8192, bias=False))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    p_mib = sum(p.numel() * 4 for p in model.parameters()) / 2**20

    def step(model, opt, x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    # The trace's own growth: make_fx's tensors stand in for the
    # parameters, their values never read. (Traced every time: a cached
    # program would skip make_fx.)
    os.environ["SPMD_PROGRAM_CACHE"] = "0"
    trace, grown = spmd._trace.trace, {}

    def measured_trace(*args, **kwargs):
        _reset_high_water_mark()
        before = _status_mib("VmRSS")
        traced = trace(*args, **kwargs)
        grown["trace"] = _status_mib("VmHWM") - before
        return traced
    spmd._trace.trace = measured_trace
    compiled = spmd.compile()(step)
    x = torch.randn(4, 8192)
    before = _status_mib("VmRSS")
    compiled(model, opt, x)
    grown["call"] = _status_mib("VmRSS") - before
    s = spmd.memory_stats()
    program = (s["state_bytes"] + s["transient_peak_bytes"]) / 2**20
    checks = {
        "the trace holds no copy of the parameters":
            grown["trace"] <= 0.25 * p_mib,
        "the model's own parameters handed back":
            grown["call"] <= program - 0.5 * p_mib,
    }
    bad = [k for k, ok in checks.items() if not ok]
    if spmd.rank() == 0:
        print(f"first call: parameters {p_mib:.0f} MiB, trace grew "
              f"{grown['trace']:.0f} MiB, the call {grown['call']:.0f} MiB "
              f"(the program's state and transient peak {program:.0f} MiB): "
              + ("OK" if not bad else "WRONG " + ", ".join(bad)), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "stats":
        stats(sys.argv[2])
    elif sys.argv[1] == "first-call":
        first_call()
    else:
        limit()

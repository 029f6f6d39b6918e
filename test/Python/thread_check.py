#!/usr/bin/env python3
"""Threads sized to ranks: every rank's BLAS (OpenBLAS in the runtime,
torch's, which compiled CPU steps call) and torch's intra-op pool run the
cores this process may use over the ranks on this node, unless
OMP_NUM_THREADS or OPENBLAS_NUM_THREADS says otherwise. Prints the budget
the runtime chose, torch's threads, spmd.explain's line, and the OS threads
a GEMM-heavy compiled step added to the process, and checks them.

    mpirun -np 2 python3 thread_check.py
"""

import os
import sys

import torch
import torch.nn as nn

import spmd
from spmd import _runtime


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @spmd.compile()
    def step(model, opt, x):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    x = torch.randn(128, 256)
    report = str(spmd.explain(step, model, opt, x))
    before = os_threads()
    for _ in range(3):
        step(model, opt, x)
    added = os_threads() - before
    budget = _runtime.runtime().spmdThreads()
    chosen = any(os.environ.get(v) for v in ("OMP_NUM_THREADS",
                                             "OPENBLAS_NUM_THREADS"))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE",
                               os.environ.get("LOCAL_WORLD_SIZE", "1")))
    cores = len(os.sched_getaffinity(0))
    bound = cores < (os.cpu_count() or cores)
    expected = 0 if chosen else (cores if bound else max(1, cores // local))
    line = next(l for l in report.splitlines()
                if l.startswith("threads per rank:"))
    ok = budget == expected and (
        chosen or torch.get_num_threads() == budget)
    # Sized: a step's GEMMs start at most budget - 1 worker threads
    # (OpenMP's or OpenBLAS's); the MPI runtime's own come before.
    if not chosen:
        ok &= added <= max(0, budget - 1)
    if spmd.rank() == 0:
        print(f"rank 0: budget {budget} (expected {expected}), torch "
              f"{torch.get_num_threads()} threads, {added} OS threads added "
              f"by 3 steps; {line}: {'OK' if ok else 'WRONG'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A rank that fails must end the whole job, never leave the others waiting.

    mpirun -np 2 python3 rank_failure_check.py CASE

trace: rank 1 raises while its first call is traced (rank 0 goes on to
    compile and then waits for rank 1).
after-step: rank 1 raises in user code right after a step; rank 0 calls
    the next step and waits in its collectives.
all-ranks: every rank raises the same error; it is printed once.
exit-0, exit-1: rank 1 calls sys.exit(0) / sys.exit(1) after its second
    step; rank 0 calls the third and waits in its collectives.
os-exit: the same with os._exit(0) (no interpreter exit, no atexit).
sigterm, sigkill: rank 1 sends itself the signal after its second step.
hang: rank 1 sleeps after its second step without leaving (run with a
    short SPMD_TIMEOUT: rank 0's collective times out).
sigint: rank 1 sends itself SIGINT (Ctrl-C) after its second step.
forever: every rank steps until it is stopped (rank 0 prints "stepping"
    after its second step); launcher_check.py signals the launcher.
launcher: prints spmd.world_size() (run under torchrun with MPI forced:
    must fail instead).
late: rank 1 sleeps 60 s before it joins the job (run with a short
    SPMD_TIMEOUT: rank 0's set-up times out).
backend: prints the rank, the size and the runtime's backend.
"""

import os
import signal
import sys
import time

import torch
import torch.nn as nn

import spmd


def main(case):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    launched_as = os.environ.get("RANK",
                                 os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    if case == "late" and launched_as == "1":
        time.sleep(60)
    rank = spmd.rank()

    @spmd.compile()
    def step(model, opt, x, y):
        if case == "trace" and rank == 1:
            raise ValueError("rank 1 failed while tracing")
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    x, y = torch.randn(4, 4), torch.randn(4, 2)
    if case == "backend":
        from spmd import _runtime
        print(f"rank {rank} of {spmd.world_size()} on {_runtime.backend()}")
        return
    if case == "launcher":
        print(f"world size {spmd.world_size()}")
        return
    if case == "all-ranks":
        raise RuntimeError("every rank fails the same way")
    steps = 10**9 if case == "forever" else 3
    for i in range(steps):
        step(model, opt, x, y)
        if i == 1 and rank == 0 and case == "forever":
            print("stepping", flush=True)
        if case == "after-step" and rank == 1:
            raise ValueError(f"rank 1 failed after step {i}")
        if i == 1 and rank == 1 and case in ("exit-0", "exit-1"):
            sys.exit(int(case[-1]))
        if i == 1 and rank == 1 and case == "os-exit":
            os._exit(0)
        if i == 1 and rank == 1 and case in ("sigterm", "sigkill", "sigint"):
            os.kill(os.getpid(), getattr(signal, case.upper()))
        if i == 1 and rank == 1 and case == "hang":
            time.sleep(600)  # stops calling the step, stays in the job
    print(f"rank {rank}: finished")


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""A training script that survives a restart: it checkpoints every few
steps and, started again, resumes from its last complete checkpoint and
ends exactly where an uninterrupted run ends (bit for bit on the CPU path).

    torchrun --nproc-per-node=2 --max-restarts=1 \\
        examples/train_resumable.py --dir /tmp/run [--steps 12] [--every 3]
    mpirun -np 2 python3 examples/train_resumable.py --dir /tmp/run
        (after a failure, run the same command again)

Every `--every` steps each rank calls `spmd.full_state_dict(model, opt)`
(whole tensors; a collective under fully_shard) and rank 0 writes
`DIR/step-NNNNNN.pt` under a temporary name, then renames it: a rank killed
while writing leaves no half-written checkpoint, only a stale temporary
that the next save replaces; the two newest checkpoints are kept. At start every rank loads the newest
checkpoint into a fresh model and optimizer before the first compiled call
(whole tensors load on either style) and goes on from its step; the data of
step i depends on i alone, so the resumed run sees the batches the
uninterrupted one sees. The restarted processes find their compiled
program in the program and compile caches (the first call's phases show
it: no make_fx trace, no LLVM).

`--checkpoint sharded` saves per-rank files instead (`spmd.sharded_state_dict`:
this rank's chunks under fully_shard, no collective, no whole tensor
anywhere): every rank writes `DIR/step-NNNNNN.rank-R-of-W.pt` the same
way, a step's checkpoint is complete when all W files exist, and each rank
loads its own file of the newest complete step with
`spmd.load_sharded_state_dict` (the same number of ranks).

`--fail-at K` makes rank 1 kill itself (SIGKILL) before step K on the
first attempt, as a crash would: the launcher ends the job (torchrun
restarts it when --max-restarts allows; under mpirun, run it again).
`--final PATH` saves the final whole state (rank 0) for comparison.
"""

import argparse
import glob
import os
import re
import signal

import torch
import torch.nn as nn

import spmd

GLOBAL_BATCH = 8


class Classifier(nn.Module):
    def __init__(self, features=16, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.LayerNorm(hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


loss_fn = nn.CrossEntropyLoss()


def train_step(model, opt, x, y):
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def batch(step, rank, world):
    """This rank's rows of step `step`'s global batch (a function of the
    step alone: a resumed run sees the same data)."""
    gen = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, 16, generator=gen)
    y = torch.randint(0, 4, (GLOBAL_BATCH,), generator=gen)
    rows = GLOBAL_BATCH // world
    return x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]


def checkpoint_name(step, rank=None, world=None):
    """A whole checkpoint's file name, or rank `rank`'s part of a sharded
    one."""
    part = "" if rank is None else f".rank-{rank}-of-{world}"
    return f"step-{step:06d}{part}.pt"


def latest_checkpoint(directory, rank=None, world=None):
    """(step, path) of the newest complete checkpoint (for a sharded one:
    every rank's file is there; path is this rank's), or (0, None)."""
    found = {}
    pattern = r"step-(\d+)\.pt" if rank is None else \
        rf"step-(\d+)\.rank-(\d+)-of-{world}\.pt"
    for path in glob.glob(os.path.join(directory, "step-*.pt")):
        match = re.fullmatch(pattern, os.path.basename(path))
        if match:
            found.setdefault(int(match.group(1)), set()).add(
                int(match.group(2)) if rank is not None else None)
    complete = [s for s, ranks in found.items()
                if rank is None or len(ranks) == world]
    if not complete:
        return 0, None
    step = max(complete)
    return step, os.path.join(directory, checkpoint_name(step, rank, world))


def save_atomically(obj, path):
    """torch.save to a temporary name, flushed to disk, then renamed: the
    path holds a whole checkpoint or none."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def prune(directory, keep=2, rank=None, world=None):
    """Removes all but the `keep` newest checkpoints (of this rank's
    files, for sharded ones)."""
    suffix = ".pt" if rank is None else f".rank-{rank}-of-{world}.pt"
    found = sorted(p for p in glob.glob(os.path.join(directory, "step-*.pt"))
                   if p.endswith(suffix) and (rank is not None
                                              or ".rank-" not in p))
    for path in found[:-keep]:
        os.remove(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="checkpoint directory")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--parallel-style", default="replicate",
                    choices=["replicate", "fully_shard"])
    ap.add_argument("--checkpoint", default="full",
                    choices=["full", "sharded"])
    ap.add_argument("--fail-at", type=int, default=None)
    ap.add_argument("--final", default=None)
    args = ap.parse_args()

    rank, world = spmd.rank(), spmd.world_size()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    os.makedirs(args.dir, exist_ok=True)

    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    mode = spmd.DataParallel(args.parallel_style)
    sharded = args.checkpoint == "sharded"
    part = (rank, world) if sharded else (None, None)
    start, path = latest_checkpoint(args.dir, *part)
    if path is not None:
        checkpoint = torch.load(path, weights_only=True)
        if sharded:
            spmd.load_sharded_state_dict(
                model, checkpoint["model"], opt, checkpoint["optimizer"],
                parallel_mode=mode)
        else:
            model.load_state_dict(checkpoint["model"])
            opt.load_state_dict(checkpoint["optimizer"])
    if rank == 0:
        print(f"attempt {attempt}: starting at step {start}"
              + (f" from {os.path.basename(path)}" if path else ""),
              flush=True)

    step = spmd.compile(parallel_mode=mode)(train_step)
    for i in range(start, args.steps):
        if args.fail_at == i and rank == 1 and attempt == 0 and start == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        loss = step(model, opt, *batch(i, rank, world))
        if rank == 0:
            print(f"step {i}: loss {loss.item():.6f}", flush=True)
            if i == start:
                print("first call: " + ", ".join(step.compile_times),
                      flush=True)
        if ((i + 1) % args.every == 0 or i + 1 == args.steps) and sharded:
            state, opt_state = spmd.sharded_state_dict(model, opt)
            save_atomically({"model": state, "optimizer": opt_state},
                            os.path.join(args.dir, checkpoint_name(
                                i + 1, rank, world)))
            prune(args.dir, rank=rank, world=world)
        elif (i + 1) % args.every == 0 or i + 1 == args.steps:
            state, opt_state = spmd.full_state_dict(model, opt)
            if rank == 0:
                save_atomically({"model": state, "optimizer": opt_state},
                                os.path.join(args.dir,
                                             checkpoint_name(i + 1)))
                prune(args.dir)
    if args.final:
        state, opt_state = spmd.full_state_dict(model, opt)
        if rank == 0:
            save_atomically({"model": state, "optimizer": opt_state},
                            args.final)
    if rank == 0:
        print(f"attempt {attempt}: finished {args.steps} steps", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checkpoints of compiled training equal uninterrupted eager training.

    checkpoint_check.py CASE save PATH   [--parallel-style S]
        3 compiled steps, then spmd.full_state_dict -> torch.save on rank 0.
    checkpoint_check.py CASE resume PATH [--parallel-style S]
        a new process: a fresh model and optimizer load PATH (whole tensors,
        before the first call), 2 more compiled steps; compared with 5 eager
        steps from scratch over the global batch.
    checkpoint_check.py CASE reload      [--parallel-style S]
        one process: 3 compiled steps, a whole-tensor snapshot, 2 steps
        more, the snapshot loaded back into the (sharded) model and
        optimizer between calls, 2 steps; compared with 5 eager steps.

`--sharded`: per-rank state dicts instead of whole tensors
(spmd.sharded_state_dict saved to PATH.rankR; spmd.load_sharded_state_dict
before the first call (a collective) or between calls (straight in)).
"""

import argparse
import sys

import torch

import spmd
import train_check
from train_check import GLOBAL_BATCH, data, make_step, setup


def eager(case, steps):
    model, opt, loss_fn = setup(case)
    step = make_step(loss_fn)
    gen = torch.Generator().manual_seed(1)
    losses = [step(model, opt, *data(case, gen)).item()
              for _ in range(steps)]
    return model, opt, losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("phase", choices=["save", "resume", "reload"])
    parser.add_argument("path", nargs="?")
    parser.add_argument("--parallel-style", default="replicate")
    parser.add_argument("--sharded", action="store_true")
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()
    rank, world = spmd.rank(), spmd.world_size()
    local = GLOBAL_BATCH // world

    model, opt, loss_fn = setup(args.case)
    mode = spmd.DataParallel(parallel_style=args.parallel_style)
    train_step = spmd.compile(parallel_mode=mode)(make_step(loss_fn))
    gen = torch.Generator().manual_seed(1)

    def compiled_step():
        x, y = data(args.case, gen)
        return train_step(model, opt, x[rank * local:(rank + 1) * local],
                          y[rank * local:(rank + 1) * local]).item()

    if args.phase == "save":
        for _ in range(3):
            compiled_step()
        if args.sharded:
            state, ostate = spmd.sharded_state_dict(model, opt)
            torch.save({"model": state, "optimizer": ostate},
                       f"{args.path}.rank{rank}")
        else:
            state, ostate = spmd.full_state_dict(model, opt)
            if rank == 0:
                torch.save({"model": state, "optimizer": ostate}, args.path)
        if rank == 0:
            print(f"saved {len(state)} tensors after 3 steps")
        return

    if args.phase == "resume" and args.sharded:
        saved = torch.load(f"{args.path}.rank{rank}")
        spmd.load_sharded_state_dict(model, saved["model"], opt,
                                     saved["optimizer"], parallel_mode=mode)
        for _ in range(3):
            data(args.case, gen)
    elif args.phase == "resume":
        saved = torch.load(args.path)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        for _ in range(3):  # the batches the first process used
            data(args.case, gen)
    else:
        for _ in range(3):
            compiled_step()
        snapshot = (spmd.sharded_state_dict if args.sharded
                    else spmd.full_state_dict)(model, opt)
        compiled_step()
        compiled_step()
        # Whole tensors (or this rank's chunks) into a model whose
        # parameters are this rank's chunks, and into an optimizer whose
        # state the program holds.
        if args.sharded:
            spmd.load_sharded_state_dict(model, snapshot[0], opt,
                                         snapshot[1])
        else:
            model.load_state_dict(snapshot[0])
            opt.load_state_dict(snapshot[1])
        gen = torch.Generator().manual_seed(1)
        for _ in range(3):
            data(args.case, gen)
    losses = [compiled_step() for _ in range(2)]

    ref_model, ref_opt, ref_losses = eager(args.case, 5)
    diffs = {"loss": max(abs(a - b) for a, b in zip(losses, ref_losses[3:]))}
    diffs.update(train_check.full_state_diffs(model, opt, ref_model,
                                              ref_opt))
    name, worst = max(diffs.items(), key=lambda kv: kv[1])
    ok = worst <= args.tol
    if rank == 0:
        print(f"losses {losses} eager {ref_losses[3:]}")
        print(f"{args.case} {args.phase} {args.parallel_style}: "
              f"{'OK' if ok else 'MISMATCH'} max deviation {worst:.1e} "
              f"({name}) on {world} ranks")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

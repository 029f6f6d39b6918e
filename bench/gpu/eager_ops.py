#!/usr/bin/env python3
"""Counts what PyTorch eager dispatches for one train step of the
test/Python/train_check.py models, next to the GPU path's launches counted
by the emulator, so that issue #19's "launches <= 0.5x eager" is a figure
anyone can reproduce without a GPU:

    python3 bench/gpu/eager_ops.py [EMU_DIR] [CASE ...]

Eager: the second step (the first makes the optimizer state) of the case's
own eager train step (forward, loss, backward, optimizer.step, zero_grad)
over the whole batch on one device, under a TorchDispatchMode on the CPU.
Every aten op that computes is counted once; views and metadata ops (no
kernel) are not; optimizer ops on AdamW's step counters alone are not (on
CUDA, without `capturable`, those are CPU tensors). A `_foreach_` op counts
once (CUDA's multi_tensor_apply launches one kernel per 110 tensors or
~20M elements: one for these models). So the figure is a floor for a GPU:
CUDA implements some ops as several kernels (embedding backward's sort and
segment sums, layer norm's backward, the loss's zero-fill), never fewer.
GEMMs (mm, addmm, bmm) are counted apart; SDPA as one op forward and one
backward (flash/efficient attention's backward is 2-3 kernels on CUDA).

EMU_DIR (optional): a directory where test/Python/gpu_emulated_step.py ran
the same cases (`CASE.counts.0`, e.g. build/test/Python/Output/
gpu-emulated-steps.test.tmp after the lit test); their steady-step kernel
launches, GEMMs and the ratio are printed next to eager's.
"""

import sys
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "test" / "Python"))

import train_check  # noqa: E402

CASES = ("mlp_sgd", "norm_adam", "transformer", "embed_adamw", "gpt")
GEMMS = {"mm", "addmm", "bmm", "baddbmm"}
# Ops that allocate, reshape without a copy, describe a tensor or mark a
# profiler range: no kernel.
NO_KERNEL = {"empty", "empty_like", "empty_strided", "new_empty",
             "new_empty_strided", "detach", "alias", "lift_fresh",
             "_unsafe_view", "_local_scalar_dense", "set_", "resize_",
             "is_same_size", "sym_size", "sym_stride", "sym_numel",
             "_record_function_enter_new", "_record_function_exit"}


class CountOps(TorchDispatchMode):
    def __init__(self, skip_ids):
        super().__init__()
        self.skip_ids = skip_ids
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name in NO_KERNEL:
            return out
        tensors = [t for t in tree_flatten((args, kwargs))[0]
                   if isinstance(t, torch.Tensor)]
        if tensors and all(id(t) in self.skip_ids for t in tensors):
            return out
        self.ops[name] += 1
        return out


def eager_counts(case):
    model, opt, loss_fn = train_check.setup(case)
    step = train_check.make_step(loss_fn)
    x, y = train_check.data(case, torch.Generator().manual_seed(1))
    step(model, opt, x, y)
    steps = {id(s["step"]) for s in opt.state.values()
             if isinstance(s.get("step"), torch.Tensor)}
    counter = CountOps(steps)
    with counter:
        step(model, opt, x, y)
    gemms = sum(n for op, n in counter.ops.items() if op in GEMMS)
    return sum(counter.ops.values()), gemms, counter.ops


def emulated_counts(work, case):
    path = Path(work) / f"{case}.counts.0"
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:2] == ["step", "2"]:
            return int(words[words.index("launches") + 1]), \
                int(words[words.index("gemms") + 1])
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    work = args.pop(0) if args and Path(args[0]).is_dir() else None
    cases = args or CASES
    print("per step | eager ops (GEMMs) | spmd GPU launches (GEMMs) | "
          "spmd / eager | without GEMMs")
    for case in cases:
        total, gemms, ops = eager_counts(case)
        row = f"{case} | {total} ({gemms})"
        emu = emulated_counts(work, case) if work else None
        if emu:
            kernels, ours_gemms = emu
            ours = kernels + ours_gemms
            rest = (kernels / (total - gemms)) if total > gemms else 0
            row += (f" | {ours} ({ours_gemms}) | {ours / total:.2f}"
                    f" | {kernels} / {total - gemms} = {rest:.2f}")
        print(row)
        if "-v" in sys.argv:
            print("   ", dict(sorted(ops.items())))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""spmd.Auto on 2 ranks: a small GPT-shaped model with AdamW whose best
plan changes with the memory limit.

    auto_check.py choose LIMIT   LIMIT: "none" (the machine's) or
                                 "between" (below replicate's planned
                                 peak, above fully_shard's), both with
                                 the fixed figures FIXED, so the choice
                                 does not depend on the machine's load;
                                 "below" (under every candidate's, with
                                 this job's measured figures). Prints the
                                 choice and the
                                 candidates; runs 3 steps against the
                                 same model on one device (the contract)
                                 and checks that the parameters are
                                 sharded as chosen (each one the plan
                                 shards, no other) and every rank chose
                                 the same.
"""

import copy
import sys

import torch

import spmd
from tiny_gpt import TinyGPT, lm_step as step

VOCAB, DIM, SEQ, HEADS = 512, 64, 32, 4

# Figures in the range this machine measures (spmd.Auto(calibration=...)):
# with a collective's latency above the time its bytes take on this model,
# the candidate with the fewest collectives (replicate: one bucketed
# all-reduce) is the fastest whatever the machine does meanwhile.
FIXED = {"gemm_gflops": 50.0, "memory_gbps": 10.0}
for kind in ("all_reduce", "all_gather", "reduce_scatter"):
    FIXED[kind + "_latency_us"] = 100.0
    FIXED[kind + "_gbps"] = 2.0


def say(text):
    """`text` and its newline in one write: under mpirun the ranks' writes
    interleave, and print() writes a text and its end separately (a rank 1
    line once landed inside the end of rank 0's report)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def model_and_opt():
    torch.manual_seed(0)
    model = TinyGPT(VOCAB, DIM, HEADS, layers=2)
    # No qkv bias: the key bias's gradient is zero up to rounding noise,
    # which AdamW's normalization makes lr-sized (as train_check.py).
    for block in model.blocks:
        block.qkv.bias = None
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def batches():
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        yield (torch.randint(0, VOCAB, (2, SEQ), generator=gen),
               torch.randint(0, VOCAB, (2, SEQ), generator=gen))


def planned_peaks():
    """Each candidate's planned peak, from an unlimited choice (rank 0's
    report; every rank gets them through the choice's own collective)."""
    model, opt = model_and_opt()
    compiled = spmd.compile(parallel_mode=spmd.Auto())(step)
    x, y = next(batches())
    r = spmd.rank()
    explained = spmd.explain(compiled, model, opt, x[r:r + 1], y[r:r + 1])
    return {c.name: c.peak or 0 for c in explained.auto.candidates}


def main():
    which = sys.argv[2]
    rank = spmd.rank()
    limit = None
    if which != "none":
        peaks = planned_peaks()  # collective: rank 0 has the figures
        replicate = peaks.get("DataParallel('replicate')", 0)
        shard = min((v for k, v in peaks.items() if "fully_shard" in k),
                    default=0)
        limit = (replicate + shard) // 2 if which == "between" else \
            shard // 2
        if rank:
            limit = 0
        # Rank 0's limit everywhere (only rank 0 evaluated).
        limit = spmd._runtime.all_ranks_max(limit)
    model, opt = model_and_opt()
    reference = copy.deepcopy(model)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    compiled = spmd.compile(parallel_mode=spmd.Auto(
        memory_limit=limit,
        calibration=FIXED if which in ("none", "between") else None))(step)
    try:
        for x, y in batches():
            loss = compiled(model, opt, x[rank:rank + 1], y[rank:rank + 1])
            ref_loss = step(reference, ref_opt, x, y)
            loss, ref_loss = float(loss), float(ref_loss.detach())
            if abs(loss - ref_loss) > 1e-4 * abs(ref_loss):
                say(f"rank {rank}: loss {loss} against {ref_loss}: WRONG")
    except MemoryError as err:
        say(f"rank {rank}: refused: {err}")
        return
    plan = compiled.auto_plan
    chosen = plan.chosen.name
    agreed = spmd._runtime.all_ranks_agree(
        int.from_bytes(chosen.encode()[-7:], "little"))
    full = spmd.full_state_dict(model, opt)[0] \
        if "fully_shard" in chosen else model.state_dict()
    # Each parameter is this rank's chunk exactly where the plan shards it
    # (every one under fully_shard, those it names under a per-parameter
    # plan, none under replicate); a parameter of one row is its own chunk.
    dp = plan.chosen.parallel
    local = model.state_dict()
    rows = [n for n, p in reference.named_parameters() if p.shape[0] > 1]
    planned = {n for n in rows if dp.fully_shard and (
        dp.sharded_params is None or n in dp.sharded_params)}
    actual = {n for n in rows if local[n].shape != full[n].shape}
    sharded = f"{len(actual)} of {len(rows)}" + (
        "" if actual == planned else f" WRONG (planned {sorted(planned)})")
    worst = max(float((full[n] - p.detach()).abs().max())
                for n, p in reference.named_parameters())
    exact = worst <= 1e-5
    line = (f"rank {rank}: chose {chosen}, sharded {sharded}, "
            f"agreed {agreed}, parameters "
            f"{'equal eager' if exact else f'WRONG ({worst})'}")
    # Rank 0's report and line, then rank 1's line.
    if rank == 0:
        say(f"{plan}\n{line}")
    spmd._runtime.all_ranks_max(0)
    if rank != 0:
        say(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks the step trace of a GPU program run by the emulator (SPMD_TRACE=DIR
with gpu_emulated_step.py's driver) against what the emulator counted in the
same run (DIR/../CASE.counts.RANK):

    gpu_trace_check.py TRACE.json COUNTS_PREFIX

per rank: the traced steps; the kernel (and attention kernel) events, GEMMs
and collectives of the trace are exactly the launches, cuBLAS calls and
collectives the emulated driver saw over the run; every device event lies
inside a step (the host waits for the device at a step's end); collectives
carry their bytes and group size; the device's threads are named after
their streams; and kernels are named after the model's source lines.
"""

import json
import sys
from pathlib import Path


def run_counts(path):
    """The emulator's totals over the run (its `run ...` line)."""
    for line in Path(path).read_text().splitlines():
        if line.startswith("run "):
            words = line.split()
            return {key: int(words[words.index(key) + 1])
                    for key in ("launches", "gemms", "collectives")}
    raise SystemExit(f"{path}: no run line")


def main():
    trace = json.load(open(sys.argv[1]))["traceEvents"]
    prefix = sys.argv[2]
    ranks = sorted({e["pid"] for e in trace})
    for rank in ranks:
        mine = [e for e in trace if e["pid"] == rank]
        names = {e["tid"]: e["args"]["name"] for e in mine
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        events = [e for e in mine if e["ph"] == "X"]
        steps = [e for e in events if e["cat"] == "step"]
        device = [e for e in events if e["cat"] in
                  ("kernel", "attention", "blas", "collective", "copy")]
        by = {c: sum(e["cat"] == c for e in device)
              for c in ("kernel", "attention", "blas", "collective")}
        counts = run_counts(f"{prefix}.{rank}")
        launches = by["kernel"] + by["attention"]
        inside = all(any(s["ts"] <= e["ts"] and
                         e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3
                         for s in steps) for e in device)
        collectives_ok = all(e["args"].get("bytes", 0) > 0 and
                             e["args"].get("group size") == len(ranks)
                             for e in device if e["cat"] == "collective")
        streams = sorted({names.get(e["tid"], "?") for e in device})
        kernels = [e for e in device if e["cat"] == "kernel"]
        named = sum(".py:" in e["name"] for e in kernels)
        lines = sorted({e["name"] for e in kernels if ".py:" in e["name"]})
        same = (launches == counts["launches"] and
                by["blas"] == counts["gemms"] and
                by["collective"] == counts["collectives"])
        print(f"rank {rank}: {len(steps)} steps; traced {launches} launches "
              f"({by['attention']} attention), "
              f"{by['blas']} GEMMs, {by['collective']} collectives "
              f"(emulator: {counts['launches']}, {counts['gemms']}, "
              f"{counts['collectives']}): {'same' if same else 'DIFFERENT'}; "
              f"inside steps: {inside}; collective bytes and group: "
              f"{collectives_ok}; streams: {streams}")
        print(f"rank {rank}: {named} of {len(kernels)} kernels named after "
              f"the model's lines, e.g. {lines[:2]}")


if __name__ == "__main__":
    main()

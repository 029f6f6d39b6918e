#!/usr/bin/env python3
"""Checks what the GPU emulator counted per step (SPMD_EMU_COUNTS files
that gpu_emulated_step.py leaves in DIR) against upper bounds, so that a
change that adds kernel launches, host waits or allocations to a step fails.

    emu_counts_check.py DIR CASE:KEY=MAX,min-KEY=MIN... ...

`gemm_products` is the GEMM calls there would be without grouping: `gemms`
counts cuBLAS calls, of which a grouped one runs `gemms_grouped` more
groups (a GEMM or a strided batch each). For each CASE, the steps
after the first (which also allocates and uploads
the state) and before the last (after which the driver reads the state
back), the largest count over those steps and the ranks; prints one line
per CASE: `CASE: key N (max M) ...: OK` or `...: OUT OF BOUNDS`.
"""

import sys
from pathlib import Path

KEYS = ("launches", "kernels", "gemms", "collectives", "host_waits",
        "queries", "allocs", "frees", "h2d", "d2h", "d2d", "memsets",
        "graph_launches", "graph_nodes", "captured", "gemms_grouped",
        "gemm_products")


def steady_counts(work, case):
    worst = {}
    files = sorted(Path(work).glob(f"{case}.counts.*"))
    if not files:
        raise SystemExit(f"{case}: no counts in {work}")
    for path in files:
        lines = [line for line in path.read_text().splitlines()
                 if line.startswith("step ")]
        last = len(lines) - 1
        for line in lines:
            words = line.split()
            step = int(words[1])
            # step 0: set-up; 1: the first step; the last: the read-back.
            if step < 2 or (step == last and last > 2):
                continue
            values, i = {}, 2
            while i < len(words):
                key = words[i]
                values[key] = int(words[i + 1])
                # copies: count then bytes
                i += 3 if key in ("h2d", "d2h", "d2d") else 2
            # The GEMM calls without grouping: a grouped cuBLAS call (one of
            # `gemms`) runs `gemms_grouped` more groups.
            values["gemm_products"] = (values.get("gemms", 0)
                                       + values.get("gemms_grouped", 0))
            for k, v in values.items():
                worst[k] = max(worst.get(k, 0), v)
    return worst


def main():
    work, specs = sys.argv[1], sys.argv[2:]
    failed = False
    for spec in specs:
        case, bounds = spec.split(":", 1)
        worst = steady_counts(work, case)
        parts, ok = [], True
        for item in bounds.split(","):
            # KEY=MAX, or min-KEY=MIN for work that must stay where it is
            # (GEMMs on cuBLAS, not loop kernels).
            key, limit = item.split("=")
            at_least = key.startswith("min-")
            key = key.removeprefix("min-")
            if key not in KEYS:
                raise SystemExit(f"unknown count {key}")
            have = worst.get(key, 0)
            if at_least:
                ok &= have >= int(limit)
                parts.append(f"{key} {have} (min {limit})")
            else:
                ok &= have <= int(limit)
                parts.append(f"{key} {have} (max {limit})")
        failed |= not ok
        print(f"{case}: {', '.join(parts)}: {'OK' if ok else 'OUT OF BOUNDS'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

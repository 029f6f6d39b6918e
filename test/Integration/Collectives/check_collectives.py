#!/usr/bin/env python3
"""Checks what rank 0 printed in collectives.mlir against the definition of
each collective, for a group of N ranks where rank r holds iota(4x8) + 100 r.

    check_collectives.py N < output

Plain Python (no numpy): bench/gpu/check.sh runs it with whatever python3
the GPU machine has. Exits non-zero unless every collective matches.
"""

import re
import sys

ROWS, COLS = 4, 8


def matrix(r):
    """Rank r's input: iota(4x8) + 100 r, as a list of rows."""
    return [[float(i * COLS + j + 100 * r) for j in range(COLS)]
            for i in range(ROWS)]


def elementwise(fn, xs):
    return [[fn([x[i][j] for x in xs]) for j in range(len(xs[0][0]))]
            for i in range(len(xs[0]))]


def columns(m, first, count):
    return [row[first:first + count] for row in m]


def concat_rows(ms):
    return [row for m in ms for row in m]


def concat_cols(ms):
    return [sum((m[i] for m in ms), []) for i in range(len(ms[0]))]


def parse(text):
    """Each printed memref as (sizes, flat values)."""
    got = []
    for chunk in text.split("Unranked Memref")[1:]:
        sizes = [int(v) for v in re.search(r"sizes = \[([^\]]*)\]",
                                           chunk).group(1).split(",")]
        data = chunk.split("data =", 1)[1]
        values = [float(v) for v in
                  re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?", data)]
        got.append((sizes, values))
    return got


def close(have, want):
    sizes, values = have
    flat = [v for row in want for v in row]
    return sizes == [len(want), len(want[0])] and len(values) == len(flat) \
        and all(abs(a - b) <= 1e-6 * abs(b) + 1e-8
                for a, b in zip(values, flat))


def main(n):
    got = parse(sys.stdin.read())
    x = [matrix(r) for r in range(n)]
    total = elementwise(sum, x)
    chunk = COLS // n
    expected = [
        ("all_reduce_sum", total),
        ("all_reduce_avg", elementwise(lambda v: sum(v) / n, x)),
        ("all_reduce_max", elementwise(max, x)),
        ("all_gather_0", concat_rows(x)),
        ("all_gather_1", concat_cols(x)),
        # rank 0 keeps chunk 0 of the reduced tensor along dim 1
        ("reduce_scatter_1", columns(total, 0, chunk)),
        # rank 0 receives chunk 0 of every rank's split, concatenated on dim 0
        ("all_to_all", concat_rows([columns(xr, 0, chunk) for xr in x])),
        ("broadcast", x[0]),
        ("coalesced", elementwise(lambda v: n * v[0], [matrix(0)])),
        ("async_all_reduce", total),
        ("async_all_gather_1", concat_cols(x)),
        ("async_waited_twice", total),
    ]
    ok = 0
    for i, (name, want) in enumerate(expected):
        have = got[i] if i < len(got) else None
        good = have is not None and close(have, want)
        ok += good
        print(f"{name} {'ok' if good else 'MISMATCH'}")
        if not good:
            print("  expected", want, "\n  got", have)
    print(f"{ok} of {len(expected)} collectives ok")
    return 0 if ok == len(expected) else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))

#!/usr/bin/env python3
"""Checks what rank 0 printed in collectives.mlir against the definition of
each collective, for a group of N ranks where rank r holds iota(4x8) + 100 r.

    check_collectives.py N < output
"""

import re
import sys

import numpy as np


def main(n):
    text = sys.stdin.read()
    got = []
    for chunk in text.split("Unranked Memref")[1:]:
        sizes = [int(v) for v in re.search(r"sizes = \[([^\]]*)\]", chunk).group(1).split(",")]
        data = chunk.split("data =", 1)[1]
        values = [float(v) for v in re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?", data)]
        got.append(np.array(values, dtype=np.float64).reshape(sizes))
    iota = np.arange(32, dtype=np.float64).reshape(4, 8)
    x = [iota + 100 * r for r in range(n)]
    expected = [
        ("all_reduce_sum", sum(x)),
        ("all_reduce_avg", sum(x) / n),
        ("all_reduce_max", np.maximum.reduce(x)),
        ("all_gather_0", np.concatenate(x, axis=0)),
        ("all_gather_1", np.concatenate(x, axis=1)),
        # rank 0 keeps chunk 0 of the reduced tensor along dim 1
        ("reduce_scatter_1", np.split(sum(x), n, axis=1)[0]),
        # rank 0 receives chunk 0 of every rank's split, concatenated on dim 0
        ("all_to_all", np.concatenate([np.split(xr, n, axis=1)[0] for xr in x], axis=0)),
        ("broadcast", x[0]),
        ("coalesced", n * iota),
        ("async_all_reduce", sum(x)),
        ("async_all_gather_1", np.concatenate(x, axis=1)),
        ("async_waited_twice", sum(x)),
    ]
    ok = 0
    for i, (name, want) in enumerate(expected):
        have = got[i] if i < len(got) else None
        good = have is not None and have.shape == want.shape and np.allclose(have, want, rtol=1e-6)
        ok += good
        print(f"{name} {'ok' if good else 'MISMATCH'}")
        if not good:
            print("  expected", want.tolist(), "\n  got", None if have is None else have.tolist())
    print(f"{ok} of {len(expected)} collectives ok")
    return 0 if ok == len(expected) else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))

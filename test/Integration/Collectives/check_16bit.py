#!/usr/bin/env python3
"""Checks what rank 0 printed in collectives-16bit.mlir: each collective of
N ranks on 16-bit floats (bf16 or f16), where rank r holds iota(4x8)/4 + r,
against numpy in float32 rounded once to the type (torch does the rounding).

    check_16bit.py N bf16|f16 < output
"""

import re
import sys

import numpy as np
import torch


def main(n, kind):
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[kind]

    def rounded(a):
        return torch.tensor(np.asarray(a, dtype=np.float32)).to(dtype) \
            .to(torch.float32).numpy()

    text = sys.stdin.read()
    got = []
    for chunk in text.split("Unranked Memref")[1:]:
        sizes = [int(v) for v in re.search(r"sizes = \[([^\]]*)\]",
                                           chunk).group(1).split(",")]
        data = chunk.split("data =", 1)[1]
        values = [float(v) for v in
                  re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?", data)]
        got.append(np.array(values, dtype=np.float32).reshape(sizes))
    iota = np.arange(32, dtype=np.float32).reshape(4, 8) / 4
    x = [rounded(iota + r) for r in range(n)]
    total = np.sum(x, axis=0, dtype=np.float32)
    once = np.float32(256 + (n - 1))
    expected = [
        ("all_reduce_sum", rounded(total)),
        ("all_reduce_avg", rounded(total / n)),
        ("all_reduce_max", np.maximum.reduce(x)),
        ("all_gather_0", np.concatenate(x, axis=0)),
        ("reduce_scatter_1", rounded(np.split(total, n, axis=1)[0])),
        ("all_to_all", np.concatenate([np.split(xr, n, axis=1)[0]
                                       for xr in x], axis=0)),
        ("broadcast", x[0]),
        ("rounded_once", rounded(np.full(2, once))),
    ]
    ok = 0
    for (name, want), have in zip(expected, got):
        if have.shape == want.shape and np.array_equal(have, want):
            print(f"{name} ok")
            ok += 1
        else:
            print(f"{name} WRONG: got {have.tolist()} expected {want.tolist()}")
    if len(got) != len(expected):
        print(f"printed {len(got)} results, expected {len(expected)}")
    print(f"rounded_once: {got[-1].flat[0]:g}" if got else "no output")
    print(f"{ok} of {len(expected)} collectives ok")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])

#!/usr/bin/env python3
"""Checks the single-rank run of redistribute-roundtrip-2d-uneven.mlir against
numpy: the round trips print their 7x5 input back, then exp of it, then its
row sums."""

import sys

import numpy as np

from compare_runs import tensors


def main(path):
    got = tensors(path)
    x = np.arange(1, 36, dtype=np.float32).reshape(7, 5)
    want = [x.ravel()] * 7 + [np.exp(x).ravel(), x.sum(axis=1)]
    if len(got) != len(want):
        print(f"FAIL: {len(got)} tensors printed, {len(want)} expected")
        return 1
    for i, (g, w) in enumerate(zip(got, want)):
        if not np.allclose(np.array(g), w, rtol=2e-5, atol=1e-5):
            print(f"FAIL: tensor {i}: {g} != {w.tolist()}")
            return 1
    print("reference OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

#!/usr/bin/env python3
"""Compares printMemrefI32 output (float32 bit patterns) with a golden file.

Reads the run's stdout from stdin, prints the largest absolute and ULP
difference per output, and exits non-zero when any value differs from torch's
by more than ATOL + RTOL * |torch's value| (or differs in NaN-ness).
"""

import json
import re
import sys

import numpy as np

# torch's CPU kernels mix FMA (vectorized body) and separate multiply/add
# (scalar tail), so torch itself rounds differently from one element to the
# next: a few float32 ulps of the operands (the inputs here are O(1)) is
# rounding, a formula or order change is not. 5e-7 is about 4 ulps at 1.0.
ATOL = 5e-7
RTOL = 5e-7


def parse_run(text):
    chunks = text.split("Unranked Memref")[1:]
    out = []
    for chunk in chunks:
        data = chunk.split("data =", 1)[1]
        out.append(np.array([int(v) for v in re.findall(r"-?\d+", data)], dtype=np.int32))
    return out


def ulp_distance(a_bits, b_bits):
    # Map the float32 bit patterns onto a line where adjacent floats differ by 1.
    def ordered(x):
        x = x.astype(np.int64)
        return np.where(x < 0, -(x & 0x7FFFFFFF), x)
    return np.abs(ordered(a_bits) - ordered(b_bits))


def main(golden_path):
    golden = json.load(open(golden_path))
    got = parse_run(sys.stdin.read())
    expected = golden["outputs"]
    if len(got) != len(expected):
        print(f"error: the run printed {len(got)} tensors, the golden has {len(expected)}")
        return 1
    ok = True
    for out, exp in zip(got, expected):
        want = np.array(exp["bits"], dtype=np.int32)
        if out.shape != want.shape:
            print(f"{exp['name']}: {out.size} values, expected {want.size}")
            ok = False
            continue
        a, b = out.view(np.float32), want.view(np.float32)
        nan_mismatch = np.isnan(a) != np.isnan(b)
        ulp = ulp_distance(out, want)
        max_ulp = int(ulp.max()) if ulp.size else 0
        max_abs = float(np.nanmax(np.abs(a - b))) if a.size else 0.0
        within = np.abs(a.astype(np.float64) - b) <= ATOL + RTOL * np.abs(b)
        good = not nan_mismatch.any() and bool(np.all(within | np.isnan(b)))
        ok &= good
        print(f"{exp['name']}: max |diff| = {max_abs:.3g}, max ulp = {max_ulp}"
              f"{'' if good else '  <-- MISMATCH'}")
    print("PASS" if ok else "FAIL", "vs", golden["source"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

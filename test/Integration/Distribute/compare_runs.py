#!/usr/bin/env python3
"""Compares the tensors two runs printed (printMemrefF32 output).

    compare_runs.py REFERENCE RUN [--atol A]
    compare_runs.py --expect-equal-to-first RUN   (each printed tensor must
        equal the first one printed, for round trips)

Prints the largest absolute difference and exits non-zero above the
tolerance (default 1e-5, the project's contract) or when the runs printed
different numbers of values.
"""

import re
import sys

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")


def tensors(path):
    text = open(path).read()
    out = []
    for chunk in text.split("Unranked Memref")[1:]:
        data = chunk.split("data =", 1)[1]
        out.append([float(v) for v in NUMBER.findall(data)])
    return out


def main(argv):
    atol = 1e-5
    if "--atol" in argv:
        i = argv.index("--atol")
        atol = float(argv[i + 1])
        del argv[i:i + 2]
    if argv[0] == "--expect-equal-to-first":
        got = tensors(argv[1])
        ref = [got[0]] * (len(got) - 1)
        got = got[1:]
    else:
        ref, got = tensors(argv[0]), tensors(argv[1])
    if not got or len(ref) != len(got):
        print(f"error: {len(got)} tensors printed, expected {len(ref)}")
        return 1
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref, got)):
        if len(a) != len(b):
            print(f"error: tensor {i} has {len(b)} values, expected {len(a)}")
            return 1
        diff = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
        print(f"tensor {i}: {len(a)} values, max |diff| = {diff:.3g}")
        worst = max(worst, diff)
    print(f"max deviation {worst:.3g} ({'PASS' if worst <= atol else 'FAIL'}, tolerance {atol:g})")
    return 0 if worst <= atol else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Compares two final states saved by examples/train_resumable.py --final.

    restart_check.py A.pt B.pt

Prints "equal bit for bit: N tensors" when every parameter, buffer and
optimizer state tensor (and every optimizer hyperparameter) of A equals
B's exactly, else the first difference; exit status 1 on a difference.
"""

import sys

import torch


def tensors(prefix, obj):
    """(name, value) of every leaf of a nested checkpoint."""
    if isinstance(obj, dict):
        for key in sorted(obj, key=str):
            yield from tensors(f"{prefix}.{key}", obj[key])
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from tensors(f"{prefix}[{i}]", value)
    else:
        yield prefix, obj


def main(a, b):
    left = dict(tensors("", torch.load(a, weights_only=True)))
    right = dict(tensors("", torch.load(b, weights_only=True)))
    if left.keys() != right.keys():
        print(f"different entries: {sorted(left.keys() ^ right.keys())}")
        return 1
    count = 0
    for name, x in left.items():
        y = right[name]
        if isinstance(x, torch.Tensor):
            count += 1
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(
                    x.view(-1).view(torch.uint8) if x.numel() else x,
                    y.view(-1).view(torch.uint8) if y.numel() else y):
                diff = (x.double() - y.double()).abs().max().item() \
                    if x.shape == y.shape else "shape"
                print(f"{name} differs (max |diff| {diff})")
                return 1
        elif x != y:
            print(f"{name} differs: {x!r} != {y!r}")
            return 1
    print(f"equal bit for bit: {count} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

#!/usr/bin/env python3
"""The bridge's own decompositions (spmd/_decompositions.py) against
PyTorch's kernels: max_pool2d_with_indices_backward without a scatter, for
non-overlapping and overlapping windows, padding, dilation and ceil_mode,
with ties (ReLU zeros), in float32 and float64 (bitwise); and constant_pad_nd
with negative (cropping) pads."""

import torch

from spmd._decompositions import _constant_pad_nd, _max_pool2d_backward

aten = torch.ops.aten
torch.manual_seed(0)
POOLS = [((2, 2), (2, 2), (0, 0), (1, 1), False, 8, 8),
         ((3, 3), (2, 2), (1, 1), (1, 1), False, 9, 7),
         ((3, 2), (1, 2), (1, 0), (1, 1), True, 7, 9),
         ((2, 2), (2, 2), (0, 0), (1, 1), True, 7, 7),
         ((3, 3), (2, 2), (1, 1), (2, 2), False, 11, 10),
         ((2, 2), (1, 1), (0, 0), (1, 1), False, 5, 5)]
worst, cases = 0.0, 0
for k, s, p, d, ceil, H, W in POOLS:
    args = [list(k), list(s), list(p), list(d), ceil]
    for ties in (False, True):
        for dtype in (torch.float32, torch.float64):
            x = torch.randn(2, 3, H, W, dtype=dtype)
            if ties:
                x = x.relu().round()
            out, idx = aten.max_pool2d_with_indices(x, *args)
            g = torch.randn_like(out)
            want = aten.max_pool2d_with_indices_backward(g, x, *args, idx)
            got = _max_pool2d_backward(g, x, *args, idx)
            assert got.shape == want.shape, (got.shape, want.shape)
            worst = max(worst, (got - want).abs().max().item())
            cases += 1
print(f"max_pool2d backward: {cases} cases, max |diff| {worst:g}")

worst, cases = 0.0, 0
x = torch.randn(2, 5, 7)
for pad in ([-1, 2], [1, -2, -1, 0], [-3, -3], [0, 0, 2, -4, -1, 1]):
    want = torch.nn.functional.pad(x, pad)
    got = _constant_pad_nd(x, pad, 0.0)
    assert got.shape == want.shape, (pad, got.shape, want.shape)
    worst = max(worst, (got - want).abs().max().item())
    cases += 1
print(f"constant_pad_nd with crops: {cases} cases, max |diff| {worst:g}")

#!/usr/bin/env python3
"""The bridge's own decompositions (spmd/_decompositions.py) against
PyTorch's kernels: max_pool2d_with_indices_backward and avg_pool2d_backward
without a scatter, for non-overlapping and overlapping windows, padding,
dilation, ceil_mode, count_include_pad and divisor_override, with ties
(ReLU zeros), in float32 and float64 (bitwise); constant_pad_nd with
negative (cropping) pads (exact); convolution_backward of grouped,
depthwise and transposed convolutions (1-D to 3-D, strided, dilated,
padded) as forward convolutions (float64, to rounding); nearest upsampling
by whole-number factors and its backward (forward exact, backward to
float32 rounding)."""

import torch

from spmd._decompositions import (_avg_pool2d_backward, _constant_pad_nd,
                                  _convolution_backward, _max_pool2d_backward,
                                  _upsample_nearest2d,
                                  _upsample_nearest2d_backward)

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

worst, cases = 0.0, 0
for k, s, p, ceil, H, W in [
        ((2, 2), (2, 2), (0, 0), False, 8, 8),
        ((3, 3), (2, 2), (1, 1), False, 9, 7),
        ((3, 2), (1, 2), (1, 0), True, 7, 9),
        ((2, 2), (2, 2), (0, 0), True, 7, 7),
        ((3, 3), (1, 1), (1, 1), False, 5, 6)]:
    for include_pad in (True, False):
        for divisor in (None, 3):
            for dtype in (torch.float32, torch.float64):
                args = [list(k), list(s), list(p), ceil, include_pad, divisor]
                x = torch.randn(2, 3, H, W, dtype=dtype)
                g = torch.randn_like(aten.avg_pool2d(x, *args))
                want = aten.avg_pool2d_backward(g, x, *args)
                got = _avg_pool2d_backward(g, x, *args)
                assert got.shape == want.shape
                worst = max(worst, (got - want).abs().max().item())
                cases += 1
print(f"avg_pool2d backward: {cases} cases, max |diff| {worst:g}")

worst, cases = 0.0, 0
CONVS = [  # dims, cin, cout, groups, kernel, stride, padding, dilation,
    # output padding (transposed), size
    (2, 4, 6, 2, 3, 1, 1, 1, 0, 7), (2, 4, 8, 4, 3, 2, 1, 1, 0, 8),
    (2, 3, 6, 3, 3, 2, 0, 2, 0, 9), (1, 4, 4, 4, 5, 1, 2, 1, 0, 10),
    (2, 6, 4, 2, 2, 2, 0, 1, 1, 5), (3, 2, 4, 2, 3, 1, 1, 1, 0, 4),
    (2, 4, 6, 1, 3, 2, 1, 1, 1, 6), (2, 6, 6, 6, 3, 2, 1, 1, 0, 8),
    (2, 4, 4, 2, 3, 1, 3, 1, 0, 6), (1, 3, 3, 3, 4, 3, 1, 2, 0, 11)]
for transposed in (False, True):
    for dims, cin, cout, g, k, s, p, d, op, size in CONVS:
        if not transposed and g == 1:
            continue  # torch-mlir's own lowering
        outpad = [op if transposed else 0] * dims
        x = torch.randn([2, cin] + [size] * dims, dtype=torch.float64)
        w = torch.randn(([cin, cout // g] if transposed else [cout, cin // g])
                        + [k] * dims, dtype=torch.float64)
        args = [[s] * dims, [p] * dims, [d] * dims, transposed, outpad, g]
        y = aten.convolution(x, w, None, *args)
        dy = torch.randn_like(y)
        mask = [True, True, True]
        want = aten.convolution_backward(dy, x, w, [cout], *args, mask)
        got = _convolution_backward(dy, x, w, [cout], *args, mask)
        for a, b in zip(got, want):
            assert a.shape == b.shape, (a.shape, b.shape)
            worst = max(worst, (a - b).abs().max().item())
        cases += 1
print(f"convolution backward: {cases} cases, max |diff| "
      f"{'< 1e-12' if worst < 1e-12 else worst}")

worst_fwd = worst_bwd = 0.0
cases = 0
for r in (2, 3, 4, 5, 7):
    for h, w in ((3, 5), (1, 9)):
        x = torch.randn(2, 3, h, w)
        for by_size in (True, False):
            if by_size:
                want = torch.nn.functional.interpolate(x, size=(h * r, w * r))
                got = _upsample_nearest2d(x, [h * r, w * r], None)
                scales = (None, None)
            else:
                want = torch.nn.functional.interpolate(x, scale_factor=r)
                got = _upsample_nearest2d(x, None, [float(r)] * 2)
                scales = (float(r), float(r))
            worst_fwd = max(worst_fwd, (got - want).abs().max().item())
            g = torch.randn_like(want)
            args = ([h * r, w * r], [2, 3, h, w], *scales)
            worst_bwd = max(worst_bwd, (
                _upsample_nearest2d_backward(g, *args)
                - aten.upsample_nearest2d_backward(g, *args)).abs().max().item())
            cases += 1
print(f"nearest upsampling: {cases} cases, forward max |diff| {worst_fwd:g}, "
      f"backward {'< 1e-5' if worst_bwd < 1e-5 else worst_bwd}")

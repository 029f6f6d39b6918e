#!/usr/bin/env python3
"""spmd.Auto's FLOP count of a local program (_auto.matmul_flops), on
small texts in the form spmd-opt prints: a plain matmul counts 2*M*K*N; a
matmul reading a one-hot matrix (a linalg.generic over booleans, through a
transpose) counts nothing, as the CPU codegen turns it into row scatters;
a dynamic size (fully_shard's uneven chunk) counts as its bound, found
through a slice of a static tensor, a transpose, and an elementwise op
whose other operand broadcasts a size-1 dimension."""

from spmd import _auto

PLAIN = """
    %2 = linalg.matmul ins(%0, %1 : tensor<8x16xf32>, tensor<16x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
"""

ONE_HOT = """
    %hit = linalg.generic {indexing_maps = [#m, #m]} ins(%ids : tensor<8x64xi1>) outs(%z : tensor<8x64xf32>) {
    %t = linalg.transpose ins(%hit : tensor<8x64xf32>) outs(%u : tensor<64x8xf32>) permutation = [1, 0]
    %g = linalg.matmul ins(%t, %d : tensor<64x8xf32>, tensor<8x16xf32>) outs(%v : tensor<64x16xf32>) -> tensor<64x16xf32>
"""

DYNAMIC = """
    %w = spmd.load @wte : tensor<25x16xf32>
    %s = tensor.extract_slice %w[0, 0] [%n, 16] [1, 1] : tensor<25x16xf32> to tensor<?x16xf32>
    %wt = linalg.transpose ins(%s : tensor<?x16xf32>) outs(%o : tensor<16x?xf32>) permutation = [1, 0]
    %l = linalg.matmul ins(%h, %wt : tensor<8x16xf32>, tensor<16x?xf32>) outs(%f : tensor<8x?xf32>) -> tensor<8x?xf32>
    %r = linalg.generic {indexing_maps = [#m, #b, #m]} ins(%l, %mx : tensor<8x?xf32>, tensor<8x1xf32>) outs(%f : tensor<8x?xf32>) {
    %rt = linalg.transpose ins(%r : tensor<8x?xf32>) outs(%q : tensor<?x8xf32>) permutation = [1, 0]
    %dw = linalg.matmul ins(%rt, %h : tensor<?x8xf32>, tensor<8x16xf32>) outs(%p : tensor<?x16xf32>) -> tensor<?x16xf32>
"""

for name, text, expected in (
        ("plain", PLAIN, 2 * 8 * 16 * 4),
        ("one-hot", ONE_HOT, 0),
        ("dynamic", DYNAMIC, 2 * 8 * 16 * 25 + 2 * 25 * 8 * 16)):
    got = _auto.matmul_flops(text)
    print(f"{name}: {got} FLOPs, expected {expected}: "
          f"{'OK' if got == expected else 'WRONG'}")

# spmd.Auto(calibration=...): the figures are checked when Auto is built.
import json  # noqa: E402
import tempfile  # noqa: E402

import spmd  # noqa: E402
from auto_check import FIXED  # noqa: E402

for name, given in (
        ("missing key", {k: v for k, v in FIXED.items()
                         if k != "all_gather_gbps"}),
        ("unknown key", dict(FIXED, gemm_tflops=1.0)),
        ("negative rate", dict(FIXED, memory_gbps=-1.0)),
        ("not a number", dict(FIXED, all_reduce_latency_us="fast")),
        ("no file", "/nonexistent/cal.json")):
    try:
        spmd.Auto(calibration=given)
        print(f"{name}: accepted: WRONG")
    except ValueError as err:
        print(f"{name}: {err}")
with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
    json.dump(FIXED, f)
    f.flush()
    print(f"from a file: {spmd.Auto(calibration=f.name).calibration}")

# DataParallel(sharded_params=...): a sequence of names, under fully_shard.
for name, kwargs in (
        ("sharded_params under replicate",
         dict(parallel_style="replicate", sharded_params=["fc.weight"])),
        ("sharded_params a string",
         dict(parallel_style="fully_shard", sharded_params="fc.weight"))):
    try:
        spmd.DataParallel(**kwargs)
        print(f"{name}: accepted: WRONG")
    except ValueError as err:
        print(f"{name}: {err}")
print("sharded_params kept sorted: " + repr(spmd.DataParallel(
    "fully_shard", sharded_params=["b", "a", "b"]).sharded_params))

# A name that is no parameter of the model: refused at the first call.
import torch  # noqa: E402

lin = torch.nn.Linear(4, 4)


def sgd_step(model, opt, x):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


try:
    spmd.compile(parallel_mode=spmd.DataParallel(
        "fully_shard", sharded_params=["weight", "wieght"]))(sgd_step)(
        lin, torch.optim.SGD(lin.parameters(), lr=0.1), torch.ones(2, 4))
    print("unknown parameter: accepted: WRONG")
except spmd.UnsupportedError as err:
    print(f"unknown parameter: {err}")

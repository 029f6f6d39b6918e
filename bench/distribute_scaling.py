#!/usr/bin/env python3
"""Compile-time scaling of `spmd-opt --spmd-distribute` (not a test).

Generates a data-parallel MLP train step with L layers (forward matmul +
ReLU, backward matmuls + ReLU', SGD update as a linalg.generic) twice: as an
spmd program (batch sharded through the argument spec) and as the equivalent
upstream `shard` program (a `shard.shard` annotation on the batch). Times,
per size, the whole process of
  * spmd-opt --spmd-distribute,
  * upstream mlir-opt sharding-propagation + shard-partition,
  * spmd-opt parse + print alone,
over several runs (median wall time, and the peak RSS of the process), and
prints ops/s and the ratios.

    python3 bench/distribute_scaling.py [--layers 10,100,1000,6000] [--runs 3]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPMD_OPT = os.environ.get("SPMD_OPT", os.path.join(ROOT, "build", "bin", "spmd-opt"))
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
B, H = 32, 64  # batch, hidden

ID = "affine_map<(d0, d1) -> (d0, d1)>"
MM_TA = ("indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
         "affine_map<(m, n, k) -> (m, n)>]")
MM_TB = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
         "affine_map<(m, n, k) -> (m, n)>]")


def generate(layers, flavor):
    t = f"tensor<{B}x{H}xf32>"
    w = f"tensor<{H}x{H}xf32>"
    lines = []
    if flavor == "spmd":
        lines.append("spmd.mesh @dp(shape = 4)")
        xarg = f"%x: {t} {{spmd.spec = #spmd.spec<@dp, [shard<0>]>}}"
    else:
        lines.append("shard.grid @dp(shape = 4)")
        xarg = f"%x0: {t}"
    args = [xarg] + [f"%w{i}: {w}" for i in range(layers)]
    lines.append(f"func.func @step({', '.join(args)}) -> ({', '.join([w] * layers)}) {{")
    if flavor == "shard":
        lines.append("  %sh = shard.sharding @dp split_axes = [[0]] : !shard.sharding")
        lines.append(f"  %x = shard.shard %x0 to %sh : {t}")
    lines.append("  %zero = arith.constant 0.0 : f32")
    lines.append("  %lr = arith.constant 0.01 : f32")
    lines.append(f"  %eb = tensor.empty() : {t}")
    lines.append(f"  %zb = linalg.fill ins(%zero : f32) outs(%eb : {t}) -> {t}")
    lines.append(f"  %ew = tensor.empty() : {w}")
    lines.append(f"  %zw = linalg.fill ins(%zero : f32) outs(%ew : {w}) -> {w}")
    h = "%x"
    for i in range(layers):
        lines.append(f"  %a{i} = linalg.matmul ins({h}, %w{i} : {t}, {w}) outs(%zb : {t}) -> {t}")
        lines.append(f"  %h{i} = linalg.generic {{indexing_maps = [{ID}, {ID}], iterator_types = [\"parallel\", \"parallel\"]}} "
                     f"ins(%a{i} : {t}) outs(%eb : {t}) {{\n  ^bb0(%i: f32, %o: f32):\n    %r = arith.maximumf %i, %zero : f32\n    linalg.yield %r : f32\n  }} -> {t}")
        h = f"%h{i}"
    d = h
    for i in reversed(range(layers)):
        inp = "%x" if i == 0 else f"%h{i - 1}"
        lines.append(f"  %da{i} = linalg.generic {{indexing_maps = [{ID}, {ID}, {ID}], iterator_types = [\"parallel\", \"parallel\"]}} "
                     f"ins({d}, %a{i} : {t}, {t}) outs(%eb : {t}) {{\n  ^bb0(%g: f32, %v: f32, %o: f32):\n"
                     f"    %p = arith.cmpf ogt, %v, %zero : f32\n    %r = arith.select %p, %g, %zero : f32\n    linalg.yield %r : f32\n  }} -> {t}")
        lines.append(f"  %dw{i} = linalg.matmul {MM_TA} ins({inp}, %da{i} : {t}, {t}) outs(%zw : {w}) -> {w}")
        lines.append(f"  %nw{i} = linalg.generic {{indexing_maps = [{ID}, {ID}, {ID}], iterator_types = [\"parallel\", \"parallel\"]}} "
                     f"ins(%w{i}, %dw{i} : {w}, {w}) outs(%ew : {w}) {{\n  ^bb0(%p: f32, %g: f32, %o: f32):\n"
                     f"    %s = arith.mulf %lr, %g : f32\n    %r = arith.subf %p, %s : f32\n    linalg.yield %r : f32\n  }} -> {w}")
        if i > 0:
            lines.append(f"  %d{i} = linalg.matmul {MM_TB} ins(%da{i}, %w{i} : {t}, {w}) outs(%zb : {t}) -> {t}")
            d = f"%d{i}"
    lines.append(f"  return {', '.join(f'%nw{i}' for i in range(layers))} : {', '.join([w] * layers)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def count_ops(text):
    return sum(1 for line in text.splitlines() if " = " in line or line.strip().startswith(("return", "linalg.yield")))


def run(cmd, runs):
    times, rss = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        err = proc.stderr.read().decode()
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{err[:2000]}")
        times.append(elapsed)
        rss.append(usage.ru_maxrss / 1024.0)  # MiB
    return statistics.median(times), max(rss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="10,100,1000,6000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in [int(v) for v in args.layers.split(",")]:
            spmd_path = os.path.join(tmp, f"spmd_{layers}.mlir")
            shard_path = os.path.join(tmp, f"shard_{layers}.mlir")
            text = generate(layers, "spmd")
            open(spmd_path, "w").write(text)
            open(shard_path, "w").write(generate(layers, "shard"))
            ops = count_ops(text)
            t_spmd, m_spmd = run([SPMD_OPT, spmd_path, "--spmd-distribute"], args.runs)
            t_up, m_up = run([MLIR_OPT, shard_path, "--pass-pipeline=builtin.module(func.func(sharding-propagation,shard-partition))"], args.runs)
            t_pp, m_pp = run([SPMD_OPT, spmd_path], args.runs)
            rows.append((layers, ops, t_spmd, m_spmd, t_up, m_up, t_pp, m_pp))
            print(f"  L={layers}: {ops} ops done", file=sys.stderr)
    print(f"{'layers':>7} {'ops':>8} | {'spmd s':>8} {'ops/s':>9} {'MiB':>6} | {'upstream s':>10} {'MiB':>6} | "
          f"{'parse+print s':>13} | {'vs upstream':>11} {'vs parse':>8}")
    for layers, ops, t_spmd, m_spmd, t_up, m_up, t_pp, m_pp in rows:
        print(f"{layers:>7} {ops:>8} | {t_spmd:>8.3f} {ops / t_spmd:>9.0f} {m_spmd:>6.0f} | {t_up:>10.3f} {m_up:>6.0f} | "
              f"{t_pp:>13.3f} | {t_up / t_spmd:>10.2f}x {t_spmd / t_pp:>7.2f}x")


if __name__ == "__main__":
    main()

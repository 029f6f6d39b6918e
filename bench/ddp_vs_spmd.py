#!/usr/bin/env python3
"""Train-step time: a compiled spmd program vs PyTorch DDP (not a test).

The same MLP (L layers of W x W, ReLU between, MSE loss, SGD with momentum)
with the same global batch, on 2 ranks of this machine, one thread each:
  * spmd: the global train step written in MLIR, `spmd-opt --spmd-distribute
    --spmd-lower-to-cpu`, compiled ahead of time (mlir-translate, opt -O3,
    llc) and linked with libSpmdRuntime and OpenBLAS, run under mpirun;
  * DDP: torch.nn.parallel.DistributedDataParallel with the gloo backend
    (the project's torch), run under the same mpirun;
  * spmd.compile: the same eager PyTorch step through the Python bridge
    (make_fx, torch-mlir, spmd-opt, the bridge's own -O2 build), same mpirun.
Prints the median step time of each, their ratio, and each side's peak RSS
per rank.

    python3 bench/ddp_vs_spmd.py [--layers 3] [--width 1024] [--batch 64] [--steps 10]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
LLVM = "/usr/lib/llvm-22"
ID = "affine_map<(d0, d1) -> (d0, d1)>"
NT = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
      "affine_map<(m, n, k) -> (m, n)>]")
TN = ("indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
      "affine_map<(m, n, k) -> (m, n)>]")


def program(L, W, B, warmup, steps):
    t = f"tensor<{B}x{W}xf32>"
    w = f"tensor<{W}x{W}xf32>"
    rep = "{spmd.spec = #spmd.spec<@dp, [replicate]>}"
    out = ["spmd.mesh @dp(shape = 2)"]
    for i in range(L):
        out.append(f'spmd.state @"l{i}.weight" : {w} role = param')
        out.append(f'spmd.state @"l{i}.buf" : {w} role = optimizer_state')
    out.append('spmd.state @"opt.step" : tensor<f32> role = optimizer_state')
    out.append(f"func.func @init({', '.join(f'%w{i}: {w} {rep}' for i in range(L))}) {{")
    out += [f'  spmd.store %w{i} to @"l{i}.weight" : {w}' for i in range(L)]
    out += ["  return", "}"]
    out.append(f"func.func @train_step(%xg: {t} {rep}, %yg: {t} {rep}) -> (tensor<f32> {rep}) {{")
    out.append(f"  %x = spmd.redistribute %xg to <@dp, [shard<0>]> : {t}")
    out.append(f"  %y = spmd.redistribute %yg to <@dp, [shard<0>]> : {t}")
    out.append("  %zero = arith.constant 0.0 : f32")
    out.append(f"  %e = tensor.empty() : {t}")
    out.append(f"  %z = linalg.fill ins(%zero : f32) outs(%e : {t}) -> {t}")
    out.append(f"  %ew = tensor.empty() : {w}")
    out.append(f"  %zw = linalg.fill ins(%zero : f32) outs(%ew : {w}) -> {w}")
    for i in range(L):
        out.append(f'  %w{i} = spmd.load @"l{i}.weight" : {w}')
    act = "%x"
    for i in range(L):
        out.append(f"  %p{i} = linalg.matmul {NT} ins({act}, %w{i} : {t}, {w}) outs(%z : {t}) -> {t}")
        if i < L - 1:
            out.append(f"  %a{i} = linalg.generic {{indexing_maps = [{ID}, {ID}], iterator_types = [\"parallel\", \"parallel\"]}} "
                       f"ins(%p{i} : {t}) outs(%e : {t}) {{\n  ^bb0(%v: f32, %o: f32):\n    %r = arith.maximumf %v, %zero : f32\n    linalg.yield %r : f32\n  }} -> {t}")
            act = f"%a{i}"
    last = f"%p{L - 1}"
    out.append(f"  %d = linalg.sub ins({last}, %y : {t}, {t}) outs(%e : {t}) -> {t}")
    out.append(f"  %sq = linalg.mul ins(%d, %d : {t}, {t}) outs(%e : {t}) -> {t}")
    out.append("  %e0 = tensor.empty() : tensor<f32>")
    out.append("  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>")
    out.append(f"  %s = linalg.reduce ins(%sq : {t}) outs(%z0 : tensor<f32>) dimensions = [0, 1]\n"
               "    (%in: f32, %acc: f32) {\n      %r = arith.addf %in, %acc : f32\n      linalg.yield %r : f32\n    }")
    out.append(f"  %n = arith.constant dense<{float(B * W)}> : tensor<f32>")
    out.append("  %l0 = arith.divf %s, %n : tensor<f32>")
    out.append("  %loss = spmd.redistribute %l0 to <@dp, [replicate]> : tensor<f32>")
    out.append(f"  %c = arith.constant dense<{2.0 / (B * W)}> : {t}")
    out.append(f"  %g{L - 1} = arith.mulf %d, %c : {t}")
    for i in reversed(range(L)):
        inp = "%x" if i == 0 else f"%a{i - 1}"
        out.append(f"  %dw{i} = linalg.matmul {TN} ins(%g{i}, {inp} : {t}, {t}) outs(%zw : {w}) -> {w}")
        if i > 0:
            out.append(f"  %ga{i} = linalg.matmul ins(%g{i}, %w{i} : {t}, {w}) outs(%z : {t}) -> {t}")
            out.append(f"  %g{i - 1} = linalg.generic {{indexing_maps = [{ID}, {ID}, {ID}], iterator_types = [\"parallel\", \"parallel\"]}} "
                       f"ins(%ga{i}, %p{i - 1} : {t}, {t}) outs(%e : {t}) {{\n  ^bb0(%gv: f32, %pv: f32, %o: f32):\n"
                       "    %pos = arith.cmpf ogt, %pv, %zero : f32\n    %r = arith.select %pos, %gv, %zero : f32\n    linalg.yield %r : f32\n  } -> " + t)
    for i in range(L):
        out.append(f'  %b{i} = spmd.load @"l{i}.buf" : {w}')
    out.append('  %st = spmd.load @"opt.step" : tensor<f32>')
    params = ", ".join(f"%w{i}" for i in range(L))
    grads = ", ".join(f"%dw{i}" for i in range(L))
    bufs = ", ".join(f"%b{i}" for i in range(L))
    out.append(f"  %r:{2 * L + 1} = spmd.sgd params [{params}] grads [{grads}] momentum_buffers [{bufs}] step %st "
               f"{{lr = 0.01 : f64, momentum = 0.9 : f64}} : {', '.join([w] * L)}")
    for i in range(L):
        out.append(f'  spmd.store %r#{i} to @"l{i}.weight" : {w}')
        out.append(f'  spmd.store %r#{L + i} to @"l{i}.buf" : {w}')
    out.append(f'  spmd.store %r#{2 * L} to @"opt.step" : tensor<f32>')
    out += ["  return %loss : tensor<f32>", "}"]
    out.append("func.func private @rtclock() -> f64")
    out.append("func.func private @printF64(f64)")
    out.append("func.func private @printNewline()")
    out.append("func.func @main() -> i32 {")
    for i in range(L):
        out.append(f"  %w{i} = arith.constant dense<{0.02 * (i + 1)}> : {w}")
    out.append(f"  func.call @init({', '.join(f'%w{i}' for i in range(L))}) : ({', '.join([w] * L)}) -> ()")
    out.append(f"  %x = arith.constant dense<0.5> : {t}")
    out.append(f"  %y = arith.constant dense<0.1> : {t}")
    for s in range(warmup + steps):
        out.append(f"  %t{s}a = func.call @rtclock() : () -> f64")
        out.append(f"  %l{s} = func.call @train_step(%x, %y) : ({t}, {t}) -> tensor<f32>")
        out.append(f"  %t{s}b = func.call @rtclock() : () -> f64")
        if s >= warmup:
            out.append(f"  %dt{s} = arith.subf %t{s}b, %t{s}a : f64")
            out.append(f"  func.call @printF64(%dt{s}) : (f64) -> ()")
            out.append("  func.call @printNewline() : () -> ()")
    out += ["  %c0 = arith.constant 0 : i32", "  return %c0 : i32", "}"]
    return "\n".join(out) + "\n"


# The model both PyTorch runs build (the MLIR program's weights).
MODEL = r'''
layers = []
for i in range(L):
    lin = torch.nn.Linear(W, W, bias=False)
    torch.nn.init.constant_(lin.weight, 0.02 * (i + 1))
    layers.append(lin)
    if i < L - 1:
        layers.append(torch.nn.ReLU())
'''

TORCH = r'''
import os, resource, statistics, sys, time
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
rank = int(os.environ["OMPI_COMM_WORLD_RANK"]); world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
import torch, torch.distributed as dist
torch.set_num_threads(1)
L, W, B, warmup, steps = map(int, sys.argv[1:6])
dist.init_process_group("gloo", rank=rank, world_size=world)
@MODEL@
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.full((B // world, W), 0.5); y = torch.full((B // world, W), 0.1)
times = []
for s in range(warmup + steps):
    t0 = time.perf_counter()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward(); opt.step(); opt.zero_grad()
    t1 = time.perf_counter()
    if s >= warmup: times.append(t1 - t0)
rss = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
print(f"RANK {rank} MEDIAN {statistics.median(times):.6f} RSS {rss}", flush=True)
dist.destroy_process_group()
'''


BRIDGE = r'''
import os, statistics, sys, time
import torch, spmd
torch.set_num_threads(1)
L, W, B, warmup, steps = map(int, sys.argv[1:6])
@MODEL@
model = torch.nn.Sequential(*layers)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
rank, world = spmd.rank(), spmd.world_size()
x = torch.full((B // world, W), 0.5); y = torch.full((B // world, W), 0.1)

@spmd.compile()
def step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward(); opt.step(); opt.zero_grad()
    return loss

times = []
for s in range(warmup + steps):
    t0 = time.perf_counter()
    step(model, opt, x, y)
    t1 = time.perf_counter()
    if s >= warmup: times.append(t1 - t0)
rss = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
print(f"RANK {rank} MEDIAN {statistics.median(times):.6f} RSS {rss}", flush=True)
'''


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    # The ahead-of-time program loads OpenBLAS before any code of ours runs:
    # name its kernels for this CPU as spmd.compile does (python/spmd/_cpu.py).
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from spmd._cpu import choose_openblas_core
    choose_openblas_core(env)
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2"]
    blas = sh(["sed", "-n", "s/^SPMD_BLAS_LIBRARY:FILEPATH=//p", os.path.join(BUILD, "CMakeCache.txt")]).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "step.mlir")
        open(src, "w").write(program(args.layers, args.width, args.batch, args.warmup, args.steps))
        llvm_mlir = os.path.join(tmp, "step.llvm.mlir")
        sh([os.path.join(BUILD, "bin", "spmd-opt"), src, "--spmd-distribute", "--spmd-lower-to-cpu", "-o", llvm_mlir])
        ll = os.path.join(tmp, "step.ll")
        sh([f"{LLVM}/bin/mlir-translate", "--mlir-to-llvmir", llvm_mlir, "-o", ll])
        # MLIR emits no target triple; without one LLVM assumes no C library
        # and expands memcpy/memset into byte loops.
        triple = sh([f"{LLVM}/bin/llvm-config", "--host-target"]).stdout.strip()
        sh([f"{LLVM}/bin/opt", "-O3", f"-mtriple={triple}", "-mcpu=native", ll, "-o", ll + ".bc"])
        sh([f"{LLVM}/bin/llc", "-O3", f"-mtriple={triple}", "-mcpu=native", "--relocation-model=pic",
            "-filetype=obj", ll + ".bc", "-o", ll + ".o"])
        exe = os.path.join(tmp, "step")
        sh(["g++", ll + ".o", "-o", exe, "-L" + os.path.join(BUILD, "lib"), "-lSpmdRuntime",
            f"-L{LLVM}/lib", "-lmlir_c_runner_utils", blas,
            f"-Wl,-rpath,{os.path.join(BUILD, 'lib')}:{LLVM}/lib"])
        # Each rank's peak RSS into its own file.
        wrapped = ["sh", "-c", f'exec /usr/bin/time -f "%M" -o {tmp}/rss.$OMPI_COMM_WORLD_RANK {exe}']
        res = subprocess.run(mpirun + wrapped, capture_output=True, text=True, env=env, timeout=600)
        if res.returncode != 0:
            sys.exit(f"spmd run failed:\n{res.stdout}\n{res.stderr}")
        times = [float(v) for v in re.findall(r"^\s*([0-9.eE+-]+)\s*$", res.stdout, re.M)]
        spmd_rss = [int(open(f"{tmp}/rss.{r}").read().split()[-1]) // 1024 for r in range(2)]
        # Both ranks print their times; each rank's median, then the slower.
        half = len(times) // 2
        spmd_median = max(statistics.median(times[:half]), statistics.median(times[half:])) if half else statistics.median(times)
        python = os.environ.get("SPMD_PYTHON") or sys.executable

        def run_torch(name, script, run_env, timeout):
            """Median step (slower rank) and peak RSS per rank of a script."""
            path = os.path.join(tmp, name + ".py")
            open(path, "w").write(script.replace("@MODEL@", MODEL))
            res = subprocess.run(mpirun + [python, path, str(args.layers), str(args.width),
                                           str(args.batch), str(args.warmup), str(args.steps)],
                                 capture_output=True, text=True, env=run_env, timeout=timeout)
            if res.returncode != 0:
                sys.exit(f"{name} run failed:\n{res.stdout}\n{res.stderr}")
            found = re.findall(r"RANK (\d) MEDIAN ([0-9.]+) RSS (\d+)", res.stdout)
            return max(float(m) for _, m, _ in found), [int(r) for _, _, r in sorted(found)]

        ddp_median, ddp_rss = run_torch("ddp", TORCH, env, 600)
        bridge_median, bridge_rss = run_torch(
            "spmd.compile", BRIDGE,
            dict(env, PYTHONPATH=os.path.join(ROOT, "python"), SPMD_BUILD=BUILD), 900)
    print(f"MLP {args.layers} x {args.width}, global batch {args.batch}, 2 ranks, 1 thread each, "
          f"median of {args.steps} steps")
    print(f"{'':>8} {'step ms':>9} {'peak RSS MiB per rank':>24}")
    print(f"{'spmd':>8} {spmd_median * 1e3:>9.2f} {str(spmd_rss):>24}")
    print(f"{'DDP':>8} {ddp_median * 1e3:>9.2f} {str(ddp_rss):>24}")
    print(f"{'bridge':>8} {bridge_median * 1e3:>9.2f} {str(bridge_rss):>24}   (spmd.compile, incl. torch)")
    print(f"ratio spmd / DDP: {spmd_median / ddp_median:.2f} (target < 1.0); "
          f"spmd.compile / DDP: {bridge_median / ddp_median:.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs one spmd.compile program (from emit_program.py, for a mesh of 2) on
the GPU path under the GPU emulator and checks it against the CPU path.

The program goes through the bridge's own pipeline, then once with the mesh
set to 1 rank through spmd-lower-to-cpu (the single-device reference, run on
1 rank) and once as written through spmd-lower-to-nvvm{emulate=1} (run on 2
ranks against build/lib/gpu-emulator); Inputs/bridge_step_main.cpp drives
both, its shapes given as compiler flags.

    gpu_emulated_step.py DIR CASE "FLAGS"      (reads DIR/CASE.mlir)
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from spmd import _toolchain

HERE = Path(__file__).resolve().parent


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, text=True, **kw)


def main():
    work, case, flags = Path(sys.argv[1]), sys.argv[2], shlex.split(sys.argv[3])
    build = _toolchain.build_dir()
    bindir = build / "bin"
    llvm = _toolchain.LLVM_PREFIX / "bin"
    lib = build / "lib"
    cuda = Path(_toolchain._cmake_cache(build, "SPMD_CUDA_ROOT"))
    blas = _toolchain._cmake_cache(build, "SPMD_BLAS_LIBRARY")
    driver = HERE.parent / "Conversion" / "GPU" / "Inputs" / "bridge_step_main.cpp"
    include = _toolchain.source_root() / "include"
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np"]

    text = (work / f"{case}.mlir").read_text()
    local = run([bindir / "spmd-opt", f"--pass-pipeline={_toolchain.pipeline()}"],
                input=text, capture_output=True).stdout
    reference = run([bindir / "spmd-opt", f"--pass-pipeline={_toolchain.pipeline()}"],
                    input=text.replace("shape = 2", "shape = 1"),
                    capture_output=True).stdout

    def compile_program(name, mlir, tool, lowering):
        ll = run([bindir / tool, lowering], input=mlir,
                 capture_output=True).stdout
        ir = run([llvm / "mlir-translate", "--mlir-to-llvmir"], input=ll,
                 capture_output=True).stdout
        obj = work / f"{case}.{name}.o"
        run([llvm / "llc", "-O2", "-relocation-model=pic", "-filetype=obj",
             "-o", obj], input=ir)
        return obj

    cpu = compile_program("cpu", reference, "spmd-opt", "--spmd-lower-to-cpu")
    run(["c++", "-std=c++17", "-DSPMD_CPU", *flags, f"-I{include}", driver, cpu,
         "-o", work / f"{case}.cpu", f"-L{lib}", "-lSpmdRuntime", blas,
         f"-L{_toolchain.LLVM_PREFIX / 'lib'}", "-lmlir_c_runner_utils",
         f"-Wl,-rpath,{lib}:{_toolchain.LLVM_PREFIX / 'lib'}"])
    ref = work / f"{case}.ref.txt"
    sys.stdout.flush()
    run(mpirun + ["1", work / f"{case}.cpu", ref])

    gpu = compile_program("gpu", local, "spmd-gpu-opt",
                          "--spmd-lower-to-nvvm=emulate=1")
    run(["c++", "-std=c++17", *flags, f"-I{include}", driver, gpu,
         "-o", work / f"{case}.gpu", "-rdynamic", f"-L{lib}",
         "-lSpmdGpuRuntime", f"-L{cuda / 'lib64' / 'stubs'}", "-lcuda",
         f"-Wl,-rpath,{lib}:{cuda / 'lib64'}"])
    sys.stdout.flush()
    run([sys.executable, HERE.parent / "Conversion" / "GPU" / "Inputs" /
         "run_emulated.py", lib / "gpu-emulator"] + mpirun +
        ["2", work / f"{case}.gpu", ref])


if __name__ == "__main__":
    main()

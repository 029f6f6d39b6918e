#!/usr/bin/env python3
"""Runs spmd.compile programs (from emit_program.py / emit_op_programs.py,
for a mesh of 2) on the GPU path under the GPU emulator and checks each
against the CPU path.

Each program goes through the bridge's own pipeline, then once with the mesh
set to 1 rank through spmd-lower-to-cpu (the single-device reference, run on
1 rank) and once as written through spmd-lower-to-emulator (run on 2
ranks against build/lib/gpu-emulator); Inputs/bridge_step_main.cpp drives
both, its shapes given as compiler flags (the same for every CASE). Cases
run two at a time; each prints its two ranks' verdicts (sorted), and a
failing step prints its command and output.

    gpu_emulated_step.py DIR "FLAGS" [CASE...]    (reads DIR/CASE.mlir;
                                                  no CASE: every DIR/*.mlir)
"""

import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spmd import _toolchain

HERE = Path(__file__).resolve().parent
DRIVER = HERE.parent / "Codegen" / "GPU" / "Inputs" / "bridge_step_main.cpp"
RUN_EMULATED = HERE.parent / "Codegen" / "GPU" / "Inputs" / "run_emulated.py"
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np"]


class StepFailed(Exception):
    pass


def run(cmd, text_in=None, env=None):
    proc = subprocess.run([str(c) for c in cmd], input=text_in,
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise StepFailed(f"$ {' '.join(str(c) for c in cmd)}\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout


class Toolchain:
    def __init__(self, work, flags):
        self.work = work
        build = _toolchain.build_dir()
        self.bin = build / "bin"
        self.llvm = _toolchain.LLVM_PREFIX
        self.lib = build / "lib"
        self.cuda = Path(_toolchain._cmake_cache(build, "SPMD_CUDA_ROOT"))
        self.blas = _toolchain._cmake_cache(build, "SPMD_BLAS_LIBRARY")
        include = _toolchain.source_root() / "include"
        # The driver, compiled once for each path.
        self.cpu_driver = work / "driver.cpu.o"
        self.gpu_driver = work / "driver.gpu.o"
        for obj, extra in ((self.cpu_driver, ["-DSPMD_CPU"]),
                           (self.gpu_driver, [])):
            run(["c++", "-std=c++17", "-O1", "-c", *extra, *flags,
                 f"-I{include}", DRIVER, "-o", obj])

    def lower(self, name, mlir, tool, lowering):
        ll = run([self.bin / tool, lowering], mlir)
        ir = run([self.llvm / "bin" / "mlir-translate", "--mlir-to-llvmir"], ll)
        obj = self.work / f"{name}.o"
        run([self.llvm / "bin" / "llc", "-O2", "-relocation-model=pic",
             "-filetype=obj", "-o", obj], ir)
        return obj

    def check(self, case):
        work = self.work
        text = (work / f"{case}.mlir").read_text()
        pipeline = f"--pass-pipeline={_toolchain.pipeline()}"
        # With locations: step traces name kernels after the model's lines.
        local = run([self.bin / "spmd-opt", pipeline,
                     "--mlir-print-debuginfo"], text)
        single = run([self.bin / "spmd-opt", pipeline],
                     text.replace("shape = 2", "shape = 1"))
        cpu = self.lower(f"{case}.cpu", single, "spmd-opt",
                         "--spmd-lower-to-cpu")
        llvm_lib = self.llvm / "lib"
        run(["c++", self.cpu_driver, cpu, "-o", work / f"{case}.cpu",
             f"-L{self.lib}", "-lSpmdRuntime", self.blas, f"-L{llvm_lib}",
             "-lmlir_c_runner_utils", f"-Wl,-rpath,{self.lib}:{llvm_lib}"])
        ref = work / f"{case}.ref.txt"
        # Each case's mpirun its own session directory: two cases run at
        # once, and Open MPI's shared one under a common TMPDIR can be
        # removed by one job while the other creates its own in it ("unable
        # to create the desired directory").
        tmp = work / f"{case}.mpi-tmp"
        tmp.mkdir(exist_ok=True)
        mpi_env = dict(os.environ, TMPDIR=str(tmp))
        run(MPIRUN + ["1", work / f"{case}.cpu", ref], env=mpi_env)
        gpu = self.lower(f"{case}.gpu", local, "spmd-gpu-opt",
                         "--spmd-lower-to-emulator")
        run(["c++", self.gpu_driver, gpu, "-o", work / f"{case}.gpu",
             "-rdynamic", f"-L{self.lib}", "-lSpmdGpuRuntime",
             f"-L{self.cuda / 'lib64' / 'stubs'}", "-lcuda",
             f"-Wl,-rpath,{self.lib}:{self.cuda / 'lib64'}"])
        # The emulator's counts per rank and step: DIR/CASE.counts.RANK
        # (emu_counts_check.py reads them).
        env = dict(mpi_env, SPMD_EMU_COUNTS=str(work / f"{case}.counts"))
        out = run([sys.executable, RUN_EMULATED, self.lib / "gpu-emulator"]
                  + MPIRUN + ["2", work / f"{case}.gpu", ref], env=env)
        return "".join(f"{case}: {line}\n"
                       for line in sorted(out.splitlines()))


def main():
    work, flags, cases = Path(sys.argv[1]), shlex.split(sys.argv[2]), sys.argv[3:]
    cases = cases or sorted(p.stem for p in work.glob("*.mlir"))
    tools = Toolchain(work, flags)

    def attempt(case):
        try:
            return tools.check(case), True
        except StepFailed as err:
            return f"{case}: FAILED\n{err}\n", False

    failed = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for text, ok in pool.map(attempt, cases):
            sys.stdout.write(text)
            failed += not ok
    print(f"{len(cases) - failed} of {len(cases)} programs ran")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

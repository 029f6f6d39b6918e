# -*- Python -*-
# lit configuration for the spmd test suite.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SPMD"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
# Tests run with `set -o pipefail` so a failing producer fails the pipeline.
config.pipefail = True
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.spmd_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%spmd_obj_root", config.spmd_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# A sanitizer build (-DSPMD_SANITIZE=..., scripts/sanitize.sh) builds only
# the compilers and runs the tests that use nothing else; any report fails
# the test. The LLVM libraries are not instrumented: their allocator poisons
# memory ASan would then misreport (use-after-poison at context setup), so
# user poisoning is off. Reports abort (a signal): `not spmd-opt ...`
# accepts a non-zero exit but fails on a crash, so a report still fails tests
# that expect a diagnostic.
if config.spmd_sanitize:
    config.name = "SPMD-sanitize"
    config.available_features.add("sanitize")
    config.environment["ASAN_OPTIONS"] = (
        "allow_user_poisoning=0:detect_leaks=1:abort_on_error=1:"
        "halt_on_error=1")
    config.environment["UBSAN_OPTIONS"] = (
        "print_stacktrace=1:halt_on_error=1:abort_on_error=1")

# The project's tools first, then FileCheck & co. from the LLVM install.
tool_dirs = [config.spmd_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore" if config.spmd_sanitize else "fatal")
     for t in ["spmd-opt", "spmd-gpu-opt", "spmd-runtime-tests",
               "spmd-runtime-errors"]]
    # Only the sanitizer build has the fuzzer (its tests REQUIRE sanitize).
    + [ToolSubst("spmd-fuzz", unresolved="ignore")],
    tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Upstream lowering of decomposed (spmd-free) programs to LLVM, and the JIT
# runner, for the numeric integration tests.
mlir_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(
    ("%lower-to-llvm-cpu",
     "mlir-opt --convert-elementwise-to-linalg "
     "'--one-shot-bufferize=bufferize-function-boundaries=1 "
     "function-boundary-type-conversion=identity-layout-map' "
     "--convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata "
     "--lower-affine --convert-math-to-llvm --convert-to-llvm "
     "--reconcile-unrealized-casts"))
config.substitutions.append(
    ("%run-cpu",
     "mlir-runner -e main -entry-point-result=void -shared-libs="
     + os.path.join(mlir_lib_dir, "libmlir_runner_utils.so") + ","
     + os.path.join(mlir_lib_dir, "libmlir_c_runner_utils.so")))
config.substitutions.append(("%spmd_python", config.python_executable))

# MPI: everything runs as root here and CI has 2 cores, so OpenMPI needs
# both permissions; a job that hangs is killed rather than stalling CI
# (after 240 s: a job of several cold compiles, each a full trace and
# lowering since the program cache is keyed by spmd-opt's build, took
# over 120 s on a loaded 2-core machine).
mpirun = shutil.which("mpirun")
if mpirun:
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    config.substitutions.append(
        ("%mpirun", "timeout 240 " + mpirun + " --oversubscribe --bind-to none -np"))
# The Gloo backend (libgloo-dev): `%gloo DIR` runs a command on Gloo with the
# file store DIR (mpirun only launches), `%torchrun N` launches N ranks as
# PyTorch users do.
if config.spmd_have_gloo:
    config.available_features.add("gloo")
    config.substitutions.append(
        ("%gloo", "env SPMD_BACKEND=gloo SPMD_GLOO_STORE="))
config.substitutions.append(
    ("%torchrun", f"timeout 300 {config.python_executable} -m "
     "torch.distributed.run --standalone --nproc_per_node"))
config.substitutions.append(("%spmd_lib_dir", os.path.join(config.spmd_obj_root, "lib")))
# Ahead-of-time programs: the host triple (MLIR emits none; without one LLVM
# assumes no C library) and a C++ compile+link against the runtime.
config.substitutions.append(
    ("%host_triple",
     subprocess.check_output([os.path.join(config.llvm_tools_dir, "llvm-config"),
                              "--host-target"], text=True).strip()))
spmd_lib = os.path.join(config.spmd_obj_root, "lib")
config.substitutions.append(
    ("%host_cxx", f"{config.host_cxx} -std=c++17 -I{config.spmd_src_root}/include"))
config.substitutions.append(
    ("%host_libs",
     f"-L{spmd_lib} -lSpmdRuntime -L{mlir_lib_dir} -lmlir_c_runner_utils"
     f" -Wl,-rpath,{spmd_lib}:{mlir_lib_dir}"))
# What spmd-lower-to-cpu programs with f32 matmuls link too (cblas_sgemm).
config.substitutions.append(("%blas_lib", config.spmd_blas_library))
# Runs a program lowered by spmd-lower-to-cpu on every rank of an mpirun job.
config.substitutions.append(
    ("%run-mpi",
     os.path.join(config.llvm_tools_dir, "mlir-runner")
     + " -e main -entry-point-result=void -shared-libs="
     + os.path.join(config.spmd_obj_root, "lib", "libSpmdRuntime.so") + ","
     + config.spmd_blas_library + ","
     + os.path.join(mlir_lib_dir, "libmlir_runner_utils.so") + ","
     + os.path.join(mlir_lib_dir, "libmlir_c_runner_utils.so")))

# The Python bridge (`import spmd`) of this checkout, using this build.
config.environment["PYTHONPATH"] = os.path.join(config.spmd_src_root, "python")
config.environment["SPMD_BUILD"] = config.spmd_obj_root
# The bridge's compiles verify the IR after every pass in tests (users'
# compiles only verify input and output; docs/Python.md).
config.environment["SPMD_VERIFY"] = "1"

# torch + torch-mlir importable from the project's interpreter.
if subprocess.run([config.python_executable, "-c", "import torch_mlir.fx"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")

# The GPU path: `cuda-toolkit` (CUDA + NCCL found: kernels compile to cubins,
# libSpmdGpuRuntime is built and programs link against it) and, only where
# a GPU is present, `cuda-device` (GPU execution tests).
if config.spmd_have_cuda:
    config.available_features.add("cuda-toolkit")
    # The driver is linked through CUDA's stub (libcuda.so.1 is the real
    # driver's, present only where a GPU is).
    cuda_lib = os.path.join(config.spmd_cuda_root, "lib64")
    config.substitutions.append(("%cuda_root", config.spmd_cuda_root))
    config.substitutions.append(
        ("%gpu_libs",
         f"-L{spmd_lib} -lSpmdGpuRuntime -L{cuda_lib}/stubs -lcuda "
         f"-Wl,-rpath,{spmd_lib}:{cuda_lib}"))
    # The GPU emulator (test/lib/GpuEmulator/Device): programs compiled with
    # spmd-lower-to-emulator (test/lib/GpuEmulator) run on the CPU; link them with
    # %gpu_emulator_libs, run them with `%run_gpu_emulated %mpirun N prog`.
    # The emulator's schedule can be chosen for a whole run
    # (SPMD_EMU_SCHEDULE=random:SEED lit ...).
    for var in ("SPMD_EMU_SCHEDULE", "SPMD_EMU_REPORT"):
        if var in os.environ:
            config.environment[var] = os.environ[var]
    config.substitutions.append(
        ("%run_gpu_emulated",
         f"{config.python_executable} "
         f"{config.spmd_src_root}/test/Codegen/GPU/Inputs/run_emulated.py "
         f"{spmd_lib}/gpu-emulator"))
    config.substitutions.append(
        ("%gpu_emulator_dir", f"{spmd_lib}/gpu-emulator"))
    config.substitutions.append(
        ("%gpu_emulator_libs",
         f"-rdynamic -L{spmd_lib} -lSpmdGpuRuntime -L{cuda_lib}/stubs -lcuda "
         f"-Wl,-rpath,{spmd_lib}:{cuda_lib}"))
    smi = shutil.which("nvidia-smi")
    if smi and subprocess.run([smi, "-L"], capture_output=True,
                              text=True).stdout.startswith("GPU"):
        config.available_features.add("cuda-device")

"""Finds the spmd build and turns MLIR text into a loadable shared library.

The pipeline is the command-line one (`spmd-opt`, `mlir-translate`, `llc`,
the C compiler), so what the bridge compiles is exactly what a user can
reproduce by hand: every intermediate file stays in the work directory that
errors name.
"""

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import _progress
from ._errors import CompileError

LLVM_PREFIX = Path(os.environ.get("SPMD_LLVM_PREFIX", "/usr/lib/llvm-22"))


def source_root() -> Path:
    """The checkout this package is in (scripts/setup.sh installs it
    editable); None when the package was installed elsewhere."""
    root = Path(__file__).resolve().parents[2]
    if (root / "CMakeLists.txt").exists() and \
            (root / "python" / "spmd" / "__init__.py").exists():
        return root
    return None


def build_dir() -> Path:
    """Where the compiler and runtime are: `$SPMD_BUILD` when set, else the
    `build` folder of the checkout this package is in (where
    scripts/setup.sh builds). A package installed outside a checkout needs
    SPMD_BUILD."""
    setting = os.environ.get("SPMD_BUILD")
    root = source_root()
    if setting:
        build, why = Path(setting), "SPMD_BUILD"
    elif root is not None:
        build, why = root / "build", f"the checkout {root}"
    else:
        raise CompileError(
            f"the spmd package at {Path(__file__).resolve().parent} is "
            "installed outside a checkout: set SPMD_BUILD to the build folder "
            "of the spmd checkout to use (the one scripts/setup.sh built)")
    if not (build / "bin" / "spmd-opt").exists():
        raise CompileError(
            f"spmd-opt not found under {build}/bin (from {why}): build the "
            "project first (bash scripts/setup.sh) or point SPMD_BUILD at a "
            "build folder")
    return build


def _cmake_cache(build: Path, key: str) -> str:
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    raise CompileError(f"{key} missing from {build}/CMakeCache.txt")


def pipeline(passes: str = "", bucket_bytes: int = 25 * 1024 * 1024,
             regather: bool = False, prefetch: bool = False) -> str:
    """The pass pipeline from the wrapped global program to the local one:
    inline the traced callee, the user's `passes`, a vocabulary-parallel
    head where one applies, distribute, overlap,
    bucket the collectives (`bucket_bytes` 0: none), at most two gradient
    reductions in flight. `regather` (fully_shard
    with reshard_after_forward): parameters gathered again for their
    backward uses. `prefetch` (fully_shard): one parameter gather
    prefetched at a time, not every one at the step's start (without
    resharding too: GPT-2 124M's 16 bucketed gathers started together
    share the transport, so the first layer waited for all of them:
    2 ranks, step 4.2-4.4 -> 3.5 s, collective waits 0.6-0.8 -> 0.1-0.5 s
    per rank)."""
    text = "builtin.module(inline, symbol-dce"
    if passes:
        text += ", " + passes
    local = ("spmd-regather-parameters, " if regather else "") + (
        "spmd-overlap-collectives{prefetch-parameters=1}" if prefetch
        else "spmd-overlap-collectives")
    if bucket_bytes > 0:
        first = min(bucket_bytes, 1024 * 1024)
        local += (f", spmd-bucket-collectives{{bucket-bytes={bucket_bytes} "
                  f"first-bucket-bytes={first}}}")
    # Whole gradients alive at once: one reduction's worth (SPMD_MAX_IN_FLIGHT;
    # 0: as many as overlap leaves). One, not the pass's default of two: on
    # GPT-2 124M it is the same step (2 ranks replicate 3.92 -> 3.33 s,
    # fully_shard 3.19 -> 3.32; 4 ranks fully_shard 3.92 -> 3.75-3.79 s) at
    # a smaller peak (4 ranks fully_shard 1520 -> 1455 MiB per rank).
    in_flight = os.environ.get("SPMD_MAX_IN_FLIGHT", "1")
    local += f", spmd-bound-reductions-in-flight{{max-in-flight={in_flight}}}"
    # A large vocabulary stored by rows (fully_shard's tied wte) keeps its
    # rows: the tokens are gathered instead (fires on nothing else;
    # SPMD_VOCAB_PARALLEL=0: off, for comparisons).
    if os.environ.get("SPMD_VOCAB_PARALLEL", "1") != "0":
        text += ", func.func(spmd-vocab-parallel)"
    return text + f", spmd-distribute, func.func({local}))"


def runtime_library(gpu: bool = False) -> Path:
    """libSpmdRuntime, or libSpmdGpuRuntime (`gpu`: built only where CUDA
    and NCCL headers were found)."""
    if not gpu:
        return build_dir() / "lib" / "libSpmdRuntime.so"
    path = build_dir() / "lib" / "libSpmdGpuRuntime.so"
    if not path.exists():
        raise CompileError(
            f"{path} was not built: the GPU target needs CUDA and NCCL "
            "headers at configure time (see docs/Python.md, On the GPU)")
    return path


def write_whole(path: Path, data: bytes) -> None:
    """Writes `data` to `path` in the compile cache: whole, then renamed, so
    ranks sharing the cache never read a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    path = Path(os.environ.get("SPMD_COMPILE_CACHE",
                               Path(base) / "spmd" / "compiled"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(cmd, what, work: Path, stdin=None):
    # Every command, as a script a user can replay by hand in `work`.
    with open(work / "replay.sh", "a") as script:
        script.write(f"# {what}\n" + " ".join(
            shlex.quote(str(c)) for c in cmd) + "\n")
    with _progress.phase(what):
        proc = subprocess.run([str(c) for c in cmd], input=stdin,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(
            f"{what} failed (exit {proc.returncode}; files in {work}):\n"
            f"$ {' '.join(str(c) for c in cmd)}\n{proc.stderr.strip()}")
    return proc.stdout


def _host_triple() -> str:
    return subprocess.check_output([LLVM_PREFIX / "bin" / "llvm-config",
                                    "--host-target"], text=True).strip()


# LLVM for this machine's CPU (the cache is per machine). Loops that call
# exp, log or pow are vectorized through glibc's libmvec (AVX2/AVX-512
# variants of expf, logf...; at most 4 ulp by glibc's tables, like the 1-ulp
# SLEEF functions eager PyTorch vectorizes with, float32 rounding either way)
# instead of one scalar libm call per element.
OPT_ARGS = ["-O3", "-mcpu=native", "-vector-library=LIBMVEC"]
LLC_ARGS = ["-O3", "-mcpu=native", "--relocation-model=pic"]
# The GPU emulator's programs (tests): their kernels are host code the
# emulator runs a thread at a time, where its own scheduling costs more than
# the code LLVM emits; -O1 halves the GPT's build (16 s at -O3).
EMULATOR_OPT_LEVEL = "-O1"


def _llvm_args(target: str):
    """opt's and llc's arguments for `target`'s host code."""
    if target != "emulator":
        return OPT_ARGS, LLC_ARGS
    return ([EMULATOR_OPT_LEVEL, *OPT_ARGS[1:]],
            [EMULATOR_OPT_LEVEL, *LLC_ARGS[1:]])
# -Bsymbolic: the program's calls of its own functions bind inside its
# library, whatever else the process loaded (two steps' `forward_backward`
# must not resolve to one another's).
LINK_LIBS = ["-lmvec", "-lm", "-Wl,-Bsymbolic"]


# What each target's program is lowered with, linked against, and named.
LOWERING = {"cpu": ("spmd-opt", ["--spmd-lower-to-cpu"]),
            "cuda": ("spmd-gpu-opt", ["--spmd-lower-to-nvvm"]),
            "emulator": ("spmd-gpu-opt", ["--spmd-lower-to-emulator"])}


def _lowering(target: str):
    tool, args = LOWERING[target]
    if target == "cuda":
        # Cubins for this process's GPU (sm_90 unless torch says otherwise).
        args = [f"{args[0]}=cuda-toolkit={cuda_root()} chip={_cuda_chip()}"]
    return tool, args


def _cuda_chip() -> str:
    import torch
    if not torch.cuda.is_available():
        return "sm_90"
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def cuda_root() -> Path:
    return Path(_cmake_cache(build_dir(), "SPMD_CUDA_ROOT"))


def library_path(text: str, passes: str, target: str = "cpu") -> Path:
    """Where the library compiled from `text` with `passes` for `target`
    ("cpu", "cuda" or "emulator") is cached."""
    key = hashlib.sha256()
    key.update(text.encode())
    key.update(passes.encode())
    tool, lowering = _lowering(target)
    key.update(repr((_llvm_args(target), LINK_LIBS, target,
                     lowering, STRAIGHT_LINE_LEVEL)).encode())
    for path in (f"bin/{tool}", runtime_library(target != "cpu")):
        key.update(str((build_dir() / path).stat().st_mtime_ns).encode())
    return cache_dir() / f"step-{key.hexdigest()[:24]}.so"


# Straight-line functions are compiled apart at -O0 (see _straight_line).
STRAIGHT_LINE_LEVEL = "-O0"
_DEFINE = re.compile(r"^define (.*?)@([\w.$]+)\(")


def _straight_line(ll: Path):
    """The public functions of LLVM module `ll` without a branch: the step
    functions (a call per kernel, collective and buffer; every loop nest is
    an outlined, noinline kernel) and the state registration. Their
    thousands of values live across calls cost llc's greedy register
    allocator most of its time at -O3 (GPT-2 24 layers: 2.1 of 2.3 s;
    0.66 s at -O0) and gain nothing from it: they are compiled apart,
    unoptimized, at STRAIGHT_LINE_LEVEL, the kernels at -O3."""
    names, current, branches = [], None, False
    with open(ll) as f:
        for line in f:
            if line.startswith("define "):
                m = _DEFINE.match(line)
                public = m and not re.search(r"\b(internal|private)\b",
                                             m.group(1))
                current, branches = (m.group(2) if public else None), False
            elif current is not None:
                if line.startswith("}"):
                    if not branches:
                        names.append(current)
                    current = None
                elif line.lstrip().startswith(("br ", "switch ",
                                               "indirectbr ", "invoke ")):
                    branches = True
    return names


def _codegen(ll: Path, target: str, work: Path):
    """opt and llc of LLVM module `ll` into objects: one, or on the CPU the
    straight-line functions (not optimized, llc at STRAIGHT_LINE_LEVEL)
    apart from the rest (opt and llc as _llvm_args says); llvm-extract gives
    the symbols the two parts share hidden external linkage."""
    opt_args, llc_args = _llvm_args(target)
    triple = f"-mtriple={_host_triple()}"
    straight = _straight_line(ll) if target == "cpu" else []

    def optimize(source, out, what=""):
        _run([LLVM_PREFIX / "bin" / "opt", *opt_args, triple, source, "-o",
              out], "LLVM opt " + opt_args[0] + what, work)

    def llc(source, out, level, what=""):
        _run([LLVM_PREFIX / "bin" / "llc", level, *llc_args[1:], triple,
              "-filetype=obj", source, "-o", out], f"LLVM llc {level}{what}",
             work)
        return out

    if not straight:
        optimize(ll, work / "step.bc")
        return [llc(work / "step.bc", work / "step.o", llc_args[0])]
    funcs = [f"--func={n}" for n in straight]
    extract = LLVM_PREFIX / "bin" / "llvm-extract"
    _run([extract, *funcs, ll, "-o", work / "straight.bc"],
         "llvm-extract (straight-line)", work)
    _run([extract, "--delete", *funcs, ll, "-o", work / "kernels.bc"],
         "llvm-extract (kernels)", work)
    optimize(work / "kernels.bc", work / "kernels.opt.bc", " (kernels)")
    return [llc(work / "straight.bc", work / "straight.o",
                STRAIGHT_LINE_LEVEL, " (straight-line)"),
            llc(work / "kernels.opt.bc", work / "kernels.o", llc_args[0],
                " (kernels)")]


def _verify_args():
    """spmd-opt's verifier runs on the parsed input and mlir-translate's on
    the lowered output; between passes only with SPMD_VERIFY=1 (it was 41%
    of the lowering of a 24-layer GPT-2: 2.4 of 5.9 s). The lit tests
    verify after every pass."""
    return [] if os.environ.get("SPMD_VERIFY", "") not in ("", "0") \
        else ["--verify-each=false"]


def distribute(text: str, passes: str, work: Path) -> Path:
    """Writes `text` to work/global.mlir and the local program spmd-opt's
    `passes` make of it to work/local.mlir (returned)."""
    (work / "global.mlir").write_text(text)
    _run([build_dir() / "bin" / "spmd-opt", work / "global.mlir",
          f"--pass-pipeline={passes}", "--mlir-print-debuginfo",
          *_verify_args(), "-o", work / "local.mlir"],
         "spmd-opt (distribution)", work)
    return work / "local.mlir"


def compile_module(text: str, passes: str, keep: bool = False,
                   target: str = "cpu") -> Path:
    """Compiles a global spmd module to a shared library and returns its
    path. `passes` is the spmd-opt pipeline up to the local program;
    `target` "cpu", "cuda" or "emulator" (the GPU path's kernels compiled
    for the host, run against build/lib/gpu-emulator). The result is cached
    by the hash of the input, the target and the toolchain, so every rank
    (and every later run) of the same program shares one build."""
    build = build_dir()
    library = library_path(text, passes, target)
    # SPMD_DUMP=DIR keeps every stage of every program in DIR/<program>
    # (built again, cached or not, until that directory has them).
    dump = os.environ.get("SPMD_DUMP")
    work = Path(dump) / library.stem if dump else None
    if library.exists() and (work is None or (work / "step.so").exists()):
        return library

    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        work = Path(tempfile.mkdtemp(prefix="spmd-compile-"))
    keep = keep or _progress.verbose()
    _progress.note(f"work directory {work}"
                   + ("" if keep else " (removed after the build)"))
    distribute(text, passes, work)
    tool, lowering = _lowering(target)
    _run([build / "bin" / tool, work / "local.mlir", *lowering,
          *_verify_args(), "-o", work / "llvm.mlir"],
         f"{tool} {lowering[0]}", work)
    _run([LLVM_PREFIX / "bin" / "mlir-translate", "--mlir-to-llvmir",
          work / "llvm.mlir", "-o", work / "step.ll"], "mlir-translate", work)
    objects = _codegen(work / "step.ll", target, work)
    cc = os.environ.get("CC", shutil.which("cc") or "gcc")
    if target == "cpu":
        blas = _cmake_cache(build, "SPMD_BLAS_LIBRARY")
        mlir_lib = LLVM_PREFIX / "lib"
        libs = ["-lSpmdRuntime", blas, f"-L{mlir_lib}",
                "-lmlir_c_runner_utils",
                f"-Wl,-rpath,{build / 'lib'}:{mlir_lib}:{Path(blas).parent}"]
    else:
        # The driver through its stub; at run time the system's
        # libcuda.so.1 (or the emulator's, loaded first by the bridge).
        cuda = cuda_root()
        libs = ["-lSpmdGpuRuntime", f"-L{cuda / 'lib64' / 'stubs'}", "-lcuda",
                f"-Wl,-rpath,{build / 'lib'}:{cuda / 'lib64'}"]
    _run([cc, "-shared", "-o", work / "step.so", *objects,
          f"-L{build / 'lib'}", *libs, *LINK_LIBS], "link", work)
    # Atomic publish: ranks compiling the same program race harmlessly.
    tmp = library.with_suffix(f".{os.getpid()}.tmp")
    shutil.copyfile(work / "step.so", tmp)
    os.replace(tmp, library)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return library

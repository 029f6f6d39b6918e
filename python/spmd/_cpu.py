"""What this CPU is, for the libraries a program is linked with.

Imports nothing heavy (no torch): benchmarks that run a compiled program
from C++ use it too.
"""

import os


def openblas_core():
    """The OpenBLAS kernels to run on this CPU (an OPENBLAS_CORETYPE name),
    chosen by its feature flags; None when none applies.

    Debian 12's OpenBLAS (0.3.21) takes CPUs newer than itself for a
    Prescott and runs its SSE3 kernels: on this project's Xeon (AVX-512
    BF16, AMX) a 512^3 sgemm runs at 15 GFLOP/s, against 81 with the
    Cooperlake kernels. The flags, not the model number, decide.
    """
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return None
    for needs, core in ((("avx512_bf16", "avx512vl"), "Cooperlake"),
                        (("avx512f", "avx512vl", "avx512bw"), "SkylakeX"),
                        (("avx2", "fma"), "Haswell")):
        if all(flag in flags for flag in needs):
            return core
    return None


def choose_openblas_core(env=os.environ):
    """Sets OPENBLAS_CORETYPE in `env` unless the user did. OpenBLAS reads
    it once, when it is loaded: call this before the runtime or a program
    is loaded (or pass the environment of a process to start)."""
    if "OPENBLAS_CORETYPE" not in env:
        core = openblas_core()
        if core:
            env["OPENBLAS_CORETYPE"] = core
    return env

"""The spmd runtime from Python: bootstrap and the state registry.

libSpmdRuntime is loaded with RTLD_GLOBAL (Open MPI's plugins resolve MPI
symbols globally) and initialized once; it is finalized at exit so mpirun
sees every rank end cleanly. Under mpirun it runs on MPI; launched by
torchrun (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT) on Gloo, meeting the other ranks through torch's own TCPStore
(`torch.distributed.rendezvous("env://")`: torchrun's agent store, or one
rank 0 hosts), which works across nodes.

A compile error the ranks agreed on (_errors.py) is printed once and every
rank exits with status 1. Any other exception that no one catches on one
rank of a multi-rank job takes the whole job down (spmdAbort) right after
its traceback is printed: the other ranks would otherwise wait for this one
in their next collective forever. Ranks other than 0 wait a moment before
printing, so that when every rank fails the same way rank 0's abort ends the
job first and the error is printed once.
"""

import atexit
import ctypes
import math
import os
import sys
import time

import torch

from . import _abi, _cpu, _device, _errors
from ._toolchain import build_dir, runtime_library

_lib = None
# The loaded runtime's _device.Host / _device.Gpu (its `name`: the target).
_device_target = None


# Before anything of ours loads OpenBLAS (the runtime, a program).
_cpu.choose_openblas_core()


def torch_sgemm() -> int:
    """The address of the Fortran `sgemm_` PyTorch's own CPU matmuls run
    (MKL in the x86 wheels), or 0: compiled programs then multiply with the
    same BLAS, and the same threads, as the eager step. SPMD_BLAS=openblas
    keeps the runtime's OpenBLAS."""
    if os.environ.get("SPMD_BLAS", "torch") != "torch":
        return 0
    path = os.path.join(os.path.dirname(torch.__file__), "lib",
                        "libtorch_cpu.so")
    try:
        fn = getattr(ctypes.CDLL(path), "sgemm_")
        return ctypes.cast(fn, ctypes.c_void_p).value or 0
    except (OSError, AttributeError, TypeError, ctypes.ArgumentError):
        return 0


# spmdTraceSetRegionHook's callback: a region's name at its begin, NULL at
# its end.
REGION_HOOK = _abi.REGION_HOOK


def runtime(hint=None):
    """The loaded runtime, loading it on the first call: libSpmdRuntime, or
    libSpmdGpuRuntime for the GPU target (_device.py; `hint`: the device
    of the model the first step is called with)."""
    global _lib, _device_target
    if _lib is not None:
        return _lib
    target = _device.choose(hint)
    if target == _device.EMULATOR:
        # The emulator's driver, cuBLAS and NCCL first, by path: the GPU
        # runtime's libcuda.so.1 (...) then resolve to them by soname.
        for path in _device.emulator_libraries(build_dir()):
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(runtime_library(target != _device.CPU)),
                      mode=ctypes.RTLD_GLOBAL)
    # Every function's signature, from the ABI's one list (_abi.py).
    _abi.declare(lib)
    device_target = (_device.Host(lib) if target == _device.CPU else
                     _device.Gpu(lib, mirrored=target == _device.EMULATOR))
    sgemm = torch_sgemm() if target == _device.CPU else 0
    if sgemm:
        lib.spmdSetSgemm(sgemm)
    if not lib.spmdIsInitialized():
        if _launched_without_mpirun() or (
                target != _device.CPU and
                os.environ.get("SPMD_GPU_BOOTSTRAP") == "store"):
            # Gloo's rendezvous, or the NCCL id's exchange (torchrun's
            # store holds MASTER_PORT, which the GPU runtime's own TCP
            # exchange would need).
            _use_torch_store(lib)
        lib.spmdInit()
    atexit.register(_leave, lib)
    _size_threads(lib.spmdThreads())
    _lib = lib
    _device_target = device_target
    _report_uncaught_exceptions(lib)
    return lib


# Compiled steps this process called (spmdSetStep: the runtime names the
# step in the messages that end the job).
_steps = 0


def note_step():
    """Counts a call of a compiled step (before it runs)."""
    global _steps
    _steps += 1
    if _lib is not None:
        _lib.spmdSetStep(_steps)


def _leave(lib):
    """At interpreter exit: tells the other ranks this one leaves (a rank
    still waiting for it in a collective ends the job within seconds,
    naming it), then ends the runtime."""
    if lib.spmdIsInitialized():
        lib.spmdAnnounceLeaving(
            f"its Python process exited, by sys.exit or at the end of its "
            f"script, after {_steps} compiled step{'s' if _steps != 1 else ''}"
            .encode())
        lib.spmdFinalize()


def _size_threads(threads: int):
    """torch's threads (its BLAS, which compiled CPU steps call, and its
    intra-op pool) to this rank's share of the node's cores, as the
    runtime sized OpenBLAS's (spmdThreads: 0 when OMP_NUM_THREADS or
    OPENBLAS_NUM_THREADS says otherwise, which torch then follows)."""
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def threads() -> str:
    """Threads per rank for BLAS and kernels, and why (spmd.explain)."""
    runtime()
    chosen = [v for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
              if os.environ.get(v)]
    cores = len(os.sched_getaffinity(0))
    if chosen:
        why = f"{chosen[0]} is set"
    elif cores < (os.cpu_count() or cores):
        why = f"{cores} cores this rank is bound to"
    else:
        local = next((os.environ[v] for v in ("LOCAL_WORLD_SIZE",
                                              "OMPI_COMM_WORLD_LOCAL_SIZE")
                      if os.environ.get(v)), "1")
        why = f"{cores} cores / {local} ranks on this node"
    return f"{torch.get_num_threads()} ({why})"


def _launched_without_mpirun() -> bool:
    """Whether a torchrun-style launcher started this process (the rule
    libSpmdRuntime's spmdInit applies too, see SpmdRuntime.h)."""
    env = os.environ
    if env.get("SPMD_BACKEND", "") == "mpi" or "OMPI_COMM_WORLD_SIZE" in env:
        return False
    if env.get("SPMD_BACKEND", "") == "gloo" or "TORCHELASTIC_RUN_ID" in env:
        return True
    return all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR",
                                  "MASTER_PORT"))


# The callbacks libSpmdRuntime holds (kept alive here).
_STORE = []


def _use_torch_store(lib):
    """Registers torch's env:// store with the runtime: the Gloo backend's
    rendezvous, the GPU runtime's exchange of the NCCL id. Under mpirun
    (SPMD_GPU_BOOTSTRAP=store) the rank and size are Open MPI's."""
    env = os.environ
    if "MASTER_ADDR" not in env:
        return  # SPMD_BACKEND=gloo with SPMD_GLOO_STORE (a directory)
    import datetime
    from torch.distributed import rendezvous
    seconds = float(env.get("SPMD_TIMEOUT") or 1800) or 86400
    timeout = datetime.timedelta(seconds=seconds)
    url = "env://"
    if "RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:
        url += (f"?rank={env['OMPI_COMM_WORLD_RANK']}"
                f"&world_size={env['OMPI_COMM_WORLD_SIZE']}")
    store, _, _ = next(rendezvous(url, timeout=timeout))

    def guarded(fn):
        def call(*args):
            try:
                return fn(*args)
            except Exception as err:  # reported by the runtime's error
                sys.stderr.write(f"spmd: store: {type(err).__name__}: "
                                 f"{err}\n")
                return 2
        return call

    def store_set(key, data, nbytes):
        store.set(key.decode(), ctypes.string_at(data, nbytes))
        return 0

    def store_get(key, buffer, capacity, nbytes):
        value = store.get(key.decode())
        nbytes[0] = len(value)
        if len(value) > capacity:
            return 1
        ctypes.memmove(buffer, value, len(value))
        return 0

    def store_wait(keys, timeout_ms):
        if timeout_ms == 0:  # only asks (no wait: no TCPStore warning)
            return 0 if store.check(keys.decode().split("\n")) else 3
        try:
            store.wait(keys.decode().split("\n"),
                       datetime.timedelta(milliseconds=timeout_ms))
        except Exception as err:
            if "timeout" in str(err).lower():
                return 3  # the runtime says what it waited for
            raise
        return 0

    callbacks = (_abi.STORE_SET(guarded(store_set)),
                 _abi.STORE_GET(guarded(store_get)),
                 _abi.STORE_WAIT(guarded(store_wait)))
    _STORE[:] = [store, *callbacks]
    lib.spmdUseStore(*callbacks)


# Seconds a rank other than 0 waits before reporting its uncaught exception.
_REPORT_DELAY = 2.0


def _report_uncaught_exceptions(lib):
    previous = sys.excepthook
    rank, world = lib.spmdWorldRank(), lib.spmdWorldSize()

    def hook(exc_type, exc, tb):
        if _errors.report(exc_type, exc, tb, rank, world):
            return  # every rank raised it: all exit, MPI finalizes
        if world == 1:
            previous(exc_type, exc, tb)
            return
        if rank != 0 and not issubclass(exc_type, KeyboardInterrupt):
            time.sleep(_REPORT_DELAY)
        previous(exc_type, exc, tb)
        sys.stdout.flush()
        sys.stderr.flush()
        lib.spmdAbort(f"uncaught {exc_type.__name__} (traceback above); "
                      "ending every rank".encode())

    sys.excepthook = hook


def device():
    """The target compiled steps run on in this process (_device.py), the
    runtime loaded."""
    runtime()
    return _device_target


def target() -> str:
    """"cpu", "cuda" or "emulator" (loads the runtime)."""
    return device().name


def rank() -> int:
    return runtime().spmdWorldRank()


def world_size() -> int:
    return runtime().spmdWorldSize()


def backend() -> str:
    """"MPI" or "Gloo": what the runtime's collectives run on."""
    return runtime().spmdBackendName().decode()


def _world_mesh():
    """(mesh, axes) of the group of every rank: a one-axis mesh."""
    return _abi.pack_mesh([world_size()]), 1


def _all_reduce_i64(values, kind: str):
    """Every rank's `values` (int64s) reduced element-wise (`kind`: SUM,
    MAX, MIN, ...)."""
    lib = runtime()
    data = torch.tensor(values, dtype=torch.int64)
    address, back = device().staged(data)
    lib.spmdAllReduce(address, address, data.numel(), _abi.dtype_code("I64"),
                      _abi.reduction_code(kind), *_world_mesh())
    back()
    return data.tolist()


def all_ranks_max(value: int) -> int:
    """The largest of every rank's `value` (a status flag exchange)."""
    return _all_reduce_i64([value], "MAX")[0]


def all_ranks_min(value: int) -> int:
    """The smallest of every rank's `value`."""
    return _all_reduce_i64([value], "MIN")[0]


def all_ranks_min_each(values):
    """The element-wise smallest of every rank's `values` (one collective
    for a whole list of flags)."""
    return _all_reduce_i64(values, "MIN")


def agree_on_failure(error):
    """Raises on every rank when any rank's `error` is set (see _errors)."""
    _errors.agree_on_failure(error, world_size(), rank(), all_ranks_min)


def all_ranks_agree(value: int) -> bool:
    """Whether every rank passed the same `value`."""
    # One all-reduce: max(v) == v and max(~v) == ~v on every rank iff all
    # ranks passed v.
    high, low = _all_reduce_i64([value, ~value], "MAX")
    return high == value and low == ~value


# The states bound in this process. The CPU runtime allocates a state's
# buffer zero-filled when a program first registers it and never frees it:
# a name not bound before holds zeros, one bound before what programs wrote.
_BOUND = set()


def holds_zeros(name: str) -> bool:
    """Whether state `name`'s buffer is still the zeros the CPU runtime
    allocated it with (no program of this process bound it before). Call
    before `bind`; False on the GPU runtimes (device memory is not
    cleared)."""
    return target() == "cpu" and name not in _BOUND


def bind(name: str, shape, dtype: torch.dtype, code: int) -> torch.Tensor:
    """A tensor over the buffer the compiled program holds for state
    `name` (no copy: writes go to the program's memory)."""
    count = math.prod(shape)
    nbytes = count * torch.tensor([], dtype=dtype).element_size()
    address = runtime().spmdStateBind(name.encode(), nbytes, code)
    _BOUND.add(name)
    return device().state(address, shape, dtype, nbytes)


def reset_peak_memory_stats():
    """Starts memory_stats()'s transient peak from the bytes in use now."""
    device().reset_peak_memory()


def broadcast_(tensor: torch.Tensor, code: int, root: int = 0):
    """Rank `root`'s values of the contiguous `tensor` on every rank, in
    place."""
    if tensor.numel() == 0:
        return
    address, back = device().staged(tensor)
    runtime().spmdBroadcast(address, address, tensor.numel(), code, root,
                            *_world_mesh())
    back()


def all_gather_(out: torch.Tensor, tensor: torch.Tensor, code: int):
    """Every rank's contiguous `tensor` (of one shape everywhere),
    concatenated along dimension 0 in rank order into `out`."""
    if out.numel() == 0:
        return
    source, _ = device().staged(tensor, slot=0)
    target_address, back = device().staged(out, slot=1)
    runtime().spmdAllGather(source, target_address, 1, tensor.shape[0],
                            tensor[0].numel(), code, *_world_mesh())
    back()

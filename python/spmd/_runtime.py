"""The spmd runtime from Python: MPI bootstrap and the state registry.

libSpmdRuntime is loaded with RTLD_GLOBAL (Open MPI's plugins resolve MPI
symbols globally) and initialized once; MPI is finalized at exit so mpirun
sees every rank end cleanly.

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
import sys
import time

import torch

from . import _errors
from ._toolchain import runtime_library

_lib = None


def runtime():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(str(runtime_library()), mode=ctypes.RTLD_GLOBAL)
    lib.spmdIsInitialized.restype = ctypes.c_int32
    lib.spmdWorldRank.restype = ctypes.c_int32
    lib.spmdWorldSize.restype = ctypes.c_int32
    lib.spmdStateBind.restype = ctypes.c_int64
    lib.spmdStateBind.argtypes = [ctypes.c_char_p, ctypes.c_int64,
                                  ctypes.c_int32]
    lib.spmdAllReduce.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int32] * 2 \
        + [ctypes.c_int64] * 2
    lib.spmdBroadcast.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int32] \
        + [ctypes.c_int64] * 3
    lib.spmdAbort.argtypes = [ctypes.c_char_p]
    if not lib.spmdIsInitialized():
        lib.spmdInit()
    atexit.register(lib.spmdFinalize)
    _lib = lib
    _report_uncaught_exceptions(lib)
    return lib


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


def rank() -> int:
    return runtime().spmdWorldRank()


def world_size() -> int:
    return runtime().spmdWorldSize()


def _all_reduce_i64(value: int, kind: int) -> int:
    lib = runtime()
    buf = ctypes.c_int64(value)
    out = ctypes.c_int64(0)
    lib.spmdAllReduce(ctypes.addressof(buf), ctypes.addressof(out), 1,
                      3, kind, world_size(), 1)  # SPMD_I64
    return out.value


def all_ranks_max(value: int) -> int:
    """The largest of every rank's `value` (a status flag exchange)."""
    return _all_reduce_i64(value, 2)  # SPMD_MAX


def all_ranks_min(value: int) -> int:
    """The smallest of every rank's `value`."""
    return _all_reduce_i64(value, 3)  # SPMD_MIN


def agree_on_failure(error):
    """Raises on every rank when any rank's `error` is set (see _errors)."""
    _errors.agree_on_failure(error, world_size(), rank(), all_ranks_min)


def all_ranks_agree(value: int) -> bool:
    """Whether every rank passed the same `value`."""
    return _all_reduce_i64(value, 2) == _all_reduce_i64(value, 3)  # MAX, MIN


def bind(name: str, shape, dtype: torch.dtype, code: int) -> torch.Tensor:
    """A tensor over the buffer the compiled program holds for state
    `name` (no copy: writes go to the program's memory)."""
    count = math.prod(shape)
    nbytes = count * torch.tensor([], dtype=dtype).element_size()
    address = runtime().spmdStateBind(name.encode(), nbytes, code)
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return torch.frombuffer(raw, dtype=dtype, count=count).view(shape)


def broadcast_(tensor: torch.Tensor, code: int):
    """Rank 0's values of the contiguous `tensor` on every rank, in place."""
    if tensor.numel() == 0:
        return
    runtime().spmdBroadcast(tensor.data_ptr(), tensor.data_ptr(),
                            tensor.numel(), code, 0, world_size(), 1)

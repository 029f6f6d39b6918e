"""Compile phases: timed, kept, and reported while they run.

A first call that takes more than `ANNOUNCE_AFTER` seconds says what it is
doing on rank 0, one line per phase with its time (the phases before the
threshold are printed when it is crossed). `SPMD_VERBOSE=1` prints every
phase on every call that compiles, and the kept work directory.
"""

import contextlib
import os
import sys
import threading
import time

ANNOUNCE_AFTER = 2.0


def verbose() -> bool:
    return os.environ.get("SPMD_VERBOSE", "") not in ("", "0")


class CompileLog:
    """The phases of one compile, in order: [(name, seconds)] (phases may
    end in several threads: spmd.Auto lowers candidates side by side)."""

    def __init__(self, what: str, rank: int):
        self.what = what
        self.rank = rank
        self.phases = []
        self.start = time.perf_counter()
        self.printed = 0
        self.lock = threading.Lock()

    def _speak(self) -> bool:
        if self.rank != 0:
            return False
        return verbose() or time.perf_counter() - self.start > ANNOUNCE_AFTER

    def _flush(self):
        if not self._speak():
            return
        for name, seconds in self.phases[self.printed:]:
            print(f"spmd: {self.what}: {name} {seconds:.2f} s",
                  file=sys.stderr, flush=True)
        self.printed = len(self.phases)

    @contextlib.contextmanager
    def phase(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            with self.lock:
                self.phases.append((name, time.perf_counter() - t0))
                self._flush()

    def note(self, line: str):
        """A line printed with SPMD_VERBOSE=1 (rank 0)."""
        if self.rank == 0 and verbose():
            print(f"spmd: {self.what}: {line}", file=sys.stderr, flush=True)

    def total(self) -> float:
        return sum(s for _, s in self.phases)

    def as_dict(self):
        out = {}
        for name, seconds in self.phases:
            out[name] = out.get(name, 0.0) + seconds
        return out


# The log the toolchain adds its phases to (one compile at a time per
# process).
_current = None


@contextlib.contextmanager
def compiling(log: CompileLog):
    global _current
    previous, _current = _current, log
    try:
        yield log
    finally:
        _current = previous
        if log.rank == 0 and (verbose() or log.printed):
            print(f"spmd: {log.what}: compiled in {log.total():.1f} s",
                  file=sys.stderr, flush=True)


def phase(name: str):
    """A phase of the current compile (a no-op context outside one)."""
    if _current is None:
        return contextlib.nullcontext()
    return _current.phase(name)


def note(line: str):
    if _current is not None:
        _current.note(line)

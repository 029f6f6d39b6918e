"""The errors of spmd.compile, and how a job of many ranks reports them once.

Every message names the construct, the innermost frame of the user's code
(`at FILE:LINE: code`) and, where there is one, what to do instead
(`instead: ...`).

Compiling is collective: every rank traces, rank 0 builds. At each point
where compiling can fail, the ranks agree (one all-reduce) on the lowest rank
that failed; that rank raises its error, every other rank raises an error
whose message is a one-line pointer to it. The exception hook prints the
reporting rank's error with its traceback cut to the user's frames
(SPMD_FULL_TRACEBACK=1 prints all of it) and the others' one line; then
every rank exits with status 1 through MPI_Finalize, so mpirun prints no
abort text. Any other exception no one catches takes the job down at once
(spmdAbort, see _runtime.py): the other ranks may be waiting in a
collective.
"""

import os
import sys
import traceback

import torch


class UnsupportedError(RuntimeError):
    """A construct the bridge cannot compile; the message names it, the
    user's line and (with `hint`) what to do instead."""

    def __init__(self, message: str, hint: str = None):
        if hint:
            message += f"\n  instead: {hint}"
        super().__init__(message)


class CompileError(RuntimeError):
    """A step of the compilation failed; the message says which and why."""


# Tracebacks name them as users import them.
UnsupportedError.__module__ = CompileError.__module__ = "spmd"


# The rank that prints a compile error every rank raised (set on the
# exception by agree_on_failure).
_REPORTER = "_spmd_reported_by"


def agree_on_failure(error, world: int, rank: int, all_ranks_min):
    """Called by every rank at the same point with the exception it caught
    (or None): raises on every rank when any rank failed, with the lowest
    failing rank as the one that reports. `all_ranks_min(v)` is the
    runtime's minimum over ranks."""
    if world == 1:
        if error is not None:
            raise error
        return
    first = all_ranks_min(rank if error is not None else world)
    if first == world:
        return
    if error is None:
        error = UnsupportedError(
            f"spmd.compile: rank {first} could not compile the step (it "
            "prints why)")
    setattr(error, _REPORTER, first)
    raise error


def reported_by(exc):
    """The rank that reports `exc` (None: a local error, not agreed on)."""
    return getattr(exc, _REPORTER, None)


_OWN = (os.path.dirname(os.path.abspath(__file__)),
        os.path.dirname(os.path.abspath(torch.__file__)))


def _cut(te: traceback.TracebackException):
    """`te` (and its causes) with only the frames of the user's code (all of
    them where every frame is spmd's or torch's)."""
    seen = set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        user = [f for f in te.stack
                if not os.path.abspath(f.filename).startswith(_OWN)]
        if user:
            te.stack = traceback.StackSummary.from_list(user)
        te = te.__cause__ or te.__context__
    return te


def format_error(exc_type, exc, tb) -> str:
    """The traceback Python would print, cut to the user's frames unless
    SPMD_FULL_TRACEBACK is set."""
    te = traceback.TracebackException(exc_type, exc, tb)
    if not os.environ.get("SPMD_FULL_TRACEBACK"):
        _cut(te)
    return "".join(te.format())


def report(exc_type, exc, tb, rank: int, world: int) -> bool:
    """Prints a compile error the way this module describes; False when
    `exc` is not one the ranks agreed on (the caller handles it)."""
    reporter = reported_by(exc)
    local = world == 1 and isinstance(exc, (UnsupportedError, CompileError))
    if reporter is None and not local:
        return False
    if reporter is None or reporter == rank:
        sys.stderr.write(format_error(exc_type, exc, tb))
    else:
        sys.stderr.write(f"spmd: rank {rank}: the step was not compiled; "
                         f"rank {reporter} prints the error\n")
    sys.stderr.flush()
    return True

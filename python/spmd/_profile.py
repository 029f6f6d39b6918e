"""Step traces of compiled programs, as Chrome trace-event JSON.

    with spmd.profile("traces"):        # or SPMD_TRACE=traces for a run
        for x, y in batches:
            train_step(model, opt, x, y)

While a profile is open the runtime records, per rank, each step, each
collective from its start to its completion (kind, bytes per rank, group
size), each wait the program blocks in (exposed communication), each sgemm
and each attention kernel (lib/Runtime/Trace.cpp), and the program's
regions: the runs of its code that come from one line of the user's model
(and the torch.nn module line it calls), named `model.py:12 > linear.py:125`
with the code of those lines (spmd-trace-regions). When it closes, every
rank writes DIR/trace-rank<r>.json and rank 0 merges them all into its
DIR/trace.json, one process track per rank (threads "compute" and
"collectives"), which ui.perfetto.dev and chrome://tracing open (rank 0 receives the other ranks' events through
the runtime, so DIR may differ per rank), and
`python -m spmd.timeline DIR/trace.json -o step.png` draws. Ranks share
the steady clock of one machine; across machines their tracks are offset.

Each compiled step also runs inside `torch.profiler.record_function(
"spmd.step")`, and while a torch.profiler is on, the program's regions
open and close torch.profiler ranges of the same names as they run (a
hook the runtime calls; off otherwise), so a torch.profiler trace shows
the step and, nested in it, where its time went in the model's terms.
"""

import atexit
import contextlib
import json
import linecache
import os
from pathlib import Path

import torch

from . import _runtime

# The runtime's one-byte element type (SPMD_BOOL), to move raw bytes.
_BYTES = 6

_directory = None
_steps = 0


def active() -> bool:
    return _directory is not None


def start(directory):
    """Starts recording this rank's steps for DIR (made if missing)."""
    global _directory, _steps
    if _directory is not None:
        raise RuntimeError("spmd.profile: a profile is already open (in "
                           f"{_directory})")
    _directory = Path(directory)
    _directory.mkdir(parents=True, exist_ok=True)
    _steps = 0
    _runtime.runtime().spmdTraceStart()


def stop():
    """Writes this rank's events; rank 0 merges all ranks' into
    DIR/trace.json, which it returns (other ranks return None)."""
    global _directory
    if _directory is None:
        return None
    directory, _directory = _directory, None
    lib = _runtime.runtime()
    rank, world = _runtime.rank(), _runtime.world_size()
    part = directory / f"trace-rank{rank}.json"
    if lib.spmdTraceStop(str(part).encode(), rank) != 0:
        raise OSError(f"spmd.profile: cannot write {part}")
    # Rank 0 receives the other ranks' parts through the runtime (their
    # directories may be another machine's or another path).
    mine = part.read_bytes()
    parts = []
    for r in range(world):
        size = _runtime.all_ranks_max(len(mine) if r == rank else 0)
        data = torch.zeros(size, dtype=torch.uint8)
        if r == rank:
            data.copy_(torch.frombuffer(bytearray(mine), dtype=torch.uint8))
        if r != 0:
            _runtime.broadcast_(data, _BYTES, root=r)
        parts.append(bytes(data.numpy()))
    if rank != 0:
        return None
    from . import timeline  # not at import: `python -m spmd.timeline`
    merged = directory / "trace.json"
    merged.write_text(json.dumps(timeline.merge(
        [[_named(e) for e in json.loads(p.decode())] for p in parts])))
    return merged


def _source(at):
    """`path:line` with the line's code."""
    path, _, line = at.rpartition(":")
    code = linecache.getline(path, int(line)).strip() if line.isdigit() \
        else ""
    return f"{at}: {code}" if code else at


def _label(region):
    """`user.py:12 > linear.py:125` for a region `path:line|path:line`."""
    return " > ".join(os.path.basename(f) for f in region.split("|"))


def _named(event):
    """A region's event named `user.py:12 > linear.py:125` after its
    `path:line|path:line`, the code of those lines in its args."""
    if event.get("cat") != "region":
        return event
    frames = event["name"].split("|")
    event["name"] = _label(event["name"])
    event["args"] = {"user": _source(frames[0])}
    if len(frames) > 1:
        event["args"]["module"] = _source(frames[1])
    return event


@contextlib.contextmanager
def profile(directory):
    """Records the compiled steps run inside it on every rank (see the
    module's docstring); every rank must enter and leave it together."""
    start(directory)
    try:
        yield
    finally:
        stop()


_environment_read = False


def from_environment():
    """SPMD_TRACE=DIR: one profile for the whole run, written at exit (read
    at the first step)."""
    global _environment_read
    if _environment_read:
        return
    _environment_read = True
    directory = os.environ.get("SPMD_TRACE")
    if directory and not active():
        start(directory)
        atexit.register(stop)


def _region_hook(name):
    """Opens (`name`) or closes (None) a torch.profiler range for a region
    of the running program (called by the runtime on the calling thread)."""
    if name is not None:
        label = _region_labels.get(name)
        if label is None:
            label = _region_labels[name] = _label(name.decode())
        _open_ranges.append(
            torch.ops.profiler._record_function_enter_new(label, None))
    elif _open_ranges:
        torch.ops.profiler._record_function_exit._RecordFunction(
            _open_ranges.pop())


_region_labels = {}
_open_ranges = []
# The ctypes callback, kept alive for as long as the runtime may call it.
_hook = _runtime.REGION_HOOK(_region_hook)


@contextlib.contextmanager
def torch_profiler_regions():
    """While a torch.profiler records: the program's regions as its ranges
    (see the module's docstring)."""
    if not torch.autograd.profiler._is_profiler_enabled:
        yield
        return
    lib = _runtime.runtime()
    lib.spmdTraceSetRegionHook(_hook)
    try:
        yield
    finally:
        lib.spmdTraceSetRegionHook(_runtime.REGION_HOOK())
        while _open_ranges:  # a step that failed inside a region
            torch.ops.profiler._record_function_exit._RecordFunction(
                _open_ranges.pop())


@contextlib.contextmanager
def step(name="step"):
    """One compiled step: an event when tracing."""
    global _steps
    if _directory is None:
        yield
        return
    lib = _runtime.runtime()
    begin = lib.spmdTraceNow()
    try:
        yield
    finally:
        lib.spmdTraceEvent(name.encode(), b"step", begin, lib.spmdTraceNow(),
                           f'"index": {_steps}'.encode())
        _steps += 1

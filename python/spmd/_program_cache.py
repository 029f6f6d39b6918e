"""A cached start without make_fx: the compiled step's program, found by
the ops the step runs.

make_fx costs a cached start most of its time (1.5-2 s of a 4-layer GPT's:
proxies, Python decompositions and the FX graph for every op). What makes
the graph is the sequence of ATen ops the step dispatches (before
decomposition) and their arguments; the decompositions, functionalization
and the program built from the graph are deterministic given the versions
of torch, torch-mlir and this package. So every compile records that
sequence while make_fx traces (a dispatch mode inside the trace,
`Recorder`) and stores what it built (the traced step's metadata and the
global program) under its digest; a later process runs the step once on
fake tensors under the same recorder, without make_fx (`run_on_fake`), and
when the digest matches loads the program instead of tracing.

What a digest covers: every op's name and its arguments (tensors by where
they come from: a state, an input, an earlier op's result, or a constant's
bytes; scalars by type and exact repr), which tensors the step returns, the
output structure, and the context the program is built in (`context`): the
state's names, shapes, dtypes and devices, the inputs' global shapes and
placements, the optimizer's structure, the mesh and layouts, the versions.
Anything the recorder cannot name soundly (an argument of another type, a
fake tensor it did not see made) leaves the compile uncached; a step the
fake run cannot run is traced as always (and its error reported by the
trace).

The fake run sees what make_fx's run sees: the same fake tensors on the
model's device (CPU autocast, device checks in the step), the same modes
below the recorder but the proxy one, so its digest is the digest the
trace would take. A stored entry is keyed by the run that produced it, so
a step whose ops change from one call to the next (Python state it reads)
misses and traces. The fake run happens only when a compile has a
candidate entry (same context), and a miss then runs the step's Python
twice. `SPMD_PROGRAM_CACHE=0` turns the cache off.
"""

import dataclasses
import functools
import hashlib
import os
import pickle
from pathlib import Path
from typing import Optional, Tuple

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import (TorchDispatchMode,
                                          _disable_current_modes)

from . import _import_cache, _progress, _toolchain
from ._program import Program
from ._trace import Traced

_SCALARS = (bool, int, float, str, type(None))
_ENUMS = (torch.dtype, torch.layout, torch.memory_format)
# Not digested: record_function's regions (the profiler namespace; the
# optimizer's step marks one), nothing the program computes, whose handles
# are script objects without an identity to follow; and what reads a fake
# tensor's metadata (make_fx's proxies dispatch them).
_QUERIES = (torch.ops.prim.device.default, torch.ops.prim.layout.default)
_LIFTS = (torch.ops.aten.lift_fresh.default,
          torch.ops.aten.lift_fresh_copy.default)


def enabled() -> bool:
    return os.environ.get("SPMD_PROGRAM_CACHE", "1") != "0"


class _Unnamed(Exception):
    """An argument the digest cannot describe soundly."""


class Recorder(TorchDispatchMode):
    """Digests the ATen ops dispatched while it is active (the innermost
    mode: it sees each op the step calls once, before make_fx's proxy mode
    decomposes it; nothing a kernel or a decomposition calls)."""

    def __init__(self, context: str):
        super().__init__()
        self.context = context
        # The ops alone: the key joins the context to them (key_for), so
        # one trace's record keys the programs of several contexts
        # (spmd.Auto's candidates).
        self.digest = hashlib.sha256()
        self.names = {}  # TensorImpl address -> number
        self.count = 0
        self.failed = None

    def observe(self, step):
        """`step`, run under the recorder; its inputs and outputs named."""
        # Same signature: make_fx names the graph's inputs after it.
        @functools.wraps(step)
        def observed(params, buffers, extra, tensors, rng):
            for t in [*params, *buffers, *extra, *tensors, rng]:
                self._name(t)
            with self:
                out = step(params, buffers, extra, tensors, rng)
            if self.failed is None:
                try:
                    self._update("outputs", self._describe(out),
                                 str(pytree.tree_flatten(out)[1]))
                except _Unnamed as err:
                    self.failed = f"{err} among the outputs"
            return out
        return observed

    def ops(self) -> Optional[str]:
        """What the step ran, as a digest (None when it cannot be keyed)."""
        return None if self.failed else self.digest.hexdigest()

    def key(self) -> Optional[str]:
        return key_for(self.context, self.ops())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "profiler" or func in _QUERIES:
            return func(*args, **kwargs)
        # Arguments are described before the op runs (an in-place op's
        # argument is its result).
        described = None
        if self.failed is None:
            try:
                if func in _LIFTS and _is_real(args[0]):
                    # torch.tensor(data): always by its bytes.
                    described = ((self._constant(args[0]),),
                                 self._describe(kwargs))
                else:
                    described = (self._describe(args),
                                 self._describe(kwargs))
            except _Unnamed as err:
                self.failed = f"{err} to {func}"
        out = func(*args, **kwargs)
        if described is not None:
            try:
                inputs = {a._cdata for a in pytree.tree_leaves((args, kwargs))
                          if isinstance(a, torch.Tensor)}
                results = [self._result(t, inputs)
                           for t in pytree.tree_leaves(out)]
                self._update(str(func), described, results)
            except _Unnamed as err:
                self.failed = f"{err} from {func}"
        return out

    def _update(self, *parts):
        self.digest.update(repr(parts).encode())
        self.digest.update(b"\0")

    def _name(self, t: torch.Tensor) -> int:
        # By the TensorImpl's address, not the Python object: holding the
        # objects would change the trace (autograd copies a gradient it
        # cannot steal), and `p.grad` is a new object for the same tensor.
        number = self.names[t._cdata] = self.count
        self.count += 1
        return number

    def _result(self, t, args):
        if not isinstance(t, torch.Tensor):
            return self._describe(t)
        if t._cdata in args:  # in place: the argument itself
            return ("T", self.names[t._cdata])
        # A new tensor (its address may be a freed one's). Its shape, dtype
        # and strides are not digested: they follow from the op and its
        # arguments, and a fake kernel and make_fx's decomposition may
        # differ there (batch_norm's saved statistics under autocast).
        return self._name(t)

    def _describe(self, value):
        if isinstance(value, torch.Tensor):
            number = self.names.get(value._cdata)
            if number is not None:
                return ("T", number)
            if _is_real(value):
                return self._constant(value)
            raise _Unnamed("a tensor the step did not make")
        if isinstance(value, (list, tuple)):
            return (type(value).__name__,
                    tuple(self._describe(v) for v in value))
        if isinstance(value, dict):
            return ("dict", tuple((k, self._describe(v))
                                  for k, v in value.items()))
        if isinstance(value, _SCALARS):
            return (type(value).__name__, repr(value))
        if isinstance(value, _ENUMS):
            return str(value)
        if isinstance(value, torch.device):
            return ("device", str(value))
        raise _Unnamed(f"an argument of type {type(value).__name__}")

    def _constant(self, t: torch.Tensor):
        """A real tensor: one the step makes (torch.tensor(...)) or holds, by
        its bytes (the runs see only fake tensors otherwise)."""
        if t.device.type == "meta":
            raise _Unnamed("a meta tensor")
        # Read with make_fx's modes off: the tensor is real, its copies too.
        with _disable_current_modes(), torch._C.DisableTorchFunction():
            data = _import_cache.tensor_bytes(t)
        return ("C", tuple(t.shape), str(t.dtype),
                hashlib.sha256(data).hexdigest())


def _is_real(t: torch.Tensor) -> bool:
    return not torch._subclasses.fake_tensor.is_fake(t)


def context(parts) -> str:
    """The digest's context: `parts` (the compile's options, the state's
    and inputs' shapes, ...) and the versions programs are built by,
    spmd-opt's build included (a rebuilt compiler distributes anew)."""
    return repr((_import_cache.versions(), _compiler_build(),
                 torch.get_default_dtype(),
                 torch.are_deterministic_algorithms_enabled(), parts))


def _compiler_build() -> int:
    try:
        return (_toolchain.build_dir() / "bin" / "spmd-opt").stat().st_mtime_ns
    except OSError:
        return 0


def key_for(ctx: str, ops: Optional[str]) -> Optional[str]:
    """The key of the program that ran `ops` (Recorder.ops) in `ctx`."""
    if ops is None:
        return None
    return hashlib.sha256((ctx + ops).encode()).hexdigest()[:32]


def _directory(ctx: str) -> Path:
    name = hashlib.sha256(ctx.encode()).hexdigest()[:24]
    return _toolchain.cache_dir() / "programs" / name


def has_candidates(ctx: str) -> bool:
    """Whether any program was stored in this context (else a fake run
    cannot hit and is skipped)."""
    return _directory(ctx).is_dir()


def load(ctx: str, key: Optional[str], model,
         optimizer) -> Optional[Tuple[Traced, Program]]:
    if key is None:
        return None
    path = _directory(ctx) / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            stored = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError,
            ImportError):
        return None
    traced = stored["traced"]
    traced.model, traced.optimizer = model, optimizer
    traced.output_spec = pytree.treespec_loads(stored["output_spec"])
    _progress.note(f"cached program (no trace) {path}")
    return traced, stored["program"]


def agrees(stored: Traced, ran: Traced) -> bool:
    """Whether what the fake run learnt of the step (its inputs, outputs,
    gradients, random draws) is what the stored compile learnt: implied by
    an equal key, checked anyway."""
    return all(getattr(stored, f) == getattr(ran, f) for f in (
        "param_names", "buffer_names", "inputs", "num_outputs",
        "output_spec", "grad_names", "rng_draws", "extras", "created",
        "grads_after", "output_constants", "optimizer_constants"))


def store(ctx: str, key: Optional[str], traced: Traced,
          program: Program) -> None:
    """Stores what `load` returns; a step whose output structure pytree
    cannot serialize is not stored."""
    if key is None:
        return
    try:
        spec = pytree.treespec_dumps(traced.output_spec)
    except Exception:  # a custom container pytree has no serializer for
        return
    kept = dataclasses.replace(traced, graph=None, model=None,
                               optimizer=None, output_spec=None)
    _toolchain.write_whole(_directory(ctx) / f"{key}.pickle", pickle.dumps(
        {"traced": kept, "program": program, "output_spec": spec}))

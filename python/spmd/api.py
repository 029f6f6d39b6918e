"""`spmd.compile` and its options (the API of torch.distributed._spmd)."""

import functools
import hashlib
import itertools
import weakref
import subprocess
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple, Union

import torch
from torch.nn.utils._named_member_accessor import NamedMemberAccessor
from torch.utils import _pytree as pytree

from . import (_auto, _checkpointing, _device, _import_cache, _optimizer,
               _profile, _program, _program_cache, _progress, _runtime,
               _sharding, _toolchain, _trace)
from ._errors import UnsupportedError
from ._executable import Executable
from .placement import Placement, Shard


class Override:
    """Changes the model before tracing and the program before distribution.

    `replacement(fqn, submodule)` returns the module to trace in place of
    `submodule` (e.g. a traceable stand-in for a custom op); returning
    `submodule` itself keeps it and visits its children. The swap is made
    on the model itself, as in torch.distributed._spmd.

    `transform(module)` receives the global program as MLIR text (the
    imported forward/backward function, the state, the optimizer ops and the
    input specs, before `--inline` and distribution) and returns the text to
    compile; `spmd.run_passes(module, "canonicalize,cse")` applies spmd-opt
    passes to it.
    """

    def replacement(self, fqn: str,
                    submodule: torch.nn.Module) -> torch.nn.Module:
        return submodule

    def transform(self, module: str) -> str:
        return module


@dataclass(frozen=True)
class DataParallel:
    """The parallelism of a compiled step (torch.distributed._spmd's
    DataParallel): every rank of the job on one mesh axis, tensor arguments
    split on `input_batch_dim` (or laid out as `inputs`) unless marked with
    spmd.override_placement; spmd-distribute decides everything in between.

    parallel_style: "replicate" (DDP): every rank holds every parameter,
    buffer and optimizer state; gradients are all-reduced.
    "fully_shard" (FSDP / ZeRO-3): every parameter of rank >= 1, its
    gradient and its optimizer state are sharded on dimension 0 over the
    ranks (uneven sizes as torch.chunk splits them); each parameter is
    all-gathered where the step uses it and its gradient reduce-scattered,
    and the optimizer updates this rank's chunk only. After the first call
    the model's parameters and the optimizer's state tensors are this rank's
    chunks (`model.state_dict()` gives them, as FSDP's sharded state dict);
    `spmd.full_state_dict(model, optimizer)` gathers whole tensors for a
    checkpoint and `model.load_state_dict(whole)` /
    `optimizer.load_state_dict(whole)` take whole tensors back. Buffers and
    0-d parameters stay replicated.

    reshard_after_forward (fully_shard, FSDP's option and default): True
    gathers a parameter again for its backward uses
    (spmd-regather-parameters), so the forward's whole copy can die after
    the forward (ZeRO-3), with one parameter gather in flight ahead of its
    use; False gathers each parameter once, at the step's start, and keeps
    the whole copy for the step (fewer, bucketed gathers). On the CPU path
    the program's buffer peak is dominated by other buffers today, so True
    saves little memory there (measured 0.93x-1.22x of False's peak;
    docs/Rationale.md).

    bucket_cap_mb: the gradients' all-reduces are merged into buckets of at
    most this many MiB (the first one 1 MiB), as DDP's `bucket_cap_mb`
    (spmd-bucket-collectives); 0 reduces each gradient by itself.

    sharded_params (fully_shard): the FQNs of the parameters to shard
    (default None: every parameter of rank >= 1); the others are
    replicated as under "replicate", their gradients all-reduced. A mix
    shards the large tensors whose state does not fit and keeps the
    communication of the small ones; spmd.Auto's per-parameter plan
    (spmd-auto-shard) is one."""
    parallel_style: str = "replicate"
    input_batch_dim: int = 0
    inputs: Optional[Placement] = None
    bucket_cap_mb: float = 25.0
    reshard_after_forward: bool = True
    sharded_params: Optional[Tuple[str, ...]] = None

    def __post_init__(self):
        if self.parallel_style not in ("replicate", "fully_shard"):
            raise ValueError(
                "DataParallel(parallel_style=...) is \"replicate\" or "
                f"\"fully_shard\", got {self.parallel_style!r}")
        if self.input_batch_dim < 0:
            raise ValueError("DataParallel(input_batch_dim=...) must be >= 0")
        if self.sharded_params is not None:
            if not self.fully_shard:
                raise ValueError(
                    "DataParallel(sharded_params=...) names the parameters "
                    "\"fully_shard\" shards; under "
                    f"{self.parallel_style!r} nothing is sharded")
            if isinstance(self.sharded_params, str) or not all(
                    isinstance(n, str) for n in self.sharded_params):
                raise ValueError("DataParallel(sharded_params=...) is a "
                                 "sequence of parameter names (FQNs)")
            # Frozen: a tuple, in a fixed order (the program cache's key).
            object.__setattr__(self, "sharded_params",
                               tuple(sorted(set(self.sharded_params))))

    @property
    def input_placement(self) -> Placement:
        return self.inputs if self.inputs is not None else Shard(
            self.input_batch_dim)

    @property
    def fully_shard(self) -> bool:
        return self.parallel_style == "fully_shard"


class ColwiseParallel:
    """A tensor-parallel plan entry (torch.distributed.tensor.parallel's
    semantics): an nn.Linear's weight and bias sharded on the output
    features (weight dimension 0), an nn.Embedding's weight on the embedding
    dimension (1), over the tensor-parallel mesh axis."""

    def __repr__(self):
        return "ColwiseParallel()"


class RowwiseParallel:
    """A tensor-parallel plan entry: an nn.Linear's weight sharded on the
    input features (dimension 1), its bias replicated; an nn.Embedding's
    weight on the vocabulary (dimension 0)."""

    def __repr__(self):
        return "RowwiseParallel()"


@dataclass(frozen=True)
class TensorParallel:
    """Tensor parallelism on a `(world // tp_size) x tp_size` mesh (rank r
    at `(r // tp_size, r % tp_size)`), data parallelism on its first axis.

    plan: {module FQN: ColwiseParallel() | RowwiseParallel()}; the planned
    modules' parameters (and optimizer state) are sharded over the second
    axis; spmd-distribute places the activations between them (Colwise then
    Rowwise: the hidden activations stay sharded and one all-reduce sums the
    Rowwise output). The ranks of one tensor-parallel group pass the same
    local batch (split over the first axis on data_parallel's
    input_batch_dim). data_parallel: DataParallel("fully_shard") also shards
    every parameter's dimension 0 over the first axis (FSDP x TP)."""
    plan: dict
    tp_size: int
    data_parallel: DataParallel = field(default_factory=DataParallel)

    def __post_init__(self):
        if not isinstance(self.tp_size, int) or self.tp_size < 1:
            raise ValueError("TensorParallel(tp_size=...) must be an int "
                             ">= 1")
        for fqn, style in self.plan.items():
            if not isinstance(style, (ColwiseParallel, RowwiseParallel)):
                raise TypeError(
                    f"TensorParallel plan[{fqn!r}] must be "
                    "spmd.ColwiseParallel() or spmd.RowwiseParallel(), got "
                    f"{type(style).__name__}")

    @property
    def parallel_style(self):
        return self.data_parallel.parallel_style


@dataclass(frozen=True)
class Auto:
    """The compiler chooses the step's parallelism (python/spmd/_auto.py):
    at the first call rank 0 builds the step for every candidate strategy
    (DataParallel "replicate", "fully_shard", and "fully_shard" without
    reshard_after_forward), plans each one's memory and models its step
    time from measured figures (this machine's sgemm rate and memory
    bandwidth, this job's collective latency and bandwidth per kind), and
    every rank runs the fastest one whose planned peak fits `memory_limit`
    (bytes per rank; default SPMD_MEMORY_LIMIT, else this machine's memory
    over the ranks on it). `spmd.explain` and `step.auto_plan` give the
    choice, its modeled step and peak, and the runners-up. None fitting is
    a MemoryError naming each candidate's peak.

    mesh: only the one-axis mesh of every rank (None) is searched today;
    tensor-parallel plans are not. input_batch_dim, inputs, bucket_cap_mb:
    as DataParallel's, for every candidate. calibration: the figures to
    model with instead of measuring them (a dict, or the path of a JSON
    file, with the keys `step.auto_plan.calibration` has: gemm_gflops,
    memory_gbps, and <kind>_latency_us, <kind>_gbps for all_reduce,
    all_gather, reduce_scatter) -- a plan that does not depend on the
    machine's load at the first call, e.g. figures measured once on the
    target machine."""
    memory_limit: Optional[int] = None
    mesh: Optional[tuple] = None
    input_batch_dim: int = 0
    inputs: Optional[Placement] = None
    bucket_cap_mb: float = 25.0
    calibration: Optional[Union[dict, str]] = None

    def __post_init__(self):
        if self.memory_limit is not None and (
                not isinstance(self.memory_limit, int)
                or isinstance(self.memory_limit, bool)
                or self.memory_limit <= 0):
            raise ValueError("Auto(memory_limit=...) is a positive number "
                             f"of bytes or None, got {self.memory_limit!r}")
        if self.mesh is not None and (
                not isinstance(self.mesh, (tuple, list)) or not all(
                    isinstance(n, int) and n >= 1 for n in self.mesh)):
            raise ValueError("Auto(mesh=...) is a tuple of axis sizes or "
                             f"None, got {self.mesh!r}")
        if self.input_batch_dim < 0:
            raise ValueError("Auto(input_batch_dim=...) must be >= 0")
        if self.calibration is not None:
            from ._auto import given_calibration
            object.__setattr__(self, "calibration",
                               given_calibration(self.calibration))


def _layouts(parallel, model, world):
    """The mesh, a name of the parallelism (one per model), {parameter FQN:
    layout} (per mesh axis, the dimension it splits or None) of the sharded
    parameters, and the mesh axis the batch is split over (None: every rank
    passes the same batch)."""
    params = dict(model.named_parameters()) if model is not None else {}
    if isinstance(parallel, DataParallel):
        mesh = (world,)
        chosen = parallel.sharded_params
        if chosen is not None and model is not None:
            unknown = sorted(set(chosen) - set(params))
            if unknown:
                raise UnsupportedError(
                    "spmd.compile: DataParallel(sharded_params=...) names "
                    f"{', '.join(map(repr, unknown[:5]))}, not parameters "
                    "of the model", hint="name parameters as "
                    "model.named_parameters() does")
        layouts = {n: (0,) for n, p in params.items()
                   if parallel.fully_shard and p.dim() >= 1 and
                   (chosen is None or n in chosen)}
        name = f"DataParallel({parallel.parallel_style!r})"
        if chosen is not None:
            # Two selections are two layouts (check_style tells them apart).
            digest = hashlib.sha256("\0".join(chosen).encode()).hexdigest()
            name = (f"DataParallel('fully_shard', sharded_params="
                    f"<{len(chosen)} of {len(params)}, {digest[:8]}>)")
        return mesh, name, layouts, 0
    tp = parallel.tp_size
    if world % tp:
        raise UnsupportedError(
            f"spmd.compile: TensorParallel(tp_size={tp}) on {world} ranks: "
            "the ranks do not divide into groups of tp_size",
            hint="launch a multiple of tp_size ranks")
    mesh = (world // tp, tp)
    layouts = {}
    for fqn, style in parallel.plan.items():
        try:
            module = model.get_submodule(fqn)
        except AttributeError:
            raise UnsupportedError(
                f"spmd.compile: TensorParallel plan names {fqn!r}, which is "
                "not a submodule of the model") from None
        colwise = isinstance(style, ColwiseParallel)
        if isinstance(module, torch.nn.Linear):
            dims = {"weight": 0 if colwise else 1,
                    "bias": 0 if colwise else None}
        elif isinstance(module, torch.nn.Embedding):
            dims = {"weight": 1 if colwise else 0}
        else:
            raise UnsupportedError(
                f"spmd.compile: TensorParallel plan[{fqn!r}] is a "
                f"{type(module).__name__}; Colwise/RowwiseParallel apply to "
                "nn.Linear and nn.Embedding")
        for leaf, dim in dims.items():
            if getattr(module, leaf, None) is not None and dim is not None:
                layouts[f"{fqn}.{leaf}" if fqn else leaf] = (None, dim)
    if parallel.data_parallel.fully_shard:
        for n, p in params.items():
            if p.dim() >= 1:
                layouts[n] = (0, layouts.get(n, (None, None))[1])
    name = (f"TensorParallel(tp_size={tp}, plan={dict(parallel.plan)}, "
            f"{parallel.parallel_style!r})")
    if mesh[0] == 1:
        # Tensor parallelism alone: a 1-D mesh. (An axis of one rank
        # divides nothing, but propagation may still choose to split a
        # dimension on it, and an uneven dimension split by two axes is
        # not supported.)
        layouts = {n: layout[1:] for n, layout in layouts.items()
                   if layout[1] is not None}
        return (tp,), name, layouts, None
    return mesh, name, layouts, 0


def _bucket_bytes(parallel: DataParallel) -> int:
    if parallel.bucket_cap_mb < 0:
        raise ValueError("DataParallel.bucket_cap_mb must be >= 0, got "
                         f"{parallel.bucket_cap_mb}")
    return int(parallel.bucket_cap_mb * 1024 * 1024)


def run_passes(module: str, pipeline: str) -> str:
    """`module` after the spmd-opt pass pipeline `pipeline` (the contents of
    builtin.module(...), e.g. "canonicalize,cse")."""
    spmd_opt = _toolchain.build_dir() / "bin" / "spmd-opt"
    proc = subprocess.run(
        [str(spmd_opt), f"--pass-pipeline=builtin.module({pipeline})",
         "--mlir-print-debuginfo"],
        input=module, capture_output=True, text=True)
    if proc.returncode != 0:
        raise _toolchain.CompileError(
            f"spmd-opt --pass-pipeline=builtin.module({pipeline}) failed:\n"
            + proc.stderr.strip())
    return proc.stdout


def _apply_replacements(model, overrides):
    accessor = NamedMemberAccessor(model)

    def swap(prefix, module):
        for override in overrides:
            for name, child in list(module.named_children()):
                fqn = f"{prefix}.{name}" if prefix else name
                new = override.replacement(fqn, child)
                if new is child:
                    swap(fqn, child)
                else:
                    accessor.swap_submodule(fqn, new)
    swap("", model)


# State names are FQNs; a second model in the process gets "model<k>/"
# before its names (the runtime's registry is per process). Every compiled
# program numbers its returned values. Both counters advance the same way on
# every rank (SPMD), so ranks agree on the names.
_MODEL_PREFIX = weakref.WeakKeyDictionary()
_MODELS = itertools.count()
_PROGRAMS = itertools.count()


def _model_prefix(model) -> str:
    if model not in _MODEL_PREFIX:
        k = next(_MODELS)
        _MODEL_PREFIX[model] = "" if k == 0 else f"model{k}/"
    return _MODEL_PREFIX[model]


def _build_where(here: bool, text: str, pipeline: str, target: str):
    """Compiles on the ranks where `here` holds; every rank learns whether
    any of them failed (and raises), so none waits in a later collective."""
    error = None
    if here:
        try:
            _toolchain.compile_module(text, pipeline, target=target)
        except Exception as err:  # reported once, by the lowest failing rank
            error = err
    _runtime.agree_on_failure(error)


def _optimizer_structure(optimizer, names=None):
    """What of an optimizer's param groups shapes the compiled program: the
    parameters of each group and the options that add or remove terms.
    Float values (lr, momentum, betas, eps, weight decay) are read on every
    call instead (an LR scheduler changes them without recompiling); a
    change of what is here compiles a new program. `names` ({id: FQN}):
    the parameters by name instead of identity (the program cache's key).
    A traced optimizer (_optimizer.py): its constant options' values and
    its state's structure too."""
    if _optimizer.is_traced(optimizer):
        return _optimizer.structure(optimizer, names)
    groups = []
    for g in optimizer.param_groups:
        groups.append((
            tuple(names.get(id(p)) if names else id(p) for p in g["params"]),
            float(g.get("momentum", 0.0)) != 0.0,
            # SGD without dampening does not read its step counter.
            float(g.get("dampening", 0.0)) != 0.0,
            float(g.get("weight_decay", 0.0)) != 0.0,
            bool(g.get("nesterov", False)),
            bool(g.get("amsgrad", False)),
            bool(g.get("maximize", False)),
            bool(g.get("decoupled_weight_decay", False)),
            g.get("foreach"), g.get("fused"),
            tuple(sorted(k for k in g if k != "params")),
        ))
    return type(optimizer).__name__, tuple(groups)


def _with_grads(model) -> tuple:
    """The parameters that have a `.grad` (the step adds into it)."""
    return tuple(n for n, p in model.named_parameters()
                 if p.grad is not None)


class _RandomStream:
    """The Philox stream of one compiled step (_random.py): a seed drawn
    from torch's default generator at the first call (torch.manual_seed
    makes runs reproducible; rank 0's is used), and the offset where the
    next call's counters start."""

    def __init__(self):
        self.seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        self.offset = 0

    def take(self, count: int) -> int:
        start = self.offset
        self.offset += count
        return start


class CompiledStep:
    def __init__(self, fn, module_override, passes, parallel,
                 checkpointing=False):
        self.fn = fn
        self.checkpointing = checkpointing
        self.random = None
        self.overrides = list(module_override or [])
        self.passes = passes
        # spmd.Auto: the strategy is chosen at the first call (_choose);
        # until then the step is set up as its first candidate.
        self.auto = parallel if isinstance(parallel, Auto) else None
        self.auto_plan = None
        # (world_dp, placement) -> (traced, imported, recorded ops) while
        # Auto weighs its candidates and compiles the chosen one: one
        # make_fx for them all.
        self._traces = None
        self._index = None
        self._use(DataParallel() if parallel is None or self.auto else
                  parallel)
        self.style = None
        self.cache = {}
        self.replaced = set()
        # {phase: seconds} of the last compile (also on each Executable).
        self.compile_times = {}
        functools.update_wrapper(self, fn)

    def _use(self, parallel):
        """Compiles with `parallel` (a DataParallel or TensorParallel)."""
        self.parallel = parallel
        self.data_parallel = parallel.data_parallel if isinstance(
            parallel, TensorParallel) else parallel

    def _choose(self, args, kwargs):
        """spmd.Auto's choice for these arguments (every rank)."""
        self._traces = {}
        self._index = next(_PROGRAMS)
        self.auto_plan = _auto.choose(self, args, kwargs)
        if _runtime.rank() == 0:
            _progress.note(str(self.auto_plan))

    def pipeline(self) -> str:
        """The spmd-opt pipeline from the global program to the local one."""
        dp = self.data_parallel
        return _toolchain.pipeline(
            self.passes, bucket_bytes=_bucket_bytes(dp),
            regather=dp.fully_shard and dp.reshard_after_forward,
            prefetch=dp.fully_shard)

    def _signature(self, leaves):
        key = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                key.append(("T", tuple(leaf.shape), leaf.dtype,
                            getattr(leaf, "_spmd_placement", None)))
            elif isinstance(leaf, torch.optim.Optimizer):
                key.append(("O", id(leaf), _optimizer_structure(leaf)))
            elif isinstance(leaf, torch.nn.Module):
                # train() / eval() changes what is traced (dropout on or off);
                # a gradient present before the call is accumulated into.
                key.append(("O", id(leaf),
                            tuple(m.training for m in leaf.modules()),
                            _with_grads(leaf)))
            else:
                key.append(("C", repr(leaf)))
        return tuple(key)

    def _compile(self, args, kwargs):
        log = _progress.CompileLog(getattr(self.fn, "__name__", "step"),
                                   _runtime.rank())
        with _progress.compiling(log):
            executable = self._compile_logged(args, kwargs)
        executable.compile_times = log.as_dict()
        self.compile_times = executable.compile_times
        return executable

    def _compile_logged(self, args, kwargs):
        if self.auto is not None and self.auto_plan is None:
            self._choose(args, kwargs)
        # Every rank traces; an error on any rank stops all of them (and is
        # printed once) before rank 0 starts building.
        program, error = None, None
        try:
            traced, program = self._trace(args, kwargs)
        except Exception as err:
            error = err
        _runtime.agree_on_failure(error)
        pipeline = self.pipeline()
        # Rank 0 builds; the others wait for its verdict (an error on rank 0
        # must not leave them blocked in the next collective). A rank that
        # does not share rank 0's cache (another node) then builds too.
        target = _runtime.target()
        library = _toolchain.library_path(program.text, pipeline, target)
        if library.exists():
            _progress.note(f"cached program {library}")
        _build_where(_runtime.rank() == 0, program.text, pipeline, target)
        _build_where(not library.exists(), program.text, pipeline, target)
        if traced.rng_draws and self.random is None:
            self.random = _RandomStream()
        with _progress.phase("load"):
            return Executable(library, traced, program, self.random,
                              self.style)

    def _trace(self, args, kwargs):
        """The traced step and its global program (this rank's work)."""
        world = _runtime.world_size()
        leaves, _ = pytree.tree_flatten((args, kwargs))
        model = next((x for x in leaves if isinstance(x, torch.nn.Module)),
                     None)
        if model is not None and self.overrides and id(model) not in \
                self.replaced:
            _apply_replacements(model, self.overrides)
            self.replaced.add(id(model))
        mesh, self.style, layouts, data_axis = _layouts(self.parallel, model,
                                                        world)
        if model is not None:
            _sharding.check_style(model, self.style)
        world_dp = 1 if data_axis is None else mesh[data_axis]
        placement = self.data_parallel.input_placement
        prefix = _model_prefix(model) if model is not None else ""
        # Auto's candidates and its choice share one index (every rank
        # takes one per compiled program, whatever rank 0 weighed).
        index = self._index if self._index is not None else next(_PROGRAMS)
        # The program cache (_program_cache.py): not for steps whose program
        # text a user's override rewrites (its code is not in the key).
        # Auto's candidates share one trace (make_fx runs once): a step
        # traced already for these inputs does not look in the program
        # cache, and stores its program under the ops that trace recorded.
        shared = (world_dp, repr(placement))
        memo = self._traces.get(shared) if self._traces is not None \
            else None
        ctx = recorder = None
        if model is not None and not self.overrides and \
                _program_cache.enabled():
            ctx = _program_cache.context((
                self._context(leaves, model), world, mesh, data_axis,
                sorted(layouts.items()) if layouts else None,
                self.data_parallel.fully_shard, repr(placement), prefix,
                index, self.checkpointing))
            found = None if memo is not None else self._from_program_cache(
                ctx, args, kwargs, world_dp, placement, model)
            if found is not None:
                return found
            recorder = _program_cache.Recorder(ctx)
        if memo is not None:
            traced, imported, ops = memo
        else:
            with _progress.phase("trace (make_fx)"):
                traced = _trace.trace(self.fn, args, kwargs, world_dp,
                                      placement, observe=recorder and
                                      recorder.observe,
                                      checkpointing=self.checkpointing)
            with _progress.phase("import (torch-mlir)"):
                imported = _import_cache.import_graph(traced.graph,
                                                      _program.CALLEE)
            ops = recorder.ops() if recorder is not None else None
            if self._traces is not None:
                self._traces[shared] = (traced, imported, ops)
        with _progress.phase("global program"):
            program = _program.build(traced, imported, world, prefix=prefix,
                                     index=index, mesh=mesh,
                                     layouts=layouts, data_axis=data_axis,
                                     gather_first_axis=self.data_parallel
                                     .fully_shard)
            for override in self.overrides:
                program.text = override.transform(program.text)
        if recorder is not None:
            _program_cache.store(ctx, _program_cache.key_for(ctx, ops),
                                 traced, program)
        return traced, program

    def _context(self, leaves, model):
        """What of the step's arguments the program is built from besides
        its ops: the state's names, shapes and dtypes, the inputs' shapes
        and placements, the optimizer's structure (by parameter name)."""
        names = {id(p): n for n, p in model.named_parameters()}
        parts = [getattr(self.fn, "__module__", None),
                 getattr(self.fn, "__qualname__", None)]
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                parts.append(("T", tuple(leaf.shape), str(leaf.dtype),
                              leaf.device.type,
                              repr(getattr(leaf, "_spmd_placement", None))))
            elif isinstance(leaf, torch.optim.Optimizer):
                parts.append(("O", _optimizer_structure(leaf, names)))
            elif isinstance(leaf, torch.nn.Module):
                parts.append(("M", tuple(m.training for m in leaf.modules()),
                              _with_grads(leaf),
                              tuple((n, tuple(p.shape), str(p.dtype),
                                     p.device.type, p.requires_grad, tuple(
                                         _sharding.global_shape(leaf, n, p)))
                                    for n, p in leaf.named_parameters()),
                              tuple((n, tuple(b.shape), str(b.dtype))
                                    for n, b in leaf.named_buffers())))
            else:
                parts.append(("C", repr(leaf)))
        return tuple(parts)

    def _from_program_cache(self, ctx, args, kwargs, world_dp, placement,
                            model):
        """The traced step and program an earlier compile stored for the ops
        this step runs (on fake tensors, without make_fx), or None."""
        if not _program_cache.has_candidates(ctx):
            return None
        recorder = _program_cache.Recorder(ctx)
        with _progress.phase("trace (fake)"):
            try:
                ran = _trace.run_on_fake(self.fn, args, kwargs, world_dp,
                                         placement, recorder.observe,
                                         self.checkpointing)
            except Exception:  # make_fx traces it and reports what fails
                return None
        found = _program_cache.load(ctx, recorder.key(), model,
                                    ran.optimizer)
        if found is None or not _program_cache.agrees(found[0], ran):
            return None
        return found

    def __call__(self, *args, **kwargs):
        # Accepted as in torch.distributed._spmd; every step already leaves
        # parameters and optimizer state in place, so the last one needs no
        # different program.
        kwargs.pop("last_train_step", None)
        leaves, _ = pytree.tree_flatten((args, kwargs))
        # The first step of the process picks the runtime (CPU or GPU) by
        # its model's device unless SPMD_DEVICE says.
        model = next((x for x in leaves if isinstance(x, torch.nn.Module)),
                     None)
        _runtime.runtime(_device.model_device(model))
        _device.check_model(_runtime.target(), model)
        _device.check_inputs(_runtime.target(), [
            x for x in leaves if isinstance(x, torch.Tensor)])
        key = self._signature(leaves)
        # Every rank must run the same program: a rank with another batch
        # shape would otherwise wait forever in a collective.
        digest = hashlib.sha256(repr(
            [k if k[0] == "T" or isinstance(leaf, (int, float, bool, str))
             else type(leaf).__name__
             for k, leaf in zip(key, leaves)]).encode()).digest()
        if not _runtime.all_ranks_agree(
                int.from_bytes(digest[:8], "little", signed=True)):
            _runtime.agree_on_failure(UnsupportedError(
                "spmd.compile: the ranks called the step with different "
                "argument shapes, dtypes or placements; rank "
                f"{_runtime.rank()}: "
                + ", ".join(f"{list(k[1])} {k[2]}" for k in key
                            if k[0] == "T"),
                hint="give every rank an equal share of the global batch "
                "(DataLoader(drop_last=True) with a DistributedSampler)"))
        executable = self.cache.get(key)
        if executable is None:
            executable = self._compile(args, kwargs)
            self.cache[key] = executable
            self._traces = self._index = None
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        _profile.from_environment()
        with torch.profiler.record_function("spmd.step"), _profile.step(), \
                _profile.torch_profiler_regions():
            outputs = executable(tensors)
        return pytree.tree_unflatten(outputs, executable.traced.output_spec)


def compile(module_override: Optional[List[Override]] = None,
            passes: Optional[str] = None,
            parallel_mode: Optional[DataParallel] = None,
            gm_transformation: Optional[Callable] = None,
            parallel: Optional[DataParallel] = None,
            activation_checkpointing=False) -> Callable:
    """Decorator: compiles a train step for the ranks of the MPI job.

    module_override: Override objects (submodule stand-ins, MLIR
        transforms). passes: extra spmd-opt passes run on the global program
        before distribution (pipeline syntax, e.g. "canonicalize,cse").
    parallel_mode (or its alias `parallel`): a DataParallel (default:
        replicate, inputs Shard(0)) or a TensorParallel.
    gm_transformation: a function applied to the traced FX GraphModule is
        not supported (the graph is compiled by MLIR passes instead): pass
        `passes` or an Override.transform.
    activation_checkpointing: recompute every repeated block (the modules
        of an nn.ModuleList / nn.Sequential of one class, a transformer's
        layers) in the backward instead of keeping its activations: True or
        "full" (keep only each block's inputs), "selective" (keep matrix
        products and attention outputs, recompute the rest), False
        (default). Regions marked with torch.utils.checkpoint are
        recomputed in any case. Numerics are unchanged (_checkpointing.py).

    A model on a CUDA device (or SPMD_DEVICE=gpu) compiles for the GPU path:
    its tensors become CUDA tensors over the program's device buffers (CPU
    mirrors in the GPU emulator, where torch has no CUDA device); see
    _device.py.
    """
    if gm_transformation is not None:
        raise UnsupportedError(
            "spmd.compile: gm_transformation is not supported",
            hint="pass passes= or an Override.transform to change the "
            "program (it is compiled by MLIR passes, not FX)")

    if parallel is not None and parallel_mode is not None:
        raise TypeError("spmd.compile: pass parallel_mode= or its alias "
                        "parallel=, not both")
    mode = parallel_mode if parallel_mode is not None else parallel
    if mode is not None and not isinstance(mode, (DataParallel,
                                                  TensorParallel, Auto)):
        raise TypeError("spmd.compile: parallel_mode must be an "
                        "spmd.DataParallel, spmd.TensorParallel or "
                        "spmd.Auto, got "
                        f"{type(mode).__name__}")

    checkpointing = _checkpointing.check_policy(activation_checkpointing)

    def wrap(fn):
        return CompiledStep(fn, module_override, passes, mode, checkpointing)
    return wrap

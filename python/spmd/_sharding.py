"""Sharded models: fully_shard (FSDP) and tensor parallelism.

A compiled step runs on a mesh of the job's ranks: `(world,)` for
DataParallel, `(world // tp_size, tp_size)` for TensorParallel (rank r at
`(r // tp_size, r % tp_size)`, row-major as the runtime's groups). A
tensor's *layout* says, per mesh axis, which dimension that axis splits
(None: replicated along it). Splits follow `torch.chunk` (chunks of
ceil(n / k), trailing ranks smaller or empty); two axes on one dimension
split it in axis order.

A model becomes sharded when its first program with sharded parameters
loads: from then on each such parameter (and its optimizer state) holds
this rank's chunk and is a view of the program's buffer, which holds the
largest chunk on every rank (`spmd-expand`'s storage of uneven state).
This module remembers each sharded model's global shapes and layouts (the
tracer and later programs need them) and gathers / cuts whole tensors for
checkpoints.
"""

import math
import weakref
from typing import Dict, Optional, Tuple

import torch

from . import _runtime
from ._errors import UnsupportedError

# model -> {"style": str, "mesh": tuple, "params": {fqn: (shape, layout)}}
_MODELS = weakref.WeakKeyDictionary()


def is_sharded(layout) -> bool:
    return any(d is not None for d in layout)


def coords(rank: int, mesh) -> tuple:
    """`rank`'s coordinates on `mesh` (row-major)."""
    out = []
    for n in reversed(mesh):
        out.append(rank % n)
        rank //= n
    return tuple(reversed(out))


def box(shape, layout, mesh, at) -> Tuple[list, list]:
    """(starts, sizes) per dimension of the chunk of the rank at
    coordinates `at`."""
    starts, sizes = [0] * len(shape), list(shape)
    for axis, dim in enumerate(layout):
        if dim is None:
            continue
        n, size = mesh[axis], sizes[dim]
        c = -(-size // n) if size else 0
        starts[dim] += min(size, at[axis] * c)
        sizes[dim] = max(0, min(c, size - at[axis] * c))
    return starts, sizes


def storage_shape(shape, layout, mesh) -> tuple:
    """What every rank's buffer holds: the largest chunk."""
    sizes = list(shape)
    for axis, dim in enumerate(layout):
        if dim is not None and sizes[dim]:
            sizes[dim] = -(-sizes[dim] // mesh[axis])
    return tuple(sizes)


def local_view(storage: torch.Tensor, shape, layout, mesh) -> torch.Tensor:
    """This rank's chunk: the leading part of its (padded) buffer."""
    _, sizes = box(shape, layout, mesh, coords(_runtime.rank(), mesh))
    return storage[tuple(slice(0, s) for s in sizes)]


def check_style(model, style: str):
    """Raises when `model` already runs programs of another parallelism (a
    model keeps one: its tensors are whole or chunks of one layout)."""
    info = _MODELS.get(model)
    if info is not None and info["style"] != style:
        raise UnsupportedError(
            f"spmd.compile: this model is already compiled with "
            f"{info['style']}; a step with {style} cannot share its "
            "parameters",
            hint="compile every step of one model with the same "
            "parallel_mode")


def claim(model, style: str, mesh):
    """Records that `model`'s programs use `style` on `mesh`."""
    check_style(model, style)
    _MODELS.setdefault(model, {"style": style, "mesh": tuple(mesh),
                               "params": {}})


def sharded_params(model) -> Dict[str, tuple]:
    """{FQN: (global shape, layout)} of `model`'s sharded parameters."""
    info = _MODELS.get(model)
    return info["params"] if info else {}


def global_shape(model, fqn: str, tensor: torch.Tensor) -> tuple:
    entry = sharded_params(model).get(fqn)
    return entry[0] if entry else tuple(tensor.shape)


def mark_sharded(model, params: Dict[str, tuple]):
    """Records `model`'s sharded parameters {FQN: (global shape, layout)}
    (their tensors are chunks from now on) and, the first time, lets
    `model.load_state_dict` take whole tensors."""
    if not params:
        return
    info = _MODELS[model]
    if not info["params"]:
        _install_load_hook(model)
    info["params"].update(params)


def take_chunk(source: torch.Tensor, shape, layout, mesh,
               name: str) -> torch.Tensor:
    """This rank's chunk of `source` when it has the global `shape`, or
    `source` itself when it already is this rank's chunk."""
    starts, sizes = box(shape, layout, mesh, coords(_runtime.rank(), mesh))
    if tuple(source.shape) == tuple(shape):
        return source[tuple(slice(a, a + s) for a, s in zip(starts, sizes))]
    if tuple(source.shape) == tuple(sizes):
        return source
    raise UnsupportedError(
        f"spmd.compile: {name} has shape {list(source.shape)}; a sharded "
        f"tensor of global shape {list(shape)} takes the whole tensor or "
        f"this rank's chunk {sizes}")


def gather(local: torch.Tensor, shape, layout, mesh) -> torch.Tensor:
    """The whole tensor of global `shape` from every rank's chunk (a
    collective over the job: every rank calls it, in the same order)."""
    from ._program import DTYPE_CODE
    world = _runtime.world_size()
    padded_shape = storage_shape(shape, layout, mesh)
    padded = torch.zeros(padded_shape, dtype=local.dtype)
    padded[tuple(slice(0, s) for s in local.shape)] = local
    flat = padded.reshape(1, -1)
    out = torch.empty((world, flat.shape[1]), dtype=local.dtype)
    _runtime.all_gather_(out, flat, DTYPE_CODE[local.dtype])
    whole = torch.empty(shape, dtype=local.dtype)
    for rank in range(world):
        starts, sizes = box(shape, layout, mesh, coords(rank, mesh))
        if math.prod(sizes) == 0:
            continue
        part = out[rank].reshape(padded_shape)[
            tuple(slice(0, s) for s in sizes)]
        whole[tuple(slice(a, a + s) for a, s in zip(starts, sizes))] = part
    return whole


def _sharded_by_id(model):
    """{id(parameter): (global shape, layout)} of the sharded parameters."""
    params = sharded_params(model)
    return {id(p): params[fqn] for fqn, p in model.named_parameters()
            if fqn in params}


def _sharded_keys(model, prefix=""):
    """{state_dict key: (global shape, layout)} of the sharded parameters
    (a tied parameter under each of its names)."""
    by_id = _sharded_by_id(model)
    return {prefix + key: by_id[id(v)]
            for key, v in model.state_dict(keep_vars=True).items()
            if id(v) in by_id}


def full_state_dict(model: torch.nn.Module,
                    optimizer: Optional[torch.optim.Optimizer] = None):
    """`model.state_dict()` with whole tensors, and with an optimizer
    `(model_state, optimizer_state)` where the optimizer's state tensors are
    whole too. A collective on a sharded model: every rank calls it (and
    gets the whole tensors); on other models, copies of the state dicts."""
    mesh = _MODELS[model]["mesh"] if model in _MODELS else ()
    keys = _sharded_keys(model)
    state = {}
    for key, value in model.state_dict().items():
        entry = keys.get(key)
        state[key] = gather(value, *entry, mesh) if entry else value.clone()
    if optimizer is None:
        return state
    by_id = _sharded_by_id(model)
    osd = optimizer.state_dict()
    order = [p for g in optimizer.param_groups for p in g["params"]]
    full = {}
    for index, entries in osd["state"].items():
        entry = by_id.get(id(order[index]))
        full[index] = {
            k: (gather(v, *entry, mesh) if entry is not None
                and isinstance(v, torch.Tensor) and v.dim() >= 1
                and tuple(v.shape) == tuple(order[index].shape)
                else (v.clone() if isinstance(v, torch.Tensor) else v))
            for k, v in entries.items()}
    return state, {"state": full, "param_groups": osd["param_groups"]}


def sharded_state_dict(model: torch.nn.Module,
                       optimizer: Optional[torch.optim.Optimizer] = None):
    """Copies of this rank's `model.state_dict()` (and, with an optimizer,
    `(model_state, optimizer_state)`): under fully_shard or tensor
    parallelism each sharded parameter and its optimizer state is this
    rank's chunk (as FSDP's sharded state dict). No collective: each rank
    saves its own file, and `load_sharded_state_dict` takes them back on
    the same number of ranks. Copies, not views of the program's buffers
    (the next call changes those)."""
    def copy(value):
        return value.detach().clone() if isinstance(value, torch.Tensor) \
            else value

    state = {k: copy(v) for k, v in model.state_dict().items()}
    if optimizer is None:
        return state
    osd = optimizer.state_dict()
    return state, {
        "state": {i: {k: copy(v) for k, v in entries.items()}
                  for i, entries in osd["state"].items()},
        "param_groups": osd["param_groups"]}


def _planned_layouts(model, parallel_mode):
    """(mesh, {state_dict key: (global shape, layout)}) that `spmd.compile`
    with `parallel_mode` gives `model`'s sharded parameters on this job."""
    from . import api
    if parallel_mode is None:
        raise UnsupportedError(
            "spmd.load_sharded_state_dict: the model has not been called "
            "through spmd.compile yet, so its layouts are not known",
            hint="pass the step's parallel_mode= (e.g. spmd.DataParallel("
                 "'fully_shard'))")
    mesh, _, layouts, _ = api._layouts(parallel_mode, model,
                                       _runtime.world_size())
    by_id = {id(p): (tuple(p.shape), tuple(layouts[n]))
             for n, p in model.named_parameters() if n in layouts}
    return tuple(mesh), {key: by_id[id(v)] for key, v in
                         model.state_dict(keep_vars=True).items()
                         if id(v) in by_id}


def _whole(value, key, shape, layout, mesh):
    """The whole tensor from every rank's chunk `value` of `key` (a
    collective); a clear error when `value` is not this rank's chunk."""
    _, sizes = box(shape, layout, mesh, coords(_runtime.rank(), mesh))
    if not isinstance(value, torch.Tensor) or \
            tuple(value.shape) != tuple(sizes):
        got = list(value.shape) if isinstance(value, torch.Tensor) \
            else type(value).__name__
        raise UnsupportedError(
            f"spmd.load_sharded_state_dict: {key} is {got}; rank "
            f"{_runtime.rank()} of {_runtime.world_size()} holds the chunk "
            f"{sizes} of {list(shape)}",
            hint="a sharded state dict loads on the rank count that saved "
                 "it; on another count load spmd.full_state_dict's whole "
                 "tensors")
    return gather(value.contiguous(), shape, layout, mesh)


def load_sharded_state_dict(model: torch.nn.Module, model_state,
                            optimizer: Optional[torch.optim.Optimizer] = None,
                            optimizer_state=None, parallel_mode=None):
    """Loads what `sharded_state_dict` saved on this rank (its chunks) into
    `model` and `optimizer`. After the model's first compiled call the
    chunks go straight into the program's buffers (no collective). Before
    it the model still holds whole tensors, so the chunks are gathered
    (a collective: every rank calls it with its own file) with the layouts
    that `parallel_mode` gives, then loaded whole; the first call keeps
    each rank's chunk. Same rank count and parallel mode as the saving
    job; whole tensors load with `model.load_state_dict` on any count."""
    info = _MODELS.get(model)
    if info is not None and info["params"]:
        model.load_state_dict(model_state)
        if optimizer is not None:
            optimizer.load_state_dict(optimizer_state)
        return
    mesh, keys = _planned_layouts(model, parallel_mode)
    by_id = {}
    whole = dict(model_state)
    live = model.state_dict(keep_vars=True)
    for key, (shape, layout) in keys.items():
        if key not in whole:
            continue
        if id(live[key]) not in by_id:
            by_id[id(live[key])] = _whole(whole[key], key, shape, layout,
                                          mesh)
        whole[key] = by_id[id(live[key])]
    model.load_state_dict(whole)
    if optimizer is None:
        return
    order = [p for g in optimizer.param_groups for p in g["params"]]
    layout_of = {id(live[k]): v for k, v in keys.items()}
    state = {}
    for index in sorted(optimizer_state["state"]):
        entries = optimizer_state["state"][index]
        entry = layout_of.get(id(order[index])) if index < len(order) \
            else None
        if entry is None:
            state[index] = dict(entries)
            continue
        shape, layout = entry
        _, sizes = box(shape, layout, mesh, coords(_runtime.rank(), mesh))
        state[index] = {
            k: (_whole(v, f"optimizer state {index}.{k}", shape, layout,
                       mesh)
                if isinstance(v, torch.Tensor) and v.dim() >= 1
                and tuple(v.shape) == tuple(sizes) else v)
            for k, v in sorted(entries.items())}
    optimizer.load_state_dict({"state": state,
                               "param_groups":
                               optimizer_state["param_groups"]})


def _install_load_hook(model):
    """`model.load_state_dict(whole)` on a sharded model: whole tensors of
    sharded parameters are cut to this rank's chunk first (a dict of this
    rank's chunks, as `model.state_dict()` gives, loads as it is)."""
    ref = weakref.ref(model)

    def cut(state_dict, prefix, *_):
        owner = ref()
        if owner is None:
            return
        mesh = _MODELS[owner]["mesh"]
        for key, (shape, layout) in _sharded_keys(owner, prefix).items():
            value = state_dict.get(key)
            if isinstance(value, torch.Tensor) and \
                    tuple(value.shape) == tuple(shape):
                state_dict[key] = take_chunk(value, shape, layout, mesh, key)

    model._register_load_state_dict_pre_hook(cut)

"""Fully sharded models (DataParallel(parallel_style="fully_shard")).

A model becomes sharded when its first fully_shard program loads: from then
on every parameter of rank >= 1 (and its optimizer state) holds this rank's
chunk of dimension 0, sized as `torch.chunk` splits it over the ranks
(chunks of ceil(n / world) rows, trailing ranks smaller or empty), and is a
view of the program's buffer. Buffers (BatchNorm statistics) and scalar
parameters stay replicated. This module remembers each sharded model's global
shapes (the tracer and later programs need them) and gathers / scatters whole
tensors for checkpoints.
"""

import weakref
from typing import Dict, Optional, Tuple

import torch

from . import _runtime
from ._errors import UnsupportedError

# model -> {"style": "replicate" | "fully_shard", "shapes": {fqn: shape}}
_MODELS = weakref.WeakKeyDictionary()


def chunk(n: int, world: int, rank: int) -> Tuple[int, int]:
    """(start, length) of `rank`'s rows of `n` rows, as torch.chunk."""
    c = -(-n // world) if n else 0
    start = min(n, rank * c)
    return start, max(0, min(c, n - rank * c))


def storage_rows(n: int, world: int) -> int:
    """Rows every rank's buffer holds: the largest chunk."""
    return -(-n // world) if n else 0


def check_style(model, style: str):
    """Raises when `model` already runs programs of another style (a model
    keeps one: its tensors are whole or chunks)."""
    info = _MODELS.get(model)
    if info is not None and info["style"] != style:
        raise UnsupportedError(
            f"spmd.compile: this model is already compiled with "
            f"parallel_style={info['style']!r}; a step with "
            f"parallel_style={style!r} cannot share its parameters",
            hint="compile every step of one model with the same "
            "DataParallel(parallel_style=...)")


def claim(model, style: str):
    """Records that `model`'s programs use `style`."""
    check_style(model, style)
    _MODELS.setdefault(model, {"style": style, "shapes": {}})


def sharded_shapes(model) -> Dict[str, tuple]:
    """{FQN: global shape} of `model`'s sharded parameters (empty when the
    model is not sharded)."""
    info = _MODELS.get(model)
    return info["shapes"] if info else {}


def global_shape(model, fqn: str, tensor: torch.Tensor) -> tuple:
    return sharded_shapes(model).get(fqn, tuple(tensor.shape))


def mark_sharded(model, shapes: Dict[str, tuple]):
    """Records `model`'s sharded parameters {FQN: global shape} (their
    tensors are chunks from now on) and, the first time, lets
    `model.load_state_dict` take whole tensors."""
    if not shapes:
        return
    info = _MODELS[model]
    if not info["shapes"]:
        _install_load_hook(model)
    info["shapes"].update(shapes)


def take_chunk(source: torch.Tensor, shape, name: str) -> torch.Tensor:
    """This rank's rows of `source` when it has the global `shape`, or
    `source` itself when it already is this rank's chunk."""
    world, rank = _runtime.world_size(), _runtime.rank()
    start, length = chunk(shape[0], world, rank)
    if tuple(source.shape) == tuple(shape):
        return source[start:start + length]
    local = (length, *shape[1:])
    if tuple(source.shape) == local:
        return source
    raise UnsupportedError(
        f"spmd.compile: {name} has shape {list(source.shape)}; a fully "
        f"sharded tensor of global shape {list(shape)} takes the whole "
        f"tensor or this rank's chunk {list(local)}")


def gather(local: torch.Tensor, shape) -> torch.Tensor:
    """The whole tensor of global `shape` from every rank's chunk (a
    collective: every rank calls it, in the same order)."""
    from ._program import DTYPE_CODE
    rows = storage_rows(shape[0], _runtime.world_size())
    padded = torch.zeros((rows, *shape[1:]), dtype=local.dtype)
    padded[:local.shape[0]] = local
    out = torch.empty((rows * _runtime.world_size(), *shape[1:]),
                      dtype=local.dtype)
    _runtime.all_gather_(out, padded, DTYPE_CODE[local.dtype])
    # Rank r's chunk starts at row r * rows, as torch.chunk's does: the
    # first n rows are the tensor.
    return out[:shape[0]].clone()


def _sharded_keys(model, prefix=""):
    """{state_dict key: global shape} of the sharded parameters (a tied
    parameter under each of its names)."""
    shapes = sharded_shapes(model)
    by_id = {id(p): shapes[fqn] for fqn, p in model.named_parameters()
             if fqn in shapes}
    return {prefix + key: by_id[id(v)]
            for key, v in model.state_dict(keep_vars=True).items()
            if id(v) in by_id}


def full_state_dict(model: torch.nn.Module,
                    optimizer: Optional[torch.optim.Optimizer] = None):
    """`model.state_dict()` with whole tensors, and with an optimizer
    `(model_state, optimizer_state)` where the optimizer's state tensors are
    whole too. A collective on a fully sharded model: every rank calls it
    (and gets the whole tensors); on other models the plain state dicts."""
    keys = _sharded_keys(model)
    state = {}
    for key, value in model.state_dict().items():
        shape = keys.get(key)
        state[key] = gather(value, shape) if shape else value.clone()
    if optimizer is None:
        return state
    shapes = sharded_shapes(model)
    by_id = {id(p): shapes[fqn] for fqn, p in model.named_parameters()
             if fqn in shapes}
    osd = optimizer.state_dict()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    full = {}
    for index, entries in osd["state"].items():
        shape = by_id.get(id(params[index]))
        full[index] = {
            k: (gather(v, shape) if shape is not None
                and isinstance(v, torch.Tensor) and v.dim() >= 1
                else (v.clone() if isinstance(v, torch.Tensor) else v))
            for k, v in entries.items()}
    return state, {"state": full, "param_groups": osd["param_groups"]}


def _install_load_hook(model):
    """`model.load_state_dict(whole)` on a sharded model: whole tensors of
    sharded parameters are cut to this rank's chunk first (a dict of this
    rank's chunks, as `model.state_dict()` gives, loads as it is)."""
    ref = weakref.ref(model)

    def cut(state_dict, prefix, *_):
        owner = ref()
        if owner is None:
            return
        for key, shape in _sharded_keys(owner, prefix).items():
            value = state_dict.get(key)
            if isinstance(value, torch.Tensor) and \
                    tuple(value.shape) == tuple(shape):
                state_dict[key] = take_chunk(value, shape, key)

    model._register_load_state_dict_pre_hook(cut)

"""torch-mlir's import of a traced graph, cached on disk by the graph.

A later process that compiles the same step (same model code, shapes,
options) still traces it with make_fx, the graph being the only sound key
of what the step computes, but it finds the import here: it neither runs
torch-mlir's importer and pipelines nor loads torch-mlir at all (about a
second of a cached start on a 4-layer GPT). The key is everything the import
reads from the graph: each node's op, target, arguments, value metadata
(shape, dtype, strides) and stack trace (the program's locations), the bytes
of the graph's constant tensors, and the versions of torch, torch-mlir and
of this package's sources. Only successful imports are stored; a failing
graph imports (and reports) again.

`SPMD_IMPORT_CACHE=0` turns the cache off.
"""

import functools
import hashlib
import importlib.metadata
import os
from pathlib import Path
from typing import Optional

import torch

from . import _importer, _progress, _toolchain

_PACKAGE = Path(__file__).parent


@functools.lru_cache(maxsize=None)
def versions() -> bytes:
    """Once per process: the versions and the bridge's sources do not change
    under a running program."""
    try:
        torch_mlir = importlib.metadata.version("torch-mlir")
    except importlib.metadata.PackageNotFoundError:
        torch_mlir = "unknown"
    sources = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        sources.update(path.name.encode())
        sources.update(path.read_bytes())
    return repr((torch.__version__, torch_mlir,
                 sources.hexdigest())).encode()


def _value(val):
    """What the importer reads of a node's meta value: tensor types, or the
    Python value (a SymInt or a scalar) as its repr."""
    if isinstance(val, torch.Tensor):
        return ("T", tuple(val.shape), str(val.dtype), tuple(val.stride()),
                val.device.type)
    if isinstance(val, (list, tuple)):
        return tuple(_value(v) for v in val)
    if val is None:
        return None
    return ("V", type(val).__name__, repr(val))


def _argument(arg, constants):
    if isinstance(arg, torch.fx.Node):
        return ("N", arg.name)
    if isinstance(arg, (list, tuple)):
        return (type(arg).__name__,
                tuple(_argument(a, constants) for a in arg))
    if isinstance(arg, dict):
        return tuple((k, _argument(v, constants)) for k, v in arg.items())
    if isinstance(arg, torch.Tensor):
        constants.append(arg)
        return ("C", len(constants) - 1)
    return (type(arg).__name__, repr(arg))


def _target(target) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or str(target)
    return f"{module}.{name}" if not isinstance(
        target, torch._ops.OpOverload) else str(target)


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().cpu().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def fingerprint(graph: torch.fx.GraphModule, name: str) -> Optional[str]:
    """The key of `graph`'s import as function `name` (None: a constant
    that cannot be read, e.g. a fake tensor; not cached)."""
    key = hashlib.sha256(versions())
    key.update(name.encode())
    constants = []
    for node in graph.graph.nodes:
        meta = node.meta.get("tensor_meta")
        key.update(repr((
            node.op, node.name, _target(node.target),
            _argument(node.args, constants),
            _argument(node.kwargs, constants),
            _value(node.meta.get("val")),
            None if meta is None else (tuple(meta.shape), str(meta.dtype)),
            node.meta.get("stack_trace"))).encode())
        if node.op == "get_attr":
            value = getattr(graph, node.target)
            if isinstance(value, torch.Tensor):
                constants.append(value)
    for tensor in constants:
        key.update(repr((tuple(tensor.shape), str(tensor.dtype))).encode())
        try:
            key.update(tensor_bytes(tensor))
        except (RuntimeError, TypeError):
            return None
    return key.hexdigest()[:32]


def import_graph(graph: torch.fx.GraphModule, name: str) -> str:
    """_importer.import_graph, through the cache."""
    key = None if os.environ.get("SPMD_IMPORT_CACHE", "1") == "0" else \
        fingerprint(graph, name)
    if key is None:
        return _importer.import_graph(graph, name)
    path = _toolchain.cache_dir() / "imports" / f"{key}.mlir"
    try:
        text = path.read_text()
        _progress.note(f"cached import {path}")
        return text
    except OSError:
        pass
    text = _importer.import_graph(graph, name)
    _toolchain.write_whole(path, text.encode())
    return text

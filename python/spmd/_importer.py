"""FX graph -> linalg-on-tensors text, through torch-mlir.

torch-mlir carries its own LLVM, so the module crosses into spmd's LLVM 22
as text (with locations: the FX nodes' stack traces become file:line
locations, which spmd-opt's diagnostics then point at). What torch-mlir
cannot lower, and what it lowers outside the dialects spmd compiles (e.g.
`tm_tensor.scan` for cumsum), is reported here with the op and the user's
source line.
"""

import re

import torch
from torch_mlir import fx

from ._decompositions import UnsupportedError
from ._trace import user_frame

# Dialects of linalg-on-tensors IR that spmd-opt parses, distributes and
# lowers.
SUPPORTED_DIALECTS = {"arith", "math", "linalg", "tensor", "func", "cf"}

_OWN = re.compile(r"/(torch|torch_mlir|spmd)/")


def _resolve_locations(text: str):
    """Map `#locN` aliases to their expansion (aliases inlined)."""
    aliases = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", text, re.M))
    cache = {}

    def expand(s, depth=0):
        if depth > 50:
            return s
        return re.sub(r"#loc\d*\b",
                      lambda m: cache.setdefault(
                          m.group(0),
                          expand(aliases.get(m.group(0), ""), depth + 1)),
                      s)
    return expand


def _user_location(loc_text: str):
    files = re.findall(r'"([^"]+)":(\d+):\d+', loc_text)
    for path, line in files:  # callsite(callee at caller): innermost first
        if not _OWN.search(path) and not path.startswith("<"):
            return f"{path}:{line}"
    return None


def _source_line(location: str) -> str:
    path, line = location.rsplit(":", 1)
    try:
        with open(path) as f:
            code = f.read().splitlines()[int(line) - 1].strip()
        return f"{location}: {code}"
    except (OSError, IndexError, ValueError):
        return location


def _check_dialects(text: str):
    expand = _resolve_locations(text)
    for line in text.splitlines():
        m = re.match(r'\s*(?:%[^=]+=\s*)?"?([a-z_]+)\.([a-z_.]+)', line)
        if not m or m.group(1) in SUPPORTED_DIALECTS or m.group(1) == "module":
            continue
        op = f"{m.group(1)}.{m.group(2)}"
        loc = re.search(r"loc\((#loc\d*|.*)\)\s*$", line)
        where = _user_location(expand(loc.group(1))) if loc else None
        names = re.findall(r'loc\("(aten::[a-z_0-9.]+|aten\.[a-z_0-9.]+)"',
                           expand(loc.group(1)) if loc else "")
        raise UnsupportedError(
            f"spmd.compile: torch-mlir lowers "
            f"{names[0] if names else 'an op'} to {op}, which spmd cannot "
            "compile (only linalg, tensor, arith, math on tensors)"
            + (f"\n  at {_source_line(where)}" if where else ""))


def _import_error(err: Exception, graph: torch.fx.GraphModule):
    """A torch-mlir failure, with the aten op and the user's source line."""
    message = str(err)
    ops = re.findall(r"torch\.aten\.([a-z_0-9]+)", message)
    op = ops[0] if ops else None
    where = None
    if op is not None:
        for node in graph.graph.nodes:
            target = getattr(node.target, "__name__", str(node.target))
            if node.op == "call_function" and target.split(".")[0] == op:
                where = user_frame(node.meta.get("stack_trace"))
                if where:
                    break
    if where is None:
        location = _user_location(message)
        where = _source_line(location) if location else None
    first = next((l for l in message.splitlines() if "error" in l),
                 message.splitlines()[0] if message else "")
    raise UnsupportedError(
        f"spmd.compile: torch-mlir cannot lower "
        f"{'aten.' + op if op else 'the traced graph'} to linalg"
        + (f"\n  at {where}" if where else "")
        + f"\n  torch-mlir: {first.strip()}") from None


def import_graph(graph: torch.fx.GraphModule, name: str) -> str:
    """linalg-on-tensors text of `graph` as a function `name`."""
    try:
        module = fx.stateless_fx_import(graph, output_type="linalg-on-tensors",
                                        model_name=name)
    except UnsupportedError:
        raise
    except Exception as err:  # torch-mlir raises its own compiler errors
        _import_error(err, graph)
    text = module.operation.get_asm(enable_debug_info=True)
    _check_dialects(text)
    return text

"""Optimizers whose `step()` is traced into the program.

SGD, Adam and AdamW are first-class: the trace captures the gradients at
`optimizer.step()` and the program updates the parameters with one
`spmd.sgd` / `spmd.adam` op per group (_program.py). Any other
`torch.optim.Optimizer` (Adagrad, RMSprop, NAdam, ..., or a user's own) is
traced: its real `step()` runs inside the trace on the traced parameters,
gradients and state, with

- `optimizer.state` replaced by the traced state: each tensor it holds for
  a parameter is a graph input (a program state `<param FQN>.<key>`), and
  tensors the step creates (lazily initialized state) are graph outputs;
- each float option of a group (lr, betas, eps, ...) a float64 scalar graph
  input that the host writes before every call (an LR scheduler takes
  effect without recompiling), where the optimizer's code computes with it
  as a tensor; an option it branches on (`if weight_decay != 0`) or passes
  where only a number goes stays a constant of the program and keys the
  compile cache (a new value compiles a new program; never a stale one).
  `probe_runtime_options` finds which, by running the step once on fake
  tensors per option;
- `capturable=True` and `fused=False` for the trace, and the foreach or
  single-tensor code, whichever takes more options as tensors: the
  optimizers' own graph-safe code paths (no `.item()` of the step
  counter), the same math as their other paths, to float32 rounding.

What cannot be traced gets an error naming the reason: a closure (LBFGS),
sparse gradients (SparseAdam), a step counter or other state kept as a
Python number that the step changes (it would be baked into the program).
"""

import collections
import contextlib
from typing import Dict, List, Optional, Tuple

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from ._errors import UnsupportedError

FIRST_CLASS = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)

# Options set for the trace (when the group has the key): see the module's
# docstring.
_TRACE_OPTIONS = {"capturable": True, "foreach": False, "fused": False}


def is_traced(optimizer) -> bool:
    """Whether `optimizer`'s step() is traced (not a first-class op). A
    subclass of SGD/Adam/AdamW may override step(): traced too."""
    return optimizer is not None and type(optimizer) not in FIRST_CLASS


def _is_float(value) -> bool:
    return (isinstance(value, float) and not isinstance(value, bool)) or (
        isinstance(value, torch.Tensor) and value.dim() == 0
        and value.dtype.is_floating_point)


def float_options(group) -> List[Tuple[str, Optional[int]]]:
    """The group's float options: (key, None) for a float, (key, i) for
    each float of a tuple of floats (betas, etas, step_sizes)."""
    out = []
    for key, value in group.items():
        if key == "params":
            continue
        if _is_float(value):
            out.append((key, None))
        elif isinstance(value, (tuple, list)) and value and all(
                _is_float(v) for v in value):
            out.extend((key, i) for i in range(len(value)))
    return out


def option_name(gi: int, key: str, index: Optional[int]) -> str:
    """The program state of a run-time option."""
    return f"optimizer.param_groups.{gi}.{key}" + (
        "" if index is None else f".{index}")


def option_value(group, key, index) -> float:
    value = group[key] if index is None else group[key][index]
    return float(value)


@contextlib.contextmanager
def traced_options(group, values: Dict[Tuple[str, Optional[int]], object],
                   foreach: bool = False):
    """The group with `values` in place of its options and the trace's
    settings (_TRACE_OPTIONS, foreach as given), restored after."""
    saved = {k: v for k, v in group.items() if k != "params"}
    try:
        for key, setting in _TRACE_OPTIONS.items():
            if key in group:
                group[key] = foreach if key == "foreach" else setting
        tuples = {}
        for (key, index), value in values.items():
            if index is None:
                group[key] = value
            else:
                tuples.setdefault(key, list(saved[key]))[index] = value
        for key, items in tuples.items():
            group[key] = tuple(items)
        yield group
    finally:
        for key in list(group):
            if key != "params" and key not in saved:
                del group[key]
        group.update(saved)


def run_step(optimizer, closure=None):
    """The optimizer class's own step() (the instance's is replaced while
    tracing)."""
    if closure is not None:
        raise UnsupportedError(
            f"spmd.compile: {type(optimizer).__name__}.step(closure) cannot "
            "be compiled: the closure runs the model again inside the "
            "optimizer (LBFGS)",
            hint="use an optimizer that steps without a closure, or run "
            "this one eagerly on the gradients a compiled step leaves in "
            ".grad")
    return type(optimizer).step(optimizer)


def untraceable(optimizer, err: Exception) -> UnsupportedError:
    """The error for a step() that make_fx cannot trace, naming the
    optimizer, the reason and its line."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    where = next((line.strip() for line in text.splitlines()
                  if line.strip().startswith("Caused by:")), "")
    dynamic = "DataDependent" in type(err).__name__ or \
        "data-dependent" in text
    return UnsupportedError(
        f"spmd.compile: {type(optimizer).__name__}.step() cannot be traced "
        f"({type(err).__name__}): {first}" + (f"\n  {where}" if where else "")
        + ("\n  (it reads a tensor's value in Python: .item() or a "
           "comparison, which a compiled step cannot repeat)"
           if dynamic else ""),
        hint="use an optimizer whose update is tensor arithmetic (every "
        "torch.optim optimizer but LBFGS, SparseAdam and Adafactor), or run "
        "this one eagerly on the gradients a compiled step leaves in .grad")


def probe_runtime_options(optimizer) -> Dict[int, "Probed"]:
    """Per group, how its step is traced: the float options it computes with
    as tensors (run-time values) and whether through its foreach or its
    single-tensor code (the one that takes `lr` as a tensor, else the one
    that takes more options so; Adagrad and RMSprop pass `lr` where only a
    number goes in one, as a tensor in the other). Memoized on the
    optimizer per group structure."""
    key = tuple((tuple(sorted(k for k in g if k != "params")),
                 tuple(repr(v) for k, v in sorted(g.items())
                       if k != "params" and not _is_float(v)
                       and not (isinstance(v, (tuple, list)) and v
                                and all(_is_float(x) for x in v))))
                for g in optimizer.param_groups)
    # Whether the state exists decides which code runs (lazy init or not).
    key += tuple(tuple(sorted(map(str, optimizer.state.get(
        g["params"][0], {})))) for g in optimizer.param_groups if g["params"])
    memo = getattr(optimizer, "_spmd_runtime_options", None)
    if memo is not None and memo[0] == key:
        return memo[1]
    result = {}
    for gi, group in enumerate(optimizer.param_groups):
        options = float_options(group)
        if not group["params"] or not options:
            result[gi] = Probed([], False)
            continue
        tried = [_probe_path(optimizer, gi, options, foreach)
                 for foreach in ((False, True) if "foreach" in group
                                 else (False,))]
        result[gi] = max(tried, key=lambda p: (
            any(key == "lr" for key, _ in p.options), len(p.options),
            not p.foreach))
    optimizer._spmd_runtime_options = (key, result)
    return result


class Probed:
    """How a group's step is traced (probe_runtime_options)."""

    def __init__(self, options, foreach):
        self.options = list(options)
        self.foreach = foreach

    def __iter__(self):
        return iter(self.options)


def _probe_path(optimizer, gi, options, foreach) -> Probed:
    if _probe(optimizer, gi, options, foreach):
        return Probed(options, foreach)
    alone = [o for o in options if _probe(optimizer, gi, [o], foreach)]
    if alone and _probe(optimizer, gi, alone, foreach):
        return Probed(alone, foreach)
    return Probed([], foreach)


def _probe(optimizer, gi, options, foreach=False) -> bool:
    """Whether the step runs on fake tensors with `options` as float64
    scalar tensors (one parameter of group `gi`)."""
    from ._trace import _compiling
    group = optimizer.param_groups[gi]
    param = group["params"][0]
    mode = FakeTensorMode()
    saved_groups, saved_state = optimizer.param_groups, optimizer.state
    with mode:
        fake = torch.empty(param.shape, dtype=param.dtype,
                           device=param.device).requires_grad_()
        fake.grad = torch.empty(param.shape, dtype=param.dtype,
                                device=param.device)
        values = {o: torch.empty((), dtype=torch.float64,
                                 device=param.device) for o in options}
    state = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v
             for k, v in saved_state.get(param, {}).items()}
    probe_group = dict(group, params=[fake])
    try:
        optimizer.param_groups = [probe_group]
        optimizer.state = collections.defaultdict(dict, {fake: state})
        with traced_options(probe_group, values, foreach), mode, \
                _compiling(), torch.no_grad():
            run_step(optimizer)
        return True
    except Exception:  # any failure: the options stay constants
        return False
    finally:
        optimizer.param_groups, optimizer.state = saved_groups, saved_state


def structure(optimizer, names=None) -> tuple:
    """What of a traced optimizer shapes its program besides the groups'
    parameters: the options that stay constants (with their values), the
    other options' keys, and each parameter's state (tensor keys with
    their dtypes and shapes, other values by repr). `names`: {id: FQN}."""
    runtime = probe_runtime_options(optimizer)
    groups = []
    for gi, group in enumerate(optimizer.param_groups):
        live = set(runtime[gi].options)
        constants = []
        for key, value in sorted(group.items()):
            if key == "params":
                continue
            if isinstance(value, (tuple, list)):
                value = tuple(None if (key, i) in live else repr(v)
                              for i, v in enumerate(value))
            elif (key, None) in live:
                value = None
            else:
                value = repr(value)
            constants.append((key, value))
        state = []
        for p in group["params"]:
            st = optimizer.state.get(p, {})
            # A state of the parameter's shape is "P" (under fully_shard
            # both become this rank's chunks after the first call).
            state.append(tuple(
                (str(k), ("T", str(v.dtype), "P" if v.shape == p.shape
                          else tuple(v.shape))
                 if isinstance(v, torch.Tensor) else ("V", repr(v)))
                for k, v in st.items()))
        groups.append((tuple(names.get(id(p)) if names else id(p)
                             for p in group["params"]),
                       tuple(constants), tuple(state)))
    return type(optimizer).__qualname__, tuple(groups)

"""The global spmd module of a traced step.

Around the function torch-mlir imported (forward and backward), the bridge
writes what torch-mlir does not know: a mesh over the ranks, one
`spmd.state` per parameter, buffer, optimizer state and returned value
(named by PyTorch FQN), the inputs' specs, and the optimizer as one
`spmd.sgd` / `spmd.adam` op per parameter group (any other optimizer's
step is traced into the imported function, _optimizer.py):

    func.func @train_step(%in0: tensor<64x8xf32> {spmd.spec = ...}, ...) {
      %p0 = spmd.load @"fc.weight" ...
      %r:3 = func.call @forward_backward(%p0, ..., %in0, ...)
      %u:2 = spmd.sgd params [%p0] grads [%r#1] ...
      spmd.store %u#0 to @"fc.weight" ...
      spmd.store %r#0 to @"output.0" ...
      return
    }

`spmd-opt --inline` then folds the call, and `--spmd-distribute` makes it the
per-rank program.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import List

import torch

from . import _abi, _sharding
from ._errors import UnsupportedError
from ._trace import Traced
from .placement import Shard

_ELEMENT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64",
            torch.int32: "i32", torch.bool: "i1"}
class _DtypeCodes(Mapping):
    """torch dtype -> the runtime's SpmdDType code, read from the ABI list
    (RuntimeFunctions.def) on first use, not at import: a package installed
    outside a checkout imports before it is told where the build is."""
    _NAMES = {torch.float32: "F32", torch.float64: "F64",
              torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL"}

    def __getitem__(self, dtype):
        return _abi.dtype_code(self._NAMES[dtype])

    def __iter__(self):
        return iter(self._NAMES)

    def __len__(self):
        return len(self._NAMES)


DTYPE_CODE = _DtypeCodes()

ENTRY = "train_step"
CALLEE = "forward_backward"


def tensor_type(shape, dtype) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{_ELEMENT[dtype]}>"


@dataclass
class StateInfo:
    name: str
    shape: tuple  # global
    dtype: torch.dtype
    role: str
    # Per mesh axis, the dimension it splits (None: replicated along it);
    # empty: replicated.
    layout: tuple = ()

    @property
    def sharded(self) -> bool:
        return any(d is not None for d in self.layout)


@dataclass
class Program:
    """The module text and what the host binds by name after loading it."""
    text: str
    states: List[StateInfo] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    # Per optimizer group: ("sgd"|"adam", [param FQNs], group index).
    groups: list = field(default_factory=list)
    # Float options read from the param groups on every call:
    # (state name, group index, option key, index into the option or None).
    hyperparams: list = field(default_factory=list)
    # The state holding the random ops' [seed, offset], if the step has any.
    rng_state: str = ""
    # Before every state name in the module and the runtime's registry.
    prefix: str = ""
    # The mesh's shape (the job's ranks, row-major).
    mesh: tuple = ()


class _Writer:
    def __init__(self, prefix=""):
        self.lines = []
        self.count = 0
        self.prefix = prefix

    def symbol(self, name):
        """The state `name`'s symbol reference: prefixed, quoted."""
        text = (self.prefix + name).replace("\\", "\\\\").replace('"', '\\"')
        return f'@"{text}"'

    def fresh(self, prefix="v"):
        self.count += 1
        return f"%{prefix}{self.count}"

    def emit(self, line):
        self.lines.append("    " + line)


def _spec(layout) -> str:
    return "<@world, [" + ", ".join(
        "replicate" if d is None else f"shard<{d}>" for d in layout) + "]>"


def build(traced: Traced, imported: str, world: int, prefix: str = "",
          index: int = 0, mesh: tuple = None, layouts: dict = None,
          gather_first_axis: bool = False, data_axis=0) -> Program:
    """`prefix` goes before every state's symbol (the runtime's registry is
    one per process: two models' `fc.weight` must not meet); `index` makes
    the returned values' names unique per compiled program.

    mesh: the mesh's shape (default `(world,)`); the inputs are split over
    axis `data_axis` (None: replicated, every rank passes the same batch). layouts: {parameter FQN: layout} (per mesh axis, the
    dimension it splits or None): those parameters and their optimizer
    state are sharded states. gather_first_axis (fully_shard): each load of
    a parameter the first axis splits is redistributed to replicated along
    it before the step uses it (FSDP's all-gather: the compiler keeps the
    batch split instead of moving activations), and the optimizer updates
    the sharded load, so the gradients are reduce-scattered."""
    mesh = tuple(mesh or (world,))
    layouts = layouts or {}
    program = Program("", prefix=prefix, mesh=mesh)
    graph_out = [n for n in traced.graph.graph.nodes if n.op == "output"][0]
    out_vals = [a.meta["val"] for a in graph_out.args[0]]
    placeholders = [n for n in traced.graph.graph.nodes
                    if n.op == "placeholder"]
    arg_types = [tensor_type(n.meta["val"].shape, n.meta["val"].dtype)
                 for n in placeholders]
    res_types = [tensor_type(v.shape, v.dtype) for v in out_vals]

    params = {n: _GlobalShape(p, _sharding.global_shape(traced.model, n, p))
              for n, p in traced.model.named_parameters()}
    buffers = dict(traced.model.named_buffers())
    decls = ["  spmd.mesh @world(shape = %s)" % "x".join(map(str, mesh))]
    w = _Writer(prefix)
    sharded = {n: layouts[n] for n in traced.param_names if n in layouts}

    def state(name, shape, dtype, role, layout=()):
        program.states.append(StateInfo(name, tuple(shape), dtype, role,
                                        tuple(layout)))
        spec = f" spec = {_spec(layout)}" if layout else ""
        decls.append(f"  spmd.state {w.symbol(name)} : "
                     f"{tensor_type(shape, dtype)}"
                     f" role = {role}{spec}")

    for n in traced.param_names:
        state(n, params[n].shape, params[n].dtype, "param",
              sharded.get(n, ()))
    for n in traced.buffer_names:
        state(n, buffers[n].shape, buffers[n].dtype, "buffer")
    for e in traced.extras + traced.created:
        state(e.name, e.shape, e.dtype, _ROLE[e.kind],
              _extra_layout(e, params, sharded))

    args = []
    for i, info in enumerate(traced.inputs):
        layout = [None] * len(mesh)
        if data_axis is not None and isinstance(info.placement, Shard):
            layout[data_axis] = info.placement.dim
        args.append(f"%in{i}: {tensor_type(info.global_shape, info.dtype)} "
                    f"{{spmd.spec = #spmd.spec{_spec(layout)}}}")
    values = {}
    for n in traced.param_names + traced.buffer_names:
        t = params.get(n, buffers.get(n))
        v = w.fresh("s")
        w.emit(f"{v} = spmd.load {w.symbol(n)} : "
               f"{tensor_type(t.shape, t.dtype)}")
        values[n] = v
    gathered = dict(values)
    for n in traced.param_names:
        layout = sharded.get(n)
        if not gather_first_axis or data_axis != 0 or not layout or \
                layout[0] is None:
            continue
        t = params[n]
        v = w.fresh("g")
        w.emit(f"{v} = spmd.redistribute {values[n]} to "
               f"{_spec((None,) + tuple(layout[1:]))} : "
               f"{tensor_type(t.shape, t.dtype)}")
        gathered[n] = v
    operands = [gathered[n]
                for n in traced.param_names + traced.buffer_names]
    for e in traced.extras:
        v = w.fresh("x")
        w.emit(f"{v} = spmd.load {w.symbol(e.name)} : "
               f"{tensor_type(e.shape, e.dtype)}")
        operands.append(v)
        if e.kind == "option":
            program.hyperparams.append((e.name, e.group, e.key, e.index))
    operands += [f"%in{i}" for i in range(len(traced.inputs))]
    if traced.rng_draws:
        # The random ops' [seed, offset] (_random.py), written by the host
        # before every call.
        program.rng_state = f"rng.{index}"
        state(program.rng_state, (2,), torch.int64, "buffer")
        v = w.fresh("s")
        w.emit(f"{v} = spmd.load {w.symbol(program.rng_state)} : "
               "tensor<2xi64>")
        operands.append(v)
    nres = len(res_types)
    results = []
    if nres:
        r = w.fresh("r")
        w.emit(f"{r}{':%d' % nres if nres > 1 else ''} = func.call "
               f"@{CALLEE}({', '.join(operands)}) : "
               f"({', '.join(arg_types)}) -> ({', '.join(res_types)})")
        results = [f"{r}#{i}" if nres > 1 else r for i in range(nres)]
    first_update = traced.num_outputs + len(traced.grad_names)
    grads = dict(zip(traced.grad_names,
                     results[traced.num_outputs:first_update]))

    if traced.optimizer is not None and not traced.traced_optimizer:
        for gi, group in enumerate(traced.optimizer.param_groups):
            names = [traced.param_names[traced.param_names.index(n)]
                     for n in _group_names(traced, group) if n in grads]
            if names:
                _optimizer_group(w, traced.optimizer, group, gi, names,
                                 params, values, grads, state, program,
                                 sharded)

    # States the step writes (BatchNorm's running statistics, a traced
    # optimizer's parameters and state, gradients): stored.
    types = {s.name: tensor_type(s.shape, s.dtype) for s in program.states}
    for name, value in zip(traced.updates, results[first_update:]):
        w.emit(f"spmd.store {value} to {w.symbol(name)} : {types[name]}")

    for i in range(traced.num_outputs):
        v = out_vals[i]
        name = f"output.{index}.{i}"
        state(name, v.shape, v.dtype, "output")
        program.outputs.append(name)
        w.emit(f"spmd.store {results[i]} to {w.symbol(name)} : "
               f"{tensor_type(v.shape, v.dtype)}")
    w.emit("return")

    program.text = "module {\n" + "\n".join(decls) + "\n" + (
        f"  func.func @{ENTRY}({', '.join(args)}) {{\n"
        + "\n".join(w.lines) + "\n  }\n") + imported + "\n}\n"
    return program


# The program state role of each kind of extra state (_trace.ExtraState).
_ROLE = {"grad": "gradient", "optimizer_state": "optimizer_state",
         "option": "optimizer_state"}


def _extra_layout(extra, params, sharded) -> tuple:
    """A gradient, or an optimizer state of its parameter's shape, is
    sharded as its parameter (fully_shard: this rank's chunk, as FSDP2's
    `.grad`); anything else is replicated."""
    if extra.kind == "option" or extra.param not in sharded:
        return ()
    if tuple(extra.shape) != tuple(params[extra.param].shape):
        return ()
    return sharded[extra.param]


def _group_names(traced, group):
    name_of = {id(p): n for n, p in traced.model.named_parameters()}
    return [name_of[id(p)] for p in group["params"]]


class _GlobalShape:
    """A parameter as the program sees it: its global shape (a fully
    sharded model's tensors hold this rank's chunk) and dtype."""

    def __init__(self, tensor, shape):
        self.shape, self.dtype = tuple(shape), tensor.dtype


def _optimizer_group(w, optimizer, group, gi, names, params, values, grads,
                     state, program, sharded):
    """One parameter group's update: one `spmd.sgd` or `spmd.adam` op over
    its parameters, with its state loaded before and stored after."""
    for n in names:
        if params[n].dtype != torch.float32:
            raise UnsupportedError(
                f"spmd.compile: optimizers update float32 parameters; {n} is "
                f"{params[n].dtype}",
                hint="keep float32 parameters (model.float()) and use "
                "torch.autocast in the step for bfloat16 compute")
    emitter = _GroupEmitter(w, group, gi, names, params, values, grads, state,
                            program, sharded)
    if isinstance(optimizer, torch.optim.SGD):
        emitter.sgd()
    elif isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        emitter.adam(isinstance(optimizer, torch.optim.AdamW))
    else:
        raise UnsupportedError(
            f"spmd.compile: optimizer {type(optimizer).__name__} is not "
            "supported (supported: torch.optim.SGD, Adam, AdamW)",
            hint="use one of those, or update the parameters after the "
            "compiled step returns its gradients")


class _GroupEmitter:
    """Writes one parameter group's optimizer op into the program (`w`):
    its state symbols (`state`), loads, the op, and the stores of its
    results."""

    def __init__(self, w, group, gi, names, params, values, grads, state,
                 program, sharded):
        self.w, self.group, self.gi, self.names = w, group, gi, names
        self.params, self.state, self.program = params, state, program
        self.sharded = sharded
        self.types = [tensor_type(params[n].shape, params[n].dtype)
                      for n in names]
        self.p_list = ", ".join(values[n] for n in names)
        self.g_list = ", ".join(grads[n] for n in names)

    def load_states(self, suffix):
        """Each parameter's `NAME.suffix` state, declared and loaded."""
        out = []
        for n, t in zip(self.names, self.types):
            self.state(f"{n}.{suffix}", self.params[n].shape,
                       self.params[n].dtype, "optimizer_state",
                       self.sharded.get(n, ()))
            v = self.w.fresh("o")
            self.w.emit(f"{v} = spmd.load {self.w.symbol(f'{n}.{suffix}')} : {t}")
            out.append(v)
        return out

    def load_scalar(self, name):
        """A float32 scalar state (a step counter), declared and loaded."""
        self.state(name, (), torch.float32, "optimizer_state")
        v = self.w.fresh("o")
        self.w.emit(f"{v} = spmd.load {self.w.symbol(name)} : tensor<f32>")
        return v

    def store(self, result, name, t):
        self.w.emit(f"spmd.store {result} to {self.w.symbol(name)} : {t}")

    def hyperparams(self, keys):
        """Loads each float option of the group from its state (the host
        writes the group's current value there before every call: LR
        schedulers and manual changes take effect without recompiling) and
        returns the `hyperparams(...)` clause."""
        entries = []
        for key in keys:
            option, index = ("betas", 0) if key == "beta1" else (
                ("betas", 1) if key == "beta2" else (key, None))
            name = f"optimizer.param_groups.{self.gi}.{key}"
            self.state(name, (), torch.float64, "optimizer_state")
            self.program.hyperparams.append((name, self.gi, option, index))
            v = self.w.fresh("h")
            self.w.emit(f"{v} = spmd.load {self.w.symbol(name)} : tensor<f64>")
            entries.append(f"{key} = {v}")
        return f" hyperparams({', '.join(entries)})"

    def emit_op(self, op, operands, count, attrs):
        """`%u:count = spmd.<op> operands {attrs}`; returns %u."""
        u = self.w.fresh("u")
        attr_dict = f" {{{', '.join(attrs)}}}" if attrs else ""
        self.w.emit(f"{u}:{count} = spmd.{op} {operands}{attr_dict} : "
                    f"{', '.join(self.types)}")
        return u

    def sgd(self):
        group, names, types = self.group, self.names, self.types
        attrs = []
        momentum = float(group.get("momentum", 0.0))
        # Whether momentum, dampening and weight decay are on is structural
        # (it keys the compile cache, api._optimizer_structure); their
        # values and lr's are run-time. Without dampening the update does
        # not read the step counter (one GPU kernel, not two).
        runtime = ["lr"]
        if momentum != 0.0:
            runtime.append("momentum")
            if (not group.get("nesterov", False)
                    and float(group.get("dampening", 0.0)) != 0.0):
                runtime.append("dampening")
        if float(group.get("weight_decay", 0.0)) != 0.0:
            runtime.append("weight_decay")
        for key in ("nesterov", "maximize"):
            if group.get(key, False):
                attrs.append(key)
        operands = f"params [{self.p_list}] grads [{self.g_list}]"
        step_name = f"optimizer.param_groups.{self.gi}.step"
        if momentum != 0.0:
            bufs = self.load_states("momentum_buffer")
            s = self.load_scalar(step_name)
            operands += f" momentum_buffers [{', '.join(bufs)}] step {s}"
        operands += self.hyperparams(runtime)
        k = len(names)
        count = k * (2 if momentum != 0.0 else 1) + (
            1 if momentum != 0.0 else 0)
        u = self.emit_op("sgd", operands, count, attrs)
        for i, (n, t) in enumerate(zip(names, types)):
            self.store(f"{u}#{i}", n, t)
            if momentum != 0.0:
                self.store(f"{u}#{k + i}", f"{n}.momentum_buffer", t)
        if momentum != 0.0:
            self.store(f"{u}#{2 * k}", step_name, "tensor<f32>")
        self.program.groups.append(("sgd", names, self.gi))

    def adam(self, is_adamw):
        group, names, types = self.group, self.names, self.types
        decoupled = group.get("decoupled_weight_decay", is_adamw)
        attrs = []
        runtime = ["lr", "beta1", "beta2", "eps"]
        if float(group["weight_decay"]) != 0.0:
            runtime.append("weight_decay")
        amsgrad = bool(group.get("amsgrad", False))
        for key, on in (("amsgrad", amsgrad),
                        ("maximize", group.get("maximize", False)),
                        ("decoupled_weight_decay", decoupled)):
            if on:
                attrs.append(key)
        m = self.load_states("exp_avg")
        v = self.load_states("exp_avg_sq")
        operands = (f"params [{self.p_list}] grads [{self.g_list}] exp_avgs "
                    f"[{', '.join(m)}] exp_avg_sqs [{', '.join(v)}]")
        if amsgrad:
            vm = self.load_states("max_exp_avg_sq")
            operands += f" max_exp_avg_sqs [{', '.join(vm)}]"
        steps = [self.load_scalar(f"{n}.step") for n in names]
        operands += f" steps [{', '.join(steps)}]"
        operands += self.hyperparams(runtime)
        k = len(names)
        u = self.emit_op("adam", operands, k * (5 if amsgrad else 4), attrs)
        suffixes = ["", "exp_avg", "exp_avg_sq"] + (
            ["max_exp_avg_sq"] if amsgrad else [])
        for j, suffix in enumerate(suffixes):
            for i, (n, t) in enumerate(zip(names, types)):
                self.store(f"{u}#{j * k + i}",
                           f"{n}.{suffix}" if suffix else n, t)
        base = len(suffixes) * k
        for i, n in enumerate(names):
            self.store(f"{u}#{base + i}", f"{n}.step", "tensor<f32>")
        self.program.groups.append(("adam", names, self.gi))

"""Traces a train step into one FX graph: forward and backward, with the
optimizer captured instead of traced.

`make_fx` runs the user's step once on fake tensors of the global shapes,
with the model reparametrized by graph inputs (its parameters and buffers)
and the optimizer's `step()` replaced by a capture of the gradients at that
moment. The graph's inputs are the parameters, the buffers and the step's
tensor arguments; its outputs are the step's returned tensors, then one
gradient per optimized parameter that has one.
"""

import contextlib
import linecache
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, List, Optional

import torch
from torch.fx import traceback as fx_traceback
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils import stateless
from torch.utils import _pytree as pytree

from . import _attention, _random, _sharding
from ._decompositions import UnsupportedError, decomposition_table
from .placement import Placement, Replicate, Shard

# Element types the compiled program and the runtime handle.
SUPPORTED_DTYPES = {torch.float32, torch.float64, torch.int64, torch.int32,
                    torch.bool}
_SUPPORTED_NAMES = "float32, float64, int64, int32, bool"
# What values inside the step may be besides (torch.autocast computes in
# bfloat16 or float16; parameters, inputs and optimizer state stay float32).
COMPUTE_DTYPES = SUPPORTED_DTYPES | {torch.bfloat16, torch.float16}


@dataclass
class InputInfo:
    position: int                  # index among the flattened step arguments
    local_shape: tuple
    global_shape: tuple
    dtype: torch.dtype
    placement: Placement
    # Where the caller's tensor is (a CUDA model's inputs are traced there).
    device: torch.device = torch.device("cpu")


@dataclass
class Traced:
    graph: torch.fx.GraphModule
    model: torch.nn.Module
    optimizer: Optional[torch.optim.Optimizer]
    param_names: List[str]
    buffer_names: List[str]
    inputs: List[InputInfo]
    num_outputs: int
    output_spec: Any
    # FQNs of the parameters whose gradients follow the outputs, in order.
    grad_names: List[str] = field(default_factory=list)
    # Random numbers one call draws (_random.py); when non-zero, the graph's
    # last input is the [seed, offset] int64 tensor they are drawn from.
    rng_draws: int = 0
    # Buffers the step updates in place (BatchNorm's running statistics):
    # their new values follow the gradients among the outputs, in order.
    buffer_updates: List[str] = field(default_factory=list)


_OWN_DIRS = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
_NN_MODULES = os.path.join("torch", "nn", "modules", "")
_AUTOGRAD = os.path.join("torch", "autograd", "")


def _fx_frames(tracer, summary, skip):
    """FX's filter (TracerBase._filter_traceback_frames: the frames named
    `forward` when the tracer records only those, as make_fx's does, else
    the frames from the first `forward` on; torch's uninteresting files left
    out), with the files to leave out computed once, not once per frame."""
    if tracer._record_forward_stack_traces_only:
        frames = [f for f in summary if f.name == "forward" or
                  f.filename.endswith("torch/__init__.py")]
    else:
        first = next((i for i, f in enumerate(summary)
                      if f.name == "forward"), len(summary))
        frames = summary[first:]
    return traceback.StackSummary.from_list(
        [f for f in frames if f.filename not in skip])


def _frames_from_step(tracer, summary):
    """The frames FX records for a traced op (from the first `forward` on)
    when they include the user's code; for a model made only of torch's
    modules (an nn.Sequential), whose FX frames are all torch's, the frames
    from the user's step function inward, so that errors name the user's
    call of the model. The backward keeps FX's frames."""
    skip = _uninteresting_files()
    fx = _fx_frames(tracer, summary, skip)
    if not len(fx) or any(not f.filename.startswith(_OWN_DIRS) for f in fx):
        # The user's frames, or none: ops of the step itself stay without
        # a trace (torch-mlir then locates a failing backward op by the
        # forward op before it, not by the step's own line).
        return fx
    frames = list(summary)
    for i in range(len(frames) - 1, -1, -1):
        if frames[i].filename == __file__ and frames[i].name == "step":
            if any(_AUTOGRAD in f.filename for f in frames[i + 1:]):
                return fx
            return traceback.StackSummary.from_list(
                [f for f in frames[i + 1:] if f.filename not in skip])
    return fx


# The modules of torch's uninteresting_files() (symbolic_shapes.py; FX's
# filter leaves their frames out of stack traces).
_UNINTERESTING_MODULES = (
    "torch.fx.experimental.symbolic_shapes", "torch.export._trace",
    "torch.fx.experimental.recording", "torch.fx.experimental.sym_node",
    "torch.fx.interpreter", "torch.fx._symbolic_trace", "torch",
    "torch._compile", "torch._dynamo.eval_frame", "torch._inductor.sizevars",
    "torch._library.custom_ops", "torch._library.fake_impl",
    "torch._subclasses.meta_utils", "torch._subclasses.fake_tensor",
    "torch._logging._internal", "torch._logging.structured",
    "torch._dynamo.external_utils", "torch._dynamo.polyfills")
_UNINTERESTING = {"modules": -1, "files": frozenset()}


def _uninteresting_files() -> frozenset:
    """torch's uninteresting_files(), for the modules loaded so far (one not
    loaded has no frame to leave out): torch's imports inductor and
    torch.export to name their files (half a second of a cached start) and
    FX calls it once per frame of every node. Recomputed when a module was
    loaded since."""
    if _UNINTERESTING["modules"] != len(sys.modules):
        files = {"<string>"}
        for name in _UNINTERESTING_MODULES:
            path = getattr(sys.modules.get(name), "__file__", None)
            if path:
                files.add(path)
        loader = sys.modules.get("torch._dynamo.polyfills.loader")
        for module in getattr(loader, "POLYFILLED_MODULES", ()):
            path = getattr(module, "__file__", None)
            if path:
                files.add(path)
        _UNINTERESTING.update(modules=len(sys.modules),
                              files=frozenset(files))
    return _UNINTERESTING["files"]
_FX_FILTER = torch.fx.proxy.TracerBase._filter_traceback_frames


_FX_CREATE_NODE = torch.fx.proxy.TracerBase.create_node


def _stack_summary(frame) -> traceback.StackSummary:
    """The frames from `frame` out to the traced `step` (the ones FX's
    filter and _frames_from_step choose from; FX walks on to the program's
    first frame), outermost first, without reading source lines: `format()`
    reads the lines of the few frames the filter keeps, instead of FX's
    every frame of every node (half of make_fx's time on a 4-layer GPT)."""
    frames = []
    while frame is not None:
        code = frame.f_code
        frames.append((code.co_filename, frame.f_lineno, code.co_name))
        if code.co_name == "step" and code.co_filename == __file__:
            break
        frame = frame.f_back
    return traceback.StackSummary.from_list([
        traceback.FrameSummary(path, line, name, lookup_line=False)
        for path, line, name in reversed(frames)])


def _create_node_with_step_frame(tracer, *args, **kwargs):
    """FX's create_node, with the stack trace recorded cheaply
    (_stack_summary; the same frames and filter as FX's); a node with no
    stack trace that the step itself creates (not its backward) also gets
    the user's line as meta["spmd_step_frame"] (for spmd's own errors;
    torch-mlir's locations keep FX's stack traces)."""
    record = tracer.record_stack_traces
    tracer.record_stack_traces = False
    try:
        node = _FX_CREATE_NODE(tracer, *args, **kwargs)
    finally:
        tracer.record_stack_traces = record
    if record and not node.stack_trace:
        frames = tracer._filter_traceback_frames(
            _stack_summary(sys._getframe(1)))
        if frames:
            node.stack_trace = "".join(frames.format()).strip()
    if not node.stack_trace:
        frame = sys._getframe(1)
        inner = None
        while frame is not None:
            path = frame.f_code.co_filename
            if path == __file__ and frame.f_code.co_name == "step":
                break
            if _AUTOGRAD in path:
                return node
            if inner is None and not path.startswith(_OWN_DIRS) and \
                    not path.startswith("<"):
                inner = frame
            frame = frame.f_back
        if frame is not None and inner is not None:
            code = linecache.getline(inner.f_code.co_filename,
                                     inner.f_lineno).strip()
            node.meta["spmd_step_frame"] = (
                f"{inner.f_code.co_filename}:{inner.f_lineno}: {code}")
    return node


@contextlib.contextmanager
def _stack_traces_from_step():
    torch.fx.proxy.TracerBase._filter_traceback_frames = _frames_from_step
    torch.fx.proxy.TracerBase.create_node = _create_node_with_step_frame
    try:
        yield
    finally:
        torch.fx.proxy.TracerBase._filter_traceback_frames = _FX_FILTER
        torch.fx.proxy.TracerBase.create_node = _FX_CREATE_NODE


def user_frame(stack_trace: Optional[str]) -> Optional[str]:
    """`file:line: code` of the innermost frame outside torch and spmd."""
    if not stack_trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)',
                        stack_trace)
    for i in range(len(frames) - 1, -1, -1):
        path, line, code = frames[i]
        if not path.startswith(_OWN_DIRS) and not path.startswith("<"):
            where = f"{path}:{line}: {code.strip()}"
            # Called through torch's modules (the user's model(x) on an
            # nn.Sequential): the innermost module's line names it.
            inner = [f for f in frames[i + 1:] if _NN_MODULES in f[0]]
            if inner:
                path, line, code = inner[-1]
                where += f"\n  in {path}:{line}: {code.strip()}"
            return where
    # All inside torch: the innermost frame still names the module (e.g.
    # torch/nn/modules/dropout.py).
    if frames:
        path, line, code = frames[-1]
        return f"{path}:{line}: {code.strip()}"
    return None


@contextlib.contextmanager
def _without_onednn():
    """oneDNN off while tracing: CPU LSTMs would otherwise trace as one
    opaque mkldnn_rnn_layer (with a uint8 workspace) instead of their math;
    the compiled program computes the same math. (Not
    torch.backends.mkldnn.flags, which also sets oneDNN's TF32 mode and
    warns on every CPU build.)"""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


def _innermost_user_frame(tb) -> Optional[str]:
    """`file:line: code` of the innermost frame of `tb` outside torch and
    spmd (where an exception in tracing came from)."""
    for frame in reversed(traceback.extract_tb(tb)):
        if not frame.filename.startswith(_OWN_DIRS) and \
                not frame.filename.startswith("<"):
            return f"{frame.filename}:{frame.lineno}: {frame.line}"
    return None


def node_frame(node) -> Optional[str]:
    """user_frame of `node`, or of the closest node before it that has a
    stack trace (decompositions leave some nodes without one)."""
    for _ in range(32):
        if node is None or node.op == "root":
            return None
        frame = user_frame(node.meta.get("stack_trace")) or \
            node.meta.get("spmd_step_frame")
        if frame:
            return frame
        node = node.prev
    return None


def _find_model_and_optimizer(leaves):
    modules = [x for x in leaves if isinstance(x, torch.nn.Module)]
    optimizers = [x for x in leaves if isinstance(x, torch.optim.Optimizer)]
    if len(modules) != 1:
        raise UnsupportedError(
            f"spmd.compile: the step must take exactly one torch.nn.Module "
            f"argument (found {len(modules)})",
            hint="pass the model as one argument (wrap several modules in "
            "one nn.Module)")
    if len(optimizers) > 1:
        raise UnsupportedError(
            "spmd.compile: the step takes more than one optimizer",
            hint="use one optimizer with a param group per setting")
    return modules[0], (optimizers[0] if optimizers else None)


class _OptimizerCapture:
    """During tracing: the optimizer's groups hold the traced parameters, and
    `step()` records their gradients instead of updating anything."""

    def __init__(self, optimizer, traced_by_id):
        self.optimizer = optimizer
        self.traced_by_id = traced_by_id
        self.grads = None

    def _step(self, closure=None):
        if closure is not None:
            raise UnsupportedError(
                "spmd.compile: optimizer.step(closure) is not supported",
                hint="compute the loss in the step and call "
                "optimizer.step() without a closure")
        if self.grads is not None:
            raise UnsupportedError(
                "spmd.compile: optimizer.step() is called more than once in "
                "one train step",
                hint="accumulate over micro-batches with one backward() each "
                "and call optimizer.step() once, or compile a step per "
                "update")
        self.grads = [[p.grad for p in group["params"]]
                      for group in self.optimizer.param_groups]

    def __enter__(self):
        if self.optimizer is None:
            return self
        self.saved = [group["params"] for group in self.optimizer.param_groups]
        for group in self.optimizer.param_groups:
            group["params"] = [self.traced_by_id[id(p)]
                               for p in group["params"]]
        self.optimizer.step = self._step
        return self

    def __exit__(self, *exc):
        if self.optimizer is None:
            return False
        for group, params in zip(self.optimizer.param_groups, self.saved):
            group["params"] = params
        del self.optimizer.step
        return False


@contextlib.contextmanager
def _compiling():
    """torch.compiler.is_compiling() is True while the step is traced, as
    under torch.export's non-strict tracing (also make_fx): libraries then
    take their traceable paths instead of data-dependent checks (Hugging
    Face's `torch.all(mask == 1)` shortcut for attention masks, its padding
    warning)."""
    saved = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = saved


class _Harness:
    """The user's step made a function of its traced state: `step(params,
    buffers, inputs, rng)` runs it with the model reparametrized by
    `params` and `buffers` and the optimizer captured; what it learns of the
    step's outputs lands in `result`."""

    def __init__(self, fn, args, kwargs, world: int, default: Placement):
        leaves, spec = pytree.tree_flatten((args, kwargs))
        model, optimizer = _find_model_and_optimizer(leaves)
        named_params = dict(model.named_parameters())
        named_buffers = dict(model.named_buffers())
        name_of = _parameter_names(named_params, optimizer)
        self.inputs = inputs = _input_infos(leaves, world, default)
        _check_state(named_params, named_buffers)
        self.model, self.optimizer = model, optimizer
        self.named_params, self.named_buffers = named_params, named_buffers
        self.param_names = param_names = list(named_params)
        self.buffer_names = buffer_names = list(named_buffers)
        self.result = result = {}

        def step(params, buffers, tensors, rng):
            with _random.tracing(rng) as draws:
                out = traced_step(params, buffers, tensors)
            result["rng_draws"] = draws.drawn
            return out

        def traced_step(params, buffers, tensors):
            flat = list(leaves)
            for info, t in zip(inputs, tensors):
                flat[info.position] = t
            call_args, call_kwargs = pytree.tree_unflatten(flat, spec)
            mapping = dict(zip(param_names, params))
            mapping.update(zip(buffer_names, buffers))
            traced_by_id = {id(named_params[n]): t
                            for n, t in zip(param_names, params)}
            capture = _OptimizerCapture(optimizer, traced_by_id)
            with stateless._reparametrize_module(model, mapping,
                                                 tie_weights=True), \
                    capture, _attention.traced_attention():
                out = fn(*call_args, **call_kwargs)
            out_leaves, out_spec = pytree.tree_flatten(out)
            if not all(isinstance(o, torch.Tensor) for o in out_leaves):
                raise UnsupportedError(
                    "spmd.compile: the step may only return tensors (or "
                    "nested tuples/lists/dicts of them)",
                    hint="return the tensor and call .item() after the step")
            result["num_outputs"] = len(out_leaves)
            result["output_spec"] = out_spec
            grads, result["grad_names"] = _captured_grads(optimizer, capture,
                                                          name_of)
            return (*[o.detach() for o in out_leaves], *grads)

        self.step = step

    def state(self, like=None):
        """The parameters, buffers and random state (seed, offset) the step
        is traced with (_traced_state; `like` makes each)."""
        params, buffers = _traced_state(
            self.model, self.named_params, self.named_buffers,
            self.param_names, self.buffer_names, like)
        where = next((t.device for t in params + buffers),
                     torch.device("cpu"))
        rng = torch.zeros(2, dtype=torch.int64, device=where)
        return params, buffers, rng if like is None else like(rng)

    def traced(self, graph, buffer_updates=()) -> Traced:
        return Traced(graph, self.model, self.optimizer, self.param_names,
                      self.buffer_names, self.inputs,
                      self.result["num_outputs"], self.result["output_spec"],
                      self.result["grad_names"], self.result["rng_draws"],
                      list(buffer_updates))


def trace(fn, args, kwargs, world: int, default: Placement,
          observe=None) -> Traced:
    """`world`: the ranks the batch is split over (the data-parallel axis
    of the mesh). `observe(step) -> step`: wraps the step make_fx runs (the
    program cache's op recorder, _program_cache.py)."""
    harness = _Harness(fn, args, kwargs, world, default)
    params, buffers, rng = harness.state()
    step = harness.step if observe is None else observe(harness.step)
    inputs = harness.inputs
    try:
        with torch.enable_grad(), _stack_traces_from_step(), _compiling(), \
                _without_onednn():
            graph = make_fx(step, decomposition_table=decomposition_table(),
                            tracing_mode="fake", record_stack_traces=True)(
                params, buffers, [_fake_input(i) for i in inputs], rng)
    except UnsupportedError:
        raise
    except Exception as err:  # make_fx: data-dependent control flow, ...
        raise _tracing_failed(err) from err
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    _check_graph(graph, set(placeholders[len(params):
                                         len(params) + len(buffers)]))
    flat_inputs = params + buffers + [_fake_input(i) for i in inputs]
    if harness.result["rng_draws"]:
        flat_inputs.append(rng)
    else:
        _drop_rng_input(graph)
    graph = _functionalize(graph, flat_inputs)
    updates = _buffer_updates_as_outputs(graph, len(params),
                                         harness.buffer_names)
    return harness.traced(graph, updates)


def run_on_fake(fn, args, kwargs, world: int, default: Placement,
                observe) -> Traced:
    """The step run once as `trace` runs it, on fake tensors, but without
    make_fx's proxies and decompositions (a fifth of the time), for
    `observe` to see its ops. Fake tensors (unlike meta ones) are where the
    model is: CPU autocast and device checks in the step behave as in the
    trace. The result has no graph. Raises whatever the step raises
    (tracing then reports it properly)."""
    harness = _Harness(fn, args, kwargs, world, default)
    mode = FakeTensorMode()

    def fake(t, shape=None):
        if shape is None:
            return mode.from_tensor(t.detach())
        with mode:
            return torch.empty(shape, dtype=t.dtype, device=t.device)
    params, buffers, rng = harness.state(fake)
    with mode:
        inputs = [_fake_input(i) for i in harness.inputs]
    with mode, torch.enable_grad(), _compiling(), _without_onednn(), \
            _fx_tracing():
        observe(harness.step)(params, buffers, inputs, rng)
    return harness.traced(None)


@contextlib.contextmanager
def _fx_tracing():
    """torch.fx's is_fx_tracing() as make_fx's run has it (True), for code
    in the step that asks."""
    from torch.fx import _symbolic_trace
    saved = _symbolic_trace._is_fx_tracing_flag
    _symbolic_trace._is_fx_tracing_flag = True
    try:
        yield
    finally:
        _symbolic_trace._is_fx_tracing_flag = saved


def _parameter_names(named_params, optimizer) -> dict:
    """The name of each parameter, by id; every tensor the optimizer updates
    must be one."""
    name_of = {id(p): n for n, p in named_params.items()}
    if optimizer is not None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in name_of:
                    raise UnsupportedError(
                        "spmd.compile: the optimizer updates a tensor that is "
                        "not a parameter of the model",
                        hint="build the optimizer from model.parameters()")
    return name_of


def _input_infos(leaves, world: int, default: Placement) -> List[InputInfo]:
    """The step's tensor arguments: where each sits among the flattened
    arguments, its local and global shapes and its placement (checked)."""
    inputs = []
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor):
            continue
        if leaf.device.type not in ("cpu", "cuda"):
            raise UnsupportedError(
                f"spmd.compile: input {len(inputs)} is on {leaf.device}; "
                "compiled steps run on the CPU or a CUDA GPU",
                hint="pass CPU tensors (x.cpu()), or CUDA tensors to a step "
                "of a model on the GPU")
        placement = getattr(leaf, "_spmd_placement", default)
        shape = tuple(leaf.shape)
        if leaf.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedError(
                f"spmd.compile: input {len(inputs)} has dtype {leaf.dtype}; "
                f"supported: {_SUPPORTED_NAMES}",
                hint="cast it before the call (x.float()); for mixed "
                "precision keep float32 inputs and use torch.autocast in "
                "the step")
        if isinstance(placement, Shard):
            if placement.dim >= len(shape):
                raise UnsupportedError(
                    f"spmd.compile: input {len(inputs)} of shape "
                    f"{list(shape)} cannot be Shard({placement.dim})",
                    hint="mark it spmd.override_placement(x, Replicate()) or "
                    "shard a dimension it has")
            glob = list(shape)
            glob[placement.dim] *= world
            glob = tuple(glob)
        else:
            glob = shape
        inputs.append(InputInfo(i, shape, glob, leaf.dtype, placement,
                                leaf.device))
    return inputs


def _check_state(named_params, named_buffers):
    """Parameters and buffers are CPU or CUDA tensors (all on one device,
    _device.check_model) of a supported dtype."""
    for name, t in list(named_params.items()) + list(named_buffers.items()):
        if t.device.type not in ("cpu", "cuda"):
            raise UnsupportedError(
                f"spmd.compile: {name} is on {t.device}; compiled steps run "
                "on the CPU or a CUDA GPU",
                hint="move the model to the CPU (model.cpu()) or the GPU")
        if t.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedError(
                f"spmd.compile: {name} has dtype {t.dtype}; supported: "
                f"{_SUPPORTED_NAMES}",
                hint="keep float32 parameters (model.float()) and use "
                "torch.autocast in the step for bfloat16 compute")


def _captured_grads(optimizer, capture, name_of):
    """The gradients the optimizer's step() saw, in parameter-group order,
    and their parameters' names."""
    grads, grad_names = [], []
    if optimizer is None:
        return grads, grad_names
    if capture.grads is None:
        raise UnsupportedError(
            "spmd.compile: the step takes an optimizer but never calls its "
            "step()",
            hint="call optimizer.step() in the step, or do not pass the "
            "optimizer")
    for group, group_grads in zip(optimizer.param_groups, capture.grads):
        for p, g in zip(group["params"], group_grads):
            if g is not None:
                grads.append(g)
                grad_names.append(name_of[id(p)])
    return grads, grad_names


def _fake_input(info: InputInfo) -> torch.Tensor:
    """A tensor of the input's global shape (only shapes matter to make_fx)."""
    if info.dtype.is_floating_point:
        return torch.empty(info.global_shape, dtype=info.dtype,
                           device=info.device)
    return torch.zeros(info.global_shape, dtype=info.dtype,
                       device=info.device)


def _traced_state(model, named_params, named_buffers, param_names,
                  buffer_names, like=None):
    """The parameters and buffers the step is traced with: copies, and for a
    fully sharded model's parameters (this rank's chunks) tensors of their
    global shapes. `like(t, shape=None)`: another way to make each (fake
    tensors)."""
    shapes = {n: shape for n, (shape, _) in
              _sharding.sharded_params(model).items()}

    def copy(t, shape=None):
        if shape is None:
            return t.detach().clone()
        return torch.empty(shape, dtype=t.dtype, device=t.device)
    like = like or copy
    params = [like(named_params[n], shapes.get(n))
              .requires_grad_(named_params[n].requires_grad)
              for n in param_names]
    buffers = [like(named_buffers[n]) for n in buffer_names]
    return params, buffers


def _tracing_failed(err: Exception) -> UnsupportedError:
    """The error for an exception make_fx raised: its own limits (a guard
    on a data-dependent value) get the how-to; any other exception is the
    step's own error. Both name the user's line."""
    where = _innermost_user_frame(err.__traceback__)
    dynamic = "DataDependent" in type(err).__name__
    return UnsupportedError(
        f"spmd.compile: tracing the step failed ({type(err).__name__}): "
        f"{str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        + (f"\n  at {where}" if where else "")
        + ("\n  (steps must be traceable by make_fx: no data-dependent "
           "Python control flow or shapes)" if dynamic else ""),
        hint="keep branches on tensor values, .item() and "
        "data-dependent shapes out of the step, or express them with "
        "torch.where" if dynamic else None)


def _drop_rng_input(graph):
    """No random op: the [seed, offset] input is unused; drop it.
    (Placeholders become plain positional inputs: the pytree signature of
    make_fx would still expect it.)"""
    rng_input = [n for n in graph.graph.nodes if n.op == "placeholder"][-1]
    graph.graph.erase_node(rng_input)
    graph.graph._codegen = torch.fx.graph.CodeGen()
    graph.recompile()


def _buffer_updates_as_outputs(graph, num_params, buffer_names):
    """Functionalization leaves each in-place update of a buffer (BatchNorm's
    running statistics, num_batches_tracked) as a final `copy_` into its
    input; those become extra outputs (stored to the buffer's state by the
    program) and the copies go. Returns the updated buffers' names."""
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    buffer_of = {placeholders[num_params + i]: name
                 for i, name in enumerate(buffer_names)}
    updates = {}
    for node in list(graph.graph.nodes):
        if (node.op == "call_function"
                and node.target == torch.ops.aten.copy_.default
                and node.args[0] in buffer_of):
            updates[buffer_of[node.args[0]]] = node.args[1]
            graph.graph.erase_node(node)
    if not updates:
        return []
    output = next(n for n in graph.graph.nodes if n.op == "output")
    names = [n for n in buffer_names if n in updates]
    output.args = (tuple(output.args[0]) + tuple(updates[n] for n in names),)
    graph.recompile()
    return names


def _check_graph(graph: torch.fx.GraphModule, buffers=frozenset()):
    """Every value the graph computes has an element type spmd handles, and
    no op mutates a graph input other than a buffer (`buffers`: their
    placeholders; BatchNorm's running statistics are updated in place)."""
    for node in graph.graph.nodes:
        if node.op != "call_function":
            continue
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        if not node.users:
            vals = []  # dead (BatchNorm's unused uint8 reserve): not compiled
        for v in vals:
            if isinstance(v, torch.Tensor) and v.dtype not in COMPUTE_DTYPES:
                where = node_frame(node)
                raise UnsupportedError(
                    f"spmd.compile: {node.target} computes a {v.dtype} "
                    f"tensor, which spmd does not support"
                    + (f"\n  at {where}" if where else ""),
                    hint=f"compute in {_SUPPORTED_NAMES} (bfloat16 and "
                    "float16 inside the step)")
        if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags",
                                                          ()):
            where = node_frame(node)
            raise UnsupportedError(
                f"spmd.compile: {node.target} draws random numbers in a way "
                "spmd does not support (supported: dropout, rand, randn, "
                "bernoulli, uniform_, normal_ and their _like forms)"
                + (f"\n  at {where}" if where else ""),
                hint="draw these numbers outside the step and pass them in, "
                "or use a supported form (e.g. torch.rand and a comparison)")
        schema = getattr(node.target, "_schema", None)
        if schema is not None and schema.is_mutable and any(
                _written(node, i, a).op == "placeholder"
                and _written(node, i, a) not in buffers
                for i, a in enumerate(schema.arguments)
                if a.alias_info is not None and a.alias_info.is_write
                and isinstance(_written(node, i, a), torch.fx.Node)):
            where = node_frame(node)
            raise UnsupportedError(
                f"spmd.compile: {node.target} updates a parameter or an input "
                "in place, which is not supported (buffers may be updated)"
                + (f"\n  at {where}" if where else ""),
                hint="change parameters only through the optimizer; keep "
                "state the forward updates in a buffer (register_buffer)")


def _functionalize(graph, flat_inputs):
    """The graph without in-place ops on intermediates (decompositions of
    backward ops write into fresh tensors: `copy_`, `logical_and_`, ...,
    which torch-mlir's stateless import cannot take). Retraced under
    functionalization, keeping every node's stack trace."""
    if not any(isinstance(n.target, torch._ops.OpOverload)
               and n.target._schema.is_mutable
               for n in graph.graph.nodes if n.op == "call_function"):
        return graph

    def run(*args):
        return torch.fx.Interpreter(graph).run(*args)
    with fx_traceback.preserve_node_meta():
        return make_fx(torch.func.functionalize(run),
                       tracing_mode="fake")(*flat_inputs)


def _written(node, index, argument):
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(argument.name)

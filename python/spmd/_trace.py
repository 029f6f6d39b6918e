"""Traces a train step into one FX graph: forward and backward, and the
optimizer captured (SGD, Adam, AdamW) or traced (any other, _optimizer.py).

`make_fx` runs the user's step once on fake tensors of the global shapes,
with the model reparametrized by graph inputs (its parameters and buffers).
A first-class optimizer's `step()` is replaced by a capture of the
gradients at that moment; any other optimizer's step runs on the traced
parameters and state. Gradients follow eager: a `.grad` present before
the call is a graph input the backward accumulates into, and a `.grad`
present after it is a graph output (the program keeps both in a state
`<FQN>.grad`, which `.grad` then views).

The graph's inputs are the parameters, the buffers, the extra states
(`Traced.extras`: gradients, a traced optimizer's state and run-time
options), the step's tensor arguments and the random state; its outputs
are the step's returned tensors, one gradient per parameter a first-class
optimizer updates, then the new values of the states the step changes
(`Traced.updates`).
"""

import collections
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

from . import _attention, _checkpointing, _optimizer, _random, _sharding
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
class ExtraState:
    """A program state the step reads besides parameters and buffers, or
    creates: a gradient (`kind` "grad", `<param>.grad`), a traced
    optimizer's state tensor ("optimizer_state", `<param>.<key>`) or a
    run-time option of its group ("option", `optimizer.param_groups.<gi>.
    <key>[.<index>]`)."""
    name: str
    kind: str
    param: str = ""                # the parameter's FQN (grad, state)
    key: Any = None                # the state's key, or the option's
    index: Optional[int] = None    # the option's index in its tuple
    group: int = 0                 # the option's param group
    shape: tuple = ()              # global
    dtype: torch.dtype = torch.float32


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
    # States the step writes (buffers updated in place such as BatchNorm's
    # running statistics, parameters a traced optimizer updates, gradients,
    # optimizer state): their new values follow the gradients among the
    # outputs, in order.
    updates: List[str] = field(default_factory=list)
    # Graph inputs after the buffers (gradients present before the call, a
    # traced optimizer's state and run-time options), in order.
    extras: List[ExtraState] = field(default_factory=list)
    # States the step creates (not inputs): a gradient without one before
    # the call, lazily initialized optimizer state.
    created: List[ExtraState] = field(default_factory=list)
    # Parameters that have a .grad after the call (the others' is None).
    grads_after: List[str] = field(default_factory=list)
    # A traced optimizer's state that is not a tensor, after the step:
    # {param FQN: {key: value}} (constants of the program).
    optimizer_constants: dict = field(default_factory=dict)
    # The returned structure's leaves that are not tensors (None, numbers,
    # strings): {leaf index: value}; the tensors fill the other leaves.
    output_constants: dict = field(default_factory=dict)

    @property
    def traced_optimizer(self) -> bool:
        return _optimizer.is_traced(self.optimizer)


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
    if _checkpointing.replaying():
        node.meta["spmd_recompute"] = True
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
    """During tracing: the optimizer's groups hold the traced parameters.
    A first-class optimizer's `step()` records their gradients instead of
    updating anything; any other's runs on the traced parameters, with
    `state` (the traced state {traced param: {key: value}}) and `options`
    ({group index: {(key, index): traced scalar}}) in place of its own."""

    def __init__(self, optimizer, traced_by_id, state=None, options=None,
                 clone_grads=False):
        self.optimizer = optimizer
        self.traced_by_id = traced_by_id
        self.state = state
        self.options = options or {}
        # A captured gradient the step changes later (zero_grad without
        # set_to_none) is captured as a copy (trace() retraces so).
        self.clone_grads = clone_grads
        self.grads = None
        self.versions = []
        self.stepped = False

    def _step(self, closure=None):
        if self.stepped:
            raise UnsupportedError(
                "spmd.compile: optimizer.step() is called more than once in "
                "one train step",
                hint="accumulate over micro-batches with one backward() each "
                "and call optimizer.step() once, or compile a step per "
                "update")
        self.stepped = True
        if _optimizer.is_traced(self.optimizer):
            return self._traced_step(closure)
        if closure is not None:
            raise UnsupportedError(
                "spmd.compile: optimizer.step(closure) is not supported",
                hint="compute the loss in the step and call "
                "optimizer.step() without a closure")
        self.grads = []
        for group in self.optimizer.param_groups:
            grads = []
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    if self.clone_grads:
                        g = g.clone()
                    else:
                        self.versions.append((g, g._version))
                grads.append(g)
            self.grads.append(grads)
        return None

    def _traced_step(self, closure):
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None and p.grad.is_sparse:
                    raise UnsupportedError(
                        f"spmd.compile: {type(self.optimizer).__name__} "
                        "takes sparse gradients, which spmd does not "
                        "compile",
                        hint="use dense gradients (nn.Embedding("
                        "sparse=False)) and a dense optimizer")
        saved = self.optimizer.state
        self.optimizer.state = self.state
        try:
            with contextlib.ExitStack() as stack:
                probed = _optimizer.probe_runtime_options(self.optimizer)
                for gi, group in enumerate(self.optimizer.param_groups):
                    stack.enter_context(_optimizer.traced_options(
                        group, self.options.get(gi, {}),
                        probed[gi].foreach))
                return _optimizer.run_step(self.optimizer, closure)
        except UnsupportedError:
            raise
        except Exception as err:
            raise _optimizer.untraceable(self.optimizer, err) from err
        finally:
            self.optimizer.state = saved

    def changed_after_capture(self) -> bool:
        return any(g._version != v for g, v in self.versions)

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


class _RetraceWithClones(Exception):
    """A captured gradient changed after optimizer.step() captured it."""


class _Harness:
    """The user's step made a function of its traced state: `step(params,
    buffers, extras, inputs, rng)` runs it with the model reparametrized by
    `params` and `buffers`, gradients present before the call set from
    `extras`, and the optimizer captured or traced; what it learns of the
    step's outputs lands in `result`."""

    def __init__(self, fn, args, kwargs, world: int, default: Placement,
                 checkpointing=False):
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
        self.extras = extras = _extra_states(model, named_params, optimizer,
                                             name_of)
        self.result = result = {}
        self.clone_grads = False

        def step(params, buffers, extra, tensors, rng):
            with _random.tracing(rng) as draws:
                out = traced_step(params, buffers, extra, tensors)
            result["rng_draws"] = draws.drawn
            return out

        def traced_step(params, buffers, extra, tensors):
            flat = list(leaves)
            for info, t in zip(inputs, tensors):
                flat[info.position] = t
            call_args, call_kwargs = pytree.tree_unflatten(flat, spec)
            mapping = dict(zip(param_names, params))
            mapping.update(zip(buffer_names, buffers))
            traced_by_id = {id(named_params[n]): t
                            for n, t in zip(param_names, params)}
            by_name = dict(zip(param_names, params))
            extra_by_name = {e.name: t for e, t in zip(extras, extra)}
            for e, t in zip(extras, extra):
                if e.kind == "grad":
                    by_name[e.param].grad = t
            state, options = None, None
            if _optimizer.is_traced(optimizer):
                state, options = _traced_optimizer_state(
                    optimizer, name_of, by_name, extras, extra)
            capture = _OptimizerCapture(optimizer, traced_by_id, state,
                                        options, self.clone_grads)
            with stateless._reparametrize_module(model, mapping,
                                                 tie_weights=True), \
                    capture, _attention.traced_attention(), \
                    _checkpointing.blocks(model, checkpointing):
                out = fn(*call_args, **call_kwargs)
            if capture.changed_after_capture():
                raise _RetraceWithClones()
            out_leaves, out_spec = _returned(out)
            result["num_outputs"] = len(out_leaves)
            result["output_spec"] = out_spec
            result["output_constants"] = _returned_constants(out)
            grads, result["grad_names"] = _captured_grads(optimizer, capture,
                                                          name_of)
            explicit, created, dropped = _state_outputs(
                optimizer, name_of, by_name, extra_by_name, state, result)
            result["explicit_updates"] = [name for name, _ in explicit]
            result["created"] = created
            result["dropped"] = dropped
            return (*[o.detach() for o in out_leaves], *grads,
                    *[t.detach() for _, t in explicit])

        self.step = step

    def state(self, like=None):
        """The parameters, buffers, extra states and random state (seed,
        offset) the step is traced with (_traced_state; `like` makes
        each)."""
        params, buffers = _traced_state(
            self.model, self.named_params, self.named_buffers,
            self.param_names, self.buffer_names, like)
        where = next((t.device for t in params + buffers),
                     torch.device("cpu"))

        def make(e):
            if like is not None:
                return like(torch.empty((), dtype=e.dtype, device=where),
                            e.shape)
            return torch.empty(e.shape, dtype=e.dtype, device=where)
        extra = [make(e) for e in self.extras]
        rng = torch.zeros(2, dtype=torch.int64, device=where)
        return params, buffers, extra, rng if like is None else like(rng)

    def traced(self, graph, updates=()) -> Traced:
        r = self.result
        return Traced(graph, self.model, self.optimizer, self.param_names,
                      self.buffer_names, self.inputs, r["num_outputs"],
                      r["output_spec"], r["grad_names"], r["rng_draws"],
                      list(updates), list(self.extras), r["created"],
                      r["grads_after"], r["optimizer_constants"],
                      r["output_constants"])


def _returned(out):
    """The step's returned tensors and the structure they fill: None,
    numbers, strings and other plain constants are leaves of the structure
    kept as they were returned; anything else is an error naming it."""
    leaves, spec = pytree.tree_flatten(out)
    tensors = []
    for i, (path, leaf) in enumerate(pytree.tree_flatten_with_path(out)[0]):
        if isinstance(leaf, torch.Tensor):
            tensors.append(leaf)
        elif not isinstance(leaf, _CONSTANT_TYPES):
            where = pytree.keystr(path) or "(the returned value itself)"
            raise UnsupportedError(
                f"spmd.compile: the step returns a {type(leaf).__name__} at "
                f"{where}; a step may return tensors, None, numbers, "
                "strings and tuples/lists/dicts of them",
                hint="return tensors (and compute other values from them "
                "after the step)")
    return tensors, spec


_CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes,
                   torch.dtype, torch.device)


def _returned_constants(out) -> dict:
    return {i: leaf for i, leaf in enumerate(pytree.tree_flatten(out)[0])
            if not isinstance(leaf, torch.Tensor)}


def _extra_states(model, named_params, optimizer, name_of):
    """The extra states the step reads: each present `.grad`, then a traced
    optimizer's state tensors and run-time options (_optimizer.py)."""
    extras = []
    for n, p in named_params.items():
        if p.grad is not None:
            extras.append(ExtraState(
                f"{n}.grad", "grad", param=n,
                shape=_sharding.global_shape(model, n, p), dtype=p.dtype))
    if not _optimizer.is_traced(optimizer):
        return extras
    runtime = _optimizer.probe_runtime_options(optimizer)
    for gi, group in enumerate(optimizer.param_groups):
        for p in group["params"]:
            n = name_of[id(p)]
            for key, value in optimizer.state.get(p, {}).items():
                if not isinstance(value, torch.Tensor):
                    continue
                extras.append(ExtraState(
                    _state_name(n, key), "optimizer_state", param=n,
                    key=key, shape=_state_shape(model, n, p, value),
                    dtype=value.dtype))
    for gi, group in enumerate(optimizer.param_groups):
        for key, index in runtime[gi].options:
            extras.append(ExtraState(
                _optimizer.option_name(gi, key, index), "option", key=key,
                index=index, group=gi, dtype=torch.float64))
    return extras


def _state_name(param: str, key) -> str:
    if str(key) == "grad":
        raise UnsupportedError(
            f"spmd.compile: the optimizer keeps a state named 'grad' for "
            f"{param}, which spmd's name for the gradient takes",
            hint="rename that state key in the optimizer")
    return f"{param}.{key}"


def _state_shape(model, name, param, value) -> tuple:
    """A state tensor's global shape: the parameter's when it has the
    parameter's (local) shape, its own otherwise."""
    if tuple(value.shape) == tuple(param.shape):
        return tuple(_sharding.global_shape(model, name, param))
    return tuple(value.shape)


def _traced_optimizer_state(optimizer, name_of, by_name, extras, extra):
    """The traced optimizer's state: the real state's entries per traced
    parameter, tensors replaced by their graph inputs; and the run-time
    options' inputs per group."""
    state = collections.defaultdict(dict)
    inputs = {e.name: t for e, t in zip(extras, extra)}
    for group in optimizer.param_groups:
        for p in group["params"]:
            n = name_of[id(p)]
            traced = by_name[n]
            for key, value in optimizer.state.get(p, {}).items():
                state[traced][key] = inputs[_state_name(n, key)] \
                    if isinstance(value, torch.Tensor) else value
    options = collections.defaultdict(dict)
    for e, t in zip(extras, extra):
        if e.kind == "option":
            options[e.group][(e.key, e.index)] = t
    return state, options


def _state_outputs(optimizer, name_of, by_name, extra_by_name, state,
                   result):
    """After the step: the states whose new value is a tensor other than
    their input (`explicit`, [(name, tensor)]), the states the step creates
    (`created`) and the inputs whose in-place changes are not stored
    (`dropped`: a gradient set to None after the backward added into it).
    Inputs changed in place are stored from functionalization's copies
    (trace()). Records the parameters with a gradient after the call and
    the traced optimizer's constant state in `result`."""
    explicit, created, dropped = [], [], set()

    def final(name, value, kind, param, key=None):
        """`value` is state `name`'s value after the step."""
        if value is extra_by_name.get(name):
            return  # its input, changed in place or not
        explicit.append((name, value))
        if name in extra_by_name:
            dropped.add(name)  # the input's in-place copy is not stored
        else:
            created.append(ExtraState(name, kind, param=param, key=key,
                                      shape=tuple(value.shape),
                                      dtype=value.dtype))

    grads_after = []
    for n, traced in by_name.items():
        if traced.grad is None:
            dropped.add(f"{n}.grad")
            continue
        grads_after.append(n)
        final(f"{n}.grad", traced.grad, "grad", n)
    result["grads_after"] = grads_after
    constants = {}
    for group in optimizer.param_groups if state is not None else ():
        for p in group["params"]:
            n = name_of[id(p)]
            before = optimizer.state.get(p, {})
            for key, value in state.get(by_name[n], {}).items():
                if isinstance(value, torch.Tensor):
                    final(_state_name(n, key), value, "optimizer_state", n,
                          key)
                    continue
                if key in before and not _same(before[key], value):
                    raise UnsupportedError(
                        f"spmd.compile: {type(optimizer).__name__} keeps "
                        f"state {key!r} of {n} as a Python "
                        f"{type(value).__name__} that step() changes; a "
                        "compiled step would repeat the traced value",
                        hint="keep changing state in tensors "
                        "(state['step'] = torch.tensor(0.0))")
                constants.setdefault(n, {})[key] = value
    result["optimizer_constants"] = constants
    return explicit, created, dropped


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b


def trace(fn, args, kwargs, world: int, default: Placement,
          observe=None, checkpointing=False) -> Traced:
    """`world`: the ranks the batch is split over (the data-parallel axis
    of the mesh). `observe(step) -> step`: wraps the step make_fx runs (the
    program cache's op recorder, _program_cache.py). `checkpointing`: the
    repeated blocks recomputed in the backward (_checkpointing.py)."""
    harness = _Harness(fn, args, kwargs, world, default, checkpointing)
    params, buffers, extra, rng = harness.state()
    inputs = harness.inputs
    for attempt in range(2):
        step = harness.step if observe is None else observe(harness.step)
        try:
            with torch.enable_grad(), _stack_traces_from_step(), \
                    _compiling(), _without_onednn():
                graph = make_fx(step,
                                decomposition_table=decomposition_table(),
                                tracing_mode="fake",
                                record_stack_traces=True)(
                    params, buffers, extra, [_fake_input(i) for i in inputs],
                    rng)
            break
        except _RetraceWithClones:
            # Captured gradients the step changes afterwards: captured as
            # copies (the one retrace).
            harness.clone_grads = True
        except UnsupportedError:
            raise
        except Exception as err:  # make_fx: data-dependent control flow, ...
            raise _tracing_failed(err) from err
    _checkpointing.separate_recomputation(graph)
    names = (harness.param_names + harness.buffer_names
             + [e.name for e in harness.extras])
    mutable = set(harness.buffer_names) | {
        e.name for e in harness.extras if e.kind != "option"}
    if harness.optimizer is not None and _optimizer.is_traced(
            harness.optimizer):
        mutable |= set(harness.param_names)
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    _check_graph(graph, {p for p, name in zip(placeholders, names)
                         if name in mutable})
    flat_inputs = params + buffers + extra + [_fake_input(i) for i in inputs]
    if harness.result["rng_draws"]:
        flat_inputs.append(rng)
    else:
        _drop_rng_input(graph)
    graph = _functionalize(graph, flat_inputs)
    updates = harness.result["explicit_updates"] + _state_updates_as_outputs(
        graph, names, mutable - harness.result["dropped"])
    return harness.traced(graph, updates)


def run_on_fake(fn, args, kwargs, world: int, default: Placement,
                observe, checkpointing=False) -> Traced:
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
    params, buffers, extra, rng = harness.state(fake)
    with mode:
        inputs = [_fake_input(i) for i in harness.inputs]
    with mode, torch.enable_grad(), _compiling(), _without_onednn(), \
            _fx_tracing():
        observe(harness.step)(params, buffers, extra, inputs, rng)
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
    """The gradients a first-class optimizer's step() saw, in parameter-group
    order, and their parameters' names (none when the step does not call
    it: as in eager, nothing is updated; or when its step is traced)."""
    grads, grad_names = [], []
    if optimizer is None or capture.grads is None:
        return grads, grad_names
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
    """The parameters and buffers the step is traced with: uninitialized
    tensors of their shapes, for a fully sharded model's parameters (this
    rank's chunks) of their global shapes. `like(t, shape=None)`: another
    way to make each (fake tensors)."""
    shapes = {n: shape for n, (shape, _) in
              _sharding.sharded_params(model).items()}

    def copy(t, shape=None):
        # make_fx fakes them (tracing_mode="fake"): only the metadata is
        # read, so uninitialized memory that is never touched costs no
        # resident pages (a clone of GPT-2 large's parameters was 2.9 GiB of
        # a rank's peak).
        if shape is None:
            return torch.empty_like(t)
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


def _state_updates_as_outputs(graph, names, keep):
    """Functionalization leaves each in-place update of a graph input
    (BatchNorm's running statistics, a traced optimizer's parameters and
    state, a gradient the backward added into) as a final `copy_` into the
    input. Those into a state in `keep` become extra outputs (stored to the
    state by the program); every such copy goes. `names`: the states of
    the first placeholders, in order. Returns the updated states' names."""
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    state_of = dict(zip(placeholders, names))
    updates = {}
    changed = False
    for node in list(graph.graph.nodes):
        if (node.op == "call_function"
                and node.target == torch.ops.aten.copy_.default
                and node.args[0] in state_of):
            if state_of[node.args[0]] in keep:
                updates[state_of[node.args[0]]] = node.args[1]
            graph.graph.erase_node(node)
            changed = True
    if not changed:
        return []
    output = next(n for n in graph.graph.nodes if n.op == "output")
    order = [n for n in names if n in updates]
    output.args = (tuple(output.args[0]) + tuple(updates[n] for n in order),)
    graph.recompile()
    return order


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
    # The graph holds its backward already: no autograd on the replay (a
    # traced optimizer updates parameters, leaves that require grad, in
    # place).
    with fx_traceback.preserve_node_meta(), torch.no_grad():
        return make_fx(torch.func.functionalize(run),
                       tracing_mode="fake")(*[t.detach()
                                              for t in flat_inputs])


def _written(node, index, argument):
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(argument.name)

"""A compiled step loaded into the process, its state bound to the model.

After loading, every parameter's `.data`, and every optimizer state tensor
in `optimizer.state`, is a view of the program's own buffer for that name:
the program updates them in place, so `model.state_dict()` and
`optimizer.state_dict()` always show the current values. When several
compiled programs drive one model (a training and an evaluation step,
another batch shape), the one about to run first copies the current values
into its own buffers and becomes the owner.

On the GPU target (_device.py) the buffers are device memory: the views are
CUDA tensors over them, or, in the GPU emulator, CPU mirrors the device
layer copies in before a step (those the host changed) and out after it.
"""

import bisect
import ctypes
import weakref

import torch

from . import _memory, _runtime, _sharding
from ._program import DTYPE_CODE, ENTRY, Program
from ._trace import Traced


# The program whose buffers a model's parameters are views of right now.
_OWNER = weakref.WeakKeyDictionary()

# The role (spmd.state's: param, buffer, optimizer_state, gradient, ...) of
# every state a loaded program holds, by its name in the runtime.
STATE_ROLES = {}

# The memory plan (spmd-plan-memory) of the program that ran last.
_LAST_PLAN = [None]

_PLAN_KEYS = ("transient_peak", "activations", "gradients", "communication")


def last_plan():
    """The memory plan of the step that ran last on this rank (bytes by
    _PLAN_KEYS), or None (none ran yet, or the target has no plan)."""
    return _LAST_PLAN[0]


def memory_plan(lib):
    """The plan spmd-plan-memory exported for the entry function; None
    when the library has none (the GPU targets)."""
    try:
        values = (ctypes.c_int64 * 4).in_dll(lib, "__spmd_memory_plan_"
                                             + ENTRY)
    except ValueError:
        return None
    return dict(zip(_PLAN_KEYS, values))


class Executable:
    def __init__(self, library, traced: Traced, program: Program,
                 random=None, style="DataParallel('replicate')"):
        self.traced = traced
        self.program = program
        # The step's random stream (api._RandomStream): seed, next offset.
        self.random = random
        # Local: each step's symbols (forward_backward, outlined loops) stay
        # its own when a process compiles several steps.
        self.lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
        self.entry = getattr(self.lib, ENTRY)
        self.entry.restype = None
        nargs = sum(3 + 2 * len(i.local_shape) for i in traced.inputs)
        self.entry.argtypes = [ctypes.c_int64] * nargs
        self.device = _runtime.device()
        # The optimizer options last written into the buffers, by state.
        self._written = {}
        self.lib.spmd_register_state()
        _sharding.claim(traced.model, style, program.mesh)
        self.states = {s.name: s for s in program.states}
        # States whose buffers hold the runtime's zeros until the first
        # adoption: fresh optimizer moments need no zero fill. GPT-2 124M,
        # 2 ranks, cached first call: the load phase 3.0 -> 0.7 s (1 GB of
        # moments), the whole call 10.8 -> 10.3 s, as the first step's own
        # writes now take the first-touch page faults.
        self._zeros = {s.name for s in program.states
                       if _runtime.holds_zeros(program.prefix + s.name)}
        self.views = {}
        buffers = []
        for s in program.states:
            if not s.sharded:
                self.views[s.name] = _runtime.bind(
                    program.prefix + s.name, s.shape, s.dtype,
                    DTYPE_CODE[s.dtype])
                buffers.append(self.views[s.name])
                continue
            # Every rank's buffer holds the largest chunk; this rank's
            # chunk is its leading part (torch.chunk sizes).
            storage = _runtime.bind(
                program.prefix + s.name,
                _sharding.storage_shape(s.shape, s.layout, program.mesh),
                s.dtype, DTYPE_CODE[s.dtype])
            self.views[s.name] = _sharding.local_view(
                storage, s.shape, s.layout, program.mesh)
            buffers.append(storage)
        # The program's buffers, as address ranges: an input inside one is
        # copied before the call (_StateRanges).
        self._state_ranges = _StateRanges(buffers)
        for s in program.states:
            STATE_ROLES[program.prefix + s.name] = s.role
        self.plan = memory_plan(self.lib)
        _memory.check_limit(self.plan, program)
        # As DDP at construction: every rank starts from rank 0's model and
        # optimizer state (replicated state must be equal everywhere; a
        # whole tensor of a sharded state is broadcast before each rank
        # takes its chunk), and from rank 0's random seed.
        self._adopt_state(agree=True)
        self._zeros = set()
        _sharding.mark_sharded(traced.model, {
            s.name: (s.shape, s.layout) for s in program.states
            if s.sharded and s.role == "param"})
        _OWNER[traced.model] = self
        # The call that compiled this program runs it next, on the state
        # just adopted: nothing can have replaced it yet, and the optimizer
        # state is published only after that call, so the check for
        # replaced state would take the absent entries for new ones and
        # adopt everything again (GPT-2 124M: 1.1 s of the first call,
        # rewriting 0.5 GB of parameters and zeroing 1 GB of moments).
        self._adopted_now = True
        if program.rng_state:
            self.views[program.rng_state][0] = self.random.seed
        # States every rank filled with the same constant (fresh optimizer
        # moments) need no broadcast: for AdamW two thirds of the bytes.
        shared = [s for s in program.states
                  if s.role != "output" and not s.sharded]
        same = _runtime.all_ranks_min_each(
            [int(s.name in self._constant_filled) for s in shared]) \
            if shared else []
        for s, everywhere in zip(shared, same):
            if not everywhere:
                _runtime.broadcast_(self.views[s.name], DTYPE_CODE[s.dtype])
        # The parameters the model was built with, and the trace's
        # garbage, are free now: hand their heap back.
        _memory.release_freed_host_memory()

    def _adopt_state(self, agree=False):
        """Copies the current values in, then points the model and the
        optimizer at the program's buffers. `agree`: whole tensors of
        sharded states are rank 0's (broadcast first)."""
        model, opt = self.traced.model, self.traced.optimizer
        params = dict(model.named_parameters())
        buffers = dict(model.named_buffers())
        # The states this adoption filled with a constant of its own (not
        # from a tensor or a rank's counter).
        self._constant_filled = set()
        with torch.no_grad():
            for n in self.traced.param_names:
                self._copy_in(n, params[n].data, agree)
                params[n].data = self.views[n]
            if agree:
                # The parameters the model was built with are free now:
                # handed back before the optimizer state is first touched,
                # so a rank never holds both (GPT-2 large: 2.9 GiB).
                _memory.release_freed_host_memory()
            for n in self.traced.buffer_names:
                self._copy_in(n, buffers[n], agree)
                _set_buffer(model, n, self.views[n])
            for kind, names, gi in self.program.groups:
                for n in names:
                    st = opt.state[params[n]] if params[n] in opt.state else {}
                    if kind == "sgd":
                        self._adopt_sgd(st, n, gi, agree)
                    else:
                        self._adopt_adam(st, n, agree)
            # Gradients present before the call, a traced optimizer's state.
            for e in self.traced.extras:
                source = self._extra_source(e, params)
                if source is not None:
                    self._copy_in(e.name, source, agree)

    def _extra_source(self, extra, params):
        """The tensor an extra state's buffer takes its value from: the
        parameter's `.grad`, or the optimizer's state tensor (None for a
        run-time option, which the host writes before every call)."""
        if extra.kind == "grad":
            return params[extra.param].grad
        if extra.kind == "optimizer_state":
            st = self.traced.optimizer.state.get(params[extra.param], {})
            return st.get(extra.key)
        return None

    def _copy_in(self, name, source, agree=False):
        """`source` into the buffer of state `name`: for a sharded state,
        a whole tensor's chunk of this rank, or this rank's chunk itself."""
        info = self.states[name]
        self._constant_filled.discard(name)
        if info.sharded:
            if agree and tuple(source.shape) == info.shape:
                source = source.detach().clone().contiguous()
                _runtime.broadcast_(source, DTYPE_CODE[info.dtype])
            source = _sharding.take_chunk(source, info.shape, info.layout,
                                          self.program.mesh, name)
        self.views[name].copy_(source)

    def _adopt_sgd(self, st, n, gi, agree):
        key = f"{n}.momentum_buffer"
        if key not in self.views:
            return
        buf = st.get("momentum_buffer")
        if buf is not None:
            self._copy_in(key, buf, agree)
        else:
            self.views[key].zero_()
            self._constant_filled.add(key)
        step = self.views[f"optimizer.param_groups.{gi}.step"]
        # torch's "buffer is None" test: the group's first step.
        step.fill_(0.0 if buf is None else 1.0)

    def _adopt_adam(self, st, n, agree):
        for suffix in _ADAM_MOMENTS:
            key = f"{n}.{suffix}"
            if key in self.views:
                if suffix in st:
                    self._copy_in(key, st[suffix], agree)
                else:
                    if key not in self._zeros:
                        self.views[key].zero_()
                    self._constant_filled.add(key)
        self.views[f"{n}.step"].fill_(float(st["step"]) if "step" in st
                                      else 0.0)
        if "step" not in st:
            self._constant_filled.add(f"{n}.step")

    def _take_replaced_state(self):
        """Values the user put in place of the program's buffers since the
        last call (`optimizer.load_state_dict` makes new state tensors,
        `model.load_state_dict(..., assign=True)` or `p.data = t` new
        parameters): copied in, and the model and optimizer pointed back at
        the buffers. Without this the program would go on from its own
        buffers and the loaded checkpoint would be silently ignored."""
        model, opt = self.traced.model, self.traced.optimizer
        params = dict(model.named_parameters())
        buffers = dict(model.named_buffers())
        replaced = any(not _is_view(params[n], self.views[n])
                       for n in self.traced.param_names)
        replaced |= any(not _is_view(buffers[n], self.views[n])
                        for n in self.traced.buffer_names)
        for kind, names, gi in self.program.groups:
            for n in names:
                st = opt.state.get(params[n], {})
                for key in _OPTIMIZER_KEYS[kind]:
                    name = f"{n}.{key}"
                    if name in self.views and not _is_view(st.get(key),
                                                           self.views[name]):
                        replaced = True
        for e in self.traced.extras:
            source = self._extra_source(e, params)
            if source is not None and not _is_view(source, self.views[e.name]):
                replaced = True
        if replaced:
            self._adopt_state()

    def _write_hyperparams(self):
        """The param groups' current float options (lr, momentum, betas,
        ...) into the program's buffers: what an LR scheduler or a manual
        `group["lr"] = ...` set takes effect at this call."""
        groups = self.traced.optimizer.param_groups \
            if self.traced.optimizer is not None else []
        for name, gi, key, index in self.program.hyperparams:
            value = groups[gi][key]
            if index is not None:
                value = value[index]
            # Only what changed: on the GPU each write is a copy to the
            # device.
            value = float(value)
            if self._written.get(name) != value:
                self.views[name].fill_(value)
                self._written[name] = value

    def _publish_gradients(self):
        """`.grad` as eager leaves it: a view of the program's gradient
        buffer where the step leaves one, None elsewhere."""
        after = set(self.traced.grads_after)
        for n, p in self.traced.model.named_parameters():
            p.grad = self.views[f"{n}.grad"] if n in after else None

    def _publish_optimizer_state(self):
        opt = self.traced.optimizer
        params = dict(self.traced.model.named_parameters())
        for e in self.traced.extras + self.traced.created:
            if e.kind == "optimizer_state":
                opt.state[params[e.param]][e.key] = self.views[e.name]
        for n, constants in self.traced.optimizer_constants.items():
            opt.state[params[n]].update(constants)
        for kind, names, gi in self.program.groups:
            for n in names:
                st = opt.state[params[n]]
                if kind == "sgd":
                    if f"{n}.momentum_buffer" in self.views:
                        st["momentum_buffer"] = self.views[
                            f"{n}.momentum_buffer"]
                else:
                    st["step"] = self.views[f"{n}.step"]
                    for suffix in _ADAM_MOMENTS:
                        if f"{n}.{suffix}" in self.views:
                            st[suffix] = self.views[f"{n}.{suffix}"]

    def __call__(self, tensors):
        # Another compiled program of this model (other shapes, another
        # step function) ran last: take over the current values first.
        if self._adopted_now:
            self._adopted_now = False
        elif _OWNER.get(self.traced.model) is not self:
            self._adopt_state()
            _OWNER[self.traced.model] = self
            # The other program wrote the options into the shared buffers.
            self._written.clear()
        else:
            self._take_replaced_state()
        self._write_hyperparams()
        if self.program.rng_state:
            # New numbers every call: the counters continue where the last
            # call (of any program of this step) stopped.
            self.views[self.program.rng_state][1] = self.random.take(
                self.traced.rng_draws)
        args, keep = [], []
        for i, (info, t) in enumerate(zip(self.traced.inputs, tensors)):
            t = t.detach().contiguous()
            if self._state_ranges.overlaps(t):
                t = t.clone()
            keep.append(t)
            ptr = self.device.input_address(i, t)
            args += [ptr, ptr, 0, *t.shape, *t.stride()]
        self.device.before_step()
        _runtime.note_step()
        _LAST_PLAN[0] = self.plan
        self.entry(*args)
        self.device.after_step()
        if self.traced.optimizer is not None:
            self._publish_optimizer_state()
        self._publish_gradients()
        tensors = iter([self.views[n].clone() for n in self.program.outputs])
        constants = self.traced.output_constants
        return [constants[i] if i in constants else next(tensors)
                for i in range(self.traced.output_spec.num_leaves)]


class _StateRanges:
    """The memory of a program's state buffers. The compiled code assumes
    that no input shares memory with its state (the GPU path runs a kernel
    reading an input and one writing a parameter in one launch): a tensor
    passed as an input that lies in a state buffer (a parameter itself, or
    a view of one, on the device the program holds it on) is copied first."""

    def __init__(self, tensors):
        ranges = sorted(
            (t.data_ptr(), t.data_ptr() + t.numel() * t.element_size())
            for t in tensors if t.numel())
        self.starts = [lo for lo, _ in ranges]
        self.ends = [hi for _, hi in ranges]

    def overlaps(self, tensor) -> bool:
        if not tensor.numel():
            return False
        lo = tensor.data_ptr()
        hi = lo + tensor.numel() * tensor.element_size()
        # The buffers are disjoint: of those starting before `hi`, the last
        # ends last.
        k = bisect.bisect_left(self.starts, hi)
        return k > 0 and self.ends[k - 1] > lo


# Adam's moment tensors in optimizer.state (and the suffixes of their state
# names); the optimizer.state keys the program holds, per optimizer kind.
_ADAM_MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
_OPTIMIZER_KEYS = {"sgd": ("momentum_buffer",),
                   "adam": ("step",) + _ADAM_MOMENTS}


def _is_view(tensor, view) -> bool:
    """Whether `tensor` is (a tensor over) the program's buffer `view`."""
    return (isinstance(tensor, torch.Tensor)
            and tensor.data_ptr() == view.data_ptr()
            and tensor.shape == view.shape)


def _set_buffer(model, fqn, tensor):
    owner_name, _, leaf = fqn.rpartition(".")
    owner = model.get_submodule(owner_name) if owner_name else model
    owner._buffers[leaf] = tensor

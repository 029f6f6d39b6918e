"""Activation checkpointing: a block's activations recomputed in the
backward instead of kept from the forward.

A region the user marks with `torch.utils.checkpoint.checkpoint(...,
use_reentrant=False)` is traced as torch runs it: the forward keeps only
the region's inputs (and, under a selective policy, the outputs the policy
saves), and the backward replays the region's ops before its gradient. The
traced program holds both copies of those ops. Left alone, CSE (torch-mlir's
and spmd-opt's) would merge the replayed ops back into the forward's, which
read the same values, and the forward's activations would live on to the
backward as if nothing were checkpointed. So while the step is traced the
nodes created during a replay are marked, and `separate_recomputation`
routes every value of the forward that a replayed op reads through
`spmd::optimization_barrier` (the dialect's `spmd.optimization_barrier`,
which CSE does not look through; removed before bufferization, no copy).
The memory plan (spmd-plan-memory) then sees the activations die in the
forward and the recomputed ones live only through their block's backward.

`spmd.compile(..., activation_checkpointing=...)` does the same without
model changes, for every repeated block: the children of an
`nn.ModuleList` or `nn.Sequential` of which at least two share a class
(a transformer's layers), outermost such lists only, each block's forward
wrapped while the step is traced:

* `True` or `"full"`: nothing of the block is kept but its inputs;
* `"selective"`: matrix products (mm, addmm, bmm, baddbmm, convolution)
  and the attention op's outputs are kept, everything else (norms,
  activations, residual adds, head transposes) is recomputed: the costly
  ops run once, the cheap ones twice;
* `False` (default): nothing is recomputed.

Selective policies (ours, or a model's own `create_selective_checkpoint_
contexts`) behave as in eager: under make_fx torch would otherwise take the
trace for AOTAutograd's and cache every op, leaving the choice to a
partitioner that does not run here.

Random ops in a recomputed region draw the same numbers as in the forward:
inside a traced step `torch.get_rng_state()` / `torch.set_rng_state()` (what
checkpoint uses to replay a region) save and restore where the step's
counter-based stream stands (_random.py).

Unsupported: `activation_checkpointing` on a model without a repeated
block (an error: mark regions with torch.utils.checkpoint instead); custom
policies through compile() (give the model's checkpoint call a
`context_fn`). Reentrant checkpointing (`use_reentrant=True`) trains
correctly but saves nothing: its replay is not marked, and CSE merges it.
"""

import contextlib
import functools

import torch
from torch.utils import checkpoint as torch_checkpoint

from ._errors import UnsupportedError

aten = torch.ops.aten

def check_policy(policy):
    """The policy as compile() takes it: False, "full" (True) or
    "selective"."""
    if policy is True:
        return "full"
    if policy is False or (isinstance(policy, str) and
                           policy in ("full", "selective")):
        return policy
    raise TypeError("spmd.compile: activation_checkpointing must be False, "
                    f"True, 'full' or 'selective', got {policy!r}")


def repeated_blocks(model: torch.nn.Module) -> list:
    """(name, module) of every repeated block: the children of an
    nn.ModuleList / nn.Sequential of which two or more share a class,
    outermost lists only."""
    found = []

    def visit(prefix, module):
        if isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)):
            children = list(module.named_children())
            classes = [type(c) for _, c in children]
            blocks = [(f"{prefix}{n}", c) for n, c in children
                      if classes.count(type(c)) >= 2]
            if blocks:
                found.extend(blocks)
                return
        for name, child in module.named_children():
            visit(f"{prefix}{name}.", child)
    visit("", model)
    return found


# What "selective" keeps: the matrix products and the attention op.
_SAVED_PACKETS = {aten.mm, aten.addmm, aten.bmm, aten.baddbmm,
                  aten.convolution}


def _selective_policy(ctx, op, *args, **kwargs):
    packet = getattr(op, "_overloadpacket", op)
    spmd_ops = getattr(torch.ops, "spmd", None)
    keep = packet in _SAVED_PACKETS or (
        spmd_ops is not None and hasattr(spmd_ops, "attention")
        and packet is spmd_ops.attention)
    return (torch_checkpoint.CheckpointPolicy.MUST_SAVE if keep else
            torch_checkpoint.CheckpointPolicy.PREFER_RECOMPUTE)


def _checkpointed(forward, policy):
    kwargs = {"use_reentrant": False}
    if policy == "selective":
        kwargs["context_fn"] = functools.partial(
            torch_checkpoint.create_selective_checkpoint_contexts,
            _selective_policy)

    @functools.wraps(forward)
    def run(*args, **kw):
        return torch_checkpoint.checkpoint(forward, *args, **kwargs, **kw)
    return run


@contextlib.contextmanager
def blocks(model: torch.nn.Module, policy):
    """While traced: every repeated block of `model` checkpointed under
    `policy` ("full" or "selective"; False: nothing changes)."""
    with _replays_marked():
        if not policy:
            yield
            return
        with _wrapped(model, policy):
            yield


@torch.library.custom_op("spmd::optimization_barrier", mutates_args=())
def optimization_barrier(x: torch.Tensor) -> torch.Tensor:
    """`x` (a copy in eager; the compiled program reads `x` itself)."""
    return x.clone()


@optimization_barrier.register_fake
def _(x):
    return torch.empty_like(x)


# Replays in progress (torch.utils.checkpoint's recomputation hook entered).
_replaying = 0


def replaying() -> bool:
    """Whether the op being traced belongs to a checkpointed region's replay
    in the backward."""
    return _replaying > 0


class _MarkedRecomputation(torch_checkpoint._recomputation_hook):
    """torch's recomputation context (non-reentrant checkpoint's replay),
    counted."""

    def __enter__(self):
        global _replaying
        _replaying += 1
        return super().__enter__()

    def __exit__(self, *exc):
        global _replaying
        _replaying -= 1
        return super().__exit__(*exc)


def separate_recomputation(graph: torch.fx.GraphModule) -> int:
    """Routes each value of the forward that a replayed node (meta
    "spmd_recompute") reads through one optimization barrier, placed before
    its first such reader; returns the number of barriers."""
    barriers = {}

    def through_barrier(node, value):
        if not isinstance(value, torch.fx.Node) or \
                value.meta.get("spmd_recompute") or \
                value.op != "call_function" or \
                not isinstance(value.meta.get("val"), torch.Tensor):
            return value
        barrier = barriers.get(value)
        if barrier is None:
            with graph.graph.inserting_before(node):
                barrier = graph.graph.call_function(
                    torch.ops.spmd.optimization_barrier.default, (value,))
            barrier.meta.update(val=value.meta["val"], spmd_recompute=True,
                                stack_trace=node.stack_trace)
            barriers[value] = barrier
        return barrier

    for node in list(graph.graph.nodes):
        if node.meta.get("spmd_recompute") and \
                node.target is not torch.ops.spmd.optimization_barrier.default:
            node.args = torch.fx.node.map_arg(
                node.args, lambda v, n=node: through_barrier(n, v))
            node.kwargs = torch.fx.node.map_arg(
                node.kwargs, lambda v, n=node: through_barrier(n, v))
    if barriers:
        graph.recompile()
    return len(barriers)


@contextlib.contextmanager
def _replays_marked():
    """Replays counted (`replaying()`); selective checkpointing
    (`create_selective_checkpoint_contexts`, ours or the model's own) caching
    the ops its policy saves and rerunning the rest, as in eager (under
    make_fx torch takes the trace for AOTAutograd's, caches every op and
    leaves the choice to its partitioner, which does not run here)."""
    saved = (torch_checkpoint._is_compiling,
             torch_checkpoint._recomputation_hook)
    torch_checkpoint._is_compiling = lambda func, args, kwargs: False
    torch_checkpoint._recomputation_hook = _MarkedRecomputation
    try:
        yield
    finally:
        (torch_checkpoint._is_compiling,
         torch_checkpoint._recomputation_hook) = saved


@contextlib.contextmanager
def _wrapped(model, policy):
    found = repeated_blocks(model)
    if not found:
        raise UnsupportedError(
            f"spmd.compile: activation_checkpointing={policy!r} found no "
            f"repeated block in {type(model).__name__} (an nn.ModuleList or "
            "nn.Sequential of two or more modules of one class)",
            hint="wrap the regions to recompute in "
            "torch.utils.checkpoint.checkpoint(..., use_reentrant=False)")
    wrapped = []
    try:
        for _, block in found:
            had = "forward" in block.__dict__
            saved = block.__dict__.get("forward")
            block.forward = _checkpointed(block.forward, policy)
            wrapped.append((block, had, saved))
        yield
    finally:
        for block, had, saved in wrapped:
            if had:
                block.forward = saved
            else:
                del block.forward

"""Activation checkpointing: a block's activations recomputed in the
backward instead of kept from the forward.

A region the user marks with `torch.utils.checkpoint.checkpoint` (use_reentrant
False, the default from torch 2.4; or True) is traced as torch runs it: the
forward keeps only the region's inputs, and the backward replays the
region's ops before its gradient. The traced program holds both copies of
those ops, so the compiler's memory plan (spmd-plan-memory) sees the
activations die at the end of the forward and the recomputed ones live
only through their block's backward.

`spmd.compile(..., activation_checkpointing=...)` does the same without
model changes, for every repeated block: the children of an
`nn.ModuleList` or `nn.Sequential` of which at least two share a class
(a transformer's layers), outermost such lists only, each block's forward
wrapped while the step is traced:

* `True` or `"full"`: nothing of the block is kept but its inputs;
* `"selective"`: matrix products (mm, addmm, bmm, baddbmm, convolution)
  and the attention op's outputs are kept, everything else (norms,
  activations, residual adds, softmax) is recomputed: the costly ops run
  once, the cheap ones twice;
* `False` (default): nothing is recomputed.

Random ops in a recomputed region draw the same numbers as in the forward:
inside a traced step `torch.get_rng_state()` / `torch.set_rng_state()` (what
checkpoint uses to replay a region) save and restore where the step's
counter-based stream stands (_random.py).

Unsupported: a model without a repeated block under `activation_checkpointing`
(an error: mark regions with torch.utils.checkpoint instead); custom
checkpoint policies (use `torch.utils.checkpoint.checkpoint` with a
`context_fn` in the model).
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
    with _selective_as_in_eager():
        if not policy:
            yield
            return
        with _wrapped(model, policy):
            yield


@contextlib.contextmanager
def _selective_as_in_eager():
    """Selective checkpointing (`create_selective_checkpoint_contexts`, ours
    or the model's own) caches the ops its policy saves and reruns the rest,
    as in eager. Under make_fx torch takes it for AOTAutograd, caches every
    op and leaves the choice to its partitioner, which does not run here:
    nothing would be recomputed."""
    saved = torch_checkpoint._is_compiling
    torch_checkpoint._is_compiling = lambda func, args, kwargs: False
    try:
        yield
    finally:
        torch_checkpoint._is_compiling = saved


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

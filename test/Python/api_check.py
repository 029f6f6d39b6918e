#!/usr/bin/env python3
"""spmd.compile's options on 2 ranks: Override.replacement swaps an
untraceable submodule, Override.transform sees and rewrites the program,
override_placement(Replicate()) passes a whole tensor, last_train_step is
accepted, and the model and optimizer state dicts are the live values
(checkpoints by name just work). Compared with eager training.
"""

import io
import sys

import numpy as np
import torch
import torch.nn as nn

import spmd

GLOBAL_BATCH = 8


class NumpyScale(nn.Module):
    """Untraceable: leaves torch for numpy."""

    def forward(self, x):
        return torch.from_numpy(np.ascontiguousarray(x.detach().numpy()) * 2.0)


class TorchScale(nn.Module):
    """The traceable stand-in (same function, differentiable)."""

    def forward(self, x):
        return x * 2.0


class Net(nn.Module):
    def __init__(self, scale_module):
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.scale = scale_module
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x, gain):
        return self.fc2(torch.tanh(self.scale(self.fc1(x * gain))))


class SwapScale(spmd.Override):
    def __init__(self):
        self.seen = []
        self.transformed = None

    def replacement(self, fqn, submodule):
        self.seen.append(fqn)
        return TorchScale() if isinstance(submodule, NumpyScale) else submodule

    def transform(self, module):
        self.transformed = module
        return spmd.run_passes(module, "canonicalize")


def build(scale_module):
    torch.manual_seed(0)
    model = Net(scale_module)
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


def step_fn(model, opt, x, gain, y):
    loss = nn.functional.mse_loss(model(x, gain), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    rank, world = spmd.rank(), spmd.world_size()
    local = GLOBAL_BATCH // world
    gen = torch.Generator().manual_seed(3)
    gain = torch.rand(6, generator=gen) + 0.5

    # Without the override the step cannot be traced.
    model, opt = build(NumpyScale())
    try:
        spmd.compile()(step_fn)(model, opt, torch.randn(local, 6),
                                spmd.override_placement(gain.clone(),
                                                        spmd.Replicate()),
                                torch.randn(local, 3))
        print("untraceable: compiled?!")
        return 1
    except spmd.UnsupportedError as err:
        if rank == 0:
            print(f"untraceable: {str(err).splitlines()[0][:60]}")

    override = SwapScale()
    model, opt = build(NumpyScale())
    ref, ref_opt = build(TorchScale())
    train_step = spmd.compile(module_override=[override])(step_fn)
    worst = 0.0
    steps = 4
    for i in range(steps):
        x = torch.randn(GLOBAL_BATCH, 6, generator=gen)
        y = torch.randn(GLOBAL_BATCH, 3, generator=gen)
        part = slice(rank * local, (rank + 1) * local)
        g = spmd.override_placement(gain.clone(), spmd.Replicate())
        loss = train_step(model, opt, x[part], g, y[part],
                          last_train_step=(i == steps - 1))
        ref_loss = step_fn(ref, ref_opt, x, gain, y)
        worst = max(worst, (loss - ref_loss.detach()).abs().item())
    for p, q in zip(model.parameters(), ref.parameters()):
        worst = max(worst, (p.detach() - q.detach()).abs().max().item())

    # Checkpoints: the state dicts hold the compiled program's live values.
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()},
               buffer)
    buffer.seek(0)
    saved = torch.load(buffer)
    fresh, fresh_opt = build(TorchScale())
    fresh.load_state_dict(saved["model"])
    fresh_opt.load_state_dict(saved["opt"])
    ckpt = max((p - q).abs().max().item()
               for p, q in zip(fresh.parameters(), ref.parameters()))
    for p, q in zip(fresh.parameters(), ref.parameters()):
        for k, v in ref_opt.state[q].items():
            ckpt = max(ckpt, (fresh_opt.state[p][k] - v).abs().max().item())

    # Ranks that pass different shapes get an error, not a hang.
    try:
        train_step(model, opt, torch.randn(local + rank, 6), gain,
                   torch.randn(local + rank, 3))
        mismatch = "compiled?!"
    except spmd.UnsupportedError as err:
        mismatch = str(err).splitlines()[0][:72]

    # Parallel modes: bad options are errors at once; a model compiled
    # fully_shard cannot be driven by a replicated step (its parameters are
    # chunks).
    errors = []
    for make in (lambda: spmd.DataParallel(parallel_style="zero"),
                 lambda: spmd.TensorParallel({"fc1": "colwise"}, tp_size=2),
                 lambda: spmd.TensorParallel({}, tp_size=0),
                 lambda: spmd.compile(parallel_mode=spmd.DataParallel(),
                                      parallel=spmd.DataParallel()),
                 lambda: spmd.compile(parallel_mode="fully_shard")):
        try:
            make()
            errors.append("accepted?!")
        except (TypeError, ValueError) as err:
            errors.append(type(err).__name__)
    for plan in ({"nope": spmd.ColwiseParallel()},
                 {"scale": spmd.RowwiseParallel()}):
        tp_model, tp_opt = build(TorchScale())
        try:
            spmd.compile(parallel_mode=spmd.TensorParallel(plan, tp_size=2))(
                step_fn)(tp_model, tp_opt, torch.randn(local, 6),
                         spmd.override_placement(gain.clone(),
                                                 spmd.Replicate()),
                         torch.randn(local, 3))
            errors.append("bad plan compiled?!")
        except spmd.UnsupportedError as err:
            errors.append(str(err).splitlines()[0][14:60].strip())
    sharded, sharded_opt = build(TorchScale())
    fsdp = spmd.compile(parallel_mode=spmd.DataParallel(
        parallel_style="fully_shard"))(step_fn)
    args = (torch.randn(local, 6), spmd.override_placement(
        gain.clone(), spmd.Replicate()), torch.randn(local, 3))
    fsdp(sharded, sharded_opt, *args)
    try:
        spmd.compile()(step_fn)(sharded, sharded_opt, *args)
        errors.append("mixed styles compiled?!")
    except spmd.UnsupportedError as err:
        errors.append(str(err).splitlines()[0][:80])

    text = override.transformed or ""
    if rank == 0:
        print(f"parallel mode errors: {'; '.join(errors)}")
        print(f"replacement saw: {', '.join(override.seen)}")
        print("transform saw: train_step "
              f"{'func.func @train_step' in text}, adam {'spmd.adam' in text}"
              f", replicated input {'[replicate]>' in text}")
        print(f"mismatched shapes: {mismatch}")
        print(f"training max deviation {worst:.1e}; checkpoint max "
              f"deviation {ckpt:.1e}")
    return 0 if worst <= 1e-5 and ckpt <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())

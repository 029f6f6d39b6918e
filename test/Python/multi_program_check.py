#!/usr/bin/env python3
"""Several compiled programs in one process, on 2 ranks, against eager:
a training step and an evaluation step on one model, alternated; the
training step called with two batch shapes, alternated (one program per
shape); and a second model with its own optimizer and step (its state names
must not meet the first model's). Parameters, optimizer state and every
returned value must match eager training within 1e-5.
"""

import copy
import sys

import torch
import torch.nn as nn

import spmd


def make(seed, width):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 3))
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


loss_fn = nn.CrossEntropyLoss()


def train(model, opt, x, y):
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def evaluate(model, x):
    return model(x).argmax(1).float()


def adoptions_check():
    """How often a program copies the model's and optimizer's values into
    its buffers: once when it is built (not again in the call that built
    it, although AdamW's state is absent until that call publishes it),
    never on later calls, once after a checkpoint is loaded."""
    from spmd import _executable
    count = [0]
    adopt = _executable.Executable._adopt_state

    def counted(self, *args, **kwargs):
        count[0] += 1
        return adopt(self, *args, **kwargs)

    _executable.Executable._adopt_state = counted
    try:
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        step = spmd.compile()(train)
        x, y = torch.randn(4, 4), torch.randint(0, 3, (4,))
        seen = []
        for _ in range(3):
            step(model, opt, x, y)
            seen.append(count[0])
        opt.load_state_dict(copy.deepcopy(opt.state_dict()))
        step(model, opt, x, y)
        seen.append(count[0])
    finally:
        _executable.Executable._adopt_state = adopt
    return seen


def main():
    rank, world = spmd.rank(), spmd.world_size()
    seen = adoptions_check()
    if rank == 0:
        print(f"adoptions after calls 1-3 and a loaded checkpoint: {seen}")
    compiled_train = spmd.compile()(train)
    compiled_eval = spmd.compile()(evaluate)
    a, opt_a = make(0, 8)
    ref_a, ref_opt_a = make(0, 8)
    b, opt_b = make(1, 5)  # another model: same FQNs, other shapes
    ref_b, ref_opt_b = make(1, 5)
    gen = torch.Generator().manual_seed(2)
    worst = 0.0
    for step in range(6):
        batch = 8 if step % 2 == 0 else 4  # two programs, alternated
        x = torch.randn(batch, 4, generator=gen)
        y = torch.randint(0, 3, (batch,), generator=gen)
        local = batch // world
        mine = slice(rank * local, (rank + 1) * local)
        for model, opt, ref, ref_opt in ((a, opt_a, ref_a, ref_opt_a),
                                         (b, opt_b, ref_b, ref_opt_b)):
            loss = compiled_train(model, opt, x[mine], y[mine])
            worst = max(worst, abs(loss.item() - train(ref, ref_opt, x,
                                                       y).item()))
            pred = compiled_eval(model, x[mine])
            worst = max(worst, (pred - evaluate(ref, x)).abs().max().item())
            for p, q in zip(model.parameters(), ref.parameters()):
                worst = max(worst, (p.detach() - q.detach()).abs().max().item())
                buf, ref_buf = (opt.state[p]["momentum_buffer"],
                                ref_opt.state[q]["momentum_buffer"])
                worst = max(worst, (buf - ref_buf).abs().max().item())
    programs = len(compiled_train.cache) + len(compiled_eval.cache)
    if rank == 0:
        print(f"{programs} programs, 2 models, 6 steps: max deviation "
              f"{worst:.1e}: {'OK' if worst <= 1e-5 else 'MISMATCH'}")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""An input that lies in the compiled program's state: after spmd.compile
a parameter's tensor is a view of the program's buffer, and a step may be
given that tensor (or a view of it) as an input. The compiled code assumes
inputs and state never share memory (the GPU path runs a kernel reading an
input and one writing a parameter in one launch), so the bridge copies
such an input before the call. Three SGD steps fed the weight itself,
against eager fed a copy of its weight; and the address-range check on
its own."""

import torch
import torch.nn as nn

import spmd
from spmd._executable import _StateRanges


def step(model, opt, x):
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    torch.manual_seed(0)
    ref, model = nn.Linear(4, 4), nn.Linear(4, 4)
    model.load_state_dict(ref.state_dict())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    world = spmd.world_size()
    compiled = spmd.compile()(step)
    for i in range(3):
        x = torch.cat([ref.weight.detach().clone()] * world)
        want = step(ref, ref_opt, x)
        # After the first call the weight is the program's buffer.
        got = compiled(model, opt, model.weight.data)
        assert torch.allclose(want, got, rtol=1e-5, atol=1e-6), (i, want, got)
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), name

    a, b = torch.zeros(16), torch.zeros(8, 2)
    ranges = _StateRanges([a, b, torch.zeros(0)])
    inside = [a, a[3:5], b[7], b.t()]
    outside = [torch.zeros(4), torch.zeros(0), a[:0]]
    assert all(ranges.overlaps(t) for t in inside)
    assert not any(ranges.overlaps(t) for t in outside)
    if spmd.rank() == 0:
        print(f"input in state: OK, {len(inside)} views inside, "
              f"{len(outside)} outside")


if __name__ == "__main__":
    main()

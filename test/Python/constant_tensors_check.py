#!/usr/bin/env python3
"""Constant tensors made inside a compiled step (float32, bool, int64 and
bfloat16 literals the trace lifts into the graph): the importer gives each
its data inline, so the imported functions stand alone in the program's
module (no `dense_resource` blob, whose data sits outside them). The step
on this rank's rows against eager over the global batch: losses and
parameters after three SGD steps."""

import torch
import torch.nn as nn

import spmd


class Constants(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scale = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, 0.25, 2.0, 1.0]])
        keep = torch.tensor([True, False, True, True])
        shift = torch.tensor([1.5, -2.0, 0.75, 3.0], dtype=torch.bfloat16)
        order = torch.tensor([3, 1, 0, 2])
        y = self.fc(x) * scale.sum(0) + shift.float() + order.float()
        return y.masked_fill(~keep, 0.0)


def step(model, opt, x):
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    torch.manual_seed(0)
    ref, model = Constants(), Constants()
    model.load_state_dict(ref.state_dict())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    world, rank = spmd.world_size(), spmd.rank()
    x = torch.randn(8 * world, 4)
    rows = x[rank * 8:(rank + 1) * 8]
    compiled = spmd.compile()(step)
    for i in range(3):
        want, got = step(ref, ref_opt, x), compiled(model, opt, rows)
        assert torch.allclose(want, got, rtol=1e-5, atol=1e-6), (i, want,
                                                                  got)
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), name
    imports = [p for p in spmd._toolchain.cache_dir().glob("imports/*.mlir")]
    text = "".join(p.read_text() for p in imports)
    if rank == 0:
        print(f"constants: OK, imports {len(imports)}, "
              f"dense_resource {text.count('dense_resource')}, "
              f"bf16 literal {'dense<[1.500000e+00, -2.000000e+00' in text}")


if __name__ == "__main__":
    main()

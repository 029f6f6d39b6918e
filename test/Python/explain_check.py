"""spmd.explain on a model nobody here wrote the layers of: an
nn.TransformerEncoderLayer with a Linear head, AdamW. Checks, on every rank:
explain neither builds nor runs the step (parameters unchanged, nothing
cached on the step); every parameter is Replicate() and some collective
makes its gradient whole; outside the attention each has exactly one
all_reduce of its own gradient, of its size in bytes (the attention's
batch-first transposes make the distribution move activations instead,
which the report shows); the report's collectives are the ones in the
program the step then compiles (kept with SPMD_DUMP) and runs."""

import os
import re
import sys
import tempfile

import torch
import torch.nn as nn

import spmd

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.TransformerEncoderLayer(
            16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)


@spmd.compile()
def step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


rank, world = spmd.rank(), spmd.world_size()
x = torch.randn(4, 5, 16)
y = torch.randint(0, 3, (4,))
before = [p.detach().clone() for p in model.parameters()]
os.environ["SPMD_DUMP"] = dump = os.path.join(
    tempfile.gettempdir(), f"spmd-explain-test-{os.getppid()}")
report = spmd.explain(step, model, opt, x, y)

unchanged = all(torch.equal(a, b)
                for a, b in zip(before, model.parameters()))
assert unchanged, "explain changed the parameters"
assert not step.cache, "explain compiled the step"
names = dict(model.named_parameters())
params = {n: s for n, s in report.state.items() if s["role"] == "param"}
assert len(params) == len(names), (sorted(params), sorted(names))
for name, p in names.items():
    s = report.state[name]
    assert s["placement"] == "Replicate()", (name, s)
    assert report.collectives_of(name), name
    if "self_attn" in name:
        continue
    # Its gradient's all-reduce: its own, or its piece of a bucket.
    own = report.own_collectives(name)
    assert len(own) == 1, (name, own)
    collective, piece = own[0]
    assert collective["op"] == "all_reduce" and collective["reduction"] in (
        "sum", "avg"), collective
    assert (piece or collective)["bytes"] == p.numel() * 4, (
        name, own[0], p.numel())
    assert collective["async"], collective

# The step the job then compiles and runs has the same collectives.
loss = step(model, opt, x, y)
programs = [d for d in os.listdir(dump) if d.startswith("step-")]
assert len(programs) == 1, programs
local = open(os.path.join(dump, programs[0], "local.mlir")).read()
ran = re.findall(r"= spmd\.(all_reduce|all_gather|reduce_scatter|all_to_all"
                 r"|broadcast) .*: (tensor<[^>]*>)", local)
explained = [(c["op"], c["types"][0]) for c in report.collectives]
assert ran == explained, (ran, explained)
# The memory plan explain printed is the one the step then ran with.
stats = spmd.memory_stats()
m = report.memory
assert m["transient_peak"] == stats["planned_transient_peak_bytes"], (
    m, stats)
assert m["state"] == stats["state_bytes"], (m, stats)
assert m["peak"] == m["state"] + m["transient_peak"] <= m["limit"], m
print(f"rank {rank}: {len(params)} parameters, "
      f"{len(report.collectives)} collectives, "
      f"{sum(c['bytes'] for c in report.collectives)} bytes per step, "
      f"same as the compiled program; loss {float(loss):.4f}")
print(f"rank {rank}: explain OK")

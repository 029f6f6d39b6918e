"""spmd.profile on a model nobody here wrote the layers of (an
nn.TransformerEncoderLayer with a Linear head, SGD), 2 ranks, 3 steps
traced. Checks the merged trace (DIR/trace.json, Chrome trace events) on
rank 0: valid JSON, one process per rank with 3 step events each; per step
and rank, the collectives' bytes by kind are those spmd.explain reports for
the program; the attention kernels and sgemm calls are there, inside the
steps, and regions named after the model's source lines and the torch.nn
module lines they call (spmd-trace-regions); a torch.profiler around a
step sees the "spmd.step" range."""

import collections
import json
import sys

import torch
import torch.nn as nn

import spmd

torch.manual_seed(0)
directory = sys.argv[1]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.TransformerEncoderLayer(
            16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


model = Model()
opt = torch.optim.SGD(model.parameters(), lr=1e-2)


def train_step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


rank, world = spmd.rank(), spmd.world_size()
gen = torch.Generator().manual_seed(1)
x = torch.randn(8, 5, 16, generator=gen)
y = torch.randint(0, 3, (8,), generator=gen)
n = 8 // world
mine = (x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n])

step = spmd.compile()(train_step)
explained = spmd.explain(step, model, opt, *mine)
step(model, opt, *mine)  # compiled outside the profile
with spmd.profile(directory):
    for _ in range(3):
        step(model, opt, *mine)
with torch.profiler.profile() as prof:
    step(model, opt, *mine)
ranges = {e.name for e in prof.events()}
print(f"rank {rank}: torch.profiler sees spmd.step: {'spmd.step' in ranges}")
# The program's regions are torch.profiler ranges too, inside the step's.
steps = [e.time_range for e in prof.events() if e.name == "spmd.step"]
inside = [e for e in prof.events() if ".py:" in e.name and any(
    s.start <= e.time_range.start and e.time_range.end <= s.end
    for s in steps)]
print(f"rank {rank}: torch.profiler sees {len(inside)} regions in the step "
      f"(Linear's: {any('linear.py' in e.name for e in inside)}, "
      f"this file's: {any(e.name.startswith('profile_check.py:') for e in inside)})")

if rank == 0:
    trace = json.load(open(f"{directory}/trace.json"))
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    print("processes:", sorted(names.values()))
    want = collections.Counter()
    for c in explained.collectives:
        want[c["op"]] += c["bytes"]
    ok = True
    for r in range(world):
        steps = sorted((e for e in events if e["pid"] == r
                        and e["cat"] == "step"), key=lambda e: e["ts"])
        print(f"rank {r}: {len(steps)} steps")
        for s in steps:
            inside = [e for e in events if e["pid"] == r and e is not s
                      and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
            have = collections.Counter()
            for e in inside:
                if e["cat"] == "collective":
                    have[e["name"]] += e["args"]["bytes"]
            ok &= have == want
            kinds = {e["cat"] for e in inside}
            ok &= {"blas", "attention", "wait"} <= kinds
            if have != want:
                print(f"rank {r}: collectives {dict(have)} vs explain "
                      f"{dict(want)}")
    regions = [e for e in events if e["cat"] == "region"]
    linear = [e for e in regions
              if e["name"].startswith("profile_check.py:")
              and " > linear.py:" in e["name"]
              and e["args"]["user"].endswith(
                  "return self.head(self.encoder(x).mean(1))")]
    print(f"regions: {len(regions) // world // 3} per step, named after the "
          f"model's lines (Linear's: {len(linear) > 0})")
    print(f"collective bytes by kind as explain reports "
          f"({', '.join(f'{k} {v} B' for k, v in sorted(want.items()))}), "
          f"attention, sgemm and waits in every step: "
          f"{'OK' if ok else 'BAD'}")

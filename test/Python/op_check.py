#!/usr/bin/env python3
"""Importer coverage, one aten op (with its backward) per case: a tiny model
`h = x @ w + b; out = OP(h)` trained for 2 SGD steps with spmd.compile on
the ranks of the job and eagerly over the global batch; losses and
parameters must agree to 1e-5 (relative to magnitudes above 1). Prints one line per case.

    mpirun -np 2 python3 op_check.py [CASE ...]
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd

BATCH, DIM = 8, 6


def ce_target(gen):
    return torch.randint(0, DIM, (BATCH,), generator=gen)


# name -> (forward(h, m, t) -> loss, target factory or None)
CASES = {
    "mm": (lambda h, m, t: (h @ m.v).pow(2).mean(), None),
    "addmm": (lambda h, m, t: F.linear(h, m.v, m.c).pow(2).mean(), None),
    "bmm": (lambda h, m, t: torch.bmm(h.view(-1, 2, 3),
                                      h.view(-1, 3, 2)).pow(2).mean(), None),
    "view": (lambda h, m, t: (h.view(-1, 2, 3) * m.v[:2, :3]).sum(), None),
    "reshape_flatten": (lambda h, m, t: h.reshape(-1, 3, 2).flatten(1)
                        .pow(2).mean(), None),
    "permute": (lambda h, m, t: (h.view(-1, 2, 3).permute(2, 0, 1)
                                 .pow(3)).mean(), None),
    "transpose": (lambda h, m, t: (h.t() @ h).pow(2).mean(), None),
    "unsqueeze_squeeze_expand": (
        lambda h, m, t: (h.unsqueeze(1).expand(-1, 3, -1) * m.v[:3])
        .squeeze(0).pow(2).mean(), None),
    "relu": (lambda h, m, t: F.relu(h).pow(2).mean(), None),
    "gelu": (lambda h, m, t: F.gelu(h).pow(2).mean(), None),
    "gelu_tanh": (lambda h, m, t: F.gelu(h, approximate="tanh").pow(2).mean(),
                  None),
    "tanh": (lambda h, m, t: torch.tanh(h).pow(2).mean(), None),
    "sigmoid": (lambda h, m, t: torch.sigmoid(h).pow(2).mean(), None),
    "silu": (lambda h, m, t: F.silu(h).pow(2).mean(), None),
    "leaky_relu_elu": (lambda h, m, t: (F.leaky_relu(h, 0.1) + F.elu(h))
                       .pow(2).mean(), None),
    "exp_log": (lambda h, m, t: torch.log(torch.exp(h * 0.1) + 1.0).mean(),
                None),
    "sqrt_rsqrt": (lambda h, m, t: (torch.sqrt(h * h + 1.0) +
                                    torch.rsqrt(h * h + 1.0)).mean(), None),
    "div_sub_neg_abs": (lambda h, m, t: (-(h - 1.0) / (h.abs() + 2.0))
                        .pow(2).mean(), None),
    "clamp": (lambda h, m, t: torch.clamp(h, -0.5, 0.5).pow(2).mean(), None),
    "where": (lambda h, m, t: torch.where(h > 0, h, 0.5 * h).pow(2).mean(),
              None),
    "maximum": (lambda h, m, t: torch.maximum(h, m.c).pow(2).mean(), None),
    "softmax": (lambda h, m, t: (F.softmax(h, dim=-1) * m.c).sum(), None),
    "log_softmax": (lambda h, m, t: (F.log_softmax(h, dim=-1) * m.c).sum(),
                    None),
    "nll_loss": (lambda h, m, t: F.nll_loss(F.log_softmax(h, -1), t),
                 ce_target),
    "cross_entropy": (lambda h, m, t: F.cross_entropy(h, t), ce_target),
    "cross_entropy_weight_ignore": (
        lambda h, m, t: F.cross_entropy(h, t, weight=m.c.detach().abs() + 0.5,
                                        ignore_index=2), ce_target),
    "cross_entropy_sum": (lambda h, m, t: F.cross_entropy(h, t,
                                                          reduction="sum"),
                          ce_target),
    "cross_entropy_none_smoothing": (
        lambda h, m, t: (F.cross_entropy(h, t, reduction="none").pow(2).mean()
                         + F.cross_entropy(h, t, label_smoothing=0.1)),
        ce_target),
    "mse_loss": (lambda h, m, t: F.mse_loss(h, m.v[:1].expand_as(h)), None),
    "layer_norm": (lambda h, m, t: F.layer_norm(h, (DIM,), m.c, m.c * 0.5)
                   .pow(2).mean(), None),
    "embedding": (lambda h, m, t: (m.emb(t) * h).pow(2).mean(), ce_target),
    "sum_mean_dims": (lambda h, m, t: (h.sum(0) * h.mean(1, keepdim=True))
                      .pow(2).mean(), None),
    "amax": (lambda h, m, t: h.amax(dim=1).pow(2).mean(), None),
    "var": (lambda h, m, t: h.var(dim=1).mean() + h.var(dim=0).mean(), None),
    "cat_stack": (lambda h, m, t: (torch.cat([h, h * 2], 1).sum() +
                                   torch.stack([h, h], 0).pow(2).mean()),
                  None),
    "split_chunk": (lambda h, m, t: sum(p.pow(2).mean() * (i + 1) for i, p in
                                        enumerate(h.split(2, dim=1))) +
                    h.chunk(2, dim=1)[1].mean(), None),
    "slice_select_narrow": (lambda h, m, t: (h[:, 1:4].pow(2).mean() +
                                             h[:, 0].mean() +
                                             h.narrow(1, 2, 3).pow(3).mean()),
                            None),
    "factories": (lambda h, m, t: ((h + torch.ones(DIM) +
                                    torch.full((DIM,), 0.5) +
                                    torch.arange(DIM, dtype=torch.float32) +
                                    torch.zeros_like(h))
                                   .pow(2).mean()), None),
}


class Model(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op
        self.w = nn.Parameter(torch.randn(DIM, DIM) * 0.5)
        self.b = nn.Parameter(torch.randn(DIM) * 0.1)
        self.v = nn.Parameter(torch.randn(DIM, DIM) * 0.5)
        self.c = nn.Parameter(torch.randn(DIM))
        self.emb = nn.Embedding(DIM, DIM)

    def forward(self, x, t):
        return self.op(x @ self.w + self.b, self, t)


def train_step(model, opt, x, t):
    loss = model(x, t)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def check(name, rank, world):
    op, target = CASES[name]
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        model = Model(op)
        models.append((model, torch.optim.SGD(model.parameters(), lr=0.1)))
    (model, opt), (ref, ref_opt) = models

    step = spmd.compile()(train_step)

    gen = torch.Generator().manual_seed(1)
    worst = 0.0
    local = BATCH // world
    for _ in range(2):
        x = torch.randn(BATCH, DIM, generator=gen)
        t = target(gen) if target else torch.zeros(BATCH, dtype=torch.int64)
        part = slice(rank * local, (rank + 1) * local)
        loss = step(model, opt, x[part], t[part])
        ref_loss = ref(x, t)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        # Relative to the magnitude (at least 1): float32 rounding scales.
        def dev(a, b):
            return ((a - b).abs() / b.abs().clamp(min=1.0)).max().item()
        worst = max(worst, dev(loss, ref_loss.detach()))
        for p, q in zip(model.parameters(), ref.parameters()):
            worst = max(worst, dev(p.detach(), q.detach()))
    return worst


def main():
    names = sys.argv[1:] or list(CASES)
    rank, world = spmd.rank(), spmd.world_size()
    failed = 0
    for name in names:
        try:
            worst = check(name, rank, world)
            verdict = "OK" if worst <= 1e-5 else "MISMATCH"
            detail = f"max deviation {worst:.1e}"
        except (spmd.UnsupportedError, spmd.CompileError) as err:
            verdict, detail = "ERROR", str(err).splitlines()[0]
        failed += verdict != "OK"
        if rank == 0:
            print(f"op {name}: {verdict} {detail}", flush=True)
    if rank == 0:
        print(f"{len(names) - failed} of {len(names)} ops OK on {world} ranks")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

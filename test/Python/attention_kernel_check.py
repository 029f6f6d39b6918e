"""spmd.attention's flash kernels against eager F.scaled_dot_product_attention
at sizes that span several blocks (64 query rows x 128 keys) with ragged
ends: one train step of query, key and value held as parameters (SGD lr 1,
so each parameter moves by its gradient), compiled vs eager, per argument
case. Prints one line a case with the largest deviation of the loss and of
the updated parameters, relative to their magnitude.

The bound: the kernels sum the softmax block by block with rescaling (the
online softmax) and each GEMM in blocks, where eager sums whole rows; in f32
both are within a few ulp of the exact values per output, so the tests
accept 1e-5 relative.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd

B, H, L, S, E, EV = 2, 3, 200, 300, 40, 24


class Attention(nn.Module):
    def __init__(self, kwargs, heads_kv=H, self_attention=False):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        length = L if self_attention else S
        self.q = nn.Parameter(torch.randn(B, H, L, E, generator=g))
        self.k = nn.Parameter(torch.randn(B, heads_kv, length, E, generator=g))
        self.v = nn.Parameter(torch.randn(B, heads_kv, length, EV,
                                          generator=g))
        self.kwargs = kwargs

    def forward(self, w, mask):
        out = F.scaled_dot_product_attention(self.q, self.k, self.v,
                                             attn_mask=mask, **self.kwargs)
        return (out * w).sum()


def case_kwargs(name):
    g = torch.Generator().manual_seed(1)
    if name == "plain":
        return {}, {}
    if name == "causal":
        return {"is_causal": True}, {"self_attention": True}
    if name == "scale":
        return {"scale": 0.05}, {}
    if name == "bool mask":
        mask = torch.rand(B, 1, L, S, generator=g) > 0.5
        mask[..., 0] = True
        mask[:, :, 7] = False  # a row with nothing to attend: zeros
        return {"attn_mask": mask}, {}
    if name == "float mask":
        return {"attn_mask": torch.randn(B, 1, L, S, generator=g)}, {}
    if name == "padding mask":  # one row per batch element, broadcast
        mask = torch.zeros(B, 1, 1, S)
        mask[0, ..., 250:] = float("-inf")
        return {"attn_mask": mask}, {}
    if name == "gqa":
        return {"enable_gqa": True, "is_causal": True}, \
            {"heads_kv": 1, "self_attention": True}
    raise SystemExit(f"unknown case {name}")


def run(name):
    kwargs, shape = case_kwargs(name)
    mask = kwargs.pop("attn_mask", None)  # a batch-sharded input
    model, ref = Attention(kwargs, **shape), Attention(kwargs, **shape)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=1.0)

    def step(model, opt, w, mask):
        loss = model(w, mask)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    compiled = spmd.compile()(step)
    w = torch.randn(B, H, L, EV, generator=torch.Generator().manual_seed(2))
    rank, world = spmd.rank(), spmd.world_size()
    local = B // world
    mine = slice(rank * local, (rank + 1) * local)
    loss = compiled(model, opt, w[mine],
                    None if mask is None else mask[mine])
    ref_loss = step(ref, ref_opt, w, mask)
    rows = torch.ones(L, dtype=torch.bool)
    if name == "bool mask":
        # A row with nothing to attend to: eager's output is NaN there (its
        # gradient too); spmd.attention's is zeros. Compared elsewhere.
        rows[7] = False
    worst = abs(loss.item() - ref_loss.item()) / abs(ref_loss.item())
    for (n, p), r in zip(model.named_parameters(), ref.parameters()):
        have, want = p.detach(), r.detach()
        if n == "q":
            have, want = have[:, :, rows], want[:, :, rows]
        scale = want.abs().max().item()
        worst = max(worst, (have - want).abs().max().item() / scale)
    finite = all(torch.isfinite(p).all() for p in model.parameters())
    ok = worst < 1e-5 and finite
    if rank == 0:
        print(f"{name}: {'OK' if ok else 'BAD'} relative deviation "
              f"{worst:.1e} on {world} ranks")
    return ok


def main():
    names = sys.argv[1:] or ["plain", "causal", "scale", "bool mask",
                             "float mask", "padding mask", "gqa"]
    ok = all([run(n) for n in names])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

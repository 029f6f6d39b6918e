"""spmd's math form of F.scaled_dot_product_attention against PyTorch's own
on every argument it takes (eager, no compile): prints one line a case."""

import torch
import torch.nn.functional as F

from spmd import UnsupportedError
from spmd._attention import attention_math

torch.manual_seed(0)
q = torch.randn(2, 4, 5, 3)
k = torch.randn(2, 4, 7, 3)
v = torch.randn(2, 4, 7, 3)
kv_k, kv_v = k[:, :2], v[:, :2]
bool_mask = torch.rand(5, 7) > 0.3
bool_mask[:, 0] = True  # no row fully masked
float_mask = torch.randn(2, 1, 5, 7)
cases = {
    "plain": ((q, k, v), {}),
    "scale": ((q, k, v), {"scale": 0.3}),
    "causal": ((q, k, v), {"is_causal": True}),
    "bool mask": ((q, k, v), {"attn_mask": bool_mask}),
    "float mask": ((q, k, v), {"attn_mask": float_mask}),
    "gqa": ((q, kv_k, kv_v), {"enable_gqa": True, "is_causal": True}),
}
for name, (args, kwargs) in cases.items():
    want = F.scaled_dot_product_attention(*args, **kwargs)
    have = attention_math(*args, **kwargs)
    err = (want - have).abs().max().item()
    print(f"{name}: {'OK' if err < 1e-6 else 'BAD'} {err:.1e}")
torch.manual_seed(1)
dropped = attention_math(q, k, v, dropout_p=0.5)
print("dropout:", "OK" if dropped.shape == q.shape else "BAD")
try:
    attention_math(q, k, v, attn_mask=bool_mask, is_causal=True)
    print("mask and causal: accepted")
except UnsupportedError as e:
    print("mask and causal: refused:", str(e).splitlines()[0])

# The attention op's reference semantics (spmd::attention and its backward,
# python/spmd/_attention.py) against PyTorch's SDPA and its autograd.
from spmd._attention import fused_attention, fused_attention_backward

for name, (args, kwargs) in cases.items():
    if name == "gqa":
        continue  # the bridge repeats key and value heads before the op
    qq, kk, vv = (t.clone().requires_grad_() for t in args)
    want = F.scaled_dot_product_attention(qq, kk, vv, **kwargs)
    grad = torch.randn_like(want)
    want.backward(grad)
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    if mask is not None:
        while mask.dim() < 4:
            mask = mask.unsqueeze(0)
    scale = kwargs.get("scale", 1 / q.size(-1) ** 0.5)
    causal = kwargs.get("is_causal", False)
    out, lse = fused_attention(*args, mask, scale, causal)
    dq, dk, dv = fused_attention_backward(grad, *args, out, lse, mask, scale,
                                          causal)
    err = max((out - want).abs().max().item(),
              *((a - b.grad).abs().max().item()
                for a, b in ((dq, qq), (dk, kk), (dv, vv))))
    print(f"op {name}: {'OK' if err < 1e-5 else 'BAD'} {err:.1e}")

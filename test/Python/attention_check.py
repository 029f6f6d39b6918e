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

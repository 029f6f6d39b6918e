"""scaled_dot_product_attention, traced as the math it computes.

On the CPU, `F.scaled_dot_product_attention` dispatches below autograd to
`_scaled_dot_product_flash_attention_for_cpu`, whose backward op torch-mlir
cannot lower to linalg; every model that calls it (nn.MultiheadAttention
with need_weights=False, nn.TransformerEncoderLayer, most current models)
would be refused. While a step is traced, `math_attention()` intercepts the
call above autograd and computes it as PyTorch's math reference does (`_scaled_dot_product_attention_math`): scores = q k^T *
scale, the causal or given mask, softmax, dropout, times v. Autograd then
traces the backward of those ops. Every argument is supported: attn_mask
(bool: True attends; float: added), is_causal (top-left aligned, as torch),
scale, enable_gqa (k and v heads repeated), dropout_p (through the step's
counter-based generator, as F.dropout).

The scores are materialized (T x T per head), forward and backward: what
eager's flash kernel avoids; a fused attention operation is the planned
fix (Rationale: "Attention").
"""

import contextlib
import math

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ._errors import UnsupportedError

_SDPA = F.scaled_dot_product_attention


def attention_math(query, key, value, attn_mask=None, dropout_p=0.0,
                   is_causal=False, scale=None, enable_gqa=False):
    if is_causal and attn_mask is not None:
        raise UnsupportedError(
            "scaled_dot_product_attention: attn_mask and is_causal=True "
            "together (PyTorch refuses them too)",
            hint="fold the causal mask into attn_mask")
    L, S = query.size(-2), key.size(-2)
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and key.dim() >= 3 and key.size(-3) != query.size(-3):
        repeat = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(repeat, dim=-3)
        value = value.repeat_interleave(repeat, dim=-3)
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        rows = torch.arange(L).unsqueeze(1)
        cols = torch.arange(S).unsqueeze(0)
        scores = scores.masked_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(),
                                        float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    return torch.matmul(weights, value)


class _AttentionAsMath(TorchFunctionMode):
    """Catches calls of the original function held under another name
    (`from torch.nn.functional import scaled_dot_product_attention` before
    the step was traced) made directly by the step's code. A mode is off
    while it handles a call, so calls nested inside another torch function
    (F.multi_head_attention_forward) do not come here: those look the name
    up in torch.nn.functional, which math_attention() replaces."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA:
            return attention_math(*args, **kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def math_attention():
    """A context in which F.scaled_dot_product_attention is traced as math:
    the name in torch.nn.functional replaced, and a mode for the rest."""
    F.scaled_dot_product_attention = attention_math
    try:
        with _AttentionAsMath():
            yield
    finally:
        F.scaled_dot_product_attention = _SDPA

"""scaled_dot_product_attention, traced as one attention operation.

On the CPU, `F.scaled_dot_product_attention` dispatches below autograd to
`_scaled_dot_product_flash_attention_for_cpu`, whose backward op torch-mlir
cannot lower to linalg; every model that calls it (nn.MultiheadAttention
with need_weights=False, nn.TransformerEncoderLayer, most current models)
would be refused. While a step is traced, `traced_attention()` intercepts the
call above autograd. In f32 without dropout it becomes the custom op
`spmd::attention` (output and log-sum-exp), whose autograd formula is
`spmd::attention_backward`: the importer turns both into `spmd.attention`
/ `spmd.attention_grad`, which the compiler distributes (batch and heads
shard) and lowers flash-attention style, with no T x T tensor
(Rationale: "Attention"). Every argument is supported: attn_mask (bool:
True attends; float: added), is_causal (top-left aligned, as torch), scale,
enable_gqa (key and value heads repeated before the op).

What the op does not take is computed as PyTorch's math reference does
(`_scaled_dot_product_attention_math`: scores = q k^T * scale, the causal
or given mask, softmax, dropout, times v), whose backward autograd traces:
dropout_p > 0 (through the step's counter-based generator, as F.dropout),
16-bit inputs (autocast), a float mask that requires grad (a learned
bias), and `SPMD_ATTENTION=math` for all calls (the benchmark's baseline).
"""

import contextlib
import math
import os
from typing import Optional

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
        rows = torch.arange(L, device=query.device).unsqueeze(1)
        cols = torch.arange(S, device=query.device).unsqueeze(0)
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


# The attention operation the compiler knows: spmd::attention returns the
# output and the log-sum-exp of each row of the scaled, masked scores;
# spmd::attention_backward the gradients of query, key and value from them.
# Their eager bodies are the reference semantics (and what runs if they are
# ever called outside a trace); the importer maps them to spmd.attention and
# spmd.attention_grad. Tensors are B x H x L x E (query), B x H x S x E
# (key), B x H x S x Ev (value); mask B' x H' x L' x S with each primed size
# 1 or full.


def _scores(q, k, mask, scale, causal):
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        L, S = q.size(-2), k.size(-2)
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool,
                                     device=q.device).triu(1),
                          float("-inf"))
    if mask is not None:
        s = s + mask
    return s


def _probs(s, lse):
    # A row with nothing to attend to (lse = -inf) has zero probabilities.
    finite = torch.isfinite(lse).unsqueeze(-1)
    return torch.where(finite, torch.exp(s - torch.where(
        finite, lse.unsqueeze(-1), torch.zeros_like(lse.unsqueeze(-1)))),
        torch.zeros_like(s))


@torch.library.custom_op("spmd::attention", mutates_args=())
def fused_attention(query: torch.Tensor, key: torch.Tensor,
                    value: torch.Tensor, mask: Optional[torch.Tensor],
                    scale: float, causal: bool
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    s = _scores(query, key, mask, scale, causal)
    lse = torch.logsumexp(s, dim=-1)
    return torch.matmul(_probs(s, lse), value), lse


@fused_attention.register_fake
def _(query, key, value, mask, scale, causal):
    return (query.new_empty(*query.shape[:-1], value.size(-1)),
            query.new_empty(query.shape[:-1]))


@torch.library.custom_op("spmd::attention_backward", mutates_args=())
def fused_attention_backward(grad: torch.Tensor, query: torch.Tensor,
                             key: torch.Tensor, value: torch.Tensor,
                             out: torch.Tensor, lse: torch.Tensor,
                             mask: Optional[torch.Tensor], scale: float,
                             causal: bool
                             ) -> tuple[torch.Tensor, torch.Tensor,
                                        torch.Tensor]:
    p = _probs(_scores(query, key, mask, scale, causal), lse)
    grad_value = torch.matmul(p.transpose(-2, -1), grad)
    delta = (grad * out).sum(-1, keepdim=True)
    ds = p * (torch.matmul(grad, value.transpose(-2, -1)) - delta)
    return (torch.matmul(ds, key) * scale,
            torch.matmul(ds.transpose(-2, -1), query) * scale, grad_value)


@fused_attention_backward.register_fake
def _(grad, query, key, value, out, lse, mask, scale, causal):
    return (torch.empty_like(query), torch.empty_like(key),
            torch.empty_like(value))


def _save(ctx, inputs, output):
    query, key, value, mask, scale, causal = inputs
    out, lse = output
    ctx.save_for_backward(query, key, value, out, lse, mask)
    ctx.scale, ctx.causal = scale, causal


def _backward(ctx, grad_out, grad_lse):
    query, key, value, out, lse, mask = ctx.saved_tensors
    dq, dk, dv = fused_attention_backward(grad_out.contiguous(), query, key,
                                          value, out, lse, mask, ctx.scale,
                                          ctx.causal)
    return dq, dk, dv, None, None, None


fused_attention.register_autograd(_backward, setup_context=_save)


def _fusable(query, key, value, attn_mask, dropout_p):
    """Why the call is computed as math instead (None when it is fused)."""
    if os.environ.get("SPMD_ATTENTION", "fused") == "math":
        return "SPMD_ATTENTION=math"
    if dropout_p > 0.0:
        return "dropout"
    if any(t.dtype != torch.float32 for t in (query, key, value)):
        return "not float32"
    if query.dim() < 2 or key.dim() != query.dim() or \
            value.dim() != query.dim():
        return "ranks differ"
    if attn_mask is not None and attn_mask.dtype != torch.bool and \
            attn_mask.requires_grad:
        return "the mask requires grad"
    return None


def _to_4d(t):
    """(..., L, E) as B x H x L x E: a 3-D tensor gets one head, leading
    batch dimensions are flattened."""
    if t.dim() == 2:
        return t.reshape(1, 1, *t.shape)
    if t.dim() == 3:
        return t.unsqueeze(1)
    return t.reshape(-1, *t.shape[-3:])


def attention_fused(query, key, value, attn_mask=None, dropout_p=0.0,
                    is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention as spmd::attention, or its math."""
    if _fusable(query, key, value, attn_mask, dropout_p) is not None:
        return attention_math(query, key, value, attn_mask, dropout_p,
                              is_causal, scale, enable_gqa)
    if is_causal and attn_mask is not None:
        return attention_math(query, key, value, attn_mask, dropout_p,
                              is_causal, scale, enable_gqa)  # refuses
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and key.dim() >= 3 and key.size(-3) != query.size(-3):
        repeat = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(repeat, dim=-3)
        value = value.repeat_interleave(repeat, dim=-3)
    batch = query.shape[:-2]
    L, S = query.size(-2), key.size(-2)
    mask = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=query.dtype,
                               device=query.device).masked_fill(
                mask.logical_not(), float("-inf"))
        mask = mask.to(query.dtype)
        if query.dim() > 4 or mask.dim() > query.dim():
            # Leading batch dimensions are flattened: broadcast them first.
            mask = mask.expand(*batch, L, S)
        while mask.dim() < query.dim():
            mask = mask.unsqueeze(0)
        if mask.size(-1) != S:
            mask = mask.expand(*mask.shape[:-1], S)
        mask = _to_4d(mask.contiguous())
    out, _ = fused_attention(_to_4d(query).contiguous(),
                             _to_4d(key).contiguous(),
                             _to_4d(value).contiguous(), mask, float(factor),
                             bool(is_causal))
    return out.reshape(*batch, L, value.size(-1))


_MHA = F.multi_head_attention_forward


def _batch_first_mha(query, key, value, embed_dim_to_check, num_heads,
                     in_proj_weight, in_proj_bias, bias_k, bias_v,
                     add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                     training=True, key_padding_mask=None, need_weights=True,
                     attn_mask=None, use_separate_proj_weight=False,
                     q_proj_weight=None, k_proj_weight=None,
                     v_proj_weight=None, static_k=None, static_v=None,
                     average_attn_weights=True, is_causal=False):
    """F.multi_head_attention_forward for nn.MultiheadAttention(batch_first=
    True), computed in the batch-first layout.

    The module transposes its (batch, sequence, embedding) inputs to
    sequence-first views and PyTorch's function projects them as
    (sequence * batch) rows: a data-parallel program then has the sharded
    batch inside a merged dimension, which no contiguous sharding describes,
    and moves the activations (all_to_all) around every projection. Here the
    same math runs on (batch * sequence) rows: each row's projection is the
    same dot products, the masks are PyTorch's (canonical float masks, key
    padding merged the same way), SDPA gets the same (batch, heads, L, E)
    operands; only the weight gradients sum their rows in another order.
    With need_weights, PyTorch's explicit form (bmm, softmax) on the same
    (batch * heads) operands, weights returned. Anything else (bias_k/v,
    add_zero_attn, static_k/v, unbatched or genuinely sequence-first
    inputs) is PyTorch's own."""
    args = (query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
            in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
            out_proj_weight, out_proj_bias)
    kwargs = dict(training=training, key_padding_mask=key_padding_mask,
                  need_weights=need_weights, attn_mask=attn_mask,
                  use_separate_proj_weight=use_separate_proj_weight,
                  q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight,
                  v_proj_weight=v_proj_weight, static_k=static_k,
                  static_v=static_v,
                  average_attn_weights=average_attn_weights,
                  is_causal=is_causal)
    # Sequence-first views of batch-first tensors (what the module passes).
    views = all(t.dim() == 3 and t.transpose(0, 1).is_contiguous()
                and not t.is_contiguous() for t in (query, key, value))
    if (not views or bias_k is not None or bias_v is not None or
            add_zero_attn or static_k is not None or static_v is not None or
            (is_causal and attn_mask is None)):
        return _MHA(*args, **kwargs)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check or embed_dim % num_heads:
        return _MHA(*args, **kwargs)
    head_dim = embed_dim // num_heads
    key_padding_mask = F._canonical_mask(
        mask=key_padding_mask, mask_name="key_padding_mask",
        other_type=F._none_or_dtype(attn_mask), other_name="attn_mask",
        target_type=query.dtype)
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = F._canonical_mask(
            mask=attn_mask, mask_name="attn_mask", other_type=None,
            other_name="", target_type=query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if attn_mask is not None:
        shapes = {2: (tgt_len, src_len), 3: (bsz * num_heads, tgt_len,
                                             src_len)}
        if tuple(attn_mask.shape) != shapes.get(attn_mask.dim()):
            return _MHA(*args, **kwargs)  # PyTorch says what is wrong
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
    # The batch-first tensors (one per distinct input, so that the packed
    # projection still sees `query is key is value` for self-attention).
    firsts = {}
    q, k, v = (firsts.setdefault(id(t), t.transpose(0, 1))
               for t in (query, key, value))
    if not use_separate_proj_weight:
        q, k, v = F._in_projection_packed(q, k, v, in_proj_weight,
                                          in_proj_bias)
    else:
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = F._in_projection(q, k, v, q_proj_weight, k_proj_weight,
                                   v_proj_weight, b_q, b_k, b_v)
    if key_padding_mask is not None:
        key_padding_mask = (key_padding_mask.view(bsz, 1, 1, src_len)
                            .expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else \
            attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        # PyTorch's explicit form on (batch * heads, L, head_dim) operands,
        # ordered batch-major as its own view makes them.
        def heads(t, length):
            return t.view(bsz, length, num_heads, head_dim).transpose(
                1, 2).reshape(bsz * num_heads, length, head_dim)
        q, k, v = heads(q, tgt_len), heads(k, src_len), heads(v, src_len)
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            weights = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = torch.bmm(q_scaled, k.transpose(-2, -1))
        weights = F.softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = torch.bmm(weights, v).view(bsz, num_heads, tgt_len, head_dim)
        out = out.transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return out.transpose(0, 1), weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    # (batch, L, E) -> (batch, heads, L, head_dim)
    q = q.view(bsz, tgt_len, num_heads, head_dim).transpose(1, 2)
    k = k.view(bsz, src_len, num_heads, head_dim).transpose(1, 2)
    v = v.view(bsz, src_len, num_heads, head_dim).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
                                         is_causal)
    out = out.transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    # Sequence-first, as the module expects (it transposes back).
    return out.transpose(0, 1), None


class _AttentionAsMath(TorchFunctionMode):
    """Catches calls of the original function held under another name
    (`from torch.nn.functional import scaled_dot_product_attention` before
    the step was traced) made directly by the step's code. A mode is off
    while it handles a call, so calls nested inside another torch function
    (F.multi_head_attention_forward) do not come here: those look the name
    up in torch.nn.functional, which traced_attention() replaces."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA:
            return attention_fused(*args, **kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def traced_attention():
    """A context in which F.scaled_dot_product_attention is traced as the
    attention op (or its math): the name in torch.nn.functional replaced,
    and a mode for the rest."""
    F.scaled_dot_product_attention = attention_fused
    F.multi_head_attention_forward = _batch_first_mha
    try:
        with _AttentionAsMath():
            yield
    finally:
        F.scaled_dot_product_attention = _SDPA
        F.multi_head_attention_forward = _MHA

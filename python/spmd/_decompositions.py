"""The decompositions make_fx applies while tracing.

torch-mlir's own table (core ATen plus what its importer needs), with two
backward ops replaced: PyTorch decomposes `nll_loss_backward` into a scatter
and `embedding_dense_backward` into an accumulating `index_put`, which
torch-mlir lowers to `tm_tensor.scatter`, outside linalg. Both are rewritten
here as one-hot formulations that stay in linalg (elementwise compares and a
matmul) and distribute like any other linalg op; so is `nll_loss_forward`,
whose gather along the batch would make the batch dimension unshardable. GELU is decomposed by
PyTorch's own rules (see below). Batch normalization is decomposed here
(statistics over the global batch; running statistics updated in place,
which the bridge turns into state updates). `max_pool2d_with_indices_backward`
(a scatter in PyTorch) is a sum of strided placements, one per window
offset, in PyTorch's order (bitwise equal); `constant_pad_nd` with negative
(cropping) pads becomes slices and a non-negative pad, since torch-mlir
writes a crop as an insert at a negative offset, which the lowering does
not diagnose.
"""

import torch
from torch._decomp import get_decompositions
from torch_mlir.extras.fx_decomp_util import get_decomposition_table

from ._errors import UnsupportedError

aten = torch.ops.aten


def _classes(self, channel_dim):
    """0..C-1 along the class dimension of `self`'s shape (1 elsewhere), to
    compare with targets: [C], [1, C] or, for spatial losses (nll_loss2d:
    cross-entropy over (N, C, d1, ...) logits), [1, C, 1, ...]."""
    classes = torch.arange(self.shape[channel_dim], device=self.device)
    if channel_dim == 0:
        return classes
    return classes.reshape([1, -1] + [1] * (self.dim() - 2))


def _nll_loss_backward(grad_output, self, target, weight, reduction,
                       ignore_index, total_weight):
    # torch/_decomp/decompositions.py order: scale, one-hot -1, weight,
    # ignore mask, times the incoming gradient.
    channel_dim = 0 if self.dim() < 2 else 1
    if reduction == 1:  # mean
        grad_output = grad_output / total_weight
    target = target.unsqueeze(channel_dim)
    classes = _classes(self, channel_dim)
    grad_input = torch.where(target == classes,
                             torch.full((), -1.0, dtype=self.dtype),
                             torch.zeros((), dtype=self.dtype))
    if weight is not None:
        shape = [1] * self.dim()
        shape[channel_dim] = weight.shape[0]
        grad_input = grad_input * weight.reshape(shape)
    if grad_output.dim() > 0 and self.dim() >= 2:
        grad_output = grad_output.unsqueeze(channel_dim)
    grad_input = torch.where(target != ignore_index, grad_input,
                             torch.zeros((), dtype=self.dtype))
    return grad_input * grad_output


def _nll_loss_forward(self, target, weight, reduction, ignore_index):
    # torch/_refs nll_loss order: -logp[target] * w, ignored entries 0, then
    # sum or sum / total_weight. The pick is a one-hot select summed over
    # the classes (one value plus exact zeros: the same number as a gather),
    # which keeps the batch dimension shardable.
    channel_dim = 0 if self.dim() < 2 else 1
    classes = _classes(self, channel_dim)
    tgt = target.unsqueeze(channel_dim)
    hit = tgt == classes
    zero = torch.zeros((), dtype=self.dtype)
    picked = torch.where(hit, self, zero).sum(channel_dim)
    valid = target != ignore_index
    if weight is not None:
        shape = [1] * self.dim()
        shape[channel_dim] = weight.shape[0]
        w = torch.where(hit, weight.reshape(shape), zero).sum(channel_dim)
        result = -picked * w
    else:
        w = None
        result = -picked
    result = torch.where(valid, result, zero)
    if reduction == 0 and self.dim() > 1:  # none
        return result, torch.zeros((), dtype=self.dtype)
    if w is not None:
        total_weight = torch.where(valid, w, zero).sum()
    else:
        total_weight = valid.sum().to(self.dtype)
    if reduction == 2:  # sum
        result = result.sum()
    elif reduction == 1:  # mean
        result = result.sum() / total_weight
    return result, total_weight


def _embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                              scale_grad_by_freq):
    if scale_grad_by_freq:
        raise UnsupportedError(
            "nn.Embedding(scale_grad_by_freq=True) is not supported",
            hint="use scale_grad_by_freq=False")
    dim = grad_output.shape[-1]
    flat = indices.reshape(-1, 1)
    rows = torch.arange(num_weights, device=indices.device).unsqueeze(0)
    hit = flat == rows
    if padding_idx >= 0:
        hit = torch.logical_and(hit, flat != padding_idx)
    one_hot = hit.to(grad_output.dtype)
    return torch.mm(one_hot.t(), grad_output.reshape(-1, dim))


def _constant_pad_nd(self, pad, value=0):
    # Negative pads crop. torch-mlir writes them as an insert at a negative
    # offset, which the lowering does not diagnose (some compiled, with
    # wrong values): crop with slices first, then pad what is positive.
    if all(p >= 0 for p in pad):
        return NotImplemented
    cropped = self
    for i in range(len(pad) // 2):
        dim = self.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        size = cropped.shape[dim]
        start, end = max(-lo, 0), size - max(-hi, 0)
        if end < start:
            raise UnsupportedError(
                f"padding {list(pad)} crops dimension {dim} of size {size} "
                "below zero")
        cropped = aten.slice.Tensor(cropped, dim, start, end)
    return aten.constant_pad_nd.default(cropped, [max(p, 0) for p in pad],
                                        value)


def _max_pool2d_backward(grad_output, self, kernel_size, stride, padding,
                         dilation, ceil_mode, indices):
    # PyTorch adds each output's gradient into the input element its index
    # names (a scatter), in output order. Here, for each window offset
    # (r, s) the outputs whose maximum sat at that offset send their
    # gradient to their window's element at (r, s): a strided placement of
    # an [Ho, Wo] map (zeros interleaved, then shifted), no scatter. An
    # input element gets at most one contribution per offset; summing the
    # offsets in descending (r, s) order adds its contributions in
    # ascending output order, as PyTorch does (same rounding).
    def pair(v, default):
        v = list(v) if v else list(default)
        return v * 2 if len(v) == 1 else v
    kh, kw = pair(kernel_size, None)
    sh, sw = pair(stride, (kh, kw))
    ph, pw = pair(padding, (0, 0))
    dh, dw = pair(dilation, (1, 1))
    H, W = self.shape[-2], self.shape[-1]
    Ho, Wo = grad_output.shape[-2], grad_output.shape[-1]
    lead = list(grad_output.shape[:-2])
    # The window offset of each output's maximum, from its flat input index.
    h = torch.div(indices, W, rounding_mode="floor")
    w = indices - h * W
    oh = torch.arange(Ho, device=indices.device).reshape(Ho, 1)
    ow = torch.arange(Wo, device=indices.device).reshape(1, Wo)
    r = torch.div(h - (oh * sh - ph), dh, rounding_mode="floor")
    c = torch.div(w - (ow * sw - pw), dw, rounding_mode="floor")
    # A frame every shifted map fits in (pads stay non-negative), cropped to
    # the input at the end.
    Hp = max(H + 2 * ph, (kh - 1) * dh + Ho * sh)
    Wp = max(W + 2 * pw, (kw - 1) * dw + Wo * sw)
    zero = torch.zeros((), dtype=grad_output.dtype)
    total = None
    for i in reversed(range(kh)):
        for j in reversed(range(kw)):
            part = torch.where(torch.logical_and(r == i, c == j),
                               grad_output, zero)
            # Interleave zeros: [.., Ho, Wo] -> [.., Ho * sh, Wo * sw].
            part = part.reshape(lead + [Ho, 1, Wo, 1])
            part = torch.nn.functional.pad(part, (0, sw - 1, 0, 0, 0, sh - 1))
            part = part.reshape(lead + [Ho * sh, Wo * sw])
            # Shift to the offset's place in the frame.
            top, left = i * dh, j * dw
            part = torch.nn.functional.pad(
                part, (left, Wp - left - Wo * sw, top, Hp - top - Ho * sh))
            total = part if total is None else total + part
    return total[..., ph:ph + H, pw:pw + W]


def _native_batch_norm(input, weight, bias, running_mean, running_var,
                       training, momentum, eps):
    """Batch normalization without prims (functionalization cannot take
    PyTorch's own decomposition's prims.squeeze). In training mode the
    statistics are over the whole (global) batch, and the running statistics
    are updated in place as torch does (momentum, unbiased variance); the
    bridge turns those updates of buffers into stores of their state."""
    if input.dtype in _HALF:
        # In float32, rounded once (as eager's CPU kernels); the statistics
        # stay float32.
        out, mean, rstd = _native_batch_norm(
            input.float(), weight, bias, running_mean, running_var, training,
            momentum, eps)
        return out.to(input.dtype), mean, rstd
    channels = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    shape = [1, channels] + [1] * (input.dim() - 2)
    if training:
        mean = input.mean(dims)
        centered = input - mean.reshape(shape)
        var = (centered * centered).mean(dims)
        rstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            n = input.numel() // channels
            running_mean.copy_(momentum * mean + (1 - momentum) * running_mean)
            running_var.copy_(momentum * var * (n / (n - 1))
                              + (1 - momentum) * running_var)
    else:
        centered = input - running_mean.reshape(shape)
        rstd = torch.rsqrt(running_var + eps)
    out = centered * rstd.reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    if not training:
        empty = input.new_zeros((0,))
        return out, empty, empty
    return out, mean, rstd


_HALF = (torch.bfloat16, torch.float16)


def _sum_in_float(x, dim=None, keepdim=False, *, dtype=None):
    """sum of a 16-bit float tensor with a float32 accumulator, rounded once,
    as eager computes it (torch-mlir would accumulate in the 16-bit type,
    rounding at every addition)."""
    if x.dtype not in _HALF or dtype is not None:
        return NotImplemented
    if dim is None or dim == []:
        return aten.sum.default(x.float()).to(x.dtype) if not keepdim \
            else aten.sum.dim_IntList(x.float(), list(range(x.dim())),
                                      True).to(x.dtype)
    return aten.sum.dim_IntList(x.float(), dim, keepdim).to(x.dtype)


def _mean_in_float(x, dim=None, keepdim=False, *, dtype=None):
    """mean of a 16-bit float tensor in float32, rounded once (as eager)."""
    if x.dtype not in _HALF or dtype is not None:
        return NotImplemented
    if dim is None or dim == []:
        dim = list(range(x.dim()))
    return aten.mean.dim(x.float(), dim, keepdim).to(x.dtype)


def _layer_norm_mixed(decomposed):
    """native_layer_norm of a 16-bit float input with float32 weights (what
    autocast produces) as eager's CPU kernel computes it: in float32, the
    output rounded once, mean and rstd kept in float32 for the backward.
    PyTorch's decomposition rounds mean and rstd to the input's type on
    the CPU, which the backward then divides in bfloat16."""
    def layer_norm(input, normalized_shape, weight, bias, eps):
        if input.dtype not in _HALF or (
                weight is not None and weight.dtype in _HALF):
            return decomposed(input, normalized_shape, weight, bias, eps)
        out, mean, rstd = decomposed(input.float(), normalized_shape, weight,
                                     bias, eps)
        return out.to(input.dtype), mean, rstd
    return layer_norm


def _squeeze_as_view(x, dim=None):
    """squeeze as a view to the same shape without the size-1 dimensions.
    PyTorch's reference decomposes it to prims.squeeze, an aliasing prim
    that functionalization refuses (nn.MultiheadAttention's packed
    in-projection squeezes a transposed tensor)."""
    if dim is None:
        dims = range(x.dim())
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [d % max(x.dim(), 1) for d in dims]
    shape = [n for d, n in enumerate(x.shape) if not (d in dims and n == 1)]
    return aten.view.default(x, shape)


def decomposition_table():
    table = dict(get_decomposition_table())
    for overload in (aten.squeeze.default, aten.squeeze.dim,
                     aten.squeeze.dims):
        table[overload] = _squeeze_as_view
    # torch-mlir lowers gelu(approximate="tanh") with sqrt(2/pi) rounded to
    # 0.797724 (2e-4 off); PyTorch's own decompositions use the exact
    # constant, and the backward must match the forward.
    table.update(get_decompositions([aten.gelu, aten.gelu_backward]))
    table[aten.nll_loss_forward.default] = _nll_loss_forward
    table[aten.nll_loss_backward.default] = _nll_loss_backward
    table[aten.nll_loss2d_forward.default] = _nll_loss_forward
    table[aten.nll_loss2d_backward.default] = _nll_loss_backward
    table[aten.embedding_dense_backward.default] = _embedding_dense_backward
    table[aten.max_pool2d_with_indices_backward.default] = \
        _max_pool2d_backward
    table[aten.constant_pad_nd.default] = _constant_pad_nd
    # 16-bit float reductions accumulate in float32, as eager's do.
    table[aten.sum.default] = lambda x, *, dtype=None: _sum_in_float(
        x, dtype=dtype)
    table[aten.sum.dim_IntList] = _sum_in_float
    table[aten.mean.default] = lambda x, *, dtype=None: _mean_in_float(
        x, dtype=dtype)
    table[aten.mean.dim] = _mean_in_float
    table[aten.native_layer_norm.default] = _layer_norm_mixed(
        table.get(aten.native_layer_norm.default) or get_decompositions(
            [aten.native_layer_norm])[aten.native_layer_norm.default])
    table[aten.native_batch_norm.default] = _native_batch_norm
    table[aten._native_batch_norm_legit.default] = _native_batch_norm
    # Random ops: Philox on the global element index (_random.py).
    from . import _random
    table.update(_random.decompositions())
    return table

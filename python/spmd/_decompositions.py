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


def _conv_weight_grad(x, dy, kernel, stride, padding, dilation, groups):
    """dW[co, ci, k] = sum_n,o dy[n, co, o] * x[n, g*Cin/g + ci, o*s + k*d - p]
    as one forward convolution: batch = the input channels of a group,
    channels = (group, sample), the kernel = dy; its stride is the dilation,
    its dilation the stride. Cropped to the kernel size."""
    n, cin = x.shape[0], x.shape[1]
    cout = dy.shape[1]
    spatial = list(x.shape[2:])
    out_spatial = list(dy.shape[2:])
    per_in, per_out = cin // groups, cout // groups
    # [N, g, Cin/g, S] -> [Cin/g, g * N, S]
    xs = x.reshape([n, groups, per_in] + spatial)
    xs = xs.permute([2, 1, 0] + list(range(3, 3 + len(spatial))))
    xs = xs.reshape([per_in, groups * n] + spatial)
    # [N, Cout, O] -> [Cout, N, O]
    ws = dy.transpose(0, 1)
    out = aten.convolution.default(xs, ws, None, list(dilation),
                                   list(padding), list(stride), False,
                                   [0] * len(spatial), groups)
    # [Cin/g, Cout, K'] -> [Cout, Cin/g, K]
    out = out.transpose(0, 1)
    for i, k in enumerate(kernel):
        out = aten.slice.Tensor(out, 2 + i, 0, k)
    return out


def _conv_input_grad(dy, weight, input_shape, stride, padding, dilation,
                     groups):
    """The transposed convolution of dy, written as a forward one (torch-mlir
    miscompiles grouped transposed convolutions with one output channel per
    group, the depthwise case): zeros inserted between dy's elements (the
    stride), padded by d*(K-1)-p (cropped where negative) plus what gives
    back the input's size, convolved with the kernel flipped and its
    channels swapped within each group."""
    dims = dy.dim() - 2
    kernel = list(weight.shape[2:])
    cout, per_in = weight.shape[0], weight.shape[1]
    x = dy
    for i in range(dims):
        axis, size = 2 + i, x.shape[2 + i]
        if stride[i] > 1:
            shape = list(x.shape)
            x = x.unsqueeze(axis + 1)
            pad = [0, 0] * (x.dim() - axis - 2) + [0, stride[i] - 1]
            x = torch.nn.functional.pad(x, pad)
            shape[axis] = size * stride[i]
            x = aten.slice.Tensor(x.reshape(shape), axis, 0,
                                  (size - 1) * stride[i] + 1)
        edge = dilation[i] * (kernel[i] - 1) - padding[i]
        extra = input_shape[2 + i] - ((size - 1) * stride[i] - 2 *
                                      padding[i] + dilation[i] *
                                      (kernel[i] - 1) + 1)
        lo, hi = edge, edge + extra
        if lo < 0:
            x = aten.slice.Tensor(x, axis, -lo, x.shape[axis])
        if hi < 0:
            x = aten.slice.Tensor(x, axis, 0, x.shape[axis] + hi)
        pad = [0, 0] * (dims - 1 - i) + [max(lo, 0), max(hi, 0)]
        x = torch.nn.functional.pad(x, pad)
    # [g * Cout/g, Cin/g, K] -> [g * Cin/g, Cout/g, K], flipped.
    w = weight.reshape([groups, cout // groups, per_in] + kernel)
    w = w.transpose(1, 2).reshape([groups * per_in, cout // groups] + kernel)
    w = w.flip(list(range(2, 2 + dims)))
    return aten.convolution.default(x, w, None, [1] * dims, [0] * dims,
                                    list(dilation), False, [0] * dims, groups)


def _convolution_backward(grad_output, input, weight, bias_sizes, stride,
                          padding, dilation, transposed, output_padding,
                          groups, output_mask):
    # torch-mlir lowers the backward of plain convolutions (kept), not of
    # grouped (depthwise) or transposed ones: those are written as forward
    # convolutions, which it lowers for every kind.
    if groups == 1 and not transposed:
        return NotImplemented
    dims = input.dim() - 2
    stride, padding, dilation = (list(v) * dims if len(v) == 1 else list(v)
                                 for v in (stride, padding, dilation))
    kernel = list(weight.shape[2:])
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if transposed:
            grad_input = aten.convolution.default(
                grad_output, weight, None, stride, padding, dilation, False,
                [0] * dims, groups)
        else:
            grad_input = _conv_input_grad(grad_output, weight, input.shape,
                                          stride, padding, dilation, groups)
    if output_mask[1]:
        if transposed:
            grad_weight = _conv_weight_grad(grad_output, input, kernel,
                                            stride, padding, dilation, groups)
        else:
            grad_weight = _conv_weight_grad(input, grad_output, kernel,
                                            stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = grad_output.sum([0] + list(range(2, 2 + dims)))
    return grad_input, grad_weight, grad_bias


def _nearest_ratios(in_size, out_size, scales):
    """Whole-number ratios out/in per spatial dimension when nearest
    upsampling is plain block replication (PyTorch's floor(dst * in/out)
    picks src = dst // r), else None."""
    ratios = []
    for i, (a, b) in enumerate(zip(in_size, out_size)):
        if a == 0 or b % a:
            return None
        r = b // a
        if scales and scales[i] is not None and scales[i] != r:
            return None
        ratios.append(r)
    return ratios


def _upsample_nearest2d(input, output_size, scale_factors):
    # PyTorch decomposes it into a gather (aten.index) with computed
    # indices; for whole-number ratios it is a broadcast and a reshape.
    n, c, h, w = input.shape
    if output_size is None:
        output_size = [int(h * scale_factors[0]), int(w * scale_factors[1])]
    r = _nearest_ratios([h, w], output_size, scale_factors)
    if r is None:
        return NotImplemented
    return input.reshape(n, c, h, 1, w, 1).expand(
        n, c, h, r[0], w, r[1]).reshape(n, c, h * r[0], w * r[1])


def _upsample_nearest2d_backward(grad_output, output_size, input_size,
                                 scales_h=None, scales_w=None):
    # A scatter-add in PyTorch; for whole-number ratios each input element
    # sums its r x r block.
    n, c, h, w = input_size
    r = _nearest_ratios([h, w], output_size, [scales_h, scales_w])
    if r is None:
        return NotImplemented
    return grad_output.reshape(n, c, h, r[0], w, r[1]).sum([3, 5])


def _pair(v, default):
    v = list(v) if v else list(default)
    return v * 2 if len(v) == 1 else v


def _sum_window_offsets(contribution, out_hw, in_hw, kernel, stride, padding,
                        dilation):
    """A pooling backward without a scatter: for each window offset (i, j),
    `contribution(i, j)` ([..., Ho, Wo]: what each output sends to its
    window's element at (i, j)) is placed strided (zeros interleaved, then
    shifted) into a frame of the padded input, and the offsets are summed
    in descending (i, j) order, which adds an input element's contributions
    in ascending output order, as PyTorch's backward kernels do; the frame
    is cropped to the input."""
    (Ho, Wo), (H, W) = out_hw, in_hw
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    # A frame every shifted map fits in (pads stay non-negative).
    Hp = max(H + 2 * ph, (kh - 1) * dh + Ho * sh)
    Wp = max(W + 2 * pw, (kw - 1) * dw + Wo * sw)
    total = None
    for i in reversed(range(kh)):
        for j in reversed(range(kw)):
            part = contribution(i, j)
            lead = list(part.shape[:-2])
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


def _compare_scalar(op):
    """A float tensor compared with an integer scalar, the scalar as a float
    (what PyTorch compares): torch-mlir folds `aten.eq.Scalar` of a constant
    float tensor and an integer to false (`torch.ones(n) == 1` became all
    False, and F.cosine_embedding_loss's loss 0)."""
    def compare(self, other):
        if self.is_floating_point() and isinstance(other, int) and \
                not isinstance(other, bool):
            return op(self, float(other))
        return NotImplemented
    return compare


def _max_pool2d_backward(grad_output, self, kernel_size, stride, padding,
                         dilation, ceil_mode, indices):
    # PyTorch adds each output's gradient into the input element its index
    # names (a scatter): here the outputs whose maximum sat at window offset
    # (i, j) send their gradient there (bitwise equal).
    kernel = _pair(kernel_size, None)
    stride = _pair(stride, kernel)
    padding = _pair(padding, (0, 0))
    dilation = _pair(dilation, (1, 1))
    W = self.shape[-1]
    Ho, Wo = grad_output.shape[-2], grad_output.shape[-1]
    # The window offset of each output's maximum, from its flat input index.
    h = torch.div(indices, W, rounding_mode="floor")
    w = indices - h * W
    oh = torch.arange(Ho, device=indices.device).reshape(Ho, 1)
    ow = torch.arange(Wo, device=indices.device).reshape(1, Wo)
    r = torch.div(h - (oh * stride[0] - padding[0]), dilation[0],
                  rounding_mode="floor")
    c = torch.div(w - (ow * stride[1] - padding[1]), dilation[1],
                  rounding_mode="floor")
    zero = torch.zeros((), dtype=grad_output.dtype)
    return _sum_window_offsets(
        lambda i, j: torch.where(torch.logical_and(r == i, c == j),
                                 grad_output, zero),
        (Ho, Wo), tuple(self.shape[-2:]), kernel, stride, padding, dilation)


def _avg_pool2d_backward(grad_output, self, kernel_size, stride, padding,
                         ceil_mode, count_include_pad, divisor_override):
    # PyTorch adds each output's gradient / its divisor to every element of
    # its window (a scatter-add): here, to each window offset.
    kernel = _pair(kernel_size, None)
    stride = _pair(stride, kernel)
    padding = _pair(padding, (0, 0))
    H, W = self.shape[-2], self.shape[-1]
    Ho, Wo = grad_output.shape[-2], grad_output.shape[-1]

    def counts(n_out, size, k, st, pad):
        # PyTorch's pool size per output along one dimension: the window
        # clipped to the padded input, or (count_include_pad=False) to the
        # input.
        sizes = []
        for o in range(n_out):
            start = o * st - pad
            end = min(start + k, size + pad)
            whole = end - start
            start, end = max(start, 0), min(end, size)
            sizes.append(whole if count_include_pad else end - start)
        return sizes

    if divisor_override:
        divisor = torch.full((), float(divisor_override),
                             dtype=grad_output.dtype)
    else:
        rows = torch.tensor(counts(Ho, H, kernel[0], stride[0], padding[0]),
                            dtype=grad_output.dtype,
                            device=grad_output.device).reshape(Ho, 1)
        cols = torch.tensor(counts(Wo, W, kernel[1], stride[1], padding[1]),
                            dtype=grad_output.dtype,
                            device=grad_output.device).reshape(1, Wo)
        divisor = rows * cols
    share = grad_output / divisor
    return _sum_window_offsets(lambda i, j: share, (Ho, Wo), (H, W), kernel,
                               stride, padding, (1, 1))


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


# A foreach op's per-tensor op where its name does not say it.
_FOREACH_BASE = {"norm": aten.linalg_vector_norm, "max": aten.amax}


def _foreach_decompositions() -> dict:
    """Every `aten._foreach_*` overload as its op per tensor of the list
    (a traced optimizer's foreach code, _optimizer.py; torch-mlir lowers
    none of them): list arguments element by element, a list of scalars
    likewise, everything else the same for each. The addcdiv/addcmul
    overloads with a tensor of scalars compute `self + s[i] * (t1 op t2)`."""
    names = sorted({n.split("::")[1].split(".")[0]
                    for n in torch._C._dispatch_get_all_op_names()
                    if n.startswith("aten::_foreach_")})
    table = {}
    for name in names:
        base = name[len("_foreach_"):]
        inplace = base.endswith("_")
        per_tensor = _FOREACH_BASE.get(base) or getattr(aten, base, None)
        if per_tensor is None:
            continue
        packet = getattr(aten, name)
        for overload_name in packet.overloads():
            overload = getattr(packet, overload_name)
            table[overload] = _foreach_each(
                per_tensor, overload_name, inplace,
                [a.name for a in overload._schema.arguments])
    return table


def _call_per_tensor(per_tensor, args, kwargs, names):
    """`per_tensor(*args, **kwargs)`; where the foreach schema passes an
    argument positionally that the per-tensor one takes by keyword
    (addcmul's `value`), the trailing ones by their names."""
    try:
        return per_tensor(*args, **kwargs)
    except (RuntimeError, TypeError):
        for keep in range(len(args) - 1, 0, -1):
            named = dict(zip(names[keep:], args[keep:]), **kwargs)
            try:
                return per_tensor(*args[:keep], **named)
            except (RuntimeError, TypeError):
                continue
        raise


def _foreach_each(per_tensor, overload_name, inplace, names):
    def decomposed(*args, **kwargs):
        count = len(args[0])
        out = []
        for i in range(count):
            def pick(a):
                if isinstance(a, (list, tuple)) and len(a) == count:
                    return a[i]
                return a
            item_args = [pick(a) for a in args]
            item_kwargs = {k: pick(v) for k, v in kwargs.items()}
            if overload_name == "Tensor" and \
                    per_tensor in (aten.addcdiv, aten.addcdiv_,
                                   aten.addcmul, aten.addcmul_):
                self_, t1, t2, scalars = item_args
                combine = aten.div if per_tensor in (
                    aten.addcdiv, aten.addcdiv_) else aten.mul
                value = aten.add(self_, scalars[i] * combine(t1, t2))
                if inplace:
                    aten.copy_(self_, value)
                else:
                    out.append(value)
                continue
            result = _call_per_tensor(per_tensor, item_args, item_kwargs,
                                      names)
            if not inplace:
                out.append(result)
        return None if inplace else out
    return decomposed


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
    table[aten.convolution_backward.default] = _convolution_backward
    for compare in (aten.eq, aten.ne, aten.lt, aten.le, aten.gt, aten.ge):
        table[compare.Scalar] = _compare_scalar(compare.Scalar)
    table[aten.avg_pool2d_backward.default] = _avg_pool2d_backward
    table[aten.upsample_nearest2d.vec] = _upsample_nearest2d
    table[aten.upsample_nearest2d_backward.default] = \
        _upsample_nearest2d_backward
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
    # BatchNorm(track_running_stats=False): batch statistics, no buffers,
    # the same decomposition as with them.
    table[aten._native_batch_norm_legit.no_stats] = \
        lambda input, weight, bias, training, momentum, eps: \
        _native_batch_norm(input, weight, bias, None, None, training,
                           momentum, eps)
    table.update(_foreach_decompositions())
    # Random ops: Philox on the global element index (_random.py).
    from . import _random
    table.update(_random.decompositions())
    return table

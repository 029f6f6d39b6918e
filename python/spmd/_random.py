"""Random numbers inside a compiled step: Philox 4x32-10, counter-based.

Every random op of the step (dropout, `torch.rand`/`randn`/`bernoulli` and
their `_like` and in-place forms) is decomposed while tracing into integer
tensor ops that compute Philox 4x32-10 (the generator of cuRAND and
PyTorch's CUDA backend) keyed by a 64-bit seed, on counters made of a
per-call offset plus the element's *global* index. So the program draws the
same numbers on N ranks as on one (each rank computes the values of the
global positions it needs), a step draws new numbers on every call (the
host advances the offset by the step's draw count), and the CPU and GPU
lowerings compute the same values. The numbers are not those of eager
PyTorch on the CPU (another generator, mt19937): a compiled step with
dropout matches its own 1-rank run, not eager's masks.

The seed and offset reach the program as one `tensor<2xi64>` input (state
`rng.N`, written by the host before every call); the seed comes from torch's
default generator at the first call, so `torch.manual_seed` makes runs
reproducible.
"""

import math
from contextlib import contextmanager

import torch

from ._errors import UnsupportedError

aten = torch.ops.aten

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


class _Tracing:
    """The step being traced: its [seed, offset] input and the numbers drawn
    so far (each op's counters start where the previous op's ended)."""

    def __init__(self, rng):
        self.rng = rng
        self.drawn = 0


_current = None


@contextmanager
def tracing(rng):
    """Random ops traced inside draw from `rng` ([seed, offset], int64)."""
    global _current
    saved, _current = _current, _Tracing(rng)
    saved_get, saved_set = torch.get_rng_state, torch.set_rng_state
    torch.get_rng_state, torch.set_rng_state = _get_state, _set_state
    try:
        yield _current
    finally:
        _current = saved
        torch.get_rng_state, torch.set_rng_state = saved_get, saved_set


class _DrawState:
    """What `torch.get_rng_state()` returns inside a traced step: where the
    step's stream stands. torch.utils.checkpoint stashes it in the forward
    and sets it back to replay a region in the backward, which then draws
    the forward's numbers again (as torch's own generator state does)."""

    def __init__(self, drawn: int):
        self.drawn = drawn


def _get_state():
    return _DrawState(_current.drawn)


def _set_state(state):
    if not isinstance(state, _DrawState):
        raise UnsupportedError(
            "spmd.compile: torch.set_rng_state inside a compiled step with a "
            "state not taken inside it (the step draws from its own Philox "
            "stream)", hint="seed with torch.manual_seed before the call")
    _current.drawn = state.drawn


def _shr(x, bits):
    """x >> bits (arithmetic), as the tensor-tensor op torch-mlir lowers."""
    return torch.bitwise_right_shift(
        x, torch.full((), bits, dtype=torch.int64, device=x.device))


def _words(shape, device):
    """Two uint32 words (in int64 tensors) of Philox 4x32-10 per element of
    `shape`, from counter (offset + first + global index, 0, 0) and key
    seed."""
    if _current is None:
        raise UnsupportedError("spmd.compile: a random op outside a traced "
                               "step", hint="call it inside the step")
    n = math.prod(shape)
    first = _current.drawn
    _current.drawn += n
    rng = _current.rng
    index = torch.arange(n, dtype=torch.int64, device=device)
    counter = index + (rng[1] + first)
    c0 = torch.bitwise_and(counter, _MASK)
    c1 = torch.bitwise_and(_shr(counter, 32), _MASK)
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0 = torch.bitwise_and(rng[0], _MASK)
    k1 = torch.bitwise_and(_shr(rng[0], 32), _MASK)
    for _ in range(10):
        # 32x32 -> 64-bit products wrap in int64; the masks take the halves.
        p0 = c0 * _M0
        p1 = c2 * _M1
        hi0 = torch.bitwise_and(_shr(p0, 32), _MASK)
        lo0 = torch.bitwise_and(p0, _MASK)
        hi1 = torch.bitwise_and(_shr(p1, 32), _MASK)
        lo1 = torch.bitwise_and(p1, _MASK)
        c0, c1, c2, c3 = (torch.bitwise_xor(torch.bitwise_xor(hi1, c1), k0),
                          lo1,
                          torch.bitwise_xor(torch.bitwise_xor(hi0, c3), k1),
                          lo0)
        k0 = torch.bitwise_and(k0 + _W0, _MASK)
        k1 = torch.bitwise_and(k1 + _W1, _MASK)
    return c0.reshape(shape), c1.reshape(shape)


def _uniform(shape, dtype, device):
    """U[0, 1): 24 random bits (53 for float64), as curand_uniform's
    resolution."""
    w0, w1 = _words(shape, device)
    if dtype == torch.float64:
        high = _shr(w0, 5).to(torch.float64)
        low = _shr(w1, 6).to(torch.float64)
        return (high * 67108864.0 + low) * (2.0 ** -53)
    return _shr(w0, 8).to(dtype) * (2.0 ** -24)


def _normal(shape, dtype, device):
    """N(0, 1) by Box-Muller from the two words of each element."""
    w0, w1 = _words(shape, device)
    u1 = (_shr(w0, 8).to(dtype) + 1.0) * (2.0 ** -24)
    u2 = _shr(w1, 8).to(dtype) * (2.0 ** -24)
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(
        (2.0 * math.pi) * u2)


def _no_generator(generator, op):
    if generator is not None:
        raise UnsupportedError(
            f"spmd.compile: {op} with an explicit torch.Generator is not "
            "supported (the step's numbers come from its own Philox stream, "
            "seeded from the default generator)",
            hint="drop generator= and seed with torch.manual_seed")


def _float_dtype(dtype):
    return dtype if dtype is not None else torch.get_default_dtype()


def _rand(size, *, dtype=None, layout=None, device=None, pin_memory=None,
          generator=None):
    _no_generator(generator, "torch.rand")
    return _uniform(tuple(size), _float_dtype(dtype), device)


def _randn(size, *, dtype=None, layout=None, device=None, pin_memory=None,
           generator=None):
    _no_generator(generator, "torch.randn")
    return _normal(tuple(size), _float_dtype(dtype), device)


def _rand_like(self, *, dtype=None, layout=None, device=None,
               pin_memory=None, memory_format=None):
    return _uniform(tuple(self.shape), dtype or self.dtype, self.device)


def _randn_like(self, *, dtype=None, layout=None, device=None,
                pin_memory=None, memory_format=None):
    return _normal(tuple(self.shape), dtype or self.dtype, self.device)


def _bernoulli_p(self, p=0.5, *, generator=None):
    _no_generator(generator, "bernoulli")
    u = _uniform(tuple(self.shape), torch.float32, self.device)
    return (u < p).to(self.dtype)


def _bernoulli_tensor(self, *, generator=None):
    _no_generator(generator, "bernoulli")
    u = _uniform(tuple(self.shape), torch.float32, self.device)
    return (u < self).to(self.dtype)


def _bernoulli_inplace(self, p=0.5, *, generator=None):
    return self.copy_(_bernoulli_p(self, p, generator=generator))


def _uniform_inplace(self, from_=0.0, to=1.0, *, generator=None):
    _no_generator(generator, "uniform_")
    u = _uniform(tuple(self.shape), self.dtype, self.device)
    return self.copy_(u * (to - from_) + from_)


def _normal_inplace(self, mean=0.0, std=1.0, *, generator=None):
    _no_generator(generator, "normal_")
    z = _normal(tuple(self.shape), self.dtype, self.device)
    return self.copy_(z * std + mean)


def _native_dropout(input, p, train):
    if not train or p == 0.0:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    if p >= 1.0:
        return torch.zeros_like(input), torch.zeros_like(input,
                                                         dtype=torch.bool)
    # torch: keep with probability 1 - p, scale the kept by 1 / (1 - p).
    keep = _uniform(tuple(input.shape), torch.float32, input.device) >= p
    return input * keep * (1.0 / (1.0 - p)), keep


def decompositions():
    """The random ops of a step, as Philox on integer tensor ops."""
    return {
        aten.rand.default: _rand,
        aten.randn.default: _randn,
        aten.rand_like.default: _rand_like,
        aten.randn_like.default: _randn_like,
        aten.bernoulli.p: _bernoulli_p,
        aten.bernoulli.default: _bernoulli_tensor,
        aten.bernoulli_.float: _bernoulli_inplace,
        aten.uniform_.default: _uniform_inplace,
        aten.normal_.default: _normal_inplace,
        aten.native_dropout.default: _native_dropout,
    }

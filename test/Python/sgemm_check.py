"""libSpmdRuntime's spmdSgemm (what compiled CPU programs call for f32
matmuls) against torch.mm, row-major as the compiler calls it: every
transpose combination, leading dimensions wider than the matrices (slices
of columns), alpha and beta; through OpenBLAS and through the sgemm the
bridge hands over (PyTorch's own, spmd._runtime.torch_sgemm)."""

import ctypes
import sys

import torch

from spmd import _abi, _runtime
from spmd._toolchain import runtime_library

lib = ctypes.CDLL(str(runtime_library()))
_abi.declare(lib)  # the signatures of RuntimeFunctions.def
ROW, NO, TRANS = 101, 111, 112

torch.manual_seed(0)
providers = [("openblas", 0), ("torch", _runtime.torch_sgemm())]
if not providers[1][1]:
    print("torch exposes no sgemm_: only OpenBLAS checked")
    providers.pop()
worst = 0.0
for name, address in providers:
    lib.spmdSetSgemm(address)
    for ta in (False, True):
        for tb in (False, True):
            # Large enough for the handed-over sgemm (>= 2^20
            # multiply-adds; smaller ones stay on OpenBLAS).
            m, n, k, pad = 130, 90, 100, 3
            a = torch.randn(k if ta else m, (m if ta else k) + pad)
            b = torch.randn(n if tb else k, (k if tb else n) + pad)
            c = torch.randn(m, n + pad)
            av = a[:, :m] if ta else a[:, :k]
            bv = b[:, :k] if tb else b[:, :n]
            want = c.clone()
            want[:, :n] = 0.5 * want[:, :n] + 2.0 * (
                (av.t() if ta else av) @ (bv.t() if tb else bv))
            lib.spmdSgemm(ROW, TRANS if ta else NO, TRANS if tb else NO,
                          m, n, k, 2.0, a.data_ptr(), a.shape[1],
                          b.data_ptr(), b.shape[1], 0.5, c.data_ptr(),
                          c.shape[1])
            err = (c - want).abs().max().item()
            worst = max(worst, err)
            ok = err < 1e-3 and torch.equal(c[:, n:], want[:, n:])
            print(f"{name} transA={int(ta)} transB={int(tb)}: "
                  f"{'OK' if ok else 'WRONG'} max error {err:.1e}")
            if not ok:
                sys.exit(1)
# The handed-over function is what runs (a counting stand-in that calls
# torch's), for large products only.
if len(providers) > 1:
    proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 13)
    real = proto(providers[1][1])
    calls = []

    def counting(*args):
        calls.append(1)
        real(*args)
    stand_in = proto(counting)
    lib.spmdSetSgemm(ctypes.cast(stand_in, ctypes.c_void_p).value)
    for m, n, k in ((130, 90, 100), (8, 8, 8)):
        a, b, c = torch.randn(m, k), torch.randn(k, n), torch.zeros(m, n)
        lib.spmdSgemm(ROW, NO, NO, m, n, k, 1.0, a.data_ptr(), k,
                      b.data_ptr(), n, 0.0, c.data_ptr(), n)
        assert (c - a @ b).abs().max().item() < 1e-3
    print(f"handed-over sgemm called {len(calls)} time(s) for a large and "
          "a small product")
    assert len(calls) == 1, calls
lib.spmdSetSgemm(0)
print(f"spmdSgemm OK, worst {worst:.1e}")

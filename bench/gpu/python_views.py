#!/usr/bin/env python3
"""The CUDA half of spmd.compile's GPU target that the emulator cannot run
(python/spmd/_device.py's Gpu without mirrors), checked on a real GPU with
only torch and libSpmdGpuRuntime: a state's buffer seen as a CUDA tensor
(same address, written by torch and read back by the runtime), bf16 and
int64 views, a CPU input copied into a kept device buffer, and the call
that makes the program stream wait for torch's (it runs; that the wait
orders a step needs a compiled step, i.e. the toolchain, on the GPU
machine). Prints `python views: OK` or what
differs.

    python3 python_views.py OUT     (OUT: libSpmdGpuRuntime.so and the
                                     spmd_device package build.sh copied)
"""

import ctypes
import sys

import torch


def main():
    out = sys.argv[1]
    if not torch.cuda.is_available():
        print("python views: n/a (torch has no CUDA device)")
        return 0
    sys.path.insert(0, out)
    from spmd_device import _device
    lib = ctypes.CDLL(f"{out}/libSpmdGpuRuntime.so", mode=ctypes.RTLD_GLOBAL)
    lib.spmdInit()
    lib.spmdStateBind.restype = ctypes.c_int64
    lib.spmdStateBind.argtypes = [ctypes.c_char_p, ctypes.c_int64,
                                  ctypes.c_int32]
    lib.spmdGpuStateAddress.restype = ctypes.c_int64
    lib.spmdGpuStateAddress.argtypes = [ctypes.c_char_p, ctypes.c_int64,
                                        ctypes.c_int32]
    torch.cuda.set_device(_device.runtime_device_index())
    gpu = _device.Gpu(lib, mirrored=False)
    bad = []

    def view(name, shape, dtype, code):
        nbytes = torch.Size(shape).numel() * torch.tensor(
            [], dtype=dtype).element_size()
        # A compiled program makes its states' buffers (and registers them)
        # before the host binds them by name.
        made = lib.spmdGpuStateAddress(name.encode(), nbytes, code)
        address = lib.spmdStateBind(name.encode(), nbytes, code)
        if made != address:
            bad.append(f"{name}: bound at {address:#x}, made at {made:#x}")
        t = gpu.state(address, shape, dtype, nbytes)
        if t.device.type != "cuda" or t.data_ptr() != address:
            bad.append(f"{name}: a {t.device} tensor at {t.data_ptr():#x}, "
                       f"the buffer is at {address:#x}")
        return t, address, nbytes

    # f32 (code 0): torch writes, the runtime reads the same buffer;
    # before_step makes the program stream wait for torch's (no error).
    w, address, nbytes = view("w", (64, 33), torch.float32, 0)
    w.copy_(torch.arange(64 * 33, dtype=torch.float32,
                         device="cuda").view(64, 33))
    gpu.before_step()
    torch.cuda.synchronize()
    host = torch.empty(64, 33)
    lib.spmdGpuCopy(host.data_ptr(), address, nbytes)
    if not torch.equal(host, torch.arange(64 * 33.0).view(64, 33)):
        bad.append("w: the runtime read other values than torch wrote")
    # int64 (code 3) and a bf16 view of f32 bytes.
    i, _, _ = view("i", (5,), torch.int64, 3)
    i.copy_(torch.tensor([1, -2, 3, -4, 5], device="cuda"))
    if i.cpu().tolist() != [1, -2, 3, -4, 5]:
        bad.append("i: int64 values changed")
    b = gpu.state(address, (64, 66), torch.bfloat16, nbytes)
    if b.shape != (64, 66) or b.data_ptr() != address:
        bad.append("bf16 view: wrong shape or address")
    # A CPU input goes to a device buffer, the same one next time.
    x = torch.randn(16, 8)
    first = gpu.input_address(0, x)
    again = gpu.input_address(0, x * 2)
    back = torch.empty(16, 8)
    lib.spmdGpuCopy(back.data_ptr(), again, back.numel() * 4)
    if first != again or not torch.equal(back, x * 2):
        bad.append("input staging: another buffer or other values")
    print("python views: " + ("OK" if not bad else "; ".join(bad)))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())

"""Where compiled steps run: the CPU, a CUDA GPU, or the GPU emulator.

One process runs every compiled step on one target, chosen when the spmd
runtime is first loaded (libSpmdRuntime and libSpmdGpuRuntime export the
same C functions, so one process holds one of them):

- `SPMD_DEVICE=cpu` or `gpu` when set;
- else the device of the model the first compiled step is called with
  (parameters on a CUDA device: the GPU);
- else (spmd.rank() before any step) the CPU.

The GPU target runs on CUDA when torch has a CUDA device: the program's
device buffers are the model's tensors (CUDA tensors over them, through
`__cuda_array_interface__`), and the program's stream waits for torch's
current stream before each step, without the host waiting. Without one it
runs in the GPU emulator (build/lib/gpu-emulator, its CUDA driver, NCCL and
cuBLAS on the CPU; tests): device memory is not host memory there, so the
model's tensors are CPU mirrors of the device buffers, copied in before a
step when the host changed them (a tensor's version counter says so) and
out after it.
"""

import ctypes
import os

import torch

from ._errors import UnsupportedError

CPU, CUDA, EMULATOR = "cpu", "cuda", "emulator"


def requested():
    """SPMD_DEVICE as "cpu", "gpu" or None (unset)."""
    value = os.environ.get("SPMD_DEVICE", "").strip().lower()
    if value in ("", "auto"):
        return None
    if value in ("cpu", "gpu"):
        return value
    if value == "cuda":
        return "gpu"
    raise UnsupportedError(
        f"SPMD_DEVICE={os.environ['SPMD_DEVICE']!r} is not a target",
        hint="set SPMD_DEVICE to cpu or gpu, or leave it unset (the "
        "model's device decides)")


def model_device(model):
    """"gpu" when the model's parameters (or buffers) are on a CUDA device,
    "cpu" when they are elsewhere, None without a model or tensors."""
    if model is None:
        return None
    for t in list(model.parameters()) + list(model.buffers()):
        return "gpu" if t.device.type == "cuda" else "cpu"
    return None


def choose(hint=None) -> str:
    """The target for this process: CPU, CUDA or EMULATOR."""
    want = requested() or hint or "cpu"
    if want == "cpu":
        return CPU
    return CUDA if torch.cuda.is_available() else EMULATOR


def check_model(target: str, model):
    """Raises when `model` lives elsewhere than the process's target."""
    have = model_device(model)
    if have is None:
        return
    devices = {t.device for t in
               list(model.parameters()) + list(model.buffers())}
    if len(devices) > 1:
        raise UnsupportedError(
            "spmd.compile: the model's parameters and buffers are on "
            + ", ".join(sorted(str(d) for d in devices)),
            hint="move the whole model to one device (model.to(device))")
    if target == CUDA and have != "gpu":
        raise UnsupportedError(
            "spmd.compile: this process runs compiled steps on the GPU, but "
            "the model's parameters are on the CPU",
            hint="move the model to the GPU (model.cuda()) before the first "
            "step, or run with SPMD_DEVICE=cpu")
    if target == CUDA:
        index = runtime_device_index()
        where = {t.device.index for t in
                 list(model.parameters()) + list(model.buffers())}
        if where != {index}:
            raise UnsupportedError(
                "spmd.compile: this rank's program runs on cuda:"
                f"{index} (its local rank modulo the GPUs), the model is on "
                + ", ".join(f"cuda:{i}" for i in sorted(where)),
                hint=f"torch.cuda.set_device({index}) and model.cuda() "
                "before the first step (one GPU per rank)")
    if target in (CPU, EMULATOR) and have == "gpu":
        why = ("SPMD_DEVICE=cpu" if requested() == "cpu" else
               "an spmd call before the first step (spmd.rank(), "
               "spmd.world_size()) loaded the CPU runtime")
        raise UnsupportedError(
            "spmd.compile: the model is on a CUDA device but this process "
            f"runs compiled steps on the CPU ({why})",
            hint="set SPMD_DEVICE=gpu before the first spmd call (one "
            "process runs every compiled step on one target)")


def check_inputs(target: str, tensors):
    """Raises for a CUDA input to a step that runs on the CPU (CPU inputs
    are copied to the GPU target's device buffers)."""
    for i, t in enumerate(tensors):
        if t.device.type == "cuda" and target != CUDA:
            raise UnsupportedError(
                f"spmd.compile: input {i} is on {t.device}, but this process "
                f"runs compiled steps on the CPU ({target})",
                hint="pass CPU tensors (x.cpu()), or run the step on the GPU "
                "(the model on CUDA, or SPMD_DEVICE=gpu from the start)")


def runtime_device_index() -> int:
    """The GPU libSpmdGpuRuntime runs this rank on (NcclBootstrap.cpp's
    rule: the local rank modulo the devices)."""
    env = os.environ
    local = env.get("LOCAL_RANK") or env.get("OMPI_COMM_WORLD_LOCAL_RANK") \
        or env.get("RANK") or "0"
    return int(local) % max(torch.cuda.device_count(), 1)


def emulator_libraries(build):
    """The GPU emulator's libraries, in load order (driver first)."""
    folder = build / "lib" / "gpu-emulator"
    names = ("libcuda.so.1", "libcublas.so.13", "libnccl.so.2")
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        raise UnsupportedError(
            "spmd: the GPU target was asked for (SPMD_DEVICE=gpu) but torch "
            f"has no CUDA device, and the GPU emulator is not built ({folder} "
            f"lacks {', '.join(missing)})",
            hint="run on a machine with a CUDA GPU, or build with CUDA and "
            "NCCL headers present (the emulator is built with the GPU "
            "runtime), or set SPMD_DEVICE=cpu")
    return [folder / n for n in names]


class _CudaArray:
    """A device buffer as `__cuda_array_interface__` bytes."""

    def __init__(self, address, nbytes):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (address, False),
            "version": 3, "strides": None}


class _Mirror:
    """A CPU tensor standing for a device buffer; `version`: the tensor's
    version counter when the two last agreed (a host write bumps it)."""
    __slots__ = ("tensor", "address", "nbytes", "version")

    def __init__(self, tensor, address, nbytes):
        self.tensor, self.address, self.nbytes = tensor, address, nbytes
        self.version = tensor._version


class Host:
    """The CPU target: a state is a tensor over the program's own buffer."""
    name = CPU

    def __init__(self, lib):
        self.lib = lib

    def memory(self):
        """(live, peak) bytes of the program's temporaries (the runtime's
        buffer cache)."""
        live, peak = ctypes.c_int64(), ctypes.c_int64()
        self.lib.spmdHostMemory(ctypes.byref(live), ctypes.byref(peak))
        return live.value, peak.value

    def reset_peak_memory(self):
        self.lib.spmdHostMemoryResetPeak()

    def state(self, address, shape, dtype, nbytes):
        count = nbytes // torch.tensor([], dtype=dtype).element_size()
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        raw = (ctypes.c_char * nbytes).from_address(address)
        return torch.frombuffer(raw, dtype=dtype, count=count).view(shape)

    def before_step(self):
        pass

    def after_step(self):
        pass

    def input_address(self, index, tensor) -> int:
        return tensor.data_ptr()

    def staged(self, tensor, slot=0):
        """The address collectives may use for `tensor`'s data, and a
        function that brings the result back (host memory as it is).
        Tensors staged at once take different `slot`s."""
        return tensor.data_ptr(), lambda: None


class Gpu(Host):
    """The GPU target, on CUDA or the emulator (`mirrored`)."""

    def __init__(self, lib, mirrored):
        super().__init__(lib)
        self.mirrored = mirrored
        self.name = EMULATOR if mirrored else CUDA
        self.mirrors = []
        # Device buffers for host inputs and host-side collectives, kept
        # (by slot) and grown when too small: no allocation per step.
        self.scratch = {}

    def memory(self):
        live, peak = ctypes.c_int64(), ctypes.c_int64()
        self.lib.spmdGpuMemory(ctypes.byref(live), ctypes.byref(peak))
        return live.value, peak.value

    def reset_peak_memory(self):
        self.lib.spmdGpuMemoryResetPeak()

    def state(self, address, shape, dtype, nbytes):
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype,
                               device="cpu" if self.mirrored else "cuda")
        if not self.mirrored:
            raw = torch.as_tensor(_CudaArray(address, nbytes), device="cuda")
            return raw.view(dtype).view(shape)
        mirror = torch.empty(shape, dtype=dtype)
        self.lib.spmdGpuCopy(mirror.data_ptr(), address, nbytes)
        # Every program's mirrors, also of a buffer another program of the
        # same model mirrors too: the Executable's ownership hand-over
        # copies the model's values into the next owner's views.
        self.mirrors.append(_Mirror(mirror, address, nbytes))
        return mirror

    def before_step(self):
        if not self.mirrored:
            self.lib.spmdGpuWaitForStream(
                torch.cuda.current_stream().cuda_stream)
            return
        for m in self.mirrors:
            if m.tensor._version != m.version:
                self.lib.spmdGpuCopy(m.address, m.tensor.data_ptr(), m.nbytes)
                m.version = m.tensor._version

    def after_step(self):
        # CUDA: the step returned after its stream finished (it reads the
        # loss); the tensors over its buffers are current.
        if self.mirrored:
            for m in self.mirrors:
                self.lib.spmdGpuCopy(m.tensor.data_ptr(), m.address, m.nbytes)

    def _buffer(self, slot, nbytes) -> int:
        have = self.scratch.get(slot)
        if have is None or have[1] < nbytes:
            if have is not None:
                self.lib.spmdGpuBufferFree(have[0])
            have = (self.lib.spmdGpuBuffer(max(nbytes, 256)), max(nbytes, 256))
            self.scratch[slot] = have
        return have[0]

    def input_address(self, index, tensor) -> int:
        if tensor.device.type == "cuda":
            return tensor.data_ptr()
        nbytes = tensor.numel() * tensor.element_size()
        address = self._buffer(("input", index), nbytes)
        self.lib.spmdGpuCopy(address, tensor.data_ptr(), nbytes)
        return address

    def staged(self, tensor, slot=0):
        if tensor.device.type == "cuda":
            return tensor.data_ptr(), lambda: None
        nbytes = tensor.numel() * tensor.element_size()
        address = self._buffer(("collective", slot), nbytes)
        self.lib.spmdGpuCopy(address, tensor.data_ptr(), nbytes)

        def back():
            self.lib.spmdGpuCopy(tensor.data_ptr(), address, nbytes)
        return address, back

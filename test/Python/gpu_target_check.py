#!/usr/bin/env python3
"""What a user of the GPU target sees around a step (run on the GPU
emulator when torch has no CUDA device): the target the process chose, a
step of torch.nn layers matching eager, the errors for a target that does
not exist and for the CPU runtime's memory counters.

    SPMD_DEVICE=gpu gpu_target_check.py target      (prints the target)
    SPMD_DEVICE=tpu gpu_target_check.py target      (an error, exit 1)
    SPMD_DEVICE=gpu gpu_target_check.py memory      (spmd.memory_stats())
    gpu_target_check.py build-cuda                  (a step built for a GPU)
"""

import sys

import torch
import torch.nn as nn

import spmd


def step_fn(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    what = sys.argv[1]
    if what == "build-cuda":
        return build_cuda()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(),
                          nn.Linear(16, 3))
    ref = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(),
                        nn.Linear(16, 3))
    ref.load_state_dict(model.state_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    step = spmd.compile()(step_fn)
    x, y = torch.randn(4, 8), torch.tensor([0, 2, 1, 2])
    loss = step(model, opt, x, y)
    ref_loss = step_fn(ref, ref_opt, x, y)
    if what == "target":
        from spmd import _runtime
        worst = max((a - b).abs().max().item() for a, b in
                    zip(model.state_dict().values(),
                        ref.state_dict().values()))
        worst = max(worst, (loss - ref_loss).abs().item())
        print(f"target {_runtime.target()} backend {_runtime.backend()}: "
              f"loss {loss.item():.6f} eager {ref_loss.item():.6f}, "
              f"max deviation {worst:.1e}: "
              + ("OK" if worst < 1e-5 else "MISMATCH"))
    elif what == "memory":
        # The step's temporaries come from the device cache: in use during
        # the step (the peak), all back in the cache after it; a reset
        # starts the peak from what is in use.
        stats = spmd.memory_stats()
        spmd.reset_peak_memory_stats()
        after = spmd.memory_stats()
        ok = stats["transient_peak_bytes"] > 0 and \
            stats["live_bytes"] == 0 and \
            after["transient_peak_bytes"] == after["live_bytes"] == 0 and \
            stats["peak_bytes"] == stats["state_bytes"] + \
            stats["transient_peak_bytes"]
        print(f"device memory: peak {stats['transient_peak_bytes']} B, live "
              f"{stats['live_bytes']} B; after a reset peak "
              f"{after['transient_peak_bytes']} B: "
              + ("OK" if ok else "WRONG"))


def build_cuda():
    """The program of a step built for a real GPU (spmd-lower-to-nvvm,
    ptxas, linked against libSpmdGpuRuntime), as the bridge builds it for a
    CUDA model: traced here on the CPU, built, not run."""
    import subprocess
    from spmd import _toolchain
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    step = spmd.compile()(step_fn)
    _, program = step._trace((model, opt, torch.randn(4, 8),
                              torch.tensor([0, 2, 1, 2])), {})
    library = _toolchain.compile_module(program.text, step.pipeline(),
                                        target="cuda")
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True,
                             text=True, check=True).stdout
    gpu_calls = "spmdGpuProgramBegin" in symbols
    emulated = "__spmd_emu_" in symbols
    needed = subprocess.run(["readelf", "-d", str(library)],
                            capture_output=True, text=True).stdout
    print(f"cuda build: {library.name}: GPU runtime calls {gpu_calls}, "
          f"emulated kernels {emulated}, needs libSpmdGpuRuntime "
          f"{'libSpmdGpuRuntime.so' in needed}")


if __name__ == "__main__":
    main()

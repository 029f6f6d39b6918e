//===- Emulator.h - the GPU emulator's shared pieces ------------*- C++ -*-===//
//
// The GPU emulator: the CUDA driver (libcuda.so.1), NCCL (libnccl.so.2) and
// cuBLAS (libcublas.so.13) functions libSpmdGpuRuntime calls, implemented on
// the CPU, so that programs compiled with spmd-lower-to-nvvm{emulate=1} run
// on machines without a GPU (LD_LIBRARY_PATH=build/lib/gpu-emulator).
// "Device memory" is host memory the emulated driver tracks; streams are
// queues run lazily, when the host waits (stream/event/context
// synchronization, a copy to pageable host memory; a query runs what can run
// without blocking), so host code that reads
// results without waiting for them sees stale data, as on a GPU; NCCL runs
// on MPI, one process per rank; cuBLAS on OpenBLAS. The emulated NCCL and
// cuBLAS enqueue their work on the emulated driver's streams through these
// functions.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPUEMULATOR_EMULATOR_H
#define SPMD_RUNTIME_GPUEMULATOR_EMULATOR_H

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string>

namespace spmd::emu {

/// Appends `work` to `stream`'s queue (the null stream for 0).
void enqueue(CUstream stream, std::function<void()> work);

/// Appends work that may take a while (a collective waiting for its peers):
/// it is called until it returns true and holds its stream until then, so
/// cuEventQuery / cuStreamQuery answer "not ready" meanwhile, as on a GPU.
void enqueuePolled(CUstream stream, std::function<bool()> work);

/// Whether [p, p + bytes) lies in one device allocation (or registered /
/// managed memory): what kernels, NCCL and cuBLAS may address.
bool isDeviceMemory(const void *p, size_t bytes);

/// What the emulated device was asked to do, counted per step (a step
/// begins at each spmdEmuStepBegin(), which libSpmdGpuRuntime calls at the
/// entry of every compiled step; step 0 is what came before the first).
enum class Count {
  Launch,     // cuLaunchKernel
  Gemm,       // cublasSgemm
  Collective, // an NCCL collective or point-to-point operation
  HostWait,   // a call that blocks the host until the device catches up
  Query,      // cuEventQuery / cuStreamQuery (a poll, not a wait)
  Alloc,      // cuMemAlloc*, device memory
  Free,       // cuMemFree*
  CopyH2D,    // copies by direction (and their bytes)
  CopyD2H,
  CopyD2D,
  Memset,
  GraphLaunch, // cuGraphLaunch
  GraphNode,   // a node a graph launch ran (its kernels, GEMMs, ...)
  Captured,    // a launch, GEMM, collective, copy or memset captured into a
               // graph (recorded, not run: not counted as the above)
  GemmGrouped, // a GEMM (or strided batch) run inside another's cuBLAS call:
               // a grouped call's groups after its first (not counted while
               // capturing)
  NumCounts
};

/// Adds one `what` (of `bytes` bytes, for copies).
void count(Count what, size_t bytes = 0);

/// Prints "spmd gpu emulator: <what>" and exits(1).
[[noreturn]] void fail(const std::string &what);

} // namespace spmd::emu

#endif // SPMD_RUNTIME_GPUEMULATOR_EMULATOR_H

//===- CudaOnHost.h - CUDA kernel source compiled for the host --*- C++ -*-===//
//
// Lets the runtime's CUDA kernels (AttentionKernels.cuh) compile as host
// C++ for the GPU emulator: `__global__`/`__device__` vanish, `__shared__`
// arrays are function statics (the emulator runs one block at a time), and
// threadIdx, blockIdx, blockDim, gridDim, __syncthreads and the warp
// shuffles come from runBlocks, which runs each thread of a block as a
// fiber: a barrier suspends a thread until every thread of its block has
// reached it (threads that returned count as arrived), a shuffle until
// every lane of its warp has. Threads that wait for each other forever (a
// shuffle some lanes skip for a barrier) are reported as a deadlock.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_CUDAONHOST_H
#define SPMD_RUNTIME_GPU_CUDAONHOST_H

#include <math.h>

#include <cstdint>
#include <functional>

namespace spmd::cudahost {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The ids of the fiber running now.
struct ThreadState {
  Dim3 thread, block, blockSize, gridSize;
};
ThreadState &current();

/// Runs `kernel` for every thread of every block of `grid` x `block`
/// (blocks one after another, a block's threads as fibers).
void runBlocks(Dim3 grid, Dim3 block, const std::function<void()> &kernel);

void syncThreads();
/// The value of `v` in lane `src` of the caller's warp (every lane of the
/// warp calls it).
float shuffle(float v, int src);
float shuffleXor(float v, int laneMask);

} // namespace spmd::cudahost

// The kernel source's CUDA names (only where kernels are compiled:
// SPMD_CUDA_ON_HOST_KERNELS before the include).
#ifdef SPMD_CUDA_ON_HOST_KERNELS
#define __global__
#define __device__
#define __shared__ static
#define threadIdx (spmd::cudahost::current().thread)
#define blockIdx (spmd::cudahost::current().block)
#define blockDim (spmd::cudahost::current().blockSize)
#define gridDim (spmd::cudahost::current().gridSize)
#define __syncthreads() spmd::cudahost::syncThreads()
#define __shfl_sync(mask, v, src) spmd::cudahost::shuffle(v, src)
#define __shfl_xor_sync(mask, v, laneMask)                                     \
  spmd::cudahost::shuffleXor(v, laneMask)
#endif

#endif // SPMD_RUNTIME_GPU_CUDAONHOST_H

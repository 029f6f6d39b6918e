// Kernels written as CUDA, compiled for the host with CudaOnHost.h (what the
// GPU emulator runs for the runtime's own kernels): a block sum through
// shared memory, barriers and warp shuffles; a shuffle half a warp skips
// for a barrier (a deadlock).
#define SPMD_CUDA_ON_HOST_KERNELS
#include "CudaOnHost.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kThreads = 256;

/// out[block] = sum of in[block * n .. + n): each thread a strided partial
/// sum, a warp-shuffle tree per warp, the warps' sums through shared
/// memory, the first warp's tree again.
__global__ void blockSum(const float *in, float *out, int n) {
  __shared__ float warps[kThreads / 32];
  const float *row = in + blockIdx.x * n;
  float v = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    v += row[i];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0)
    warps[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0)
      out[blockIdx.x] = v;
  }
}

/// Lanes 0-15 shuffle while the rest of the block waits at a barrier: on a
/// GPU a hang; here a reported deadlock.
__global__ void divergentShuffle() {
  float v = float(threadIdx.x);
  if (threadIdx.x < 16)
    v = __shfl_sync(0xffffu, v, 0);
  else
    __syncthreads();
  (void)v;
}

} // namespace

int main(int argc, char **argv) {
  using spmd::cudahost::Dim3;
  if (argc == 2 && !std::strcmp(argv[1], "sum")) {
    int blocks = 3, n = 1000;
    std::vector<float> in(size_t(blocks) * n), out(blocks, -1.0f);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = float(i % 7);
    spmd::cudahost::runBlocks(Dim3{unsigned(blocks), 1, 1},
                              Dim3{kThreads, 1, 1},
                              [&] { blockSum(in.data(), out.data(), n); });
    for (int b = 0; b < blocks; ++b) {
      double want = 0;
      for (int i = 0; i < n; ++i)
        want += in[size_t(b) * n + i];
      std::printf("block %d: sum %.1f (expected %.1f): %s\n", b, out[b], want,
                  out[b] == want ? "OK" : "WRONG");
    }
    return 0;
  }
  if (argc == 2 && !std::strcmp(argv[1], "divergent")) {
    spmd::cudahost::runBlocks(Dim3{1, 1, 1}, Dim3{128, 1, 1},
                              [] { divergentShuffle(); });
    std::printf("not stopped\n");
    return 0;
  }
  std::fprintf(stderr, "usage: %s sum|divergent\n", argv[0]);
  return 2;
}

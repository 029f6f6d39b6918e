//===- EmulatedAttention.cpp - the attention kernels for the emulator -----===//
//
// AttentionKernels.cuh compiled for the host (CudaOnHost.h: a block's
// threads as fibers) behind the GPU emulator's kernel interface: for
// kernel F of module `spmd_attention`, `__spmd_emu_spmd_attention__F`
// (parameters as cuLaunchKernel passes them, the grid, the block, the
// emulator's pointer check) and `..._params` (their count and sizes). The
// emulator finds them when GpuAttention.cpp loads the module
// "spmd-emulated-kernels:spmd_attention"; on a GPU they are never called.
//
//===----------------------------------------------------------------------===//

#define SPMD_CUDA_ON_HOST_KERNELS
#include "CudaOnHost.h"

#include "AttentionKernels.cuh"

#include <cstdint>

using namespace spmd::attention;
using spmd::cudahost::Dim3;

namespace {

using Check = void (*)(void *);

template <typename T> T param(void **params, int i) {
  return *static_cast<T *>(params[i]);
}

/// The kernel's pointer parameters, checked (a null mask is allowed).
const float *pointer(void **params, int i, Check check) {
  auto *p = param<const float *>(params, i);
  if (p)
    check(const_cast<float *>(p));
  return p;
}

Dim3 dims(int64_t x, int64_t y, int64_t z) {
  return {unsigned(x), unsigned(y), unsigned(z)};
}

} // namespace

extern "C" {

extern const int64_t
    __spmd_emu_spmd_attention__spmdAttentionForwardKernel_params[] = {
        7, 8, 8, 8, 8, 8, 8, sizeof(Shape)};

void __spmd_emu_spmd_attention__spmdAttentionForwardKernel(
    void **params, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by,
    int64_t bz, Check check) {
  const float *q = pointer(params, 0, check), *k = pointer(params, 1, check),
              *v = pointer(params, 2, check), *mask = pointer(params, 3, check);
  auto *out = const_cast<float *>(pointer(params, 4, check));
  auto *lse = const_cast<float *>(pointer(params, 5, check));
  Shape s = param<Shape>(params, 6);
  spmd::cudahost::runBlocks(dims(gx, gy, gz), dims(bx, by, bz),
                            [&] { forward(q, k, v, mask, out, lse, s); });
}

extern const int64_t
    __spmd_emu_spmd_attention__spmdAttentionBackwardKernel_params[] = {
        11, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, sizeof(Shape)};

void __spmd_emu_spmd_attention__spmdAttentionBackwardKernel(
    void **params, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by,
    int64_t bz, Check check) {
  const float *g = pointer(params, 0, check), *q = pointer(params, 1, check),
              *k = pointer(params, 2, check), *v = pointer(params, 3, check),
              *o = pointer(params, 4, check), *lse = pointer(params, 5, check),
              *mask = pointer(params, 6, check);
  auto *dq = const_cast<float *>(pointer(params, 7, check));
  auto *dk = const_cast<float *>(pointer(params, 8, check));
  auto *dv = const_cast<float *>(pointer(params, 9, check));
  Shape s = param<Shape>(params, 10);
  spmd::cudahost::runBlocks(dims(gx, gy, gz), dims(bx, by, bz), [&] {
    backward(g, q, k, v, o, lse, mask, dq, dk, dv, s);
  });
}

} // extern "C"

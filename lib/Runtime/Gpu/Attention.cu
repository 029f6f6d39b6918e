//===- Attention.cu - the fused attention kernels, for nvcc ---------------===//
//
// The kernel entries of AttentionKernels.cuh, compiled by nvcc into the
// fatbin libSpmdGpuRuntime loads (GpuAttention.cpp).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.cuh"

using namespace spmd::attention;

extern "C" __global__ void __launch_bounds__(kThreads)
    spmdAttentionForwardKernel(const float *query, const float *key,
                               const float *value, const float *mask,
                               float *out, float *lse, Shape s) {
  forward(query, key, value, mask, out, lse, s);
}

extern "C" __global__ void __launch_bounds__(kThreads)
    spmdAttentionBackwardKernel(const float *grad, const float *query,
                                const float *key, const float *value,
                                const float *out, const float *lse,
                                const float *mask, float *gradQuery,
                                float *gradKey, float *gradValue, Shape s) {
  backward(grad, query, key, value, out, lse, mask, gradQuery, gradKey,
           gradValue, s);
}

//===- AttentionKernels.cuh - fused flash attention for the GPU -*- CUDA
//-*-===//
//
// spmd.attention and spmd.attention_grad on the GPU, one fused kernel for
// the forward and two for the backward (one over query rows for dQ, one
// over key rows for dK and dV, so no atomics), the semantics of the CPU
// path's kernels (lib/Runtime/Attention.cpp; SpmdRuntime.h):
// row-major f32 buffers Q [B,H,L,E], K [B,H,S,E], V [B,H,S,Ev],
// O [B,H,L,Ev], log-sum-exp [B,H,L]; an optional additive mask with element
// strides (maskB, maskH, maskL; 1 along S); causal top-left aligned; a row
// with nothing to attend to gives zeros and a log-sum-exp of -inf.
//
// One warp per row (FlashAttention-1 style): the block's warps share tiles
// of kTile keys (or queries) staged in shared memory between barriers; lane
// j scores key j of the tile, the row's maximum and sum are warp
// reductions (shuffles), and each lane accumulates the output elements
// e = lane, lane + 32, ... with the tile's probabilities broadcast by
// shuffles. No score matrix exists anywhere: memory is linear in L and S.
// E and Ev are at most kMaxHead (the lowering checks it).
//
// Compiled twice: by nvcc into the runtime's fatbin, and as host C++ with
// CudaOnHost.h for the GPU emulator, which runs every thread of a block as
// a fiber (barriers and shuffles included), so the emulator executes this
// very code.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_ATTENTIONKERNELS_CUH
#define SPMD_RUNTIME_GPU_ATTENTIONKERNELS_CUH

#include "AttentionShape.h"

namespace spmd::attention {

__device__ inline float warpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ inline float warpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// The scaled, masked score of query `i` and key `j` from their rows
/// (`n` elements each), -inf where masked.
__device__ inline float score(const float *q, const float *k, int n, int i,
                              int j, const float *mask, const Shape &s) {
  float dot = 0.0f;
  for (int e = 0; e < n; ++e)
    dot += q[e] * k[e];
  float v = dot * s.scale;
  if (mask)
    v += mask[(long long)i * s.maskL + j];
  if (s.causal && j > i)
    v = -INFINITY;
  return v;
}

/// One past the last key the rows [row0, row0 + rows) attend to.
__device__ inline int keyEnd(int row0, int rows, const Shape &s) {
  int end = s.causal ? row0 + rows : s.S;
  return end < s.S ? end : s.S;
}

/// Copies rows [first, first + kTile) of a [rows x n] matrix into a
/// shared tile (zeros past the end), all threads of the block together.
__device__ inline void loadTile(float (*tile)[kTileStride], const float *m,
                                int first, int rows, int n) {
  for (int idx = threadIdx.x; idx < kTile * n; idx += blockDim.x) {
    int r = idx / n, e = idx % n;
    tile[r][e] = first + r < rows ? m[(long long)(first + r) * n + e] : 0.0f;
  }
}

// The kernels' bodies: Attention.cu (nvcc) and EmulatedAttention.cpp (the
// emulator) wrap each in their kernel entry.

/// grid (ceil(L / kRowsPerBlock), H, B), block kThreads.
__device__ inline void forward(const float *query, const float *key,
                               const float *value, const float *mask,
                               float *out, float *lse, Shape s) {
  __shared__ float sk[kTile][kTileStride];
  __shared__ float sv[kTile][kTileStride];
  __shared__ float sq[kRowsPerBlock][kMaxHead];
  int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRowsPerBlock;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int i = row0 + warp;
  long long bh = (long long)b * s.H + h;
  const float *k = key + bh * s.S * s.E, *v = value + bh * s.S * s.Ev;
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  if (i < s.L)
    for (int e = lane; e < s.E; e += kWarp)
      sq[warp][e] = query[(bh * s.L + i) * s.E + e];
  float acc[kPerLane];
  for (int t = 0; t < kPerLane; ++t)
    acc[t] = 0.0f;
  float rowMax = -INFINITY, rowSum = 0.0f;
  int end = keyEnd(row0, kRowsPerBlock, s);
  for (int col0 = 0; col0 < end; col0 += kTile) {
    __syncthreads(); // the previous tile is no longer read
    loadTile(sk, k, col0, s.S, s.E);
    loadTile(sv, v, col0, s.S, s.Ev);
    __syncthreads();
    if (i >= s.L)
      continue; // the whole warp: shuffles below stay warp-uniform
    int j = col0 + lane;
    float x = j < end ? score(sq[warp], sk[lane], s.E, i, j, m, s) : -INFINITY;
    float newMax = fmaxf(rowMax, warpMax(x));
    if (newMax == -INFINITY)
      continue; // nothing attended yet
    float p = x == -INFINITY ? 0.0f : expf(x - newMax);
    float rescale = rowMax == -INFINITY ? 0.0f : expf(rowMax - newMax);
    rowSum = rowSum * rescale + warpSum(p);
    rowMax = newMax;
    for (int t = 0; t < kPerLane; ++t)
      acc[t] *= rescale;
    for (int jj = 0; jj < kTile; ++jj) {
      float pj = __shfl_sync(0xffffffffu, p, jj);
      for (int t = 0; t < kPerLane; ++t) {
        int e = lane + t * kWarp;
        if (e < s.Ev)
          acc[t] += pj * sv[jj][e];
      }
    }
  }
  if (i >= s.L)
    return;
  float inverse = rowSum > 0.0f ? 1.0f / rowSum : 0.0f;
  for (int t = 0; t < kPerLane; ++t) {
    int e = lane + t * kWarp;
    if (e < s.Ev)
      out[(bh * s.L + i) * s.Ev + e] = acc[t] * inverse;
  }
  if (lane == 0)
    lse[bh * s.L + i] = rowSum > 0.0f ? rowMax + logf(rowSum) : -INFINITY;
}

/// dQ. grid (ceil(L / kRowsPerBlock), H, B), block kThreads.
__device__ inline void backwardQuery(const float *grad, const float *query,
                                     const float *key, const float *value,
                                     const float *out, const float *lse,
                                     const float *mask, float *gradQuery,
                                     Shape s) {
  __shared__ float sk[kTile][kTileStride];
  __shared__ float sv[kTile][kTileStride];
  __shared__ float sq[kRowsPerBlock][kMaxHead];
  __shared__ float sg[kRowsPerBlock][kMaxHead];
  int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRowsPerBlock;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int i = row0 + warp;
  long long bh = (long long)b * s.H + h;
  const float *k = key + bh * s.S * s.E, *v = value + bh * s.S * s.Ev;
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  float delta = 0.0f, rowLse = -INFINITY;
  if (i < s.L) {
    for (int e = lane; e < s.E; e += kWarp)
      sq[warp][e] = query[(bh * s.L + i) * s.E + e];
    float part = 0.0f;
    for (int e = lane; e < s.Ev; e += kWarp) {
      float g = grad[(bh * s.L + i) * s.Ev + e];
      sg[warp][e] = g;
      part += g * out[(bh * s.L + i) * s.Ev + e];
    }
    delta = warpSum(part); // D = rowsum(dO * O)
    rowLse = lse[bh * s.L + i];
  }
  float acc[kPerLane];
  for (int t = 0; t < kPerLane; ++t)
    acc[t] = 0.0f;
  int end = keyEnd(row0, kRowsPerBlock, s);
  for (int col0 = 0; col0 < end; col0 += kTile) {
    __syncthreads();
    loadTile(sk, k, col0, s.S, s.E);
    loadTile(sv, v, col0, s.S, s.Ev);
    __syncthreads();
    if (i >= s.L || rowLse == -INFINITY)
      continue;
    int j = col0 + lane;
    float ds = 0.0f;
    if (j < end) {
      float x = score(sq[warp], sk[lane], s.E, i, j, m, s);
      float p = x == -INFINITY ? 0.0f : expf(x - rowLse);
      float dp = 0.0f;
      for (int e = 0; e < s.Ev; ++e)
        dp += sg[warp][e] * sv[lane][e];
      ds = p * (dp - delta);
    }
    for (int jj = 0; jj < kTile; ++jj) {
      float dsj = __shfl_sync(0xffffffffu, ds, jj);
      for (int t = 0; t < kPerLane; ++t) {
        int e = lane + t * kWarp;
        if (e < s.E)
          acc[t] += dsj * sk[jj][e];
      }
    }
  }
  if (i >= s.L)
    return;
  for (int t = 0; t < kPerLane; ++t) {
    int e = lane + t * kWarp;
    if (e < s.E)
      gradQuery[(bh * s.L + i) * s.E + e] = acc[t] * s.scale;
  }
}

/// dK and dV. grid (ceil(S / kRowsPerBlock), H, B), block kThreads.
__device__ inline void backwardKeyValue(const float *grad, const float *query,
                                        const float *key, const float *value,
                                        const float *out, const float *lse,
                                        const float *mask, float *gradKey,
                                        float *gradValue, Shape s) {
  __shared__ float sq[kTile][kTileStride];
  __shared__ float sg[kTile][kTileStride];
  __shared__ float sk[kRowsPerBlock][kMaxHead];
  __shared__ float sv[kRowsPerBlock][kMaxHead];
  __shared__ float sLse[kTile];
  __shared__ float sDelta[kTile];
  int b = blockIdx.z, h = blockIdx.y, key0 = blockIdx.x * kRowsPerBlock;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int j = key0 + warp;
  long long bh = (long long)b * s.H + h;
  const float *q = query + bh * s.L * s.E, *g = grad + bh * s.L * s.Ev,
              *o = out + bh * s.L * s.Ev, *rows = lse + bh * s.L;
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  if (j < s.S) {
    for (int e = lane; e < s.E; e += kWarp)
      sk[warp][e] = key[(bh * s.S + j) * s.E + e];
    for (int e = lane; e < s.Ev; e += kWarp)
      sv[warp][e] = value[(bh * s.S + j) * s.Ev + e];
  }
  float dk[kPerLane], dv[kPerLane];
  for (int t = 0; t < kPerLane; ++t)
    dk[t] = dv[t] = 0.0f;
  // Causal: queries before the block's first key attend to none of it.
  int first = s.causal ? key0 / kTile * kTile : 0;
  for (int row0 = first; row0 < s.L; row0 += kTile) {
    __syncthreads();
    loadTile(sq, q, row0, s.L, s.E);
    loadTile(sg, g, row0, s.L, s.Ev);
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      float d = 0.0f;
      if (row0 + r < s.L)
        for (int e = 0; e < s.Ev; ++e)
          d += g[(long long)(row0 + r) * s.Ev + e] *
               o[(long long)(row0 + r) * s.Ev + e];
      sDelta[r] = d;
      sLse[r] = row0 + r < s.L ? rows[row0 + r] : -INFINITY;
    }
    __syncthreads();
    if (j >= s.S)
      continue;
    int i = row0 + lane;
    float p = 0.0f, ds = 0.0f;
    if (i < s.L && sLse[lane] != -INFINITY) {
      float x = score(sq[lane], sk[warp], s.E, i, j, m, s);
      p = x == -INFINITY ? 0.0f : expf(x - sLse[lane]);
      float dp = 0.0f;
      for (int e = 0; e < s.Ev; ++e)
        dp += sg[lane][e] * sv[warp][e];
      ds = p * (dp - sDelta[lane]);
    }
    for (int ii = 0; ii < kTile; ++ii) {
      float pi = __shfl_sync(0xffffffffu, p, ii);
      float dsi = __shfl_sync(0xffffffffu, ds, ii);
      for (int t = 0; t < kPerLane; ++t) {
        int e = lane + t * kWarp;
        if (e < s.Ev)
          dv[t] += pi * sg[ii][e];
        if (e < s.E)
          dk[t] += dsi * sq[ii][e];
      }
    }
  }
  if (j >= s.S)
    return;
  for (int t = 0; t < kPerLane; ++t) {
    int e = lane + t * kWarp;
    if (e < s.E)
      gradKey[(bh * s.S + j) * s.E + e] = dk[t] * s.scale;
    if (e < s.Ev)
      gradValue[(bh * s.S + j) * s.Ev + e] = dv[t];
  }
}

} // namespace spmd::attention

#endif // SPMD_RUNTIME_GPU_ATTENTIONKERNELS_CUH

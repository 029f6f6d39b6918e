//===- AttentionKernels.cuh - fused flash attention for the GPU -*- CUDA
//-*-===//
//
// spmd.attention and spmd.attention_grad on the GPU, one fused kernel for
// the forward and two for the backward (one over query rows for dQ, one
// over key rows for dK and dV, so no atomics), the semantics of the CPU
// path's kernels (lib/Runtime/Attention.cpp; SpmdRuntime.h):
// f32 buffers Q [B,H,L,E], K [B,H,S,E], V [B,H,S,Ev], O [B,H,L,Ev] (and
// their gradients) addressed by element strides along B, H and rows (Shape),
// rows contiguous; log-sum-exp [B,H,L] contiguous; an optional additive mask
// with element strides (maskB, maskH, maskL; 1 along S); causal top-left
// aligned; a row with nothing to attend to gives zeros and a log-sum-exp of
// -inf.
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

__device__ inline float dot(const float *a, const float *b, int n) {
  float sum = 0.0f;
  for (int e = 0; e < n; ++e)
    sum += a[e] * b[e];
  return sum;
}

/// The scaled, masked score of query `i` and key `j` from their rows
/// (`n` elements each), -inf where masked.
__device__ inline float score(const float *q, const float *k, int n, int i,
                              int j, const float *mask, const Shape &s) {
  float v = dot(q, k, n) * s.scale;
  if (mask)
    v += mask[(long long)i * s.maskL + j];
  if (s.causal && j > i)
    v = -INFINITY;
  return v;
}

/// Where batch b, head h of a tensor with strides `st` starts.
__device__ inline long long at(const Strides &st, int b, int h) {
  return b * st.batch + h * st.head;
}

/// One past the last key the rows [row0, row0 + rows) attend to.
__device__ inline int keyEnd(int row0, int rows, const Shape &s) {
  int end = s.causal ? row0 + rows : s.S;
  return end < s.S ? end : s.S;
}

/// Copies rows [first, first + kTile) of a [rows x n] matrix whose rows
/// are `stride` elements apart into a shared tile (zeros past the end), all
/// threads of the block together.
__device__ inline void loadTile(float (*tile)[kTileStride], const float *m,
                                long long stride, int first, int rows, int n) {
  for (int idx = threadIdx.x; idx < kTile * n; idx += blockDim.x) {
    int r = idx / n, e = idx % n;
    tile[r][e] =
        first + r < rows ? m[(long long)(first + r) * stride + e] : 0.0f;
  }
}

// The kernels' bodies: Attention.cu (nvcc) and EmulatedAttention.cpp (the
// emulator) wrap each in their kernel entry.

/// acc[t] (element lane + 32 t of a row of `n`) += sum over the tile's rows
/// jj of lane jj's `w` times tile[jj][element]: the lanes' weights are
/// broadcast by shuffles, every lane of the warp takes part.
__device__ inline void accumulateTile(float (&acc)[kPerLane], float w,
                                      const float (*tile)[kTileStride], int n,
                                      int lane) {
  for (int jj = 0; jj < kTile; ++jj) {
    float wj = __shfl_sync(0xffffffffu, w, jj);
    for (int t = 0; t < kPerLane; ++t) {
      int e = lane + t * kWarp;
      if (e < n)
        acc[t] += wj * tile[jj][e];
    }
  }
}

/// row[e] = acc[t] * factor for this lane's elements e = lane + 32 t < n.
__device__ inline void storeRow(float *row, const float (&acc)[kPerLane], int n,
                                int lane, float factor) {
  for (int t = 0; t < kPerLane; ++t) {
    int e = lane + t * kWarp;
    if (e < n)
      row[e] = acc[t] * factor;
  }
}

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
  const float *k = key + at(s.k, b, h), *v = value + at(s.v, b, h);
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  if (i < s.L)
    for (int e = lane; e < s.E; e += kWarp)
      sq[warp][e] = query[at(s.q, b, h) + i * s.q.row + e];
  float acc[kPerLane];
  for (int t = 0; t < kPerLane; ++t)
    acc[t] = 0.0f;
  float rowMax = -INFINITY, rowSum = 0.0f;
  int end = keyEnd(row0, kRowsPerBlock, s);
  for (int col0 = 0; col0 < end; col0 += kTile) {
    __syncthreads(); // the previous tile is no longer read
    loadTile(sk, k, s.k.row, col0, s.S, s.E);
    loadTile(sv, v, s.v.row, col0, s.S, s.Ev);
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
    accumulateTile(acc, p, sv, s.Ev, lane);
  }
  if (i >= s.L)
    return;
  storeRow(out + at(s.o, b, h) + i * s.o.row, acc, s.Ev, lane,
           rowSum > 0.0f ? 1.0f / rowSum : 0.0f);
  if (lane == 0)
    lse[bh * s.L + i] = rowSum > 0.0f ? rowMax + logf(rowSum) : -INFINITY;
}

/// The backward's shared memory, one copy for both halves of its launch:
/// the dQ blocks tile keys and values (a, b) and keep their query and
/// gradient rows (rowA, rowB); the dK dV blocks tile queries and gradients
/// and keep their key and value rows, plus a tile's log-sum-exp and
/// rowsum(dO * O). Static shared memory is 48 KiB a block: the two halves'
/// arrays side by side would not fit.
struct BackwardTiles {
  float a[kTile][kTileStride];
  float b[kTile][kTileStride];
  float rowA[kRowsPerBlock][kMaxHead];
  float rowB[kRowsPerBlock][kMaxHead];
  float lse[kTile];
  float delta[kTile];
};

/// dQ of query rows block * kRowsPerBlock...; blockIdx (block, h, b).
__device__ inline void backwardQuery(const float *grad, const float *query,
                                     const float *key, const float *value,
                                     const float *out, const float *lse,
                                     const float *mask, float *gradQuery,
                                     Shape s, int block, BackwardTiles &t) {
  float (&sk)[kTile][kTileStride] = t.a;
  float (&sv)[kTile][kTileStride] = t.b;
  float (&sq)[kRowsPerBlock][kMaxHead] = t.rowA;
  float (&sg)[kRowsPerBlock][kMaxHead] = t.rowB;
  int b = blockIdx.z, h = blockIdx.y, row0 = block * kRowsPerBlock;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int i = row0 + warp;
  long long bh = (long long)b * s.H + h;
  const float *k = key + at(s.k, b, h), *v = value + at(s.v, b, h);
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  float delta = 0.0f, rowLse = -INFINITY;
  if (i < s.L) {
    for (int e = lane; e < s.E; e += kWarp)
      sq[warp][e] = query[at(s.q, b, h) + i * s.q.row + e];
    float part = 0.0f;
    for (int e = lane; e < s.Ev; e += kWarp) {
      float g = grad[at(s.g, b, h) + i * s.g.row + e];
      sg[warp][e] = g;
      part += g * out[at(s.o, b, h) + i * s.o.row + e];
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
    loadTile(sk, k, s.k.row, col0, s.S, s.E);
    loadTile(sv, v, s.v.row, col0, s.S, s.Ev);
    __syncthreads();
    if (i >= s.L || rowLse == -INFINITY)
      continue;
    int j = col0 + lane;
    float ds = 0.0f;
    if (j < end) {
      float x = score(sq[warp], sk[lane], s.E, i, j, m, s);
      float p = x == -INFINITY ? 0.0f : expf(x - rowLse);
      ds = p * (dot(sg[warp], sv[lane], s.Ev) - delta);
    }
    accumulateTile(acc, ds, sk, s.E, lane);
  }
  if (i >= s.L)
    return;
  storeRow(gradQuery + at(s.dq, b, h) + i * s.dq.row, acc, s.E, lane, s.scale);
}

/// dK and dV of key rows block * kRowsPerBlock...; blockIdx (block, h, b).
__device__ inline void backwardKeyValue(const float *grad, const float *query,
                                        const float *key, const float *value,
                                        const float *out, const float *lse,
                                        const float *mask, float *gradKey,
                                        float *gradValue, Shape s, int block,
                                        BackwardTiles &t) {
  float (&sq)[kTile][kTileStride] = t.a;
  float (&sg)[kTile][kTileStride] = t.b;
  float (&sk)[kRowsPerBlock][kMaxHead] = t.rowA;
  float (&sv)[kRowsPerBlock][kMaxHead] = t.rowB;
  float (&sLse)[kTile] = t.lse;
  float (&sDelta)[kTile] = t.delta;
  int b = blockIdx.z, h = blockIdx.y, key0 = block * kRowsPerBlock;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int j = key0 + warp;
  long long bh = (long long)b * s.H + h;
  const float *q = query + at(s.q, b, h), *g = grad + at(s.g, b, h),
              *o = out + at(s.o, b, h), *rows = lse + bh * s.L;
  const float *m = mask ? mask + b * s.maskB + h * s.maskH : nullptr;
  if (j < s.S) {
    for (int e = lane; e < s.E; e += kWarp)
      sk[warp][e] = key[at(s.k, b, h) + j * s.k.row + e];
    for (int e = lane; e < s.Ev; e += kWarp)
      sv[warp][e] = value[at(s.v, b, h) + j * s.v.row + e];
  }
  float dk[kPerLane], dv[kPerLane];
  for (int t = 0; t < kPerLane; ++t)
    dk[t] = dv[t] = 0.0f;
  // Causal: queries before the block's first key attend to none of it.
  int first = s.causal ? key0 / kTile * kTile : 0;
  for (int row0 = first; row0 < s.L; row0 += kTile) {
    __syncthreads();
    loadTile(sq, q, s.q.row, row0, s.L, s.E);
    loadTile(sg, g, s.g.row, row0, s.L, s.Ev);
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      long long row = row0 + r;
      sDelta[r] = row0 + r < s.L
                      ? dot(g + row * s.g.row, o + row * s.o.row, s.Ev)
                      : 0.0f;
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
      ds = p * (dot(sg[lane], sv[warp], s.Ev) - sDelta[lane]);
    }
    accumulateTile(dv, p, sg, s.Ev, lane);
    accumulateTile(dk, ds, sq, s.E, lane);
  }
  if (j >= s.S)
    return;
  storeRow(gradKey + at(s.dk, b, h) + j * s.dk.row, dk, s.E, lane, s.scale);
  storeRow(gradValue + at(s.dv, b, h) + j * s.dv.row, dv, s.Ev, lane, 1.0f);
}

/// The backward in one launch: grid (ceil(L / kRowsPerBlock) +
/// ceil(S / kRowsPerBlock), H, B), block kThreads. The first
/// ceil(L / kRowsPerBlock) blocks of x compute dQ, the rest dK and dV; each
/// recomputes the scores and rowsum(dO * O) it needs, so neither reads what
/// the other writes (no atomics, no second launch).
__device__ inline void backward(const float *grad, const float *query,
                                const float *key, const float *value,
                                const float *out, const float *lse,
                                const float *mask, float *gradQuery,
                                float *gradKey, float *gradValue, Shape s) {
  __shared__ BackwardTiles tiles;
  int queryBlocks = (s.L + kRowsPerBlock - 1) / kRowsPerBlock;
  int block = int(blockIdx.x);
  if (block < queryBlocks)
    backwardQuery(grad, query, key, value, out, lse, mask, gradQuery, s, block,
                  tiles);
  else
    backwardKeyValue(grad, query, key, value, out, lse, mask, gradKey,
                     gradValue, s, block - queryBlocks, tiles);
}

} // namespace spmd::attention

#endif // SPMD_RUNTIME_GPU_ATTENTIONKERNELS_CUH

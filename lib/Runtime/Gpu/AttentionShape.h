//===- AttentionShape.h - what the attention kernels are launched with ----===//
//
// Shared by the kernels (AttentionKernels.cuh) and their launcher
// (GpuAttention.cpp, plain C++): the launch geometry and the kernels' shape
// parameter.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_ATTENTIONSHAPE_H
#define SPMD_RUNTIME_GPU_ATTENTIONSHAPE_H

namespace spmd::attention {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 4; // warps per block, one row each
constexpr int kThreads = kWarp * kRowsPerBlock;
constexpr int kTile = 32; // keys (queries) per shared-memory tile
constexpr int kMaxHead = 128;
/// A tile row's length in shared memory: one more than kMaxHead, so the 32
/// lanes reading column e of 32 different rows (lane j scores key j) hit 32
/// different banks instead of one.
constexpr int kTileStride = kMaxHead + 1;
constexpr int kPerLane = kMaxHead / kWarp;

/// A tensor's element strides along batch, head and row (its rows are
/// contiguous): row i of batch b, head h starts at
/// b * batch + h * head + i * row.
struct Strides {
  long long batch, head, row;
};

/// Sizes, mask strides (elements; 0 where the mask broadcasts), the scale
/// and causal, and every tensor's strides (the log-sum-exp is contiguous),
/// as the kernels take them (by value).
struct Shape {
  int B, H, L, S, E, Ev;
  long long maskB, maskH, maskL;
  float scale;
  int causal;
  Strides q, k, v, o, g, dq, dk, dv;
};

} // namespace spmd::attention

#endif // SPMD_RUNTIME_GPU_ATTENTIONSHAPE_H

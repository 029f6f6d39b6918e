//===- HostBlockSize.h - the size of the CPU allocator's blocks -*- C++ -*-===//
//
// Shared by the runtime's caching allocator (lib/Runtime/HostAllocator.cpp),
// which hands out blocks of this size, and spmd-plan-memory, which plans a
// step's peak in the same blocks, so that planned and measured agree.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_HOSTBLOCKSIZE_H
#define SPMD_RUNTIME_HOSTBLOCKSIZE_H

#include <cstdint>

namespace spmd::runtime {

/// Every block is aligned to a cache line (and to more when asked).
constexpr uint64_t kMinBlockAlignment = 64;

/// Blocks from this size up are mappings of their own, in size classes.
constexpr uint64_t kMappedBlockBytes = uint64_t(256) << 10;

/// The bytes of the block that serves `size` bytes at `alignment`: up to the
/// alignment (at least a cache line), and from kMappedBlockBytes up to a size
/// class (four per power of two: 1, 1.25, 1.5, 1.75 x 2^k; at most 25% more),
/// so that a freed block serves the next request of a near size. Frees after
/// the last use make requests of many sizes meet in the cache; with exact
/// sizes it mapped fresh pages for most of them every step (576k page faults
/// per GPT-2 124M step under fully_shard).
inline uint64_t hostBlockBytes(uint64_t size, uint64_t alignment) {
  if (alignment < kMinBlockAlignment)
    alignment = kMinBlockAlignment;
  if (size == 0)
    size = 1;
  size = (size + alignment - 1) / alignment * alignment;
  if (size < kMappedBlockBytes)
    return size;
  uint64_t power = uint64_t(1) << (63 - __builtin_clzll(size));
  uint64_t quarter = power / 4;
  return (size + quarter - 1) / quarter * quarter;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_HOSTBLOCKSIZE_H

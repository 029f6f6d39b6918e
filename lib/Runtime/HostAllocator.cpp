//===- HostAllocator.cpp - a caching allocator for compiled CPU programs --===//
//
// spmd-lower-to-cpu lowers memref.alloc / memref.dealloc to calls of
// `_mlir_memref_to_llvm_alloc` / `_mlir_memref_to_llvm_free` (upstream's
// use-generic-functions), defined here. Through malloc, every intermediate
// buffer above glibc's mmap threshold (128 KiB at first) is mapped and
// unmapped each step, and the kernel zeroes its pages again on first touch:
// on the 6-layer GPT of bench/gpt.py page faults and their zeroing were ~5%
// of the step. Here a freed block goes to a free list of its exact size and
// is handed to the next allocation of that size; a program with static
// shapes allocates the same sizes every step, so after the first step no
// allocation reaches malloc. Sizes from 256 KiB up are rounded to size
// classes (HostBlockSize.h) and mapped on their own, with transparent huge
// pages from 2 MiB up (one fault per 2 MiB; SPMD_CPU_HUGE_PAGES=0 turns
// them off). The cache is bounded by the step's own peak: an allocation
// that no cached block serves, when what is handed out and cached would
// exceed the most ever handed out at once plus SPMD_CPU_CACHE_SLACK percent
// of it (default 0), takes a cached mapping of another size and resizes it
// (mremap: its pages stay, so only growth faults), and frees cached blocks
// (largest first) only past that. GPT-2 124M under fully_shard, per step:
// evicting by unmapping at slack 0, 576k page faults and +35% step time;
// at slack 100, 18k faults and ~270 MiB more resident; resizing with huge
// pages at slack 0, 3.3k faults at the smaller footprint. Cached blocks are
// also kept up to SPMD_CPU_CACHE_MIB (default 4096), past which frees
// unmap; SPMD_CPU_CACHE=0 turns the cache off.
//===----------------------------------------------------------------------===//

#include "HostMapping.h"
#include "Spmd/Runtime/HostBlockSize.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kMinAlignment = spmd::runtime::kMinBlockAlignment;

/// Blocks from this size up are mappings of their own: freeing one returns
/// its pages to the system at once (glibc's heap keeps blocks below its
/// mmap threshold, which it raises up to 32 MiB as mappings are freed, and
/// a fragmented heap grew the process step after step).
constexpr size_t kMapped = spmd::runtime::kMappedBlockBytes;

struct Block {
  size_t size, alignment;
  bool mapped;
};

void *systemAllocate(size_t alignment, size_t size, bool &mapped) {
  mapped = size >= kMapped && alignment <= 4096;
  if (!mapped)
    return std::aligned_alloc(alignment, size);
  return spmd::runtime::mapZeroedPages(size, /*huge=*/true);
}

void systemFree(void *p, const Block &block) {
  if (block.mapped)
    munmap(p, block.size);
  else
    std::free(p);
}

struct HostCache {
  std::mutex mutex;
  bool enabled = true;
  size_t limit = size_t(4096) << 20;
  /// How far above the most ever handed out at once the process may hold
  /// blocks (live and cached), in percent of it (SPMD_CPU_CACHE_SLACK).
  size_t slackPercent = 0;
  size_t cachedBytes = 0;
  /// Cached mappings resized to serve another size (remapCached).
  size_t remaps = 0;
  /// Bytes handed out and not yet freed, and their high-water mark.
  size_t liveBytes = 0, peakBytes = 0;
  /// Blocks handed out or cached, by address.
  std::unordered_map<void *, Block> blocks;
  /// Free blocks by (size, alignment).
  std::unordered_map<size_t, std::vector<void *>> free[8];

  HostCache() {
    if (const char *v = std::getenv("SPMD_CPU_CACHE"))
      enabled = std::string(v) != "0";
    if (const char *v = std::getenv("SPMD_CPU_CACHE_SLACK"))
      slackPercent = size_t(std::strtoull(v, nullptr, 10));
    if (const char *v = std::getenv("SPMD_CPU_CACHE_MIB"))
      limit = size_t(std::strtoull(v, nullptr, 10)) << 20;
  }

  /// The free lists of blocks of `alignment` (64 to 8192, powers of two).
  std::unordered_map<size_t, std::vector<void *>> *freeLists(size_t alignment) {
    unsigned i = 0;
    for (size_t a = kMinAlignment; a < alignment && i < 7; a <<= 1)
      ++i;
    return (kMinAlignment << i) == alignment ? &free[i] : nullptr;
  }

  void *allocate(size_t alignment, size_t size) {
    alignment = std::max(alignment, kMinAlignment);
    if (alignment & (alignment - 1))
      return nullptr; // aligned_alloc's contract
    size = spmd::runtime::hostBlockBytes(size, alignment);
    std::lock_guard<std::mutex> lock(mutex);
    if (enabled) {
      if (auto *lists = freeLists(alignment)) {
        auto it = lists->find(size);
        if (it != lists->end() && !it->second.empty()) {
          void *p = it->second.back();
          it->second.pop_back();
          cachedBytes -= size;
          handOut(size);
          return p;
        }
      }
    }
    // A miss: the cache may hold blocks of other sizes. Free them (largest
    // first) until what is handed out and cached fits in the most ever
    // handed out at once, so the cache never holds more than the step's
    // own peak (blocks of every size a step frees would otherwise pile up:
    // 850 MiB on GPT-2 124M under fully_shard).
    size_t bound = peakBytes + peakBytes / 100 * slackPercent;
    size_t keep = bound > liveBytes + size ? bound - liveBytes - size : 0;
    if (cachedBytes > keep)
      if (void *p = remapCached(alignment, size))
        return p;
    evictDownTo(keep);
    bool mapped = false;
    void *p = systemAllocate(alignment, size, mapped);
    if (p) {
      blocks[p] = Block{size, alignment, mapped};
      handOut(size);
    }
    return p;
  }

  /// A cached mapping of another size resized to `size` (mremap), when
  /// the cache must give up bytes anyway: its pages stay mapped, so the
  /// new block faults in at most its growth instead of all its pages. The
  /// smallest block of at least `size` (shrunk), else the largest.
  void *remapCached(size_t alignment, size_t size) {
    if (size < kMapped || alignment > 4096)
      return nullptr;
    std::vector<void *> *best = nullptr;
    size_t bestSize = 0;
    for (auto &lists : free)
      for (auto &[blockSize, list] : lists) {
        if (list.empty() || blockSize < kMapped ||
            !blocks.at(list.back()).mapped)
          continue;
        bool fits = blockSize >= size, bestFits = bestSize >= size;
        if (!best || (fits && (!bestFits || blockSize < bestSize)) ||
            (!fits && !bestFits && blockSize > bestSize)) {
          best = &list;
          bestSize = blockSize;
        }
      }
    if (!best)
      return nullptr;
    void *old = best->back();
    void *p = mremap(old, bestSize, size, MREMAP_MAYMOVE);
    if (p == MAP_FAILED)
      return nullptr;
    best->pop_back();
    cachedBytes -= bestSize;
    blocks.erase(old);
    blocks[p] = Block{size, alignment, true};
    ++remaps;
    handOut(size);
    return p;
  }

  /// Frees cached blocks, largest first, until at most `bytes` are cached.
  void evictDownTo(size_t bytes) {
    while (cachedBytes > bytes) {
      std::vector<void *> *largest = nullptr;
      size_t largestSize = 0;
      for (auto &lists : free)
        for (auto &[blockSize, list] : lists)
          if (!list.empty() && blockSize > largestSize) {
            largest = &list;
            largestSize = blockSize;
          }
      if (!largest)
        return;
      void *p = largest->back();
      largest->pop_back();
      auto it = blocks.find(p);
      systemFree(p, it->second);
      blocks.erase(it);
      cachedBytes -= largestSize;
    }
  }

  void handOut(size_t size) {
    liveBytes += size;
    peakBytes = std::max(peakBytes, liveBytes);
  }

  void release(void *p) {
    if (!p)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.find(p);
    if (it == blocks.end()) {
      std::free(p); // not ours
      return;
    }
    Block block = it->second;
    liveBytes -= block.size;
    auto *lists = freeLists(block.alignment);
    if (!enabled || !lists || cachedBytes + block.size > limit) {
      blocks.erase(it);
      systemFree(p, block);
      return;
    }
    (*lists)[block.size].push_back(p);
    cachedBytes += block.size;
  }
};

/// Never destroyed: compiled code may free after static destructors ran.
HostCache &hostCache() {
  static HostCache *cache = new HostCache;
  return *cache;
}

} // namespace

extern "C" {

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return hostCache().allocate(kMinAlignment, size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return hostCache().allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *ptr) { hostCache().release(ptr); }

void spmdHostMemory(int64_t *live, int64_t *peak) {
  HostCache &cache = hostCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  *live = int64_t(cache.liveBytes);
  *peak = int64_t(cache.peakBytes);
}

void spmdHostMemoryResetPeak() {
  HostCache &cache = hostCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.peakBytes = cache.liveBytes;
}

} // extern "C"

//===- DeviceCache.cpp - stream-ordered reuse of device buffers -----------===//
//
// A compiled step allocates and frees the same device buffers every step
// (bufferization's temporaries, collective snapshots and scratch). Asking
// the driver each time costs an allocation per buffer per step; like
// PyTorch's caching allocator, a freed buffer is kept for the next request
// of its (rounded) size instead. A buffer freed on the stream that asks
// for one is handed out at once: work on one stream runs in order, so its
// new users run after its old ones (a compiled program's work, cuBLAS and
// its collectives' reads and writes included, is ordered on its program
// stream, SpmdGpuRuntime.h). From another stream, only once the device has
// passed its free: an event recorded on the freeing stream at the free has
// completed (a poll, never a host wait). Steady steps allocate nothing.
//
//===----------------------------------------------------------------------===//

#include "GpuCommon.h"

#include <cstdlib>
#include <map>
#include <unordered_map>

namespace {

struct Block {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUevent freed = nullptr;   // recorded on the freeing stream at the free
  CUstream stream = nullptr; // the freeing stream
};

struct Cache {
  // Free blocks by size; live and free blocks by address.
  std::multimap<size_t, Block *> free;
  std::unordered_map<CUdeviceptr, Block *> all;
  bool enabled = true;
};

Cache &cache() {
  static Cache *c = [] {
    auto *c = new Cache; // never destroyed: used at exit
    if (const char *v = std::getenv("SPMD_GPU_CACHE"); v && *v == '0')
      c->enabled = false;
    return c;
  }();
  return *c;
}

/// Sizes are rounded up to 512 bytes (a step's buffers of nearly equal
/// sizes share blocks; cuMemAlloc aligns to 256 anyway).
size_t rounded(size_t bytes) { return (bytes + 511) / 512 * 512; }

} // namespace

CUdeviceptr spmd::gpu::cachedAlloc(size_t bytes, CUstream stream) {
  Cache &c = cache();
  if (!c.enabled) {
    CUdeviceptr ptr;
    checkCu(cuMemAllocAsync(&ptr, bytes, stream), "cuMemAllocAsync");
    return ptr;
  }
  size_t size = rounded(bytes);
  auto [from, to] = c.free.equal_range(size);
  for (auto it = from; it != to; ++it) {
    if (it->second->stream != stream)
      continue;
    CUdeviceptr ptr = it->second->ptr;
    c.free.erase(it);
    return ptr;
  }
  for (auto it = from; it != to; ++it) {
    Block *b = it->second;
    CUresult done = cuEventQuery(b->freed);
    if (done == CUDA_ERROR_NOT_READY)
      continue;
    checkCu(done, "cuEventQuery (cached device buffer)");
    c.free.erase(it);
    return b->ptr;
  }
  auto *b = new Block;
  b->bytes = size;
  checkCu(cuMemAllocAsync(&b->ptr, size, stream), "cuMemAllocAsync");
  checkCu(cuEventCreate(&b->freed, CU_EVENT_DISABLE_TIMING),
          "cuEventCreate (cached device buffer)");
  c.all[b->ptr] = b;
  return b->ptr;
}

void spmd::gpu::cachedFree(CUdeviceptr ptr, CUstream stream) {
  Cache &c = cache();
  auto it = c.all.find(ptr);
  if (!c.enabled || it == c.all.end()) {
    checkCu(cuMemFreeAsync(ptr, stream), "cuMemFreeAsync");
    return;
  }
  Block *b = it->second;
  checkCu(cuEventRecord(b->freed, stream),
          "cuEventRecord (cached device buffer)");
  b->stream = stream;
  c.free.emplace(b->bytes, b);
}

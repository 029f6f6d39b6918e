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
// They also get the same buffers as the step before: a compiled program
// asks for the same sizes in the same order every step, and its k-th
// request takes the block its previous step's k-th request got when that
// one is free on the same stream (else any free block of the size), so the
// addresses a step uses repeat (what the runtime caches by address, the
// GEMM pairs' address arrays in GpuBlas.cpp, is found again).
// The bytes handed out are counted (spmdGpuMemory), as the CPU runtime's
// host cache counts its own.
//
// While a step is captured as a CUDA graph, every buffer the capture
// allocates or frees becomes the graph's: its address is baked into the
// graph's nodes, so it leaves the cache for good (a private pool, as
// PyTorch's graph pools) and is freed with the graph.
//
//===----------------------------------------------------------------------===//

#include "GpuCommon.h"

#include "Spmd/Runtime/SpmdGpuRuntime.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <vector>

namespace {

struct Block {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUevent freed = nullptr;   // recorded on the freeing stream at the free
  CUstream stream = nullptr; // the freeing stream
  bool captured = false;     // touched by the capture being recorded
  bool graph = false;        // owned by a captured graph
};

struct Cache {
  // Free blocks by size; live and free blocks by address.
  std::multimap<size_t, Block *> free;
  std::unordered_map<CUdeviceptr, Block *> all;
  bool enabled = true;
  /// Inside spmd::gpu::cacheCaptureBegin/End: the blocks the capture
  /// touched.
  bool capturing = false;
  std::vector<Block *> captured;
  /// Within a program's step (cacheStepBegin): the program, the blocks
  /// this step got so far in order, and each program's last step's.
  const void *program = nullptr;
  std::vector<Block *> step;
  std::unordered_map<const void *, std::vector<Block *>> lastStep;
  /// Bytes handed out and not freed; their most since the last reset.
  size_t liveBytes = 0, peakBytes = 0;
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

/// Counts `b` as handed out.
void handOut(Cache &c, Block *b) {
  if (c.program)
    c.step.push_back(b);
  c.liveBytes += b->bytes;
  c.peakBytes = std::max(c.peakBytes, c.liveBytes);
}

/// The free block on `stream` of `size` bytes that the current program's
/// last step got for this request, if any (compared by address: blocks
/// released with a graph since are never free).
std::multimap<size_t, Block *>::iterator previousBlock(Cache &c, size_t size,
                                                       CUstream stream) {
  if (!c.program)
    return c.free.end();
  auto last = c.lastStep.find(c.program);
  size_t k = c.step.size();
  if (last == c.lastStep.end() || k >= last->second.size())
    return c.free.end();
  Block *want = last->second[k];
  auto [from, to] = c.free.equal_range(size);
  for (auto it = from; it != to; ++it)
    if (it->second == want && want->stream == stream)
      return it;
  return c.free.end();
}

/// Records that the capture being recorded uses `b`.
void touch(Cache &c, Block *b) {
  if (c.capturing && !b->captured) {
    b->captured = true;
    c.captured.push_back(b);
  }
}

} // namespace

CUdeviceptr spmd::gpu::cachedAlloc(size_t bytes, CUstream stream) {
  Cache &c = cache();
  if (c.capturing && !c.enabled)
    fail("CUDA graph capture", "needs the device buffer cache (unset "
                               "SPMD_GPU_CACHE=0)");
  if (!c.enabled) {
    CUdeviceptr ptr;
    checkCu(cuMemAllocAsync(&ptr, bytes, stream), "cuMemAllocAsync");
    return ptr;
  }
  size_t size = rounded(bytes);
  if (auto it = previousBlock(c, size, stream); it != c.free.end()) {
    Block *b = it->second;
    c.free.erase(it);
    touch(c, b);
    handOut(c, b);
    return b->ptr;
  }
  auto [from, to] = c.free.equal_range(size);
  for (auto it = from; it != to; ++it) {
    if (it->second->stream != stream)
      continue;
    Block *b = it->second;
    c.free.erase(it);
    touch(c, b);
    handOut(c, b);
    return b->ptr;
  }
  // In a capture only the capturing stream's own blocks are reused: another
  // stream's free is either outside the capture (no dependency may cross
  // it) or inside (its event cannot be queried).
  for (auto it = from; it != to && !c.capturing; ++it) {
    Block *b = it->second;
    CUresult done = cuEventQuery(b->freed);
    if (done == CUDA_ERROR_NOT_READY)
      continue;
    checkCu(done, "cuEventQuery (cached device buffer)");
    c.free.erase(it);
    handOut(c, b);
    return b->ptr;
  }
  auto *b = new Block;
  b->bytes = size;
  if (c.capturing)
    // Not a graph memory node: a plain buffer the graph keeps.
    checkCu(cuMemAlloc(&b->ptr, size), "cuMemAlloc (captured step)");
  else
    checkCu(cuMemAllocAsync(&b->ptr, size, stream), "cuMemAllocAsync");
  checkCu(cuEventCreate(&b->freed, CU_EVENT_DISABLE_TIMING),
          "cuEventCreate (cached device buffer)");
  c.all[b->ptr] = b;
  touch(c, b);
  handOut(c, b);
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
  if (b->graph)
    return; // a captured graph's buffer: it stays with the graph
  c.liveBytes -= std::min(c.liveBytes, b->bytes);
  checkCu(cuEventRecord(b->freed, stream),
          "cuEventRecord (cached device buffer)");
  b->stream = stream;
  c.free.emplace(b->bytes, b);
  touch(c, b);
}

void spmd::gpu::cacheStepBegin(const void *program) {
  Cache &c = cache();
  c.program = program;
  c.step.clear();
}

void spmd::gpu::cacheStepEnd() {
  Cache &c = cache();
  if (c.program)
    c.lastStep[c.program] = std::move(c.step);
  c.program = nullptr;
  c.step.clear();
}

void spmd::gpu::cacheCaptureBegin() {
  Cache &c = cache();
  c.capturing = true;
  c.captured.clear();
}

std::vector<CUdeviceptr> spmd::gpu::cacheCaptureEnd() {
  Cache &c = cache();
  c.capturing = false;
  std::vector<CUdeviceptr> owned;
  for (Block *b : c.captured) {
    for (auto it = c.free.lower_bound(b->bytes);
         it != c.free.end() && it->first == b->bytes; ++it)
      if (it->second == b) {
        c.free.erase(it);
        break;
      }
    b->captured = false;
    b->graph = true;
    owned.push_back(b->ptr);
  }
  c.captured.clear();
  return owned;
}

void spmd::gpu::cacheReleaseGraph(const std::vector<CUdeviceptr> &owned) {
  Cache &c = cache();
  for (CUdeviceptr ptr : owned) {
    auto it = c.all.find(ptr);
    if (it == c.all.end())
      continue;
    Block *b = it->second;
    c.all.erase(it);
    checkCu(cuMemFree(b->ptr), "cuMemFree (CUDA graph buffer)");
    checkCu(cuEventDestroy(b->freed), "cuEventDestroy (CUDA graph buffer)");
    delete b;
  }
}

extern "C" {

void spmdGpuMemory(int64_t *live, int64_t *peak) {
  Cache &c = cache();
  *live = static_cast<int64_t>(c.liveBytes);
  *peak = static_cast<int64_t>(c.peakBytes);
}

void spmdGpuMemoryResetPeak(void) {
  Cache &c = cache();
  c.peakBytes = c.liveBytes;
}

} // extern "C"

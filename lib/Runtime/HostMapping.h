//===- HostMapping.h - large host buffers as mappings of their own --------===//
//
// The anonymous mappings the CPU runtime uses for large buffers (state, the
// host allocator's big blocks): zero-filled, page aligned, and, when asked,
// from 2 MiB up backed by transparent huge pages where the system's THP
// mode is `madvise` (one fault per 2 MiB instead of 512).
// SPMD_CPU_HUGE_PAGES=0 turns huge pages off.
//
// State buffers do not ask: they are touched once, when the model's values
// are copied in, and on the bench's 2-core VM (THP defrag `madvise`, so a
// fault may compact memory first) huge pages made that copy 1.5-3.5x slower
// (GPT-2 124M first call, load phase 1.4-2.5 s -> 3.7-5.0 s). The first
// touch of fresh memory costs ~0.75 ns/byte there either way.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_HOSTMAPPING_H
#define SPMD_RUNTIME_HOSTMAPPING_H

#include <cstddef>
#include <cstdlib>
#include <string>
#include <sys/mman.h>

namespace spmd::runtime {

constexpr size_t kHugePageBytes = size_t(2) << 20;

inline bool hostHugePages() {
  static const bool on = [] {
    const char *v = std::getenv("SPMD_CPU_HUGE_PAGES");
    return !v || std::string(v) != "0";
  }();
  return on;
}

/// `size` zero bytes, page aligned, in a mapping of their own (null when
/// the system refuses), in huge pages if `huge`; munmap frees them.
inline void *mapZeroedPages(size_t size, bool huge) {
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  if (huge && size >= kHugePageBytes && hostHugePages())
    madvise(p, size, MADV_HUGEPAGE);
  return p;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_HOSTMAPPING_H

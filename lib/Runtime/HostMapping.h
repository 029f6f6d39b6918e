//===- HostMapping.h - large host buffers as mappings of their own --------===//
//
// The anonymous mappings the CPU runtime uses for large buffers (state, the
// host allocator's big blocks): zero-filled, and from 2 MiB up backed by
// transparent huge pages where the system's THP mode is `madvise` — one
// fault per 2 MiB instead of 512, and fewer TLB misses in the optimizer's
// sweeps over the state. (The first touch of fresh memory still costs what
// the system charges for it: ~0.75 ns/byte on the 2-core VM of the bench,
// with or without huge pages.) SPMD_CPU_HUGE_PAGES=0 turns huge pages off.
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
/// the system refuses); munmap frees them.
inline void *mapZeroedPages(size_t size) {
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  if (size >= kHugePageBytes && hostHugePages())
    madvise(p, size, MADV_HUGEPAGE);
  return p;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_HOSTMAPPING_H

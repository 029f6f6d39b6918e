// A host program driving a step over 3 GiB of state: the state is the
// runtime's (zero-filled, its pages committed only when touched), so the
// step links, runs, and the process stays small.
#include "Spmd/Runtime/SpmdRuntime.h"

#include <sys/resource.h>

#include <cstdio>

extern "C" void step();

int main() {
  constexpr int64_t kCount = 268435456, kBytes = kCount * 4;
  step(); // zero state: 0 + 0 + 0 + 1
  auto *sum = reinterpret_cast<float *>(spmdStateBind("sum", 4, SPMD_F32));
  std::printf("first sum = %g\n", *sum);
  auto *c = reinterpret_cast<float *>(spmdStateBind("big.c", kBytes, SPMD_F32));
  c[kCount - 1] = 5.0f; // written in place
  step();
  std::printf("second sum = %g\n", *sum);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // ru_maxrss is in KiB: far below the 3 GiB the state spans.
  std::printf("states %lld, peak RSS below 1 GiB: %d\n",
              static_cast<long long>(spmdStateCount()),
              usage.ru_maxrss < 1024 * 1024);
  return 0;
}

// A host program driving a compiled step: state is reached by name,
// checked for size and element type, and read and written in place.
#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstdio>

extern "C" void step();

int main() {
  step(); // registers the program's state
  auto *w = reinterpret_cast<float *>(spmdStateBind("fc.w", 16, SPMD_F32));
  for (int i = 0; i < 4; ++i)
    w[i] = float(i + 1); // written in place, no copy
  step();
  std::printf("fc.w = %g %g %g %g\n", w[0], w[1], w[2], w[3]);
  int64_t bytes = 0;
  bool same = spmdStateData("fc.w", &bytes) == reinterpret_cast<int64_t>(w);
  std::printf("states %lld, bytes %lld, same buffer %d\n",
              static_cast<long long>(spmdStateCount()),
              static_cast<long long>(bytes), same);
  return 0;
}

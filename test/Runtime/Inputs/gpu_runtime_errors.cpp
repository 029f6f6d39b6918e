// Calls into libSpmdGpuRuntime that must fail with a clear message and a
// non-zero exit (never a crash or a hang), on machines without a GPU.
#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc > 1 && !std::strcmp(argv[1], "init"))
    spmdInit();
  if (argc > 1 && !std::strcmp(argv[1], "group-end"))
    spmdGroupEnd();
  std::puts("returned");
  return 0;
}

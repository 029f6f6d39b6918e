//===- RuntimeErrors.cpp - misuse of libSpmdRuntime must abort clearly ----===//
//
// `spmd-runtime-errors KIND` triggers one misuse; the lit test checks the
// job exits non-zero with a message naming the call and the rank.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Runtime/SpmdRuntime.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  const char *kind = argv[1];
  float x = 1.0f;
  int64_t a = reinterpret_cast<int64_t>(&x);
  if (!std::strcmp(kind, "double-init")) {
    spmdInit();
    spmdInit();
  } else if (!std::strcmp(kind, "unknown-state")) {
    spmdInit();
    spmdStateData("no.such.state", nullptr);
  } else if (!std::strcmp(kind, "mesh-mismatch")) {
    // A mesh of 3 ranks on a job of another size.
    spmdAllReduce(a, a, 1, SPMD_F32, SPMD_SUM, /*meshShape=*/3, /*axes=*/1);
  } else if (!std::strcmp(kind, "bad-dtype")) {
    spmdAllReduce(a, a, 1, /*dtype=*/9, SPMD_SUM, 1, 1);
  } else if (!std::strcmp(kind, "bind-mismatch")) {
    spmdInit();
    spmdStateRegister("fc.weight", a, 4, SPMD_F32);
    spmdStateBind("fc.weight", 4, SPMD_F64);
  } else if (!std::strcmp(kind, "mismatch")) {
    // Rank 0 reduces one float, the others two: caught in check mode.
    float y[2] = {1.0f, 2.0f};
    int64_t b = reinterpret_cast<int64_t>(y);
    spmdAllReduce(b, b, spmdWorldRank() == 0 ? 1 : 2, SPMD_F32, SPMD_SUM,
                  spmdWorldSize(), 1);
  } else if (!std::strcmp(kind, "timeout-first") ||
             !std::strcmp(kind, "timeout-later")) {
    // Rank 1 never joins the first (or the second) all_reduce; rank 0 must
    // give up after SPMD_TIMEOUT and take the job down, rank 1 included.
    int calls = !std::strcmp(kind, "timeout-first") ? 0 : 1;
    bool straggler = spmdWorldRank() == 1;
    for (int i = 0; i < 2; ++i) {
      if (straggler && i >= calls) {
        std::this_thread::sleep_for(std::chrono::seconds(100));
        break;
      }
      spmdAllReduce(a, a, 1, SPMD_F32, SPMD_SUM, spmdWorldSize(), 1);
    }
  } else if (!std::strcmp(kind, "init")) {
    spmdInit();
  } else if (!std::strcmp(kind, "finalize-before-init")) {
    spmdFinalize();
  } else {
    return 2;
  }
  std::puts("no error raised");
  return 0;
}

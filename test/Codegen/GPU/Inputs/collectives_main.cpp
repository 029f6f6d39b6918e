// Drives Inputs/collectives.mlir compiled for the GPU: rank r uploads
// x = iota(4x8) + 100 r, runs @collectives and rank 0 prints the 12 results
// in printMemrefF32's format, which
// test/Integration/Collectives/check_collectives.py checks.
#include "../../../lib/Support/StepDriver.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstdint>
#include <cstdio>
#include <vector>

struct Results {
  MemRef<2> r[12];
};
extern "C" void _mlir_ciface_collectives(Results *, MemRef<2> *);

int main() {
  spmdInit();
  int rank = spmdWorldRank();
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = float(i + 100 * rank);
  auto *d = static_cast<float *>(devAlloc(x.size() * 4));
  copy(d, x.data(), x.size() * 4);
  MemRef<2> xd = {d, d, 0, {4, 8}, {8, 1}};
  Results res;
  _mlir_ciface_collectives(&res, &xd);
  for (const MemRef<2> &m : res.r) {
    int64_t rows = m.sizes[0], cols = m.sizes[1];
    if (m.strides[1] != 1 || m.strides[0] != cols) {
      std::printf("result with a non-contiguous layout\n");
      return 1;
    }
    std::vector<float> h(size_t(rows * cols));
    copy(h.data(), m.aligned + m.offset, h.size() * 4);
    if (rank != 0)
      continue;
    std::printf("Unranked Memref base@ = %p rank = 2 offset = 0 sizes = "
                "[%lld, %lld] strides = [%lld, 1] data = \n[",
                static_cast<void *>(m.aligned), (long long)rows,
                (long long)cols, (long long)cols);
    for (int64_t i = 0; i < rows; ++i) {
      std::printf("[");
      for (int64_t j = 0; j < cols; ++j)
        std::printf("%s%g", j ? ", " : "", h[size_t(i * cols + j)]);
      std::printf("]%s", i + 1 < rows ? ",\n" : "]\n");
    }
  }
  spmdFinalize();
  return 0;
}

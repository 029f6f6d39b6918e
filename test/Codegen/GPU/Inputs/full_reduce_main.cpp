// Drives Inputs/full_reduce.mlir compiled for the GPU: the three reductions
// of fixed data against double-precision references.
#include "../../../lib/Support/StepDriver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

struct Results {
  MemRef<0> sum, max, sum1;
};
extern "C" void _mlir_ciface_full_reduce(Results *, MemRef<2> *, MemRef<1> *);

int main() {
  std::vector<float> x(300 * 70), v(5000);
  double sum = 0, max = -INFINITY, sum1 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = float(std::sin(0.37 * double(i)) + 0.25);
    sum += x[i];
    max = std::max(max, double(x[i]));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = float(std::cos(0.11 * double(i)));
    sum1 += v[i];
  }
  auto *xd = static_cast<float *>(devAlloc(x.size() * 4));
  auto *vd = static_cast<float *>(devAlloc(v.size() * 4));
  copy(xd, x.data(), x.size() * 4);
  copy(vd, v.data(), v.size() * 4);
  MemRef<2> xm = {xd, xd, 0, {300, 70}, {70, 1}};
  MemRef<1> vm = {vd, vd, 0, {5000}, {1}};
  Results r;
  _mlir_ciface_full_reduce(&r, &xm, &vm);
  float got[3];
  copy(&got[0], r.sum.aligned + r.sum.offset, 4);
  copy(&got[1], r.max.aligned + r.max.offset, 4);
  copy(&got[2], r.sum1.aligned + r.sum1.offset, 4);
  const char *names[3] = {"sum", "max", "sum1"};
  double want[3] = {sum, max, sum1};
  bool ok = true;
  for (int k = 0; k < 3; ++k) {
    double dev =
        std::fabs(got[k] - want[k]) / std::max(1.0, std::fabs(want[k]));
    bool good = dev < 1e-5;
    ok &= good;
    std::printf("%s %.6f (reference %.6f, relative deviation %.1e): %s\n",
                names[k], double(got[k]), want[k], dev, good ? "OK" : "WRONG");
  }
  return ok ? 0 : 1;
}

// Drives the example train step (examples/mlp_train_step.mlir: MLP, MSE,
// backward, SGD with momentum; parameters and momentum buffers are state)
// for STEPS steps from fixed data, built for the GPU (default) or the CPU
// path (-DSPMD_CPU). The CPU build writes the losses and the final state to
// a file; the GPU build (real or emulated, any number of ranks) checks its
// own against that file. Used by bench/gpu/check.sh and the emulator tests.
//
//   train_step_cpu OUT.bin        train_step_gpu REF.bin|-
#include "../../test/lib/Support/StepDriver.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef STEPS
#define STEPS 5
#endif

struct State {
  MemRef<2> w1, w2, m1, m2;
  MemRef<0> step;
};
extern "C" {
void _mlir_ciface_init(MemRef<2> *, MemRef<2> *);
void _mlir_ciface_train_step(MemRef<0> *, MemRef<2> *, MemRef<2> *);
void _mlir_ciface_dump(State *);
}

static MemRef<2> upload(const std::vector<float> &h, int64_t rows,
                        int64_t cols) {
  auto *d = static_cast<float *>(devAlloc(h.size() * sizeof(float)));
  copy(d, h.data(), h.size() * sizeof(float));
  return {d, d, 0, {rows, cols}, {cols, 1}};
}

static void download(std::vector<float> &out, const MemRef<2> &m) {
  size_t n = size_t(m.sizes[0] * m.sizes[1]);
  size_t at = out.size();
  out.resize(at + n);
  copy(out.data() + at, m.aligned + m.offset, n * sizeof(float));
}

static std::vector<float> values(int64_t rows, int64_t cols, double a, double b,
                                 double scale) {
  std::vector<float> v(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      v[size_t(i * cols + j)] =
          float(scale * std::sin(a * double(i) + b * double(j) + 0.3));
  return v;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  spmdInit();
  MemRef<2> w1 = upload(values(8, 6, 0.7, 1.3, 0.4), 8, 6);
  MemRef<2> w2 = upload(values(6, 8, 1.1, 0.5, 0.4), 6, 8);
  MemRef<2> x = upload(values(8, 6, 0.9, 0.2, 1.0), 8, 6);
  MemRef<2> y = upload(values(8, 6, 0.3, 0.8, 1.0), 8, 6);
  _mlir_ciface_init(&w1, &w2);
  std::vector<float> out;
  for (int s = 0; s < STEPS; ++s) {
    MemRef<0> loss;
    _mlir_ciface_train_step(&loss, &x, &y);
    float l = 0;
    copy(&l, loss.aligned + loss.offset, sizeof(float));
    devFree(loss.allocated); // the caller owns returned buffers
    out.push_back(l);
  }
  State st;
  _mlir_ciface_dump(&st);
  download(out, st.w1);
  download(out, st.w2);
  download(out, st.m1);
  download(out, st.m2);
  float step = 0;
  copy(&step, st.step.aligned + st.step.offset, sizeof(float));
  out.push_back(step);
  int rank = spmdWorldRank(), size = spmdWorldSize();

#ifdef SPMD_CPU
  FILE *f = std::fopen(argv[1], "wb");
  if (!f ||
      std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) {
    std::perror(argv[1]);
    return 1;
  }
  std::fclose(f);
  std::printf("cpu: losses %.6f .. %.6f, %zu values written to %s\n", out[0],
              out[STEPS - 1], out.size(), argv[1]);
  return 0;
#else
  if (std::strcmp(argv[1], "-") == 0) { // no reference: just run
    std::printf("train step: rank %d of %d, losses %.6f .. %.6f\n", rank, size,
                out[0], out[STEPS - 1]);
    spmdFinalize();
    return 0;
  }
  std::vector<float> ref(out.size());
  FILE *f = std::fopen(argv[1], "rb");
  if (!f ||
      std::fread(ref.data(), sizeof(float), ref.size(), f) != ref.size()) {
    std::perror(argv[1]);
    return 1;
  }
  std::fclose(f);
  double worst = 0;
  for (size_t j = 0; j < out.size(); ++j)
    worst = std::fmax(worst, std::fabs(double(out[j]) - double(ref[j])) /
                                 std::fmax(1.0, std::fabs(double(ref[j]))));
  bool ok = worst < 1e-5 && !std::isnan(worst);
  std::printf("train step: rank %d of %d, losses %.6f .. %.6f, %zu values "
              "(losses, parameters, momentum, step) vs the CPU path, max "
              "relative deviation %.1e: %s\n",
              rank, size, out[0], out[STEPS - 1], out.size(), worst,
              ok ? "OK" : "WRONG");
  spmdFinalize();
  return ok ? 0 : 1;
#endif
}

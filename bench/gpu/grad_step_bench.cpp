// The bench/gpu driver of the gradient step (grad_step.mlir.in), built for
// the GPU (default) or the CPU path (-DSPMD_CPU). Sizes are the macros B, K,
// N. The CPU build writes the step's outputs and a double-precision
// reference of them to a file; the GPU build checks its outputs against the
// reference (an f32 loss summed over B x N terms in another order differs
// by more than the 1e-4 the check allows from the CPU path's own sequential
// sum at large sizes; both deviations are printed), then times the step
// (mean of REPEATS runs after one warm-up).
//
//   grad_step_cpu OUT.bin        grad_step_gpu REF.bin
#include "../../test/lib/Support/StepDriver.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef REPEATS
#define REPEATS 20
#endif

struct Results {
  MemRef<0> loss;
  MemRef<2> grad;
};
extern "C" void _mlir_ciface_grad_step(Results *, MemRef<2> *, MemRef<2> *,
                                       MemRef<2> *);

static MemRef<2> upload(const std::vector<float> &h, int64_t rows,
                        int64_t cols) {
  auto *d = static_cast<float *>(devAlloc(h.size() * sizeof(float)));
  copy(d, h.data(), h.size() * sizeof(float));
  return {d, d, 0, {rows, cols}, {cols, 1}};
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  spmdInit();
  auto X = [](int64_t i, int64_t k) {
    return float(std::sin(0.3 * double(i % 97) + 0.7 * double(k % 89)));
  };
  auto W = [](int64_t k, int64_t n) {
    return float(0.01 * double((k * 7 + n * 3) % 23 - 11));
  };
  auto Y = [](int64_t i, int64_t n) {
    return float(std::cos(0.2 * double(i % 83) - 0.5 * double(n % 79)));
  };
  std::vector<float> x(size_t(B) * K), w(size_t(K) * N), y(size_t(B) * N);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t k = 0; k < K; ++k)
      x[i * K + k] = X(i, k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      w[k * N + n] = W(k, n);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t n = 0; n < N; ++n)
      y[i * N + n] = Y(i, n);
  MemRef<2> xd = upload(x, B, K), wd = upload(w, K, N), yd = upload(y, B, N);

  Results r;
  _mlir_ciface_grad_step(&r, &xd, &wd, &yd);
  std::vector<float> out(1 + size_t(K) * N);
  copy(out.data(), r.loss.aligned + r.loss.offset, sizeof(float));
  copy(out.data() + 1, r.grad.aligned + r.grad.offset,
       size_t(K) * N * sizeof(float));

#ifdef SPMD_CPU
  // The reference in double: d = x w - y, loss = sum d^2, grad = x^T d.
  std::vector<double> exact(out.size(), 0.0), d(size_t(N));
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t n = 0; n < N; ++n)
      d[n] = -double(y[i * N + n]);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        d[n] += double(x[i * K + k]) * double(w[k * N + n]);
    for (int64_t n = 0; n < N; ++n)
      exact[0] += d[n] * d[n];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        exact[1 + k * N + n] += double(x[i * K + k]) * d[n];
  }
  FILE *f = std::fopen(argv[1], "wb");
  if (!f ||
      std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size() ||
      std::fwrite(exact.data(), sizeof(double), exact.size(), f) !=
          exact.size()) {
    std::perror(argv[1]);
    return 1;
  }
  std::fclose(f);
  std::printf("cpu: loss %.6f written to %s\n", out[0], argv[1]);
  return 0;
#else
  std::vector<float> ref(out.size());
  std::vector<double> exact(out.size());
  FILE *f = std::fopen(argv[1], "rb");
  if (!f ||
      std::fread(ref.data(), sizeof(float), ref.size(), f) != ref.size() ||
      std::fread(exact.data(), sizeof(double), exact.size(), f) !=
          exact.size()) {
    std::perror(argv[1]);
    return 1;
  }
  std::fclose(f);
  auto deviation = [&](auto value, auto reference) {
    double worst = 0;
    for (size_t j = 0; j < out.size(); ++j)
      worst =
          std::fmax(worst, std::fabs(double(value(j)) - double(reference(j))) /
                               std::fmax(1.0, std::fabs(double(reference(j)))));
    return worst;
  };
  double worst = deviation([&](size_t j) { return out[j]; },
                           [&](size_t j) { return exact[j]; });
  double vsCpu = deviation([&](size_t j) { return out[j]; },
                           [&](size_t j) { return ref[j]; });
  double cpuExact = deviation([&](size_t j) { return ref[j]; },
                              [&](size_t j) { return exact[j]; });
  bool ok = worst < 1e-4 && !std::isnan(worst);
  std::printf("check: gpu vs double-precision reference, %zu values, max "
              "relative deviation %.1e (gpu vs cpu path %.1e, cpu path vs "
              "reference %.1e): %s\n",
              out.size(), worst, vsCpu, cpuExact, ok ? "OK" : "WRONG");
  for (int i = 0; i < 2; ++i) // warm-up (module loads, cuBLAS handles)
    _mlir_ciface_grad_step(&r, &xd, &wd, &yd);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < REPEATS; ++i) {
    _mlir_ciface_grad_step(&r, &xd, &wd, &yd);
    devFree(r.loss.allocated);
    devFree(r.grad.allocated);
  }
  mgpuStreamSynchronize(nullptr);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              REPEATS;
  std::printf("time: spmd %.3f ms per step (%d x %d x %d, mean of %d)\n", ms, B,
              K, N, REPEATS);
  spmdFinalize();
  return ok ? 0 : 1;
#endif
}

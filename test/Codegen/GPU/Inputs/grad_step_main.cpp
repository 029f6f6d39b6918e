// Drives the GPU-compiled @grad_step (Inputs/grad_step.mlir) on every rank:
// global data from a fixed formula, this rank's rows copied to the device,
// the step run, its loss and weight gradient compared with a double
// precision reference over the global batch. Prints one line per rank.
#include "../../../lib/Support/StepDriver.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

struct Results {
  MemRef<0> loss;
  MemRef<2> grad;
};

extern "C" void _mlir_ciface_grad_step(Results *, MemRef<2> *, MemRef<2> *,
                                       MemRef<2> *);

constexpr int B = 16, K = 8, N = 4;

static MemRef<2> toDevice(const std::vector<float> &host, int rows, int cols) {
  auto *d = static_cast<float *>(devAlloc(host.size() * sizeof(float)));
  copy(d, host.data(), host.size() * sizeof(float));
  return {d, d, 0, {rows, cols}, {cols, 1}};
}

int main() {
  spmdInit();
  int rank = spmdWorldRank(), size = spmdWorldSize();
  int rows = B / size;
  auto X = [](int i, int k) { return std::sin(0.3 * i + 0.7 * k); };
  auto W = [](int k, int n) { return 0.1 * (k - n) + 0.05; };
  auto Y = [](int i, int n) { return std::cos(0.2 * i - 0.5 * n); };
  std::vector<float> x(rows * K), w(K * N), y(rows * N);
  for (int i = 0; i < rows; ++i)
    for (int k = 0; k < K; ++k)
      x[i * K + k] = float(X(rank * rows + i, k));
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      w[k * N + n] = float(W(k, n));
  for (int i = 0; i < rows; ++i)
    for (int n = 0; n < N; ++n)
      y[i * N + n] = float(Y(rank * rows + i, n));
  MemRef<2> xd = toDevice(x, rows, K), wd = toDevice(w, K, N),
            yd = toDevice(y, rows, N);
  Results r;
  _mlir_ciface_grad_step(&r, &xd, &wd, &yd);

  float loss = 0;
  std::vector<float> grad(K * N);
  mgpuMemcpy(&loss, r.loss.aligned + r.loss.offset, sizeof(float), nullptr);
  mgpuMemcpy(grad.data(), r.grad.aligned + r.grad.offset,
             grad.size() * sizeof(float), nullptr);
  mgpuStreamSynchronize(nullptr);

  // The single-device reference over the global batch, in double.
  double refLoss = 0, worst = 0;
  std::vector<double> refGrad(K * N, 0.0);
  for (int i = 0; i < B; ++i)
    for (int n = 0; n < N; ++n) {
      double p = 0;
      for (int k = 0; k < K; ++k)
        p += X(i, k) * double(float(W(k, n)));
      double d = p - double(float(Y(i, n)));
      refLoss += d * d;
      for (int k = 0; k < K; ++k)
        refGrad[k * N + n] += double(float(X(i, k))) * d;
    }
  worst = std::fabs(loss - refLoss) / std::fmax(1.0, std::fabs(refLoss));
  for (int j = 0; j < K * N; ++j)
    worst = std::fmax(worst, std::fabs(grad[j] - refGrad[j]) /
                                 std::fmax(1.0, std::fabs(refGrad[j])));
  std::printf("rank %d of %d: loss %.6f (reference %.6f), max relative "
              "deviation %.1e: %s\n",
              rank, size, loss, refLoss, worst, worst < 1e-5 ? "OK" : "WRONG");
  spmdFinalize();
  return worst < 1e-5 ? 0 : 1;
}

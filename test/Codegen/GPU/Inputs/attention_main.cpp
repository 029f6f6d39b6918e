// Drives Inputs/attention.mlir, compiled for the GPU (spmd.attention
// decomposed into linalg kernels) or, with -DSPMD_CPU, for the CPU (flash
// kernels): output and gradients of both functions against a
// double-precision reference of the same math.
#include "../../../lib/Support/StepDriver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int B = 2, H = 3, L = 70, E = 16, EV = 8;

struct Results {
  MemRef<4> out, dq, dk, dv;
};

std::vector<float> data(size_t n, double seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(std::sin(seed * double(i + 1)) * 1.5);
  return v;
}

/// out, dq, dk, dv of attention with `S` keys, `mask` (B x S, added) or
/// causal, in double.
std::vector<std::vector<double>>
reference(int S, const std::vector<float> &q, const std::vector<float> &k,
          const std::vector<float> &v, const std::vector<float> *mask,
          const std::vector<float> &g, bool causal) {
  std::vector<double> out(B * H * L * EV), dq(B * H * L * E),
      dk(B * H * S * E, 0.0), dv(B * H * S * EV, 0.0);
  std::vector<double> p(S), dp(S);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      int bh = b * H + h;
      for (int l = 0; l < L; ++l) {
        double mx = -INFINITY;
        for (int s = 0; s < S; ++s) {
          double x = 0;
          for (int e = 0; e < E; ++e)
            x += double(q[(bh * L + l) * E + e]) * k[(bh * S + s) * E + e];
          x *= 0.25;
          if (mask)
            x += (*mask)[b * S + s];
          if (causal && s > l)
            x = -INFINITY;
          p[s] = x;
          mx = std::max(mx, x);
        }
        double sum = 0;
        for (int s = 0; s < S; ++s)
          sum += p[s] = std::exp(p[s] - mx);
        for (int s = 0; s < S; ++s)
          p[s] /= sum;
        for (int e = 0; e < EV; ++e) {
          double o = 0;
          for (int s = 0; s < S; ++s)
            o += p[s] * v[(bh * S + s) * EV + e];
          out[(bh * L + l) * EV + e] = o;
        }
        double delta = 0;
        for (int e = 0; e < EV; ++e)
          delta += g[(bh * L + l) * EV + e] * out[(bh * L + l) * EV + e];
        for (int s = 0; s < S; ++s) {
          double d = 0;
          for (int e = 0; e < EV; ++e) {
            d += double(g[(bh * L + l) * EV + e]) * v[(bh * S + s) * EV + e];
            dv[(bh * S + s) * EV + e] += p[s] * g[(bh * L + l) * EV + e];
          }
          dp[s] = p[s] * (d - delta) * 0.25;
        }
        for (int e = 0; e < E; ++e) {
          double d = 0;
          for (int s = 0; s < S; ++s) {
            d += dp[s] * k[(bh * S + s) * E + e];
            dk[(bh * S + s) * E + e] += dp[s] * q[(bh * L + l) * E + e];
          }
          dq[(bh * L + l) * E + e] = d;
        }
      }
    }
  return {out, dq, dk, dv};
}

float *device(const std::vector<float> &v) {
  auto *d = static_cast<float *>(devAlloc(v.size() * 4));
  copy(d, v.data(), v.size() * 4);
  return d;
}

MemRef<4> memref(float *d, int64_t a, int64_t b, int64_t c, int64_t e) {
  return {d, d, 0, {a, b, c, e}, {b * c * e, c * e, e, 1}};
}

bool compare(const char *name, const MemRef<4> &got,
             const std::vector<double> &want) {
  std::vector<float> host(want.size());
  copy(host.data(), got.aligned + got.offset, host.size() * 4);
  double scale = 0, dev = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i)
    dev = std::max(dev, std::fabs(host[i] - want[i]) / scale);
  bool ok = dev < 1e-5;
  std::printf("%s: relative deviation %.1e: %s\n", name, dev,
              ok ? "OK" : "WRONG");
  return ok;
}

} // namespace

extern "C" void _mlir_ciface_masked(Results *, MemRef<4> *, MemRef<4> *,
                                    MemRef<4> *, MemRef<4> *, MemRef<4> *);
extern "C" void _mlir_ciface_causal(Results *, MemRef<4> *, MemRef<4> *,
                                    MemRef<4> *, MemRef<4> *);

int main() {
  bool ok = true;
  const char *names[4] = {"out", "dq", "dk", "dv"};
  {
    constexpr int S = 90;
    auto q = data(B * H * L * E, 0.31), k = data(B * H * S * E, 0.17),
         v = data(B * H * S * EV, 0.23), g = data(B * H * L * EV, 0.41);
    std::vector<float> mask(B * S, 0.0f);
    for (int s = 60; s < S; ++s)
      mask[1 * S + s] = -INFINITY; // element 1 has 60 keys
    auto want = reference(S, q, k, v, &mask, g, false);
    MemRef<4> qm = memref(device(q), B, H, L, E),
              km = memref(device(k), B, H, S, E),
              vm = memref(device(v), B, H, S, EV),
              mm = memref(device(mask), B, 1, 1, S),
              gm = memref(device(g), B, H, L, EV);
    Results r;
    _mlir_ciface_masked(&r, &qm, &km, &vm, &mm, &gm);
    MemRef<4> got[4] = {r.out, r.dq, r.dk, r.dv};
    for (int i = 0; i < 4; ++i) {
      std::string name = std::string("masked ") + names[i];
      ok &= compare(name.c_str(), got[i], want[i]);
    }
  }
  {
    constexpr int S = L;
    auto q = data(B * H * L * E, 0.13), k = data(B * H * S * E, 0.29),
         v = data(B * H * S * EV, 0.37), g = data(B * H * L * EV, 0.19);
    auto want = reference(S, q, k, v, nullptr, g, true);
    MemRef<4> qm = memref(device(q), B, H, L, E),
              km = memref(device(k), B, H, S, E),
              vm = memref(device(v), B, H, S, EV),
              gm = memref(device(g), B, H, L, EV);
    Results r;
    _mlir_ciface_causal(&r, &qm, &km, &vm, &gm);
    MemRef<4> got[4] = {r.out, r.dq, r.dk, r.dv};
    for (int i = 0; i < 4; ++i) {
      std::string name = std::string("causal ") + names[i];
      ok &= compare(name.c_str(), got[i], want[i]);
    }
  }
  return ok ? 0 : 1;
}

//===- Attention.cpp - flash-attention kernels for compiled CPU programs --===//
//
// spmd-lower-attention lowers spmd.attention / spmd.attention_grad to these.
// Per batch and head: query rows in blocks of kRows against key blocks of
// kCols, the scores of one block pair computed by spmdSgemm, an online
// softmax (running row maximum and sum, the partial output rescaled when
// the maximum grows) and the block's probabilities times its values
// accumulated by spmdSgemm. The backward (FlashAttention-2's) recomputes
// each block's probabilities from the saved log-sum-exp and accumulates
// dQ, dK and dV block by block. Memory besides inputs and outputs: a few
// blocks, and one float per query row; never an L x S matrix.
//
// Query B x H x L x E, key B x H x S x E, value B x H x S x Ev, output
// B x H x L x Ev (and in the backward their gradients) are addressed with
// element strides along B, H and the rows, each row contiguous: a
// (B, L, H, E) buffer seen through a transpose, or a column block of a
// packed projection, is read and written where it is, without a copy. The
// log-sum-exp is contiguous B x H x L; the mask is added to the scores,
// addressed with element strides (maskB, maskH, maskL) that are 0 where it
// broadcasts, its last dimension S contiguous.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Runtime/SpmdRuntime.h"
#include "Trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
/// Query rows and key columns per block: a 64 x 128 score block is 32 KiB,
/// with the query and key blocks it stays in L2.
constexpr int64_t kRows = 64, kCols = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// exp(x) for x <= 0 in a form compilers vectorize (Cephes' expf: range
/// reduction by ln 2 in two parts, a degree-5 polynomial, the exponent
/// put in by bits): within 2 ulp of expf on [-87, 0]; 0 below (and for
/// -inf). The inputs are scores minus their row maximum, never positive.
/// Branch-free, so that -O3 vectorizes it for the widest unit the CPU has.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SPMD_VECTOR_CLONES                                                     \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SPMD_VECTOR_CLONES
#endif

SPMD_VECTOR_CLONES
void expShifted(float *__restrict p, int64_t n, float shift) {
  for (int64_t i = 0; i < n; ++i) {
    float x = p[i] - shift;
    float clamped = x < -87.0f ? -87.0f : x;
    // floor(x log2(e) + 1/2) by truncating a positive number (what SSE2
    // vectorizes, unlike floor).
    int32_t n = static_cast<int32_t>(clamped * 1.44269504088896341f + 128.5f);
    float fx = static_cast<float>(n - 128);
    float r = clamped - fx * 0.693359375f;
    r = r - fx * -2.12194440e-4f;
    float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    int32_t bits = (n - 128 + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    p[i] = x < -87.0f ? 0.0f : y * scale;
  }
}

/// Sixteen partial results, combined at the end: a reduction the compiler
/// vectorizes without reassociating on its own.
constexpr int kLanes = 16;

SPMD_VECTOR_CLONES
float maxOf(const float *__restrict p, int64_t n) {
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, kNegInf);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = lanes[l] < p[i + l] ? p[i + l] : lanes[l];
  float m = kNegInf;
  for (; i < n; ++i)
    m = std::max(m, p[i]);
  for (float l : lanes)
    m = std::max(m, l);
  return m;
}

SPMD_VECTOR_CLONES
float sumOf(const float *__restrict p, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += p[i + l];
  float s = 0.0f;
  for (; i < n; ++i)
    s += p[i];
  for (float l : lanes)
    s += l;
  return s;
}

SPMD_VECTOR_CLONES
float dotOf(const float *__restrict a, const float *__restrict b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += a[i + l] * b[i + l];
  float s = 0.0f;
  for (; i < n; ++i)
    s += a[i] * b[i];
  for (float l : lanes)
    s += l;
  return s;
}

/// Scales a block of raw scores and adds the mask (or the causal mask) in
/// place; returns nothing, masked positions become -inf.
void prepareScores(float *s, int64_t rows, int64_t cols, int64_t row0,
                   int64_t col0, float scale, const float *mask, int64_t maskL,
                   bool causal) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      row[c] *= scale;
    if (mask) {
      const float *m = mask + (row0 + r) * maskL + col0;
      for (int64_t c = 0; c < cols; ++c)
        row[c] += m[c];
    }
    if (causal)
      for (int64_t c = std::max<int64_t>(0, row0 + r + 1 - col0); c < cols; ++c)
        row[c] = kNegInf;
  }
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc, float alpha = 1.0f) {
  spmdSgemm(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans,
            int32_t(m), int32_t(n), int32_t(k), alpha,
            reinterpret_cast<int64_t>(a), int32_t(lda),
            reinterpret_cast<int64_t>(b), int32_t(ldb), beta,
            reinterpret_cast<int64_t>(c), int32_t(ldc));
}

/// A trace event's arguments: the sizes.
std::string shapeArgs(int64_t B, int64_t H, int64_t L, int64_t S, int64_t E,
                      int64_t Ev, int64_t causal) {
  if (!spmd::trace::on())
    return {};
  char text[160];
  std::snprintf(text, sizeof text,
                "\"B\": %lld, \"H\": %lld, \"L\": %lld, \"S\": %lld, "
                "\"E\": %lld, \"Ev\": %lld, \"causal\": %lld",
                (long long)B, (long long)H, (long long)L, (long long)S,
                (long long)E, (long long)Ev, (long long)causal);
  return text;
}

/// Key positions a block of query rows [row0, row0 + rows) attends to:
/// [0, end).
int64_t keyEnd(int64_t row0, int64_t rows, int64_t S, bool causal) {
  return causal ? std::min(S, row0 + rows) : S;
}

/// A tensor's element strides along batch, head and row (SpmdRuntime.h).
struct Strides {
  int64_t batch, head, row;
  template <typename T> T *at(T *base, int64_t b, int64_t h) const {
    return base + b * batch + h * head;
  }
};

/// Zeros rows x n elements of a gradient, each batch and head.
void zero(float *base, const Strides &st, int64_t B, int64_t H, int64_t rows,
          int64_t n) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::fill_n(st.at(base, b, h) + r * st.row, n, 0.0f);
}

} // namespace

extern "C" {

void spmdAttentionForward(int64_t queryAddr, int64_t keyAddr, int64_t valueAddr,
                          int64_t maskAddr, int64_t outAddr, int64_t lseAddr,
                          int64_t B, int64_t H, int64_t L, int64_t S, int64_t E,
                          int64_t Ev, int64_t maskB, int64_t maskH,
                          int64_t maskL, double scale, int64_t causal,
                          int64_t qB, int64_t qH, int64_t qL, int64_t kB,
                          int64_t kH, int64_t kL, int64_t vB, int64_t vH,
                          int64_t vL, int64_t oB, int64_t oH, int64_t oL) {
  Strides qs{qB, qH, qL}, ks{kB, kH, kL}, vs{vB, vH, vL}, os{oB, oH, oL};
  auto *query = reinterpret_cast<const float *>(queryAddr);
  auto *key = reinterpret_cast<const float *>(keyAddr);
  auto *value = reinterpret_cast<const float *>(valueAddr);
  auto *mask = reinterpret_cast<const float *>(maskAddr);
  auto *out = reinterpret_cast<float *>(outAddr);
  auto *lse = reinterpret_cast<float *>(lseAddr);
  spmd::trace::Span span("attention forward", "attention",
                         shapeArgs(B, H, L, S, E, Ev, causal));
  std::vector<float> scores(kRows * kCols), acc(kRows * Ev), rowMax(kRows),
      rowSum(kRows);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    int64_t b = bh / H, h = bh % H;
    const float *q = qs.at(query, b, h), *k = ks.at(key, b, h),
                *v = vs.at(value, b, h);
    const float *m = mask ? mask + b * maskB + h * maskH : nullptr;
    for (int64_t row0 = 0; row0 < L; row0 += kRows) {
      int64_t rows = std::min(kRows, L - row0);
      std::fill_n(rowMax.begin(), rows, kNegInf);
      std::fill_n(rowSum.begin(), rows, 0.0f);
      std::fill_n(acc.begin(), rows * Ev, 0.0f);
      int64_t end = keyEnd(row0, rows, S, causal);
      for (int64_t col0 = 0; col0 < end; col0 += kCols) {
        int64_t cols = std::min(kCols, end - col0);
        float *s = scores.data();
        gemm(false, true, rows, cols, E, q + row0 * qL, qL, k + col0 * kL, kL,
             0.0f, s, cols);
        prepareScores(s, rows, cols, row0, col0, float(scale), m, maskL,
                      causal);
        for (int64_t r = 0; r < rows; ++r) {
          float *row = s + r * cols;
          float blockMax = maxOf(row, cols);
          float newMax = std::max(rowMax[r], blockMax);
          if (newMax == kNegInf) { // nothing attended yet
            std::fill_n(row, cols, 0.0f);
            continue;
          }
          expShifted(row, cols, newMax);
          float sum = sumOf(row, cols);
          if (rowMax[r] != newMax) {
            float rescale =
                rowMax[r] == kNegInf ? 0.0f : std::exp(rowMax[r] - newMax);
            rowSum[r] *= rescale;
            for (int64_t e = 0; e < Ev; ++e)
              acc[r * Ev + e] *= rescale;
          }
          rowSum[r] += sum;
          rowMax[r] = newMax;
        }
        gemm(false, false, rows, Ev, cols, s, cols, v + col0 * vL, vL, 1.0f,
             acc.data(), Ev);
      }
      for (int64_t r = 0; r < rows; ++r) {
        float *o = os.at(out, b, h) + (row0 + r) * oL;
        float inverse = rowSum[r] > 0.0f ? 1.0f / rowSum[r] : 0.0f;
        for (int64_t e = 0; e < Ev; ++e)
          o[e] = acc[r * Ev + e] * inverse;
        lse[bh * L + row0 + r] =
            rowSum[r] > 0.0f ? rowMax[r] + std::log(rowSum[r]) : kNegInf;
      }
    }
  }
}

void spmdAttentionBackward(
    int64_t gradAddr, int64_t queryAddr, int64_t keyAddr, int64_t valueAddr,
    int64_t outAddr, int64_t lseAddr, int64_t maskAddr, int64_t gradQueryAddr,
    int64_t gradKeyAddr, int64_t gradValueAddr, int64_t B, int64_t H, int64_t L,
    int64_t S, int64_t E, int64_t Ev, int64_t maskB, int64_t maskH,
    int64_t maskL, double scale, int64_t causal, int64_t gB, int64_t gH,
    int64_t gL, int64_t qB, int64_t qH, int64_t qL, int64_t kB, int64_t kH,
    int64_t kL, int64_t vB, int64_t vH, int64_t vL, int64_t oB, int64_t oH,
    int64_t oL, int64_t dqB, int64_t dqH, int64_t dqL, int64_t dkB, int64_t dkH,
    int64_t dkL, int64_t dvB, int64_t dvH, int64_t dvL) {
  Strides gs{gB, gH, gL}, qs{qB, qH, qL}, ks{kB, kH, kL}, vs{vB, vH, vL},
      os{oB, oH, oL}, dqs{dqB, dqH, dqL}, dks{dkB, dkH, dkL},
      dvs{dvB, dvH, dvL};
  auto *grad = reinterpret_cast<const float *>(gradAddr);
  auto *query = reinterpret_cast<const float *>(queryAddr);
  auto *key = reinterpret_cast<const float *>(keyAddr);
  auto *value = reinterpret_cast<const float *>(valueAddr);
  auto *out = reinterpret_cast<const float *>(outAddr);
  auto *lse = reinterpret_cast<const float *>(lseAddr);
  auto *mask = reinterpret_cast<const float *>(maskAddr);
  auto *gradQuery = reinterpret_cast<float *>(gradQueryAddr);
  auto *gradKey = reinterpret_cast<float *>(gradKeyAddr);
  auto *gradValue = reinterpret_cast<float *>(gradValueAddr);
  spmd::trace::Span span("attention backward", "attention",
                         shapeArgs(B, H, L, S, E, Ev, causal));
  zero(gradQuery, dqs, B, H, L, E);
  zero(gradKey, dks, B, H, S, E);
  zero(gradValue, dvs, B, H, S, Ev);
  std::vector<float> probs(kRows * kCols), dprobs(kRows * kCols), delta(L);
  float fscale = float(scale);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    int64_t b = bh / H, h = bh % H;
    const float *q = qs.at(query, b, h), *k = ks.at(key, b, h),
                *v = vs.at(value, b, h), *g = gs.at(grad, b, h),
                *o = os.at(out, b, h), *rowLse = lse + bh * L;
    const float *m = mask ? mask + b * maskB + h * maskH : nullptr;
    float *dq = dqs.at(gradQuery, b, h), *dk = dks.at(gradKey, b, h),
          *dv = dvs.at(gradValue, b, h);
    // D = rowsum(dO * O).
    for (int64_t r = 0; r < L; ++r)
      delta[r] = dotOf(g + r * gL, o + r * oL, Ev);
    for (int64_t col0 = 0; col0 < S; col0 += kCols) {
      int64_t cols = std::min(kCols, S - col0);
      // Causal: only rows at or after the block's first key attend to it.
      int64_t first = causal ? col0 / kRows * kRows : 0;
      for (int64_t row0 = first; row0 < L; row0 += kRows) {
        int64_t rows = std::min(kRows, L - row0);
        int64_t end = keyEnd(row0, rows, S, causal);
        if (col0 >= end)
          continue;
        float *p = probs.data(), *dp = dprobs.data();
        gemm(false, true, rows, cols, E, q + row0 * qL, qL, k + col0 * kL, kL,
             0.0f, p, cols);
        prepareScores(p, rows, cols, row0, col0, fscale, m, maskL, causal);
        for (int64_t r = 0; r < rows; ++r) {
          float *row = p + r * cols;
          float rowMax = rowLse[row0 + r];
          if (rowMax == kNegInf)
            std::fill_n(row, cols, 0.0f);
          else
            expShifted(row, cols, rowMax);
        }
        // dV += P^T dO; dP = dO V^T.
        gemm(true, false, cols, Ev, rows, p, cols, g + row0 * gL, gL, 1.0f,
             dv + col0 * dvL, dvL);
        gemm(false, true, rows, cols, Ev, g + row0 * gL, gL, v + col0 * vL, vL,
             0.0f, dp, cols);
        // dS = P * (dP - D), in dp.
        for (int64_t r = 0; r < rows; ++r) {
          float d = delta[row0 + r];
          float *ds = dp + r * cols;
          const float *pr = p + r * cols;
          for (int64_t c = 0; c < cols; ++c)
            ds[c] = pr[c] * (ds[c] - d);
        }
        // dQ += scale dS K; dK += scale dS^T Q.
        gemm(false, false, rows, E, cols, dp, cols, k + col0 * kL, kL, 1.0f,
             dq + row0 * dqL, dqL, fscale);
        gemm(true, false, cols, E, rows, dp, cols, q + row0 * qL, qL, 1.0f,
             dk + col0 * dkL, dkL, fscale);
      }
    }
  }
}

} // extern "C"

//===- Sgemm.cpp - the sgemm compiled CPU programs call -------------------===//
//
// spmd-lower-to-cpu turns f32 matmuls into calls of `spmdSgemm` (cblas_sgemm's
// arguments, the matrices by address). By default it is OpenBLAS's cblas_sgemm.
// A process that already has a faster sgemm can hand it over with
// `spmdSetSgemm`: the Python bridge passes the Fortran `sgemm_` of the BLAS
// PyTorch itself runs (MKL in torch's x86 wheels), so a compiled step
// multiplies matrices with the same library, and the same threads setting, as
// the eager step it replaces; small products stay on OpenBLAS, which is faster
// on them here.
//
//===----------------------------------------------------------------------===//

#include "Progress.h"
#include "Spmd/Runtime/SpmdRuntime.h"
#include "Trace.h"

#include <atomic>

extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n,
                            int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c,
                            int ldc);

namespace {

using FortranSgemm = void (*)(const char *, const char *, const int *,
                              const int *, const int *, const float *,
                              const float *, const int *, const float *,
                              const int *, const float *, float *, const int *);

std::atomic<FortranSgemm> provider{nullptr};

constexpr int kRowMajor = 101, kTrans = 112;

/// Below this many multiply-adds OpenBLAS stays: on this project's Xeon
/// torch's MKL is 8-50% faster from about 512 x 256 x 256 up, but 15%
/// slower on attention's per-head 128 x 128 x 32 products.
constexpr int64_t kProviderMinWork = int64_t(1) << 20;

void sgemmUntraced(int32_t order, int32_t transA, int32_t transB, int32_t m,
                   int32_t n, int32_t k, float alpha, const float *a,
                   int32_t lda, const float *b, int32_t ldb, float beta,
                   float *c, int32_t ldc) {
  FortranSgemm sgemm = provider.load(std::memory_order_relaxed);
  if (!sgemm || int64_t(m) * n * k < kProviderMinWork) {
    cblas_sgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
    return;
  }
  char ta = transA == kTrans ? 'T' : 'N', tb = transB == kTrans ? 'T' : 'N';
  if (order == kRowMajor) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
    // the same buffers, operands swapped.
    sgemm(&tb, &ta, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
    return;
  }
  sgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

} // namespace

extern "C" {

void spmdSetSgemm(int64_t fortranSgemm) {
  provider.store(reinterpret_cast<FortranSgemm>(fortranSgemm));
}

void spmdSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
               int32_t n, int32_t k, float alpha, int64_t aAddress, int32_t lda,
               int64_t bAddress, int32_t ldb, float beta, int64_t cAddress,
               int32_t ldc) {
  const auto *a = reinterpret_cast<const float *>(aAddress);
  const auto *b = reinterpret_cast<const float *>(bAddress);
  auto *c = reinterpret_cast<float *>(cAddress);
  spmd::runtime::progressCollectives();
  if (!spmd::trace::on()) {
    sgemmUntraced(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta,
                  c, ldc);
    return;
  }
  int64_t start = spmd::trace::now();
  sgemmUntraced(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
  spmd::trace::record("sgemm", "blas", start, spmd::trace::now(),
                      "\"m\": " + std::to_string(m) + ", \"n\": " +
                          std::to_string(n) + ", \"k\": " + std::to_string(k),
                      spmd::trace::kComputeThread);
}

} // extern "C"

//===- Cublas.cpp - the cuBLAS functions, emulated on OpenBLAS ------------===//
//
// The cuBLAS API libSpmdGpuRuntime uses, as libcublas.so.13 (see
// Emulator.h; its symbols carry cuBLAS's version node, libcublas.so.13):
// handles with a stream, and column-major sgemm run on that stream by
// OpenBLAS. Operands must be device memory, as on a GPU.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <cublas_v2.h>

#include <string>

extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n,
                            int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c,
                            int ldc);

struct cublasContext {
  CUstream stream = nullptr;
};

namespace {

constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;

void requireDevice(const float *p, int rows, int cols, int ld,
                   const char *what) {
  // Column-major: `cols` columns of `ld` floats, the last one `rows` long.
  size_t bytes = cols ? (size_t(cols - 1) * ld + rows) * sizeof(float) : 0;
  if (bytes && !spmd::emu::isDeviceMemory(p, bytes))
    spmd::emu::fail(std::string("cublasSgemm: ") + what +
                    " is not (entirely) device memory");
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                         : "CUBLAS_STATUS_INVALID_VALUE";
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transA,
                              cublasOperation_t transB, int m, int n, int k,
                              const float *alpha, const float *a, int lda,
                              const float *b, int ldb, const float *beta,
                              float *c, int ldc) {
  spmd::emu::count(spmd::emu::Count::Gemm);
  if (m < 0 || n < 0 || k < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  bool ta = transA != CUBLAS_OP_N, tb = transB != CUBLAS_OP_N;
  // op(A) is m x k, op(B) k x n, C m x n; A is stored (ta ? k x m : m x k).
  if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m || lda < 1 ||
      ldb < 1 || ldc < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  requireDevice(a, ta ? k : m, ta ? m : k, lda, "A");
  requireDevice(b, tb ? n : k, tb ? k : n, ldb, "B");
  requireDevice(c, m, n, ldc, "C");
  float al = *alpha, be = *beta; // host pointer mode: read at the call
  spmd::emu::enqueue(handle->stream, [=] {
    cblas_sgemm(kColMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n,
                k, al, a, lda, b, ldb, be, c, ldc);
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"

//===- GpuBlas.cpp - the compiled programs' matmuls on cuBLAS -------------===//
//
// spmdGpuSgemm and its strided-batched and bf16 forms (SpmdGpuRuntime.h):
// row-major operands on cuBLAS (column-major: the operands swap), ordered
// on the program stream inside a program, complete on return outside.
//
//===----------------------------------------------------------------------===//

#include "../JobChecks.h"
#include "../MeshGroup.h"
#include "../Trace.h"
#include "GpuCommon.h"
#include "GpuTrace.h"
#include "NcclRuntime.h"

#include "Spmd/Runtime/SpmdGpuRuntime.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstdlib>
#include <string>

using namespace spmd::gpu::nccl;

namespace {

void checkBlas(cublasStatus_t status, const char *op) {
  if (status != CUBLAS_STATUS_SUCCESS)
    spmd::gpu::fail(op, cublasGetStatusString(status));
}

/// The cuBLAS handle, on the program stream inside a program, else on
/// cuBLAS's own stream (its own: waiting for it does not wait for
/// collectives in flight on the communication stream).
cublasHandle_t blasHandle(const char *what, int32_t order) {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  if (!r.blas) {
    spmd::gpu::checkCu(cuStreamCreate(&r.blasStream, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate (cuBLAS)");
    spmd::gpu::trace::nameStream(r.blasStream, "GPU cuBLAS stream");
    checkBlas(cublasCreate(&r.blas), "cublasCreate");
    // SPMD_GPU_ALLOW_TF32=1: f32 GEMMs on tensor cores with inputs rounded
    // to TF32 (10 mantissa bits), as torch.backends.cuda.matmul.allow_tf32.
    const char *tf32 = std::getenv("SPMD_GPU_ALLOW_TF32");
    if (tf32 && *tf32 == '1')
      checkBlas(cublasSetMathMode(r.blas, CUBLAS_TF32_TENSOR_OP_MATH),
                "cublasSetMathMode (TF32)");
  }
  if (order != 101)
    spmd::gpu::fail(what, "only row-major (CblasRowMajor) operands");
  checkBlas(cublasSetStream(r.blas, r.programDepth > 0 ? r.programStream
                                                       : r.blasStream),
            "cublasSetStream");
  return r.blas;
}

/// Outside a program a matmul is complete when its call returns; inside,
/// it is ordered on the program stream.
void blasDone(const char *what) {
  if (rt().programDepth == 0)
    spmd::gpu::checkCu(cuStreamSynchronize(rt().blasStream), what);
}

/// The stream blasHandle set cuBLAS to.
CUstream blasStream() {
  return rt().programDepth > 0 ? rt().programStream : rt().blasStream;
}

/// "m": .., "n": .., "k": .., "batch": .. (a GEMM's trace arguments).
std::string gemmArgs(int32_t m, int32_t n, int32_t k, int32_t batch) {
  return "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
         ", \"k\": " + std::to_string(k) +
         ", \"batch\": " + std::to_string(batch) +
         spmd::gpu::trace::sourceArg();
}

cublasOperation_t blasOp(int32_t trans) {
  return trans == 112 ? CUBLAS_OP_T : CUBLAS_OP_N;
}

} // namespace

extern "C" {

void spmdGpuSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
                  int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                  int64_t b, int32_t ldb, float beta, int64_t c, int32_t ldc) {
  cublasHandle_t blas = blasHandle("spmdGpuSgemm", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap
  // the operands and keep the transposition flags.
  checkBlas(cublasSgemm(blas, blasOp(transB), blasOp(transA), n, m, k, &alpha,
                        static_cast<const float *>(ptr(b)), ldb,
                        static_cast<const float *>(ptr(a)), lda, &beta,
                        static_cast<float *>(ptr(c)), ldc),
            "cublasSgemm");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "sgemm", "blas",
                          gemmArgs(m, n, k, 1));
  blasDone("cuStreamSynchronize (sgemm)");
}

void spmdGpuSgemmStridedBatched(int32_t order, int32_t transA, int32_t transB,
                                int32_t m, int32_t n, int32_t k, float alpha,
                                int64_t a, int32_t lda, int64_t strideA,
                                int64_t b, int32_t ldb, int64_t strideB,
                                float beta, int64_t c, int32_t ldc,
                                int64_t strideC, int32_t batch) {
  cublasHandle_t blas = blasHandle("spmdGpuSgemmStridedBatched", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  checkBlas(cublasSgemmStridedBatched(
                blas, blasOp(transB), blasOp(transA), n, m, k, &alpha,
                static_cast<const float *>(ptr(b)), ldb, strideB,
                static_cast<const float *>(ptr(a)), lda, strideA, &beta,
                static_cast<float *>(ptr(c)), ldc, strideC, batch),
            "cublasSgemmStridedBatched");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "sgemm strided batched", "blas",
                          gemmArgs(m, n, k, batch));
  blasDone("cuStreamSynchronize (strided-batched sgemm)");
}

void spmdGpuGemmBf16(int32_t order, int32_t transA, int32_t transB, int32_t m,
                     int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                     int64_t b, int32_t ldb, float beta, int64_t c,
                     int32_t ldc) {
  spmdGpuGemmBf16StridedBatched(order, transA, transB, m, n, k, alpha, a, lda,
                                0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void spmdGpuGemmBf16StridedBatched(int32_t order, int32_t transA,
                                   int32_t transB, int32_t m, int32_t n,
                                   int32_t k, float alpha, int64_t a,
                                   int32_t lda, int64_t strideA, int64_t b,
                                   int32_t ldb, int64_t strideB, float beta,
                                   int64_t c, int32_t ldc, int64_t strideC,
                                   int32_t batch) {
  cublasHandle_t blas = blasHandle("spmdGpuGemmBf16StridedBatched", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  // bf16 operands, f32 result and accumulation (as autocast's matmuls:
  // the result is rounded to bf16 by the program after).
  checkBlas(cublasGemmStridedBatchedEx(
                blas, blasOp(transB), blasOp(transA), n, m, k, &alpha, ptr(b),
                CUDA_R_16BF, ldb, strideB, ptr(a), CUDA_R_16BF, lda, strideA,
                &beta, ptr(c), CUDA_R_32F, ldc, strideC, batch,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (bf16)");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "gemm bf16", "blas",
                          gemmArgs(m, n, k, batch));
  blasDone("cuStreamSynchronize (bf16 gemm)");
}

} // extern "C"

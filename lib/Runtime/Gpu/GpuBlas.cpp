//===- GpuBlas.cpp - the compiled programs' matmuls on cuBLAS -------------===//
//
// spmdGpuSgemm, its pair, strided-batched and bf16 forms (SpmdGpuRuntime.h):
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

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
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

/// Device arrays of a GEMM pair's six addresses (cuBLAS's A, A1, B, B1, C,
/// C1: cublasSgemmGroupedBatched reads them from device memory), by those
/// addresses. Each is a 64-byte slot of a 4 KiB device slab, uploaded from a
/// registered (pinned) host copy on the stream of the first call that uses
/// it; in a captured step the upload is a node of the graph, replayed from
/// the same bytes. Kept for the process: a static memory plan uses the same
/// few every step. Past kMaxTables, 0 (the pair then runs as two GEMMs).
struct PairTables {
  static constexpr size_t kSlab = 4096, kSlot = 64, kMaxTables = 1 << 14;
  std::map<std::array<int64_t, 6>, CUdeviceptr> tables;
  CUdeviceptr slab = 0;
  char *hostSlab = nullptr;
  size_t used = kSlab;

  CUdeviceptr get(const std::array<int64_t, 6> &addresses, CUstream stream) {
    auto it = tables.find(addresses);
    if (it != tables.end())
      return it->second;
    if (tables.size() >= kMaxTables)
      return 0;
    if (used + kSlot > kSlab) {
      spmd::gpu::checkCu(cuMemAlloc(&slab, kSlab),
                         "cuMemAlloc (GEMM pair addresses)");
      hostSlab = static_cast<char *>(std::aligned_alloc(kSlab, kSlab));
      if (!hostSlab)
        spmd::gpu::fail("spmdGpuSgemmPair", "out of host memory");
      spmd::gpu::checkCu(cuMemHostRegister(hostSlab, kSlab, 0),
                         "cuMemHostRegister (GEMM pair addresses)");
      used = 0;
    }
    char *host = hostSlab + used;
    CUdeviceptr device = slab + used;
    used += kSlot;
    std::memcpy(host, addresses.data(), sizeof(addresses));
    spmd::gpu::checkCu(cuMemcpyAsync(device,
                                     reinterpret_cast<CUdeviceptr>(host),
                                     sizeof(addresses), stream),
                       "cuMemcpyAsync (GEMM pair addresses)");
    tables.emplace(addresses, device);
    return device;
  }
};

PairTables &pairTables() {
  static PairTables *tables = new PairTables;
  return *tables;
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

void spmdGpuSgemmPair(int32_t order, int32_t transA, int32_t transB, int32_t m,
                      int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                      int64_t b, int32_t ldb, float beta, int64_t c,
                      int32_t ldc, int32_t order1, int32_t transA1,
                      int32_t transB1, int32_t m1, int32_t n1, int32_t k1,
                      float alpha1, int64_t a1, int32_t lda1, int64_t b1,
                      int32_t ldb1, float beta1, int64_t c1, int32_t ldc1) {
  cublasHandle_t blas = blasHandle("spmdGpuSgemmPair", order);
  blasHandle("spmdGpuSgemmPair", order1);
  // Column-major, the operands swap (as spmdGpuSgemm): cuBLAS's A is B.
  CUdeviceptr addresses = pairTables().get({b, b1, a, a1, c, c1}, blasStream());
  if (!addresses) {
    spmdGpuSgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc);
    spmdGpuSgemm(order1, transA1, transB1, m1, n1, k1, alpha1, a1, lda1, b1,
                 ldb1, beta1, c1, ldc1);
    return;
  }
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  cublasOperation_t opsA[2] = {blasOp(transB), blasOp(transB1)};
  cublasOperation_t opsB[2] = {blasOp(transA), blasOp(transA1)};
  int ms[2] = {n, n1}, ns[2] = {m, m1}, ks[2] = {k, k1};
  int ldas[2] = {ldb, ldb1}, ldbs[2] = {lda, lda1}, ldcs[2] = {ldc, ldc1};
  float alphas[2] = {alpha, alpha1}, betas[2] = {beta, beta1};
  int sizes[2] = {1, 1};
  auto *pointers = reinterpret_cast<float **>(addresses);
  checkBlas(cublasSgemmGroupedBatched(blas, opsA, opsB, ms, ns, ks, alphas,
                                      pointers, ldas, pointers + 2, ldbs, betas,
                                      pointers + 4, ldcs, 2, sizes),
            "cublasSgemmGroupedBatched");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "sgemm pair", "blas",
                          gemmArgs(m, n, k, 1) +
                              ", \"m1\": " + std::to_string(m1) +
                              ", \"n1\": " + std::to_string(n1) +
                              ", \"k1\": " + std::to_string(k1));
  blasDone("cuStreamSynchronize (sgemm pair)");
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

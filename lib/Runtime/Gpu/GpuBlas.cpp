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

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

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

/// Device arrays of a grouped GEMM call's addresses (cuBLAS's A of every
/// matrix, then every B, then every C: cublasSgemmGroupedBatched reads them
/// from device memory), by those addresses. Each lies in a 4 KiB device
/// slab (a larger one in its own), uploaded from a registered (pinned) host
/// copy on the stream of the first call that uses it; in a captured step
/// the upload is a node of the graph, replayed from the same bytes. Kept for
/// the process: a program's steady steps use the same addresses (the device
/// cache hands its requests the same blocks every step, DeviceCache.cpp).
/// Past kMaxTables, 0 (the call then runs its GEMMs one by one).
struct AddressTables {
  static constexpr size_t kSlab = 4096, kAlign = 64, kMaxTables = 1 << 14;
  std::map<std::vector<int64_t>, CUdeviceptr> tables;
  CUdeviceptr slab = 0;
  char *hostSlab = nullptr;
  size_t used = kSlab;

  /// `bytes` of device memory and their host copy.
  std::pair<CUdeviceptr, char *> place(size_t bytes) {
    size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    if (used + size > kSlab) {
      size_t slabBytes = std::max(kSlab, size);
      spmd::gpu::checkCu(cuMemAlloc(&slab, slabBytes),
                         "cuMemAlloc (grouped GEMM addresses)");
      hostSlab = static_cast<char *>(std::aligned_alloc(kSlab, slabBytes));
      if (!hostSlab)
        spmd::gpu::fail("grouped GEMM", "out of host memory");
      spmd::gpu::checkCu(cuMemHostRegister(hostSlab, slabBytes, 0),
                         "cuMemHostRegister (grouped GEMM addresses)");
      used = size > kSlab ? slabBytes : 0;
      if (size > kSlab)
        return {slab, hostSlab};
    }
    auto placed = std::make_pair(slab + used, hostSlab + used);
    used += size;
    return placed;
  }

  CUdeviceptr get(const std::vector<int64_t> &addresses, CUstream stream) {
    auto it = tables.find(addresses);
    if (it != tables.end())
      return it->second;
    if (tables.size() >= kMaxTables)
      return 0;
    size_t bytes = addresses.size() * sizeof(int64_t);
    auto [device, host] = place(bytes);
    std::memcpy(host, addresses.data(), bytes);
    spmd::gpu::checkCu(cuMemcpyAsync(device,
                                     reinterpret_cast<CUdeviceptr>(host), bytes,
                                     stream),
                       "cuMemcpyAsync (grouped GEMM addresses)");
    tables.emplace(addresses, device);
    return device;
  }
};

AddressTables &addressTables() {
  static AddressTables *tables = new AddressTables;
  return *tables;
}

/// One row-major strided-batched GEMM of a grouped call, in cuBLAS's
/// column-major terms (the operands swapped, as spmdGpuSgemm does).
struct GroupMember {
  int32_t transA, transB, m, n, k;
  float alpha;
  int64_t a;
  int32_t lda;
  int64_t strideA, b;
  int32_t ldb;
  int64_t strideB;
  float beta;
  int64_t c;
  int32_t ldc;
  int64_t strideC;
  int32_t batch;
};

/// A grouped call's trace arguments: each member's shape.
std::string pairArgs(const GroupMember (&members)[2]) {
  const GroupMember &x = members[0], &y = members[1];
  return gemmArgs(x.m, x.n, x.k, x.batch) + ", \"m1\": " + std::to_string(y.m) +
         ", \"n1\": " + std::to_string(y.n) +
         ", \"k1\": " + std::to_string(y.k) +
         ", \"batch1\": " + std::to_string(y.batch);
}

/// The members as one cublasSgemmGroupedBatched call (a group per member,
/// of `batch` matrices), on `blas`'s stream, traced as `name`; false when
/// no address array is left (kMaxTables).
bool groupedGemm(cublasHandle_t blas, const GroupMember (&members)[2],
                 const char *name) {
  // Every matrix's address, cuBLAS's A (our B: column-major), then its B
  // (our A), then C.
  std::vector<int64_t> addresses;
  auto add = [&](int64_t GroupMember::*base, int64_t GroupMember::*stride) {
    for (const GroupMember &g : members)
      for (int32_t i = 0; i < g.batch; ++i)
        addresses.push_back(g.*base + i * (g.*stride) * int64_t(sizeof(float)));
  };
  add(&GroupMember::b, &GroupMember::strideB);
  add(&GroupMember::a, &GroupMember::strideA);
  add(&GroupMember::c, &GroupMember::strideC);
  CUdeviceptr table = addressTables().get(addresses, blasStream());
  if (!table)
    return false;
  cublasOperation_t opsA[2], opsB[2];
  int ms[2], ns[2], ks[2], ldas[2], ldbs[2], ldcs[2], sizes[2];
  float alphas[2], betas[2];
  for (int g = 0; g < 2; ++g) {
    const GroupMember &x = members[g];
    opsA[g] = blasOp(x.transB);
    opsB[g] = blasOp(x.transA);
    ms[g] = x.n;
    ns[g] = x.m;
    ks[g] = x.k;
    ldas[g] = x.ldb;
    ldbs[g] = x.lda;
    ldcs[g] = x.ldc;
    alphas[g] = x.alpha;
    betas[g] = x.beta;
    sizes[g] = x.batch;
  }
  auto *pointers = reinterpret_cast<float **>(table);
  size_t total = addresses.size() / 3;
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  checkBlas(cublasSgemmGroupedBatched(blas, opsA, opsB, ms, ns, ks, alphas,
                                      pointers, ldas, pointers + total, ldbs,
                                      betas, pointers + 2 * total, ldcs, 2,
                                      sizes),
            "cublasSgemmGroupedBatched");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), name, "blas",
                          pairArgs(members));
  return true;
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
  blasHandle("spmdGpuSgemmPair", order1);
  cublasHandle_t blas = blasHandle("spmdGpuSgemmPair", order);
  GroupMember members[2] = {{transA, transB, m, n, k, alpha, a, lda, 0, b, ldb,
                             0, beta, c, ldc, 0, 1},
                            {transA1, transB1, m1, n1, k1, alpha1, a1, lda1, 0,
                             b1, ldb1, 0, beta1, c1, ldc1, 0, 1}};
  if (!groupedGemm(blas, members, "sgemm pair")) {
    spmdGpuSgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc);
    spmdGpuSgemm(order1, transA1, transB1, m1, n1, k1, alpha1, a1, lda1, b1,
                 ldb1, beta1, c1, ldc1);
    return;
  }
  blasDone("cuStreamSynchronize (sgemm pair)");
}

void spmdGpuSgemmStridedBatchedPair(
    int32_t order, int32_t transA, int32_t transB, int32_t m, int32_t n,
    int32_t k, float alpha, int64_t a, int32_t lda, int64_t strideA, int64_t b,
    int32_t ldb, int64_t strideB, float beta, int64_t c, int32_t ldc,
    int64_t strideC, int32_t batch, int32_t order1, int32_t transA1,
    int32_t transB1, int32_t m1, int32_t n1, int32_t k1, float alpha1,
    int64_t a1, int32_t lda1, int64_t strideA1, int64_t b1, int32_t ldb1,
    int64_t strideB1, float beta1, int64_t c1, int32_t ldc1, int64_t strideC1,
    int32_t batch1) {
  blasHandle("spmdGpuSgemmStridedBatchedPair", order1);
  cublasHandle_t blas = blasHandle("spmdGpuSgemmStridedBatchedPair", order);
  GroupMember members[2] = {{transA, transB, m, n, k, alpha, a, lda, strideA, b,
                             ldb, strideB, beta, c, ldc, strideC, batch},
                            {transA1, transB1, m1, n1, k1, alpha1, a1, lda1,
                             strideA1, b1, ldb1, strideB1, beta1, c1, ldc1,
                             strideC1, batch1}};
  if (!groupedGemm(blas, members, "sgemm strided batched pair")) {
    spmdGpuSgemmStridedBatched(order, transA, transB, m, n, k, alpha, a, lda,
                               strideA, b, ldb, strideB, beta, c, ldc, strideC,
                               batch);
    spmdGpuSgemmStridedBatched(order1, transA1, transB1, m1, n1, k1, alpha1, a1,
                               lda1, strideA1, b1, ldb1, strideB1, beta1, c1,
                               ldc1, strideC1, batch1);
    return;
  }
  blasDone("cuStreamSynchronize (strided-batched sgemm pair)");
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

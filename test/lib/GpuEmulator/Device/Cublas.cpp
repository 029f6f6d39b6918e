//===- Cublas.cpp - the cuBLAS functions, emulated on OpenBLAS ------------===//
//
// The cuBLAS API libSpmdGpuRuntime uses, as libcublas.so.13 (see
// Emulator.h; its symbols carry cuBLAS's version node, libcublas.so.13):
// handles with a stream and a math mode, column-major sgemm (one matrix or
// a strided batch: one GEMM call counted) run on that stream by OpenBLAS,
// cublasSgemmGroupedBatched (groups of f32 GEMMs whose operands' addresses
// are device arrays, read when the stream runs it; one call counted, its
// groups after the first as `gemms_grouped`),
// and cublasGemmEx / cublasGemmStridedBatchedEx with bf16 or f32 operands,
// an f32 result and f32 computation (the bf16 values widened exactly, then
// the same sgemm).
// Operands must be device memory, as on a GPU. In TF32 mode the operands
// are rounded to TF32 first (10 mantissa bits, to nearest even), as the
// tensor cores read them, so its numerics are those of a GPU's.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <cublas_v2.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n,
                            int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c,
                            int ldc);

struct cublasContext {
  CUstream stream = nullptr;
  bool tf32 = false;
};

namespace {

constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;

void requireDevice(const void *p, int rows, int cols, int ld, const char *what,
                   size_t element = sizeof(float)) {
  // Column-major: `cols` columns of `ld` elements, the last one `rows` long.
  size_t bytes = cols ? (size_t(cols - 1) * ld + rows) * element : 0;
  if (bytes && !spmd::emu::isDeviceMemory(p, bytes))
    spmd::emu::fail(std::string("cublasSgemm: ") + what +
                    " is not (entirely) device memory");
}

/// `x` rounded to TF32: 10 mantissa bits, to nearest even (NaN and
/// infinity kept).
float toTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {
    uint32_t lsb = (bits >> 13) & 1u;
    bits += 0xfffu + lsb;
    bits &= ~0x1fffu;
  }
  std::memcpy(&x, &bits, 4);
  return x;
}

/// A column-major `rows` x `cols` matrix (leading dimension `ld`) rounded
/// to TF32, packed with leading dimension `rows`.
std::vector<float> roundedTf32(const float *p, int rows, int cols, int ld) {
  std::vector<float> out(size_t(rows) * size_t(cols));
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i)
      out[size_t(j) * rows + i] = toTf32(p[size_t(j) * ld + i]);
  return out;
}

/// One column-major GEMM as cuBLAS computes it in `handle`'s math mode.
void gemm(bool tf32, bool ta, bool tb, int m, int n, int k, float alpha,
          const float *a, int lda, const float *b, int ldb, float beta,
          float *c, int ldc) {
  if (!tf32) {
    cblas_sgemm(kColMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  std::vector<float> ra = roundedTf32(a, ar, ac, lda);
  std::vector<float> rb = roundedTf32(b, br, bc, ldb);
  cblas_sgemm(kColMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n,
              k, alpha, ra.data(), ar > 0 ? ar : 1, rb.data(), br > 0 ? br : 1,
              beta, c, ldc);
}

/// A column-major `rows` x `cols` bf16 matrix (leading dimension `ld`)
/// widened to f32 (exact), packed with leading dimension `rows`.
std::vector<float> widenedBf16(const uint16_t *p, int rows, int cols, int ld) {
  std::vector<float> out(size_t(rows) * size_t(cols));
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) {
      uint32_t bits = uint32_t(p[size_t(j) * ld + i]) << 16;
      std::memcpy(&out[size_t(j) * rows + i], &bits, 4);
    }
  return out;
}

/// Whether cublasGemmEx's types are ones the emulator computes: A and B both
/// f32 or both bf16, C f32, f32 computation (TF32 variants only with f32
/// operands).
bool supportedEx(cudaDataType a, cudaDataType b, cudaDataType c,
                 cublasComputeType_t compute) {
  if (c != CUDA_R_32F || a != b || (a != CUDA_R_32F && a != CUDA_R_16BF))
    return false;
  return compute == CUBLAS_COMPUTE_32F ||
         compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
         (a == CUDA_R_32F && compute == CUBLAS_COMPUTE_32F_FAST_TF32);
}

/// One column-major GemmEx on operands of type `type` (f32 or bf16): bf16
/// ones widened, then `gemm` (TF32 rounding leaves bf16 values as they are:
/// 7 mantissa bits fit in 10).
void gemmEx(bool tf32, cudaDataType type, bool ta, bool tb, int m, int n, int k,
            float alpha, const void *a, int lda, const void *b, int ldb,
            float beta, float *c, int ldc) {
  if (type == CUDA_R_32F) {
    gemm(tf32, ta, tb, m, n, k, alpha, static_cast<const float *>(a), lda,
         static_cast<const float *>(b), ldb, beta, c, ldc);
    return;
  }
  int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  std::vector<float> wa =
      widenedBf16(static_cast<const uint16_t *>(a), ar, ac, lda);
  std::vector<float> wb =
      widenedBf16(static_cast<const uint16_t *>(b), br, bc, ldb);
  gemm(false, ta, tb, m, n, k, alpha, wa.data(), ar > 0 ? ar : 1, wb.data(),
       br > 0 ? br : 1, beta, c, ldc);
}

size_t elementBytes(cudaDataType type) { return type == CUDA_R_16BF ? 2 : 4; }

/// Whether a column-major GEMM's sizes and leading dimensions are valid:
/// op(A) is m x k, op(B) k x n, C m x n; A is stored (ta ? k x m : m x k).
bool validShape(bool ta, bool tb, int m, int n, int k, int lda, int ldb,
                int ldc) {
  return m >= 0 && n >= 0 && k >= 0 && lda >= (ta ? k : m) &&
         ldb >= (tb ? n : k) && ldc >= m && lda >= 1 && ldb >= 1 && ldc >= 1;
}

} // namespace

extern "C" {

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  handle->tf32 = (mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH;
  return CUBLAS_STATUS_SUCCESS;
}

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

// The f32 GEMMs are GemmEx calls with f32 operands (the handle's math mode
// decides TF32), one implementation of the checks and the computation.
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transA,
                              cublasOperation_t transB, int m, int n, int k,
                              const float *alpha, const float *a, int lda,
                              const float *b, int ldb, const float *beta,
                              float *c, int ldc) {
  return cublasGemmStridedBatchedEx(handle, transA, transB, m, n, k, alpha, a,
                                    CUDA_R_32F, lda, 0, b, CUDA_R_32F, ldb, 0,
                                    beta, c, CUDA_R_32F, ldc, 0, 1,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasSgemmGroupedBatched(
    cublasHandle_t handle, const cublasOperation_t transA[],
    const cublasOperation_t transB[], const int m[], const int n[],
    const int k[], const float alpha[], const float *const aArray[],
    const int lda[], const float *const bArray[], const int ldb[],
    const float beta[], float *const cArray[], const int ldc[], int groups,
    const int groupSize[]) {
  if (groups < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  // The per-group arguments are host arrays, read at the call.
  struct Group {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc, size;
    float alpha, beta;
  };
  std::vector<Group> all;
  size_t problems = 0;
  for (int g = 0; g < groups; ++g) {
    Group x{transA[g] != CUBLAS_OP_N,
            transB[g] != CUBLAS_OP_N,
            m[g],
            n[g],
            k[g],
            lda[g],
            ldb[g],
            ldc[g],
            groupSize[g],
            alpha[g],
            beta[g]};
    if (x.size < 0 ||
        !validShape(x.ta, x.tb, x.m, x.n, x.k, x.lda, x.ldb, x.ldc))
      return CUBLAS_STATUS_INVALID_VALUE;
    all.push_back(x);
    problems += size_t(x.size);
  }
  // One call; each group after the first is a GEMM (or strided batch)
  // that would otherwise be a call of its own.
  spmd::emu::count(spmd::emu::Count::Gemm);
  for (int g = 1; g < groups; ++g)
    spmd::emu::count(spmd::emu::Count::GemmGrouped);
  // The address arrays are device memory, as on a GPU; the addresses in
  // them are read when the stream gets to the call (an upload before it on
  // the stream fills them).
  size_t bytes = problems * sizeof(void *);
  for (const void *array :
       {static_cast<const void *>(aArray), static_cast<const void *>(bArray),
        static_cast<const void *>(cArray)})
    if (bytes && !spmd::emu::isDeviceMemory(array, bytes))
      spmd::emu::fail("cublasSgemmGroupedBatched: an address array is not "
                      "(entirely) device memory");
  bool tf32 = handle->tf32;
  spmd::emu::enqueue(handle->stream, [=] {
    size_t i = 0;
    for (const Group &x : all)
      for (int j = 0; j < x.size; ++j, ++i) {
        requireDevice(aArray[i], x.ta ? x.k : x.m, x.ta ? x.m : x.k, x.lda,
                      "A");
        requireDevice(bArray[i], x.tb ? x.n : x.k, x.tb ? x.k : x.n, x.ldb,
                      "B");
        requireDevice(cArray[i], x.m, x.n, x.ldc, "C");
        gemm(tf32, x.ta, x.tb, x.m, x.n, x.k, x.alpha, aArray[i], x.lda,
             bArray[i], x.ldb, x.beta, cArray[i], x.ldc);
      }
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *alpha, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *beta, float *c, int ldc, long long strideC, int batch) {
  return cublasGemmStridedBatchedEx(
      handle, transA, transB, m, n, k, alpha, a, CUDA_R_32F, lda, strideA, b,
      CUDA_R_32F, ldb, strideB, beta, c, CUDA_R_32F, ldc, strideC, batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transA,
                            cublasOperation_t transB, int m, int n, int k,
                            const void *alpha, const void *a,
                            cudaDataType aType, int lda, const void *b,
                            cudaDataType bType, int ldb, const void *beta,
                            void *c, cudaDataType cType, int ldc,
                            cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(handle, transA, transB, m, n, k, alpha, a,
                                    aType, lda, 0, b, bType, ldb, 0, beta, c,
                                    cType, ldc, 0, 1, compute, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const void *alpha, const void *a, cudaDataType aType,
    int lda, long long strideA, const void *b, cudaDataType bType, int ldb,
    long long strideB, const void *beta, void *c, cudaDataType cType, int ldc,
    long long strideC, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t) {
  spmd::emu::count(spmd::emu::Count::Gemm);
  if (!supportedEx(aType, bType, cType, compute))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  bool ta = transA != CUBLAS_OP_N, tb = transB != CUBLAS_OP_N;
  if (batch < 0 || !validShape(ta, tb, m, n, k, lda, ldb, ldc))
    return CUBLAS_STATUS_INVALID_VALUE;
  // Host pointer mode: alpha and beta are read at the call.
  size_t in = elementBytes(aType);
  auto at = [](const void *p, long long elements, size_t bytes) {
    return static_cast<const char *>(p) + elements * (long long)bytes;
  };
  for (int i = 0; i < batch; ++i) {
    requireDevice(at(a, i * strideA, in), ta ? k : m, ta ? m : k, lda, "A", in);
    requireDevice(at(b, i * strideB, in), tb ? n : k, tb ? k : n, ldb, "B", in);
    requireDevice(static_cast<float *>(c) + i * strideC, m, n, ldc, "C");
  }
  float al = *static_cast<const float *>(alpha);
  float be = *static_cast<const float *>(beta);
  bool tf32 = handle->tf32 || compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  if (compute == CUBLAS_COMPUTE_32F_PEDANTIC)
    tf32 = false;
  float *out = static_cast<float *>(c);
  spmd::emu::enqueue(handle->stream, [=] {
    for (int i = 0; i < batch; ++i)
      gemmEx(tf32, aType, ta, tb, m, n, k, al, at(a, i * strideA, in), lda,
             at(b, i * strideB, in), ldb, be, out + i * strideC, ldc);
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"

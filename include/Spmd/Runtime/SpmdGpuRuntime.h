/*===- SpmdGpuRuntime.h - GPU additions to the spmd runtime -------*- C -*-===*
 *
 * libSpmdGpuRuntime implements the C ABI of SpmdRuntime.h (bootstrap, rank
 * queries, collectives) on NCCL for device buffers, the `mgpu*` functions
 * MLIR's gpu-to-llvm lowering calls (CUDA driver API), and the matmul below.
 *===----------------------------------------------------------------------===*/

#ifndef SPMD_RUNTIME_SPMDGPURUNTIME_H
#define SPMD_RUNTIME_SPMDGPURUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device address of state `name`'s buffer (zero-filled when first
 * made; later calls check the size and element type). Compiled programs
 * call it for every state they read or write; the state functions of
 * SpmdRuntime.h (spmdStateData, spmdStateBind, ...) return these device
 * addresses. */
int64_t spmdGpuStateAddress(const char *name, int64_t bytes, int32_t dtype);

/* The device copy of the constant (a global of the program) at host address
 * `host`: uploaded on the first call, the same buffer after while the bytes
 * there are the same (a program loaded where another was unloaded gets its
 * own). Compiled programs call it for every constant they use. */
int64_t spmdGpuConstantAddress(int64_t host, int64_t bytes);

/* cblas_sgemm's signature (row-major: order 101; transposes: 111 no, 112
 * yes) on device pointers, through cuBLAS; returns when C is written (inside
 * a program: enqueued on the program stream, see below). */
void spmdGpuSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
                  int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                  int64_t b, int32_t ldb, float beta, int64_t c, int32_t ldc);

/* Two independent spmdGpuSgemm calls (each its 14 arguments, the first's
 * then the second's) in one cuBLAS call: cublasSgemmGroupedBatched with two
 * groups of one GEMM, each computed as spmdGpuSgemm computes it. Neither C
 * may overlap the other GEMM's operands. The device array of the addresses
 * cuBLAS reads is cached by those addresses (uploaded, stream ordered, the
 * first time they are seen; a program's steady steps see them again). */
void spmdGpuSgemmPair(int32_t order, int32_t transA, int32_t transB, int32_t m,
                      int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                      int64_t b, int32_t ldb, float beta, int64_t c,
                      int32_t ldc, int32_t order1, int32_t transA1,
                      int32_t transB1, int32_t m1, int32_t n1, int32_t k1,
                      float alpha1, int64_t a1, int32_t lda1, int64_t b1,
                      int32_t ldb1, float beta1, int64_t c1, int32_t ldc1);

/* spmdGpuSgemm for `batch` matrices at once (cublasSgemmStridedBatched):
 * matrix i of A starts strideA elements after matrix i - 1 (B, C alike). */
void spmdGpuSgemmStridedBatched(int32_t order, int32_t transA, int32_t transB,
                                int32_t m, int32_t n, int32_t k, float alpha,
                                int64_t a, int32_t lda, int64_t strideA,
                                int64_t b, int32_t ldb, int64_t strideB,
                                float beta, int64_t c, int32_t ldc,
                                int64_t strideC, int32_t batch);

/* Two independent spmdGpuSgemmStridedBatched calls (each its 18
 * arguments) in one cuBLAS call, as spmdGpuSgemmPair: two groups of
 * `batch` and `batch1` matrices. */
void spmdGpuSgemmStridedBatchedPair(
    int32_t order, int32_t transA, int32_t transB, int32_t m, int32_t n,
    int32_t k, float alpha, int64_t a, int32_t lda, int64_t strideA, int64_t b,
    int32_t ldb, int64_t strideB, float beta, int64_t c, int32_t ldc,
    int64_t strideC, int32_t batch, int32_t order1, int32_t transA1,
    int32_t transB1, int32_t m1, int32_t n1, int32_t k1, float alpha1,
    int64_t a1, int32_t lda1, int64_t strideA1, int64_t b1, int32_t ldb1,
    int64_t strideB1, float beta1, int64_t c1, int32_t ldc1, int64_t strideC1,
    int32_t batch1);

/* spmdGpuSgemm with bf16 A and B and an f32 C, computed in f32
 * (cublasGemmEx: CUDA_R_16BF operands, CUBLAS_COMPUTE_32F); the strided
 * batch as spmdGpuSgemmStridedBatched (strides in elements). */
void spmdGpuGemmBf16(int32_t order, int32_t transA, int32_t transB, int32_t m,
                     int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                     int64_t b, int32_t ldb, float beta, int64_t c,
                     int32_t ldc);
void spmdGpuGemmBf16StridedBatched(int32_t order, int32_t transA,
                                   int32_t transB, int32_t m, int32_t n,
                                   int32_t k, float alpha, int64_t a,
                                   int32_t lda, int64_t strideA, int64_t b,
                                   int32_t ldb, int64_t strideB, float beta,
                                   int64_t c, int32_t ldc, int64_t strideC,
                                   int32_t batch);

/* spmdAttentionForward / spmdAttentionBackward (SpmdRuntime.h, the same
 * arguments and strides) on device buffers: fused flash-attention kernels (one
 * forward, two backward: dQ, then dK and dV), head dimensions E, Ev <= 128.
 * Ordered on the program stream inside a program; outside one, they return when
 * done. */
void spmdGpuAttentionForward(
    int64_t query, int64_t key, int64_t value, int64_t mask, int64_t out,
    int64_t lse, int64_t batch, int64_t heads, int64_t queries, int64_t keys,
    int64_t headDim, int64_t valueDim, int64_t maskB, int64_t maskH,
    int64_t maskL, double scale, int64_t causal, int64_t queryStrideB,
    int64_t queryStrideH, int64_t queryStrideL, int64_t keyStrideB,
    int64_t keyStrideH, int64_t keyStrideS, int64_t valueStrideB,
    int64_t valueStrideH, int64_t valueStrideS, int64_t outStrideB,
    int64_t outStrideH, int64_t outStrideL);
void spmdGpuAttentionBackward(
    int64_t grad, int64_t query, int64_t key, int64_t value, int64_t out,
    int64_t lse, int64_t mask, int64_t gradQuery, int64_t gradKey,
    int64_t gradValue, int64_t batch, int64_t heads, int64_t queries,
    int64_t keys, int64_t headDim, int64_t valueDim, int64_t maskB,
    int64_t maskH, int64_t maskL, double scale, int64_t causal,
    int64_t gradStrideB, int64_t gradStrideH, int64_t gradStrideL,
    int64_t queryStrideB, int64_t queryStrideH, int64_t queryStrideL,
    int64_t keyStrideB, int64_t keyStrideH, int64_t keyStrideS,
    int64_t valueStrideB, int64_t valueStrideH, int64_t valueStrideS,
    int64_t outStrideB, int64_t outStrideH, int64_t outStrideL,
    int64_t gradQueryStrideB, int64_t gradQueryStrideH,
    int64_t gradQueryStrideL, int64_t gradKeyStrideB, int64_t gradKeyStrideH,
    int64_t gradKeyStrideS, int64_t gradValueStrideB, int64_t gradValueStrideH,
    int64_t gradValueStrideS);

/* A compiled program's host code between these two calls orders all its
 * device work on one stream, the program stream (spmd-gpu-stream-order):
 * while one runs (they nest), mgpuStreamCreate returns that stream,
 * spmdGpuSgemm enqueues on it and returns, a collective's `...Start` copies
 * its input there and makes the communication stream wait for it, and
 * spmdWait (and the blocking collectives) make the program stream wait for
 * the collective instead of the host. The host waits only where the program
 * reads device memory, and at its end, where synchronizing the program
 * stream also watches the communicators for failed peers (SPMD_TIMEOUT).
 * Outside them every call keeps its host-synchronous meaning. */
void spmdGpuProgramBegin(void);
void spmdGpuProgramEnd(void);

/* A whole step as a CUDA graph (drivers: SPMD_CUDA_GRAPH=1). After the step
 * has run once, spmdGpuGraphCaptureBegin(); step(...);
 * spmdGpuGraphCaptureEnd() records its device work (kernels, GEMMs,
 * collectives, copies) on the program stream without running it, and
 * returns a graph; each spmdGpuGraphLaunch(graph) then runs that work once,
 * as one call, and returns when it is done (the first launch is the
 * captured step itself). The graph owns the device buffers the capture
 * allocated or freed (their addresses are in its nodes). What a graph
 * replays is what the capture saw: the same input and state buffers, read
 * anew at each launch (the driver copies new inputs into the same
 * buffers); a step that waits for the device or allocates outside the
 * cache fails the capture with a message. */
void spmdGpuGraphCaptureBegin(void);
int64_t spmdGpuGraphCaptureEnd(void);
void spmdGpuGraphLaunch(int64_t graph);
void spmdGpuGraphDestroy(int64_t graph);

/* For a host (the Python bridge) that keeps its own tensors apart from the
 * program's device buffers. spmdGpuBuffer: a device buffer of `bytes` bytes
 * (0 for none), freed by spmdGpuBufferFree. spmdGpuCopy: `bytes` bytes from
 * `src` to `dst`, either of them host or device memory, done when it
 * returns. spmdGpuWaitForStream: the next program's device work starts after
 * the work enqueued on `stream` (a CUstream of this context, e.g. torch's
 * current stream) so far, without the host waiting. Not inside a program or
 * a capture. */
int64_t spmdGpuBuffer(int64_t bytes);
void spmdGpuBufferFree(int64_t buffer);
void spmdGpuCopy(int64_t dst, int64_t src, int64_t bytes);
void spmdGpuWaitForStream(int64_t stream);

/* spmdHostMemory's counterpart: bytes of the device buffers compiled
 * programs take from the runtime's cache (their temporaries, not their
 * state) in use now and at most since the last spmdGpuMemoryResetPeak (or
 * the start). Counted while the cache is on (not with SPMD_GPU_CACHE=0). */
void spmdGpuMemory(int64_t *live, int64_t *peak);
void spmdGpuMemoryResetPeak(void);

/* The user's code the next kernel launch, GEMM or attention call runs
 * ("user.py:LINE|module.py:LINE", NULL for none; spmd-gpu-trace-sources
 * emits it before each): while tracing, the kernel's event is named after
 * it, a GEMM's or attention's event carries it as `source`. */
void spmdGpuTraceSource(const char *source);

#ifdef __cplusplus
}
#endif

#endif /* SPMD_RUNTIME_SPMDGPURUNTIME_H */

/*===- SpmdRuntime.h - the spmd runtime (C ABI) -------------------*- C -*-===*
 *
 * What compiled spmd programs call: bootstrap, collectives over groups of a
 * mesh, and the state registry. Two backends move the bytes: MPI (mpirun)
 * and Gloo (torchrun; rendezvous through the store the host registers with
 * spmdUseStore, or the directory SPMD_GLOO_STORE). spmdInit picks
 * SPMD_BACKEND=mpi|gloo if set, else Gloo when torchrun started the process
 * (TORCHELASTIC_RUN_ID) outside an mpirun job, else MPI. Collectives run on
 * contiguous row-major buffers passed as addresses; a group is given by the
 * mesh shape (packed: 16 bits per axis, axis 0 in the low bits, up to 4 axes)
 * and a bit mask of its axes (group order: row-major over the masked axes,
 * ascending).
 *
 * Every backend error is checked: a failure, ranks of a group making
 * different calls (checked when the environment sets SPMD_RUNTIME_CHECK=1:
 * one extra small all_reduce per collective), a second spmdInit, or an
 * unknown state print what failed, on which rank, in which call, and abort
 * the whole job instead of hanging (MPI_Abort; with Gloo the rank exits and
 * the launcher ends the others). Compiled programs call spmdInit lazily on
 * their first runtime call.
 *
 * Never stuck: a rank that waits for the others in a collective longer than
 * SPMD_TIMEOUT seconds (default 1800, torch.distributed's 30 minutes; 0 waits
 * forever) aborts the job, naming the collective, the mesh, the axes, its
 * rank and how long it waited. spmdInit fails when the launcher's RANK /
 * WORLD_SIZE (torchrun's) disagree with the job the runtime joined.
 *===----------------------------------------------------------------------===*/

#ifndef SPMD_RUNTIME_SPMDRUNTIME_H
#define SPMD_RUNTIME_SPMDRUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types and reduction kinds, as the compiler encodes them. 16-bit
 * floats (torch.autocast's bfloat16 and float16) are reduced in float32 and
 * rounded back once (neither MPI nor Gloo sums them); gathers and
 * all_to_all move their bytes. */
enum SpmdDType {
  SPMD_F32 = 0,
  SPMD_F64 = 1,
  SPMD_I32 = 2,
  SPMD_I64 = 3,
  SPMD_BF16 = 4,
  SPMD_F16 = 5,
  /* torch.bool / i1: one byte per element, 0 or 1 (states such as a causal
   * mask buffer; moved as bytes; max / min / prod reduce as or / and). */
  SPMD_BOOL = 6
};
/* Or'ed into the element-type code of spmdAllReduceStart,
 * spmdAllGatherStart or spmdReduceScatterStart: the caller promises that
 * the input buffer stays allocated and unwritten until the handle's wait,
 * so the runtime reads it in place instead of copying it at the start
 * (spmd-collective-inputs-in-place proves it for compiled programs). */
enum { SPMD_INPUT_STAYS = 0x100 };
enum SpmdReduction {
  SPMD_SUM = 0,
  SPMD_AVG = 1,
  SPMD_MAX = 2,
  SPMD_MIN = 3,
  SPMD_PROD = 4
};

/* Starts the backend (and MPI, if the host has not) and the runtime. A
 * second call is an error. Compiled programs call it lazily on their first
 * runtime call. */
void spmdInit(void);
/* Frees groups and ends the backend (finalizes MPI if spmdInit initialized
 * it). */
void spmdFinalize(void);
/* Tells the other ranks that this one leaves the job, and why (one line):
 * a rank that waits in a collective this one will never join then ends the
 * job within seconds, naming it, instead of waiting out SPMD_TIMEOUT (the
 * MPI backend; others say nothing). spmdFinalize announces it when the host
 * did not; once per process. */
void spmdAnnounceLeaving(const char *why);
/* The step this rank is in (the Python bridge counts its calls), named in
 * the messages that end the job. */
void spmdSetStep(int64_t step);
int32_t spmdIsInitialized(void);
int32_t spmdWorldRank(void);
int32_t spmdWorldSize(void);
/* "MPI" or "Gloo" (libSpmdGpuRuntime: "NCCL"). */
const char *spmdBackendName(void);
/* Threads this rank's BLAS runs: the cores this process may use over the
 * ranks on this node (LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE), at
 * least 1, set by spmdInit; 0 when OMP_NUM_THREADS or OPENBLAS_NUM_THREADS
 * is set (the user's choice stands). */
int32_t spmdThreads(void);

/* The key-value store the Gloo backend meets the other ranks through
 * (torch's TCPStore, from the Python bridge); call before spmdInit. Each
 * callback returns 0 on success. `get` copies the value into `buffer` when it
 * fits in `capacity` bytes and sets `*bytes`; when it does not, it sets
 * `*bytes` and returns 1 (it is called again with room). `wait` blocks until
 * every key of `keys` ('\n'-separated) is set, at most `timeoutMs`; with
 * `timeoutMs` 0 it only checks (0: every key is set). */
typedef int32_t (*SpmdStoreSet)(const char *key, const void *data,
                                int64_t bytes);
typedef int32_t (*SpmdStoreGet)(const char *key, void *buffer, int64_t capacity,
                                int64_t *bytes);
typedef int32_t (*SpmdStoreWait)(const char *keys, int64_t timeoutMs);
void spmdUseStore(SpmdStoreSet set, SpmdStoreGet get, SpmdStoreWait wait);

/* This rank's linear index in its group. */
int64_t spmdAxisIndex(int64_t meshShape, int64_t axesMask);

/* Collectives. `in` and `out` are addresses of contiguous buffers; `in` may
 * equal `out` for all_reduce and broadcast. The shape arguments describe the
 * input as [outer, dim, inner] around the gathered / scattered dimension. */
void spmdAllReduce(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int32_t kind, int64_t meshShape, int64_t axesMask);
void spmdAllGather(int64_t in, int64_t out, int64_t outer, int64_t dim,
                   int64_t inner, int32_t dtype, int64_t meshShape,
                   int64_t axesMask);
void spmdReduceScatter(int64_t in, int64_t out, int64_t outer, int64_t dim,
                       int64_t inner, int32_t dtype, int32_t kind,
                       int64_t meshShape, int64_t axesMask);
/* The input has shape [d0, d1, d2, d3] (trailing 1s for lower ranks): chunk
 * k of `splitDim` goes to group rank k, and the chunks received are
 * concatenated along `concatDim` in group order. */
void spmdAllToAll4(int64_t in, int64_t out, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3, int64_t splitDim, int64_t concatDim,
                   int32_t dtype, int64_t meshShape, int64_t axesMask);
void spmdBroadcast(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int64_t root, int64_t meshShape, int64_t axesMask);

/* Asynchronous forms (MPI_I*, or Gloo on a worker thread): same arguments,
 * return a handle for spmdWait. The input is copied at the start (the caller
 * may free it) unless the element type carries SPMD_INPUT_STAYS; the output
 * must stay alive until the wait. Waiting twice on a
 * handle is allowed (the second wait returns at once). */
int64_t spmdAllReduceStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int32_t kind, int64_t meshShape,
                           int64_t axesMask);
int64_t spmdAllGatherStart(int64_t in, int64_t out, int64_t outer, int64_t dim,
                           int64_t inner, int32_t dtype, int64_t meshShape,
                           int64_t axesMask);
int64_t spmdReduceScatterStart(int64_t in, int64_t out, int64_t outer,
                               int64_t dim, int64_t inner, int32_t dtype,
                               int32_t kind, int64_t meshShape,
                               int64_t axesMask);
int64_t spmdAllToAll4Start(int64_t in, int64_t out, int64_t d0, int64_t d1,
                           int64_t d2, int64_t d3, int64_t splitDim,
                           int64_t concatDim, int32_t dtype, int64_t meshShape,
                           int64_t axesMask);
int64_t spmdBroadcastStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int64_t root, int64_t meshShape,
                           int64_t axesMask);
void spmdWait(int64_t handle);

/* Brackets the `...Start` calls of one coalesced collective (one per
 * operand), which compiled programs then wait for: NCCL launches a group as
 * one operation; with MPI they are plain non-blocking calls. */
void spmdGroupStart(void);
void spmdGroupEnd(void);

/* Compiled programs call this on entry with a hash of the program (see
 * convert-spmd-to-runtime): on a program's first call every rank checks that
 * all ranks run the same program, and the job ends with an error if not
 * (ranks running different programs would otherwise hang or silently
 * diverge). Later calls of a checked program cost one set look-up. */
void spmdProgramCheck(int64_t hash, const char *name);

/* Prints `message` with this rank and takes the whole job down (the Python
 * bridge calls it for an exception no one caught, so the other ranks do not
 * wait for this one forever). */
void spmdAbort(const char *message);

/* State registry: the named buffers that live across steps. Compiled
 * programs register their state (spmd.state) on every call that uses it;
 * the host then reads and writes it in place by name. Registering a name
 * again with another size or element type is an error. */
void spmdStateRegister(const char *name, int64_t address, int64_t bytes,
                       int32_t dtype);
/* The buffer of state `name` (its address): the registered one, checked
 * against `bytes` and `dtype`, or, on first use, a new zero-filled buffer
 * the runtime allocates (128-byte aligned, kept for the life of the process)
 * and registers. Compiled CPU programs keep their state there
 * (spmd-state-in-runtime-memory), not in globals of their own. */
int64_t spmdStateAddress(const char *name, int64_t bytes, int32_t dtype);
/* The buffer of a state and its size; an unknown name is an error. */
int64_t spmdStateData(const char *name, int64_t *bytes);
/* The buffer of a state, checked against the size and element type the
 * caller expects (zero-copy access: no copy is made). */
int64_t spmdStateBind(const char *name, int64_t bytes, int32_t dtype);
int64_t spmdStateCount(void);
const char *spmdStateName(int64_t index);

/* The f32 GEMM compiled CPU programs call (cblas_sgemm's arguments; the
 * compiler emits row-major calls). OpenBLAS's cblas_sgemm unless a process
 * hands over another BLAS's Fortran `sgemm_` with spmdSetSgemm (its address;
 * 0 goes back to OpenBLAS): the Python bridge passes the one PyTorch runs. */
void spmdSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
               int32_t n, int32_t k, float alpha, const float *a, int32_t lda,
               const float *b, int32_t ldb, float beta, float *c, int32_t ldc);
void spmdSetSgemm(int64_t fortranSgemm);

/* Flash attention (Attention.cpp), what spmd-lower-attention calls for
 * spmd.attention and spmd.attention_grad: addresses of f32 buffers (query
 * B x H x L x E, key B x H x S x E, value B x H x S x Ev, output
 * B x H x L x Ev, log-sum-exp B x H x L contiguous; mask 0 or added to the
 * scores with element strides maskB, maskH, maskL, 0 where it broadcasts),
 * the sizes (batch = B, heads = H, queries = L, keys = S, headDim = E,
 * valueDim = Ev), the scale, causal (0 or 1, top-left aligned), then each
 * tensor's element strides along batch, head and row (its last dimension
 * contiguous): query, key, value, output; the backward's gradient of the
 * output first and the gradients of query, key and value last. The
 * parameters have no one-letter names: drivers define B, K, N macros. */
void spmdAttentionForward(
    int64_t query, int64_t key, int64_t value, int64_t mask, int64_t out,
    int64_t lse, int64_t batch, int64_t heads, int64_t queries, int64_t keys,
    int64_t headDim, int64_t valueDim, int64_t maskB, int64_t maskH,
    int64_t maskL, double scale, int64_t causal, int64_t queryStrideB,
    int64_t queryStrideH, int64_t queryStrideL, int64_t keyStrideB,
    int64_t keyStrideH, int64_t keyStrideS, int64_t valueStrideB,
    int64_t valueStrideH, int64_t valueStrideS, int64_t outStrideB,
    int64_t outStrideH, int64_t outStrideL);
void spmdAttentionBackward(
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

/* Host buffers of compiled CPU programs (HostAllocator.cpp): spmd-lower-to-cpu
 * lowers memref.alloc / memref.dealloc to these (upstream's
 * use-generic-functions names). A freed block is cached by size and handed
 * out again, so a static-shape step allocates nothing after its first call.
 * SPMD_CPU_CACHE=0 turns the cache off; SPMD_CPU_CACHE_MIB bounds it. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
/* Step traces (Trace.cpp): between spmdTraceStart and spmdTraceStop the
 * runtime records each collective (start to completion), each wait, sgemm
 * and attention kernel, and the caller's spmdTraceEvent calls (times from
 * spmdTraceNow, nanoseconds; args the body of a JSON object); Stop writes
 * them to `path` as a JSON list of Chrome trace events of process `rank`
 * (0 on success). */
int64_t spmdTraceNow(void);
void spmdTraceStart(void);
void spmdTraceEvent(const char *name, const char *category, int64_t start,
                    int64_t end, const char *args);
int32_t spmdTraceStop(const char *path, int32_t rank);
/* A region of the program (spmd-trace-regions), `name`
 * "user.py:LINE|module.py:LINE": Begin returns the start time (0 when
 * tracing is off), End records the region from it. Both call the region
 * hook when one is set (Begin with the name, End with NULL): the Python
 * bridge opens torch.profiler ranges with it. */
int64_t spmdTraceBegin(const char *name);
void spmdTraceEnd(int64_t start, const char *name);
typedef void (*SpmdRegionHook)(const char *name);
void spmdTraceSetRegionHook(SpmdRegionHook hook);

/* Bytes of those buffers in use now and at most since the last reset (or
 * the start): a program's peak memory besides its state. */
void spmdHostMemory(int64_t *live, int64_t *peak);
void spmdHostMemoryResetPeak(void);

#ifdef __cplusplus
}
#endif

#endif /* SPMD_RUNTIME_SPMDRUNTIME_H */

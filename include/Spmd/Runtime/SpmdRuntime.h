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

/* C types of the ABI's type names (RuntimeFunctions.def). */
#define SPMD_C_Void void
#define SPMD_C_I32 int32_t
#define SPMD_C_I64 int64_t
#define SPMD_C_F32 float
#define SPMD_C_F64 double
#define SPMD_C_Str const char *
#define SPMD_C_I64Ptr int64_t *
#define SPMD_C_Size size_t
#define SPMD_C_VoidPtr void *
#define SPMD_C_StoreSet SpmdStoreSet
#define SPMD_C_StoreGet SpmdStoreGet
#define SPMD_C_StoreWait SpmdStoreWait
#define SPMD_C_RegionHook SpmdRegionHook

/* Element types and reduction kinds, as the compiler encodes them
 * (RuntimeFunctions.def says what each means). */
enum SpmdDType {
#define SPMD_DTYPE(Name, Code) SPMD_##Name = Code,
#include "RuntimeFunctions.def"
};
enum SpmdReduction {
#define SPMD_REDUCTION(Name, Code) SPMD_##Name = Code,
#include "RuntimeFunctions.def"
};
enum {
#define SPMD_CONSTANT(Name, Value) SPMD_##Name = Value,
#include "RuntimeFunctions.def"
};

/* A mesh shape packed (SPMD_MESH_AXIS_BITS per axis, axis 0 in the low
 * bits): the compiler packs, the runtime unpacks, with these. */
static inline int64_t spmdMeshAxisSize(int64_t packed, int32_t axis) {
  return (packed >> (SPMD_MESH_AXIS_BITS * axis)) &
         ((INT64_C(1) << SPMD_MESH_AXIS_BITS) - 1);
}
static inline int64_t spmdMeshWithAxis(int64_t packed, int32_t axis,
                                       int64_t size) {
  return packed | (size << (SPMD_MESH_AXIS_BITS * axis));
}

/* The key-value store the Gloo backend meets the other ranks through
 * (spmdUseStore). Each callback returns 0 on success. `get` copies the value
 * into `buffer` when it fits in `capacity` bytes and sets `*bytes`; when it
 * does not, it sets `*bytes` and returns 1 (it is called again with room).
 * `wait` blocks until every key of `keys` ('\n'-separated) is set, at most
 * `timeoutMs`; with `timeoutMs` 0 it only checks (0: every key is set). */
typedef int32_t (*SpmdStoreSet)(const char *key, const void *data,
                                int64_t bytes);
typedef int32_t (*SpmdStoreGet)(const char *key, void *buffer, int64_t capacity,
                                int64_t *bytes);
typedef int32_t (*SpmdStoreWait)(const char *keys, int64_t timeoutMs);
/* spmdTraceSetRegionHook's callback: a region's name at its begin, NULL at
 * its end. */
typedef void (*SpmdRegionHook)(const char *name);

/* The functions, each documented in RuntimeFunctions.def. */
#define SPMD_ARG(Type, name) SPMD_C_##Type name
#define SPMD_NO_ARGS void
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params) SPMD_C_##Result Name Params;
#include "RuntimeFunctions.def"

#ifdef __cplusplus
}
#endif

#endif /* SPMD_RUNTIME_SPMDRUNTIME_H */

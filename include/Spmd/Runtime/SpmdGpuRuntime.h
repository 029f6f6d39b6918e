/*===- SpmdGpuRuntime.h - GPU additions to the spmd runtime -------*- C -*-===*
 *
 * libSpmdGpuRuntime implements the C ABI of SpmdRuntime.h (bootstrap, rank
 * queries, collectives) on NCCL for device buffers, the `mgpu*` functions
 * MLIR's gpu-to-llvm lowering calls (CUDA driver API), and its own calls,
 * listed once in GpuRuntimeFunctions.def.
 *===----------------------------------------------------------------------===*/

#ifndef SPMD_RUNTIME_SPMDGPURUNTIME_H
#define SPMD_RUNTIME_SPMDGPURUNTIME_H

#include "SpmdRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The functions, each documented in GpuRuntimeFunctions.def. */
#define SPMD_ARG(Type, name) SPMD_C_##Type name
#define SPMD_NO_ARGS void
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params) SPMD_C_##Result Name Params;
#include "GpuRuntimeFunctions.def"

#ifdef __cplusplus
}
#endif

#endif /* SPMD_RUNTIME_SPMDGPURUNTIME_H */

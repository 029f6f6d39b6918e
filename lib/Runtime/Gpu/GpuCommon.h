//===- GpuCommon.h - shared state of the GPU runtime ------------*- C++ -*-===//
//
// The process's device and CUDA context, and error checks that report the
// failing call with this process's rank and end the job (a failed rank must
// not leave the others waiting in a collective).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_GPUCOMMON_H
#define SPMD_RUNTIME_GPU_GPUCOMMON_H

#include <cuda.h>

#include <cstddef>
#include <vector>

namespace spmd::gpu {

/// This process's rank for messages (-1 before the runtime knows it).
int rankForMessages();

/// Prints "spmd gpu runtime (rank R): <what>: <detail>" and exits with 1
/// at once (no exit handlers: they could wait for the ranks that failed).
[[noreturn]] void fail(const char *what, const char *detail);

/// Fails with the driver's error name unless `result` is CUDA_SUCCESS.
void checkCu(CUresult result, const char *call);

/// Makes the device's primary context current on this thread (the device
/// is LOCAL_RANK, else the rank modulo the device count, else 0).
void ensureContext();

/// Chooses the device before the first context is made.
void setDevice(int device);

/// Device memory for work on `stream`, from the cache of freed buffers
/// when one of the size is free (DeviceCache.cpp; SPMD_GPU_CACHE=0: the
/// driver's cuMemAllocAsync every time).
CUdeviceptr cachedAlloc(size_t bytes, CUstream stream);

/// Gives back a buffer once `stream`'s work so far is done with it (any
/// pointer: one the cache did not hand out goes to cuMemFreeAsync).
void cachedFree(CUdeviceptr ptr, CUstream stream);

/// Between these two, the cache records the buffers a stream capture
/// allocates or frees; cacheCaptureEnd hands them to the captured graph
/// (they leave the cache; cachedFree of one is then a no-op) and
/// cacheReleaseGraph frees them with it.
/// A compiled program's step (the outermost spmdGpuProgramBegin/End;
/// `program`: its code) starts and ends: the k-th buffer a step asks for is
/// the one the program's previous step got, when it is free.
void cacheStepBegin(const void *program);
void cacheStepEnd();

void cacheCaptureBegin();
std::vector<CUdeviceptr> cacheCaptureEnd();
void cacheReleaseGraph(const std::vector<CUdeviceptr> &owned);

/// The program stream while a compiled program runs (between
/// spmdGpuProgramBegin and spmdGpuProgramEnd), else null.
CUstream programStream();

/// Waits for `stream`; on the program stream, watching the communicators
/// for failed peers while collectives it waits for are in flight.
void synchronize(CUstream stream);

} // namespace spmd::gpu

#endif // SPMD_RUNTIME_GPU_GPUCOMMON_H

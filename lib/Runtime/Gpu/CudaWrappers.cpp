//===- CudaWrappers.cpp - the mgpu* functions gpu-to-llvm calls -----------===//
//
// MLIR's `gpu-to-llvm` lowers gpu.launch_func, gpu.alloc, gpu.memcpy, ... to
// calls of `mgpu*` functions, which upstream ships as
// libmlir_cuda_runtime; Debian's MLIR ships none. These are the same entry
// points, with the signatures the MLIR 22 lowering emits (checked against its
// output: e.g. mgpuLaunchKernel takes the parameter count, mgpuMemAlloc a
// host-shared flag), on the CUDA driver API. Every driver error is reported
// with the call and the rank, and ends the process.
//
//===----------------------------------------------------------------------===//

#include "GpuCommon.h"
#include "GpuTrace.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using spmd::gpu::checkCu;
using spmd::gpu::ensureContext;

extern "C" {

CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  ensureContext();
  CUmodule module = nullptr;
  checkCu(cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

CUmodule mgpuModuleLoadJIT(void *data, int optLevel, size_t /*size*/) {
  ensureContext();
  CUmodule module = nullptr;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  checkCu(cuModuleLoadDataEx(&module, data, 1, options, values),
          "cuModuleLoadDataEx (PTX JIT)");
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  // The lowering unloads its modules from a global destructor, which runs
  // at exit after CUDA's own teardown may have released the context (and
  // every module with it): CUDA_ERROR_DEINITIALIZED then is no error. (Seen
  // on the first real GPU, an H200; the emulator's libcuda never tears
  // down.)
  CUresult result = cuModuleUnload(module);
  if (result != CUDA_ERROR_DEINITIALIZED)
    checkCu(result, "cuModuleUnload");
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  CUfunction function = nullptr;
  checkCu(cuModuleGetFunction(&function, module, name), "cuModuleGetFunction");
  spmd::gpu::trace::nameFunction(function, name);
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  CUevent traced = spmd::gpu::trace::begin(stream);
  checkCu(cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                         smem, stream, params, extra),
          "cuLaunchKernel");
  if (traced)
    spmd::gpu::trace::end(
        traced, stream, spmd::gpu::trace::kernelEventName(function), "kernel",
        spmd::gpu::trace::kernelEventArgs(function) + ", \"grid\": [" +
            std::to_string(gridX) + ", " + std::to_string(gridY) + ", " +
            std::to_string(gridZ) + "], \"block\": [" + std::to_string(blockX) +
            ", " + std::to_string(blockY) + ", " + std::to_string(blockZ) +
            "]");
}

/// Streams the host code is done with, for the next mgpuStreamCreate: the
/// lowering makes one per stretch of kernels between host calls (dozens per
/// step), and a stream is cheaper to keep than to create.
static std::vector<CUstream> &streamPool() {
  static std::vector<CUstream> pool;
  return pool;
}

CUstream mgpuStreamCreate() {
  ensureContext();
  // Inside a compiled program (spmdGpuProgramBegin): all its work on one
  // stream, which the runtime's calls order themselves on too.
  if (CUstream program = spmd::gpu::programStream())
    return program;
  if (!streamPool().empty()) {
    CUstream stream = streamPool().back();
    streamPool().pop_back();
    return stream;
  }
  CUstream stream = nullptr;
  checkCu(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(CUstream stream) {
  if (stream && stream == spmd::gpu::programStream())
    return;
  // Work still enqueued on it stays ordered before whatever reuses it.
  if (streamPool().size() < 64) {
    streamPool().push_back(stream);
    return;
  }
  checkCu(cuStreamDestroy(stream), "cuStreamDestroy");
}

void mgpuStreamSynchronize(CUstream stream) { spmd::gpu::synchronize(stream); }

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  checkCu(cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

CUevent mgpuEventCreate() {
  ensureContext();
  CUevent event = nullptr;
  checkCu(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(CUevent event) {
  checkCu(cuEventDestroy(event), "cuEventDestroy");
}

void mgpuEventSynchronize(CUevent event) {
  checkCu(cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  checkCu(cuEventRecord(event, stream), "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool isHostShared) {
  ensureContext();
  if (bytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  if (isHostShared)
    checkCu(cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL),
            "cuMemAllocManaged");
  else if (stream)
    ptr = spmd::gpu::cachedAlloc(bytes, stream);
  else
    checkCu(cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, CUstream stream) {
  if (!ptr)
    return;
  auto dptr = reinterpret_cast<CUdeviceptr>(ptr);
  if (stream)
    spmd::gpu::cachedFree(dptr, stream);
  else
    checkCu(cuMemFree(dptr), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  CUevent traced = spmd::gpu::trace::begin(stream);
  checkCu(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                        reinterpret_cast<CUdeviceptr>(src), bytes, stream),
          "cuMemcpyAsync");
  if (traced)
    spmd::gpu::trace::end(traced, stream, "memcpy", "copy",
                          "\"bytes\": " + std::to_string(bytes));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count,
                  CUstream stream) {
  checkCu(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
          "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  CUstream stream) {
  checkCu(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
          "cuMemsetD16Async");
}

void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  ensureContext();
  checkCu(cuMemHostRegister(ptr, bytes, /*flags=*/0), "cuMemHostRegister");
}

void mgpuMemHostUnregister(void *ptr) {
  checkCu(cuMemHostUnregister(ptr), "cuMemHostUnregister");
}

/// An unranked memref's descriptor: {allocated, aligned, offset, sizes[rank],
/// strides[rank]}.
static void hostRegion(int64_t rank, void *descriptor, int64_t elementBytes,
                       void **begin, uint64_t *bytes) {
  auto *fields = static_cast<int64_t *>(descriptor);
  auto *aligned = reinterpret_cast<char *>(fields[1]);
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3;
  const int64_t *strides = sizes + rank;
  int64_t span = 1;
  for (int64_t d = 0; d < rank; ++d)
    span += (sizes[d] - 1) * strides[d];
  *begin = aligned + offset * elementBytes;
  *bytes = static_cast<uint64_t>(span * elementBytes);
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementBytes) {
  void *begin;
  uint64_t bytes;
  hostRegion(rank, descriptor, elementBytes, &begin, &bytes);
  mgpuMemHostRegister(begin, bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementBytes) {
  void *begin;
  uint64_t bytes;
  hostRegion(rank, descriptor, elementBytes, &begin, &bytes);
  mgpuMemHostUnregister(begin);
}

void mgpuSetDefaultDevice(int32_t device) { spmd::gpu::setDevice(device); }

} // extern "C"

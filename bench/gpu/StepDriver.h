//===- StepDriver.h - what the step drivers share ---------------*- C++ -*-===//
//
// The drivers of compiled steps (bench/gpu, test/Conversion/GPU/Inputs) are
// built for the GPU path (buffers in device memory through the mgpu*
// functions of libSpmdGpuRuntime) or, with -DSPMD_CPU, for the CPU path
// (host memory): devAlloc/devFree/copy are the one or the other, and MemRef
// is the f32 memref descriptor of the C interface.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_BENCH_GPU_STEPDRIVER_H
#define SPMD_BENCH_GPU_STEPDRIVER_H

#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifndef SPMD_CPU
extern "C" {
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuStreamSynchronize(void *stream);
}
inline void *devAlloc(size_t n) { return mgpuMemAlloc(n, nullptr, false); }
inline void devFree(void *p) { mgpuMemFree(p, nullptr); }
/// A copy between host and device memory, complete when it returns.
inline void copy(void *dst, const void *src, size_t n) {
  mgpuMemcpy(dst, const_cast<void *>(src), n, nullptr);
  mgpuStreamSynchronize(nullptr);
}
#else
inline void *devAlloc(size_t n) { return std::malloc(n); }
inline void devFree(void *p) { std::free(p); }
inline void copy(void *dst, const void *src, size_t n) {
  std::memcpy(dst, src, n);
}
#endif

/// The C interface's descriptor of an f32 memref of rank R.
template <int R> struct MemRef {
  float *allocated, *aligned;
  int64_t offset, sizes[R], strides[R];
};
template <> struct MemRef<0> {
  float *allocated, *aligned;
  int64_t offset;
};

#endif // SPMD_BENCH_GPU_STEPDRIVER_H

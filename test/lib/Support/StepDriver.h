//===- StepDriver.h - what the step drivers share ---------------*- C++ -*-===//
//
// The drivers of compiled steps (bench/gpu, test/Codegen/GPU/Inputs) are
// built for the GPU path (buffers in device memory through the mgpu*
// functions of libSpmdGpuRuntime) or, with -DSPMD_CPU, for the CPU path
// (host memory): devAlloc/devFree/copy are the one or the other, and MemRef
// is the f32 memref descriptor of the C interface.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TEST_SUPPORT_STEPDRIVER_H
#define SPMD_TEST_SUPPORT_STEPDRIVER_H

#include "Spmd/Runtime/SpmdRuntime.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef SPMD_CPU
#include "Spmd/Runtime/SpmdGpuRuntime.h"

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

/// SPMD_TRACE=DIR: the steps run between its construction and finish() are
/// traced (the runtime's events, each step one "step" event) into
/// DIR/trace-rank<R>.json; `python -m spmd.timeline DIR` merges the ranks'
/// files into DIR/trace.json and draws it.
class StepTrace {
public:
  StepTrace() : dir(std::getenv("SPMD_TRACE")) {
    if (dir)
      spmdTraceStart();
  }
  void beginStep() {
    if (dir)
      start = spmdTraceNow();
  }
  void endStep() {
    if (dir)
      spmdTraceEvent("step", "step", start, spmdTraceNow(),
                     ("\"index\": " + std::to_string(index++)).c_str());
  }
  /// Writes this rank's file; false (with a message) when it cannot.
  bool finish(int rank) {
    if (!dir)
      return true;
    ::mkdir(dir, 0777);
    std::string path =
        std::string(dir) + "/trace-rank" + std::to_string(rank) + ".json";
    if (spmdTraceStop(path.c_str(), rank) == 0)
      return true;
    std::perror(path.c_str());
    return false;
  }

private:
  const char *dir;
  int64_t start = 0;
  int index = 0;
};

/// SPMD_CUDA_GRAPH=1 (the GPU path): the first step runs as compiled, the
/// second is captured as a CUDA graph and run, every later one replays the
/// graph (spmdGpuGraph*, SpmdGpuRuntime.h): one call per step. The steps
/// must read and write the same buffers every time (inputs copied into the
/// same device buffers, state in the runtime's registry), as a graph
/// replays the addresses it captured. Elsewhere each step just runs.
class GraphSteps {
public:
  GraphSteps() {
    const char *v = std::getenv("SPMD_CUDA_GRAPH");
    on = v && *v == '1';
  }
  ~GraphSteps() {
#ifndef SPMD_CPU
    if (graph)
      spmdGpuGraphDestroy(graph);
#endif
  }
  GraphSteps(const GraphSteps &) = delete;
  GraphSteps &operator=(const GraphSteps &) = delete;

  /// Runs one step; `step()` calls the compiled step.
  template <typename Step> void run(Step &&step) {
#ifndef SPMD_CPU
    if (on && steps == 1) {
      spmdGpuGraphCaptureBegin();
      step();
      graph = spmdGpuGraphCaptureEnd();
    }
    if (graph) {
      spmdGpuGraphLaunch(graph);
      ++steps;
      return;
    }
#endif
    step();
    ++steps;
  }

private:
  bool on = false;
  int steps = 0;
  int64_t graph = 0;
};

#endif // SPMD_TEST_SUPPORT_STEPDRIVER_H

// CUDA graphs on the GPU emulator, chosen by argv[1]:
//   replay: a capture over two streams (the second joins through an event
//   and is joined back) records copies without running them; each launch
//   runs them again, reading the source anew (an event recorded in the
//   capture cannot be waited for after it);
//   unjoined: the joined stream's last work is never joined back, so the
//   capture fails as CUDA's does (CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
//   isolation: a captured stream waits for an event recorded outside the
//   capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION; the capture is
//   invalidated);
//   host-wait: the host synchronizes a captured stream, then queries a
//   captured event (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
//   CUDA_ERROR_CAPTURED_EVENT);
//   unwarmed: libSpmdGpuRuntime refuses to capture a step before one ran;
//   warmed: after one program ran (no collective in it: one rank), a
//   captured program makes a graph whose launch runs its work.
#include "Spmd/Runtime/SpmdGpuRuntime.h"

#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

// What compiled programs call for their stream (the program stream while
// one runs).
extern "C" CUstream mgpuStreamCreate();

namespace {

const char *name(CUresult r) {
  const char *n = nullptr;
  cuGetErrorName(r, &n);
  return n ? n : "?";
}

/// Device buffer of 4 floats holding `v`.
CUdeviceptr buffer(float v) {
  CUdeviceptr d;
  cuMemAlloc(&d, 4 * sizeof(float));
  float h[4] = {v, v, v, v};
  cuMemcpyAsync(d, reinterpret_cast<CUdeviceptr>(h), sizeof(h), nullptr);
  return d;
}

float first(CUdeviceptr d) {
  float h[4];
  cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(h), d, sizeof(h), nullptr);
  return h[0];
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  cuInit(0);
  CUdevice dev;
  cuDeviceGet(&dev, 0);
  CUcontext ctx;
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUstream s, t;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&t, CU_STREAM_NON_BLOCKING);
  CUevent forked, joined;
  cuEventCreate(&forked, 0);
  cuEventCreate(&joined, 0);
  CUdeviceptr a = buffer(1), b = buffer(0), c = buffer(0);
  CUgraph graph = nullptr;
  const char *test = argv[1];

  if (!std::strcmp(test, "replay") || !std::strcmp(test, "unjoined")) {
    std::printf("begin: %s\n",
                name(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED)));
    cuMemcpyAsync(b, a, 4 * sizeof(float), s); // a -> b on s
    cuEventRecord(forked, s);
    cuStreamWaitEvent(t, forked, 0);           // t joins
    cuMemcpyAsync(c, b, 4 * sizeof(float), t); // b -> c on t
    if (!std::strcmp(test, "replay")) {
      cuEventRecord(joined, t);
      cuStreamWaitEvent(s, joined, 0); // t joined back
    }
    CUstreamCaptureStatus status;
    cuStreamIsCapturing(t, &status);
    std::printf("joined stream capturing: %d\n",
                status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    std::printf("end: %s\n", name(cuStreamEndCapture(s, &graph)));
    if (!graph)
      return 0;
    // An event last recorded in the capture stays unusable after it.
    std::printf("wait for a captured event: %s\n",
                name(cuStreamWaitEvent(t, forked, 0)));
    cuStreamSynchronize(s);
    cuStreamSynchronize(t);
    std::printf("after capture: c = %g (nothing ran)\n", first(c));
    CUgraphExec exec;
    cuGraphInstantiate(&exec, graph, 0);
    for (float v : {5.0f, 7.0f}) {
      float h[4] = {v, v, v, v};
      cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(h), sizeof(h), nullptr);
      std::printf("launch: %s\n", name(cuGraphLaunch(exec, s)));
      cuStreamSynchronize(s);
      std::printf("a = %g: c = %g\n", v, first(c));
    }
    cuGraphExecDestroy(exec);
    cuGraphDestroy(graph);
  } else if (!std::strcmp(test, "isolation")) {
    cuMemcpyAsync(b, a, 4 * sizeof(float), t);
    cuEventRecord(forked, t); // outside the capture
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    std::printf("wait: %s\n", name(cuStreamWaitEvent(s, forked, 0)));
    std::printf("end: %s\n", name(cuStreamEndCapture(s, &graph)));
  } else if (!std::strcmp(test, "host-wait")) {
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    cuMemcpyAsync(b, a, 4 * sizeof(float), s);
    cuEventRecord(forked, s);
    std::printf("query: %s\n", name(cuEventQuery(forked)));
    std::printf("synchronize: %s\n", name(cuStreamSynchronize(s)));
    std::printf("end: %s\n", name(cuStreamEndCapture(s, &graph)));
  } else if (!std::strcmp(test, "unwarmed")) {
    spmdGpuGraphCaptureBegin();
    std::printf("not stopped\n");
  } else if (!std::strcmp(test, "warmed")) {
    // A "program": a copy a -> b on the program stream.
    auto program = [&] {
      spmdGpuProgramBegin();
      cuMemcpyAsync(b, a, 4 * sizeof(float), mgpuStreamCreate());
      spmdGpuProgramEnd();
    };
    program();
    spmdGpuGraphCaptureBegin();
    program();
    int64_t g = spmdGpuGraphCaptureEnd();
    float h[4] = {3, 3, 3, 3};
    cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(h), sizeof(h), nullptr);
    spmdGpuGraphLaunch(g);
    std::printf("graph of one program: b = %g\n", first(b));
    spmdGpuGraphDestroy(g);
  }
  return 0;
}

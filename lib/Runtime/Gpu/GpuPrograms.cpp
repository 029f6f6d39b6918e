//===- GpuPrograms.cpp - compiled programs on the GPU ---------------------===//
//
// What a compiled program's host code calls around its device work: the
// program stream (spmdGpuProgramBegin/End; SpmdGpuRuntime.h), its end's
// synchronization, whole steps as CUDA graphs, and the state registry and
// constants in device memory.
//
//===----------------------------------------------------------------------===//

#include "../JobChecks.h"
#include "../MeshGroup.h"
#include "../Trace.h"
#include "GpuCommon.h"
#include "GpuTrace.h"
#include "NcclRuntime.h"

#include "Spmd/Runtime/SpmdGpuRuntime.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace spmd::gpu::nccl;

CUstream spmd::gpu::programStream() {
  return rt().programDepth > 0 ? rt().programStream : nullptr;
}

void spmd::gpu::synchronize(CUstream stream) {
  Runtime &r = rt();
  if (r.capturing && stream == r.programStream) {
    // The end of a captured step: nothing ran, nothing to wait for; each
    // launch of the graph waits instead.
    if (r.pendingOp) {
      r.capturedOp = r.pendingOp;
      r.capturedPacked = r.pendingPacked;
      r.capturedMask = r.pendingMask;
    }
    r.pendingOp = nullptr;
    return;
  }
  int64_t waitStart = spmd::trace::on() ? spmd::trace::now() : 0;
  if (stream && stream == r.programStream && r.pendingOp) {
    // Collectives in flight: wait watching for failed peers and the
    // timeout, as spmdWait does outside programs.
    spmd::gpu::checkCu(cuEventRecord(r.programEvent, stream),
                       "cuEventRecord (program stream)");
    waitPolling(r.programEvent, r.pendingOp, r.pendingPacked, r.pendingMask);
    r.pendingOp = nullptr;
  }
  checkCu(cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (waitStart && spmd::trace::on())
    spmd::trace::record("wait for the GPU", "wait", waitStart,
                        spmd::trace::now(), "", spmd::trace::kComputeThread);
}

namespace {

/// spmd::gpu::fail with a ready message (the state registry's errors).
[[noreturn]] void failWith(const char *call, const std::string &message) {
  spmd::gpu::fail(call, message.c_str());
}

void ensureProgramStream() {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  if (!r.programStream) {
    spmd::gpu::checkCu(cuStreamCreate(&r.programStream, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate (program stream)");
    spmd::gpu::trace::nameStream(r.programStream, "GPU program stream");
    spmd::gpu::checkCu(cuEventCreate(&r.programEvent, CU_EVENT_DISABLE_TIMING),
                       "cuEventCreate (program stream)");
  }
}

} // namespace

extern "C" {

void spmdGpuProgramBegin(void) {
  ensureProgramStream();
  // The compiled program is the code calling this: its steps' buffers
  // repeat (DeviceCache.cpp).
  if (rt().programDepth++ == 0)
    spmd::gpu::cacheStepBegin(__builtin_return_address(0));
}

void spmdGpuGraphCaptureBegin(void) {
  Runtime &r = rt();
  const char *what = "spmdGpuGraphCaptureBegin";
  if (r.capturing)
    spmd::gpu::fail(what, "a capture is already open");
  if (r.programDepth > 0)
    spmd::gpu::fail(what, "called inside a compiled step");
  if (r.programsRun == 0)
    spmd::gpu::fail(what, "run the step once before capturing it: its first "
                          "call sets up NCCL, cuBLAS, its constants and the "
                          "ranks' program check, which wait for the device");
  ensureProgramStream();
  spmd::gpu::checkCu(
      cuStreamBeginCapture(r.programStream, CU_STREAM_CAPTURE_MODE_RELAXED),
      "cuStreamBeginCapture (program stream)");
  spmd::gpu::cacheCaptureBegin();
  r.capturing = true;
  r.capturedOp = nullptr;
  r.capturedPacked = r.capturedMask = 0;
}

int64_t spmdGpuGraphCaptureEnd(void) {
  Runtime &r = rt();
  if (!r.capturing)
    spmd::gpu::fail("spmdGpuGraphCaptureEnd", "no capture is open");
  if (r.programDepth > 0)
    spmd::gpu::fail("spmdGpuGraphCaptureEnd", "called inside a compiled step");
  r.capturing = false;
  auto *g = new Graph;
  CUresult ended = cuStreamEndCapture(r.programStream, &g->graph);
  g->buffers = spmd::gpu::cacheCaptureEnd();
  if (ended != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(ended, &name);
    std::string what = std::string("the step could not be captured as a CUDA "
                                   "graph (") +
                       (name ? name : "unknown error") +
                       "): between spmdGpuGraphCaptureBegin and End only "
                       "compiled steps may run, and nothing may wait for "
                       "the device";
    spmd::gpu::fail("spmdGpuGraphCaptureEnd", what.c_str());
  }
  spmd::gpu::checkCu(cuGraphInstantiate(&g->exec, g->graph, 0),
                     "cuGraphInstantiate");
  g->op = r.capturedOp;
  g->packed = r.capturedPacked;
  g->mask = r.capturedMask;
  r.launchIsCapturedStep = true;
  return reinterpret_cast<int64_t>(g);
}

void spmdGpuGraphLaunch(int64_t graph) {
  Runtime &r = rt();
  auto *g = reinterpret_cast<Graph *>(graph);
  if (!g)
    spmd::gpu::fail("spmdGpuGraphLaunch", "no graph");
  if (r.capturing || r.programDepth > 0)
    spmd::gpu::fail("spmdGpuGraphLaunch",
                    "called inside a capture or a compiled step");
  if (!r.launchIsCapturedStep)
    countStep();
  r.launchIsCapturedStep = false;
  CUevent traced = spmd::gpu::trace::begin(r.programStream);
  spmd::gpu::checkCu(cuGraphLaunch(g->exec, r.programStream), "cuGraphLaunch");
  if (traced)
    spmd::gpu::trace::end(traced, r.programStream, "CUDA graph", "graph", "");
  // Complete when it returns, as the step it replays; a collective in it
  // is watched for failed peers as at the end of a step.
  r.pendingOp = g->op;
  r.pendingPacked = g->packed;
  r.pendingMask = g->mask;
  spmd::gpu::synchronize(r.programStream);
}

void spmdGpuGraphDestroy(int64_t graph) {
  auto *g = reinterpret_cast<Graph *>(graph);
  if (!g)
    return;
  spmd::gpu::synchronize(rt().programStream);
  spmd::gpu::checkCu(cuGraphExecDestroy(g->exec), "cuGraphExecDestroy");
  spmd::gpu::checkCu(cuGraphDestroy(g->graph), "cuGraphDestroy");
  spmd::gpu::cacheReleaseGraph(g->buffers);
  delete g;
}

void spmdGpuProgramEnd(void) {
  if (rt().programDepth <= 0)
    spmd::gpu::fail("spmdGpuProgramEnd", "no program is running");
  if (--rt().programDepth == 0) {
    spmd::gpu::cacheStepEnd();
    if (!rt().capturing)
      ++rt().programsRun;
  }
}

int64_t spmdGpuStateAddress(const char *name, int64_t bytes, int32_t dtype) {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  std::string error;
  if (const auto *state = r.states.find(name)) {
    if (!r.states.bind(name, bytes, dtype, error))
      spmd::gpu::fail("spmdGpuStateAddress", error.c_str());
    return state->address;
  }
  CUdeviceptr buffer = 0;
  if (bytes > 0) {
    spmd::gpu::checkCu(cuMemAlloc(&buffer, static_cast<size_t>(bytes)),
                       "cuMemAlloc (state)");
    spmd::gpu::checkCu(cuMemsetD8(buffer, 0, static_cast<size_t>(bytes)),
                       "cuMemsetD8 (state)");
  }
  if (!r.states.add(name, static_cast<int64_t>(buffer), bytes, dtype, error))
    spmd::gpu::fail("spmdGpuStateAddress", error.c_str());
  return static_cast<int64_t>(buffer);
}

int64_t spmdGpuConstantAddress(int64_t host, int64_t bytes) {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  const auto *data = reinterpret_cast<const char *>(host);
  auto it = r.constants.find(host);
  // The same bytes at the same address: the cached copy. (Other bytes at a
  // known address: a program was unloaded and another loaded there.)
  if (it != r.constants.end() && it->second.bytes == bytes &&
      std::memcmp(it->second.host.data(), data, static_cast<size_t>(bytes)) ==
          0)
    return static_cast<int64_t>(it->second.buffer);
  if (it != r.constants.end()) {
    spmd::gpu::checkCu(cuCtxSynchronize(), "cuCtxSynchronize (constant)");
    if (it->second.buffer)
      spmd::gpu::checkCu(cuMemFree(it->second.buffer), "cuMemFree (constant)");
    r.constants.erase(it);
  }
  Constant c;
  c.bytes = bytes;
  c.host.assign(data, data + bytes);
  if (bytes > 0) {
    spmd::gpu::checkCu(cuMemAlloc(&c.buffer, static_cast<size_t>(bytes)),
                       "cuMemAlloc (constant)");
    spmd::gpu::checkCu(cuMemcpyAsync(c.buffer, static_cast<CUdeviceptr>(host),
                                     static_cast<size_t>(bytes), nullptr),
                       "cuMemcpyAsync (constant)");
    spmd::gpu::checkCu(cuStreamSynchronize(nullptr),
                       "cuStreamSynchronize (constant)");
  }
  CUdeviceptr buffer = c.buffer;
  r.constants.emplace(host, std::move(c));
  return static_cast<int64_t>(buffer);
}

/// Fails when called inside a program or a capture (the host-side calls).
static void requireOutsidePrograms(const char *call) {
  if (rt().programDepth > 0 || rt().capturing)
    spmd::gpu::fail(call, "called inside a compiled step or a capture");
}

int64_t spmdGpuBuffer(int64_t bytes) {
  requireOutsidePrograms("spmdGpuBuffer");
  spmd::gpu::ensureContext();
  CUdeviceptr buffer = 0;
  if (bytes > 0)
    spmd::gpu::checkCu(cuMemAlloc(&buffer, static_cast<size_t>(bytes)),
                       "cuMemAlloc (spmdGpuBuffer)");
  return static_cast<int64_t>(buffer);
}

void spmdGpuBufferFree(int64_t buffer) {
  requireOutsidePrograms("spmdGpuBufferFree");
  if (buffer)
    spmd::gpu::checkCu(cuMemFree(static_cast<CUdeviceptr>(buffer)),
                       "cuMemFree (spmdGpuBufferFree)");
}

void spmdGpuCopy(int64_t dst, int64_t src, int64_t bytes) {
  requireOutsidePrograms("spmdGpuCopy");
  if (bytes <= 0)
    return;
  spmd::gpu::ensureContext();
  spmd::gpu::checkCu(cuMemcpyAsync(static_cast<CUdeviceptr>(dst),
                                   static_cast<CUdeviceptr>(src),
                                   static_cast<size_t>(bytes), nullptr),
                     "cuMemcpyAsync (spmdGpuCopy)");
  spmd::gpu::checkCu(cuStreamSynchronize(nullptr),
                     "cuStreamSynchronize (spmdGpuCopy)");
}

void spmdGpuWaitForStream(int64_t stream) {
  requireOutsidePrograms("spmdGpuWaitForStream");
  ensureProgramStream();
  Runtime &r = rt();
  auto *other = reinterpret_cast<CUstream>(stream);
  if (other == r.programStream)
    return;
  spmd::gpu::checkCu(cuEventRecord(r.programEvent, other),
                     "cuEventRecord (spmdGpuWaitForStream)");
  spmd::gpu::checkCu(cuStreamWaitEvent(r.programStream, r.programEvent, 0),
                     "cuStreamWaitEvent (spmdGpuWaitForStream)");
}

// The registry's functions (StateRegistry.h, as the CPU runtime has them);
// a state's device buffer is the one spmdGpuStateAddress made.

void spmdStateRegister(const char *name, int64_t address, int64_t bytes,
                       int32_t dtype) {
  if (spmdGpuStateAddress(name, bytes, dtype) != address) {
    std::string what = std::string("state '") + name +
                       "' registered at another address than its buffer";
    spmd::gpu::fail("spmdStateRegister", what.c_str());
  }
}

SPMD_DEFINE_STATE_READERS(rt().states, failWith)

} // extern "C"

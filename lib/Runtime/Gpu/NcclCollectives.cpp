//===- NcclCollectives.cpp - the spmd collectives on NCCL -----------------===//
//
// Collectives run on one communication stream per process; the blocking
// forms wait for it, the `...Start` forms record an event that spmdWait
// waits for, so kernels on other streams overlap with communication.
// Communicators: one per (mesh, axes) group, split from the world
// communicator. A coalesced collective's operations are one NCCL group
// (spmdGroupStart/End); what must follow them on the stream (events, copies
// out of scratch buffers) is enqueued when the group ends. Every NCCL/CUDA
// result is checked and reported with the rank and the operation; while
// waiting, ncclCommGetAsyncError is polled, so a failed peer ends the job
// instead of hanging it.
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

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace spmd::gpu::nccl;

namespace spmd::gpu::nccl {

//===----------------------------------------------------------------------===//
// Groups, dtypes, waiting
//===----------------------------------------------------------------------===//

ncclDataType_t ncclType(int32_t dtype) {
  switch (dtype) {
  case SPMD_F32:
    return ncclFloat32;
  case SPMD_F64:
    return ncclFloat64;
  case SPMD_I32:
    return ncclInt32;
  case SPMD_I64:
    return ncclInt64;
  case SPMD_BF16:
    return ncclBfloat16;
  case SPMD_F16:
    return ncclFloat16;
  case SPMD_BOOL:
    return ncclUint8;
  }
  spmd::gpu::fail("collective", "unknown element type code");
}

size_t typeBytes(int32_t dtype) {
  if (dtype == SPMD_BOOL)
    return 1;
  if (dtype == SPMD_BF16 || dtype == SPMD_F16)
    return 2;
  return dtype == SPMD_F64 || dtype == SPMD_I64 ? 8 : 4;
}

ncclRedOp_t ncclOp(int32_t kind) {
  switch (kind) {
  case SPMD_SUM:
    return ncclSum;
  case SPMD_AVG:
    return ncclAvg;
  case SPMD_MAX:
    return ncclMax;
  case SPMD_MIN:
    return ncclMin;
  case SPMD_PROD:
    return ncclProd;
  }
  spmd::gpu::fail("collective", "unknown reduction kind");
}

/// (color, key) of this rank's group over the masked axes (MeshGroup.h).
std::pair<int, int> groupColorKey(int64_t packed, int64_t mask) {
  spmd::runtime::GroupPosition g =
      spmd::runtime::groupPosition(packed, mask, rt().rank);
  if (g.meshSize != rt().size)
    spmd::gpu::fail("collective", "the mesh does not match the job size");
  return {static_cast<int>(g.color), static_cast<int>(g.key)};
}

/// Runs `fn` now, or after the current group's operations are enqueued.
void afterEnqueued(std::function<void()> fn) {
  if (rt().groupDepth > 0)
    rt().afterGroup.push_back(std::move(fn));
  else
    fn();
}

/// Ends an open NCCL group and runs what waited for it.
void flushGroup() {
  checkNccl(ncclGroupEnd(), "ncclGroupEnd");
  std::vector<std::function<void()>> work;
  work.swap(rt().afterGroup);
  for (auto &fn : work)
    fn();
}

ncclComm_t group(int64_t packed, int64_t mask) {
  spmdInit();
  auto key = std::make_pair(packed, mask);
  auto it = rt().groups.find(key);
  if (it != rt().groups.end())
    return it->second;
  // Communicators are made outside groups: close the open one (its
  // operations are enqueued in order) and reopen it after.
  bool reopen = rt().groupDepth > 0;
  if (reopen)
    flushGroup();
  auto [color, rankInGroup] = groupColorKey(packed, mask);
  ncclComm_t comm;
  {
    SetupWatchdog watchdog("ncclCommSplit", rt().timeout);
    checkNccl(ncclCommSplit(rt().world, color, rankInGroup, &comm, nullptr),
              "ncclCommSplit");
  }
  rt().groups[key] = comm;
  if (reopen)
    checkNccl(ncclGroupStart(), "ncclGroupStart");
  return comm;
}

int groupSize(ncclComm_t comm) {
  int n = 0;
  checkNccl(ncclCommCount(comm, &n), "ncclCommCount");
  return n;
}

/// Waits for `event` while polling every communicator for asynchronous
/// errors (a dead peer ends the job instead of hanging it); past
/// SPMD_TIMEOUT the job ends naming what was waited for.
void waitPolling(CUevent event, const char *op, int64_t packed, int64_t mask) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (;;) {
    CUresult r = cuEventQuery(event);
    if (r == CUDA_SUCCESS)
      return;
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (rt().timeout > 0 && waited > rt().timeout) {
      char what[512];
      std::snprintf(what, sizeof(what),
                    "timed out after %.1f s waiting for the other ranks of "
                    "%s (SPMD_TIMEOUT=%g s): a rank stopped, crashed or runs "
                    "another program",
                    waited, spmd::runtime::describeGroup(packed, mask).c_str(),
                    rt().timeout);
      // Aborting the communicators releases the NCCL kernels that wait for
      // the missing peer, so the process can exit.
      for (auto &[key, comm] : rt().groups)
        ncclCommAbort(comm);
      if (rt().world)
        ncclCommAbort(rt().world);
      spmd::gpu::fail(op, what);
    }
    if (r != CUDA_ERROR_NOT_READY)
      spmd::gpu::checkCu(r, op);
    for (auto &[key, comm] : rt().groups) {
      ncclResult_t async;
      checkNccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress)
        spmd::gpu::fail(op, ncclGetErrorString(async));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

/// The input of an asynchronous collective as the C ABI promises it (see
/// SpmdRuntime.h): copied at the start, so the caller may reuse or free its
/// buffer right after the `...Start` call, as compiled programs do (one-shot
/// bufferization writes later results into a buffer whose last read was the
/// start). NCCL reads its input later, on the communication stream; so the
/// input is copied first, on a stream of its own that the host waits for
/// (the copy, not the communication queue), and the copy is freed on the
/// communication stream after the collective.
/// While tracing: the collective about to be enqueued starts here on the
/// communication stream (after what it waits for).
void traceStart(size_t bytes) {
  rt().traceStart = spmd::gpu::trace::begin(rt().stream);
  rt().traceBytes = static_cast<int64_t>(bytes);
}

int64_t snapshot(int64_t in, size_t bytes) {
  Runtime &r = rt();
  if (r.programDepth > 0) {
    // Inside a program: the copy is made on the program stream, after the
    // work that wrote the input and before any that rewrites it, and the
    // communication stream waits for it; the host does not.
    if (!r.blocking && bytes != 0) {
      CUdeviceptr copy = spmd::gpu::cachedAlloc(bytes, r.programStream);
      spmd::gpu::checkCu(cuMemcpyAsync(copy, static_cast<CUdeviceptr>(in),
                                       bytes, r.programStream),
                         "cuMemcpyAsync (input snapshot)");
      r.snapshots.push_back(copy);
      in = static_cast<int64_t>(copy);
    }
    spmd::gpu::checkCu(cuEventRecord(r.programEvent, r.programStream),
                       "cuEventRecord (program stream)");
    spmd::gpu::checkCu(cuStreamWaitEvent(r.stream, r.programEvent, 0),
                       "cuStreamWaitEvent (communication stream)");
    traceStart(bytes);
    return in;
  }
  if (r.blocking || bytes == 0) {
    traceStart(bytes);
    return in;
  }
  if (!r.copyStream)
    spmd::gpu::checkCu(cuStreamCreate(&r.copyStream, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate (input snapshots)");
  CUdeviceptr copy;
  copy = spmd::gpu::cachedAlloc(bytes, r.copyStream);
  spmd::gpu::checkCu(
      cuMemcpyAsync(copy, static_cast<CUdeviceptr>(in), bytes, r.copyStream),
      "cuMemcpyAsync (input snapshot)");
  spmd::gpu::checkCu(cuStreamSynchronize(r.copyStream),
                     "cuStreamSynchronize (input snapshot)");
  r.snapshots.push_back(copy);
  traceStart(bytes);
  return static_cast<int64_t>(copy);
}

/// Runs a `...Start` function as the blocking form does (no snapshot: the
/// caller waits before it can touch the input).
template <typename Fn> int64_t startBlocking(Fn start) {
  rt().blocking = true;
  int64_t handle = start();
  rt().blocking = false;
  return handle;
}

int64_t record(const char *op, int64_t packed, int64_t mask) {
  // The collective is enqueued (or will be at the group's end): the input
  // snapshots it reads are freed after it on the same stream.
  std::vector<CUdeviceptr> used;
  used.swap(rt().snapshots);
  bool inProgram = rt().programDepth > 0;
  if (!used.empty() && !inProgram)
    afterEnqueued([used] {
      for (CUdeviceptr copy : used)
        spmd::gpu::cachedFree(copy, rt().stream);
    });
  CUevent event;
  spmd::gpu::checkCu(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate");
  CUevent traced = rt().traceStart;
  rt().traceStart = nullptr;
  std::string args;
  if (traced)
    args =
        "\"bytes\": " + std::to_string(rt().traceBytes) +
        ", \"group size\": " + std::to_string(groupSize(group(packed, mask)));
  afterEnqueued([event, op, traced, args] {
    spmd::gpu::trace::end(traced, rt().stream, op, "collective", args);
    spmd::gpu::checkCu(cuEventRecord(event, rt().stream), op);
  });
  auto handle = reinterpret_cast<int64_t>(event);
  rt().started[handle] = {op, packed, mask,
                          inProgram ? used : std::vector<CUdeviceptr>{}};
  return handle;
}

} // namespace spmd::gpu::nccl

//===----------------------------------------------------------------------===//
// The C ABI: collectives
//===----------------------------------------------------------------------===//

extern "C" {

int64_t spmdAxisIndex(int64_t packed, int64_t mask) {
  spmdInit();
  return groupColorKey(packed, mask).second;
}

int64_t spmdAllReduceStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int32_t kind, int64_t packed,
                           int64_t mask) {
  ncclComm_t comm = group(packed, mask);
  in = snapshot(in, static_cast<size_t>(count) * typeBytes(dtype));
  checkNccl(ncclAllReduce(ptr(in), ptr(out), count, ncclType(dtype),
                          ncclOp(kind), comm, rt().stream),
            "ncclAllReduce");
  return record("all_reduce", packed, mask);
}

int64_t spmdBroadcastStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int64_t root, int64_t packed,
                           int64_t mask) {
  ncclComm_t comm = group(packed, mask);
  in = snapshot(in, static_cast<size_t>(count) * typeBytes(dtype));
  checkNccl(ncclBroadcast(ptr(in), ptr(out), count, ncclType(dtype),
                          static_cast<int>(root), comm, rt().stream),
            "ncclBroadcast");
  return record("broadcast", packed, mask);
}

/// Gathers along `dim` of [outer, dim, inner]: NCCL gathers whole buffers
/// rank after rank, so for outer > 1 it gathers into a scratch buffer and
/// interleaves the chunks with one 2-D copy per rank.
int64_t spmdAllGatherStart(int64_t in, int64_t out, int64_t outer, int64_t dim,
                           int64_t inner, int32_t dtype, int64_t packed,
                           int64_t mask) {
  ncclComm_t comm = group(packed, mask);
  int n = groupSize(comm);
  size_t elem = typeBytes(dtype);
  size_t chunk = static_cast<size_t>(outer * dim * inner);
  in = snapshot(in, chunk * elem);
  if (outer == 1) {
    checkNccl(ncclAllGather(ptr(in), ptr(out), chunk, ncclType(dtype), comm,
                            rt().stream),
              "ncclAllGather");
    return record("all_gather", packed, mask);
  }
  CUdeviceptr scratch;
  scratch = spmd::gpu::cachedAlloc(chunk * n * elem, rt().stream);
  checkNccl(ncclAllGather(ptr(in), ptr(static_cast<int64_t>(scratch)), chunk,
                          ncclType(dtype), comm, rt().stream),
            "ncclAllGather");
  size_t row = static_cast<size_t>(dim * inner) * elem;
  // Interleaving the gathered chunks must follow the gather itself.
  afterEnqueued([=] {
    for (int k = 0; k < n; ++k) {
      CUDA_MEMCPY2D copy{};
      copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = scratch + k * chunk * elem;
      copy.srcPitch = row;
      copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.dstDevice = static_cast<CUdeviceptr>(out) + k * row;
      copy.dstPitch = row * n;
      copy.WidthInBytes = row;
      copy.Height = static_cast<size_t>(outer);
      spmd::gpu::checkCu(cuMemcpy2DAsync(&copy, rt().stream),
                         "cuMemcpy2DAsync (all_gather)");
    }
    spmd::gpu::cachedFree(scratch, rt().stream);
  });
  return record("all_gather", packed, mask);
}

/// Reduce-scatters along `dim` of [outer, dim, inner] (dim divisible by the
/// group): for outer > 1 the chunks are first packed rank-major.
int64_t spmdReduceScatterStart(int64_t in, int64_t out, int64_t outer,
                               int64_t dim, int64_t inner, int32_t dtype,
                               int32_t kind, int64_t packed, int64_t mask) {
  ncclComm_t comm = group(packed, mask);
  int n = groupSize(comm);
  size_t elem = typeBytes(dtype);
  size_t local = static_cast<size_t>(outer * (dim / n) * inner);
  in = snapshot(in, local * n * elem);
  if (outer == 1) {
    checkNccl(ncclReduceScatter(ptr(in), ptr(out), local, ncclType(dtype),
                                ncclOp(kind), comm, rt().stream),
              "ncclReduceScatter");
    return record("reduce_scatter", packed, mask);
  }
  CUdeviceptr scratch;
  scratch = spmd::gpu::cachedAlloc(local * n * elem, rt().stream);
  size_t row = static_cast<size_t>((dim / n) * inner) * elem;
  for (int k = 0; k < n; ++k) {
    CUDA_MEMCPY2D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = static_cast<CUdeviceptr>(in) + k * row;
    copy.srcPitch = row * n;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = scratch + k * local * elem;
    copy.dstPitch = row;
    copy.WidthInBytes = row;
    copy.Height = static_cast<size_t>(outer);
    spmd::gpu::checkCu(cuMemcpy2DAsync(&copy, rt().stream),
                       "cuMemcpy2DAsync (reduce_scatter)");
  }
  checkNccl(ncclReduceScatter(ptr(static_cast<int64_t>(scratch)), ptr(out),
                              local, ncclType(dtype), ncclOp(kind), comm,
                              rt().stream),
            "ncclReduceScatter");
  afterEnqueued([scratch] { spmd::gpu::cachedFree(scratch, rt().stream); });
  return record("reduce_scatter", packed, mask);
}

/// Exchanges chunk k of the split dimension with rank k and concatenates
/// the received chunks along concatDim in group order (both of the 4-D
/// shape d0..d3): chunks that are not contiguous are packed into (and
/// unpacked from) scratch buffers with one 2-D copy per rank.
int64_t spmdAllToAll4Start(int64_t in, int64_t out, int64_t d0, int64_t d1,
                           int64_t d2, int64_t d3, int64_t splitDim,
                           int64_t concatDim, int32_t dtype, int64_t packed,
                           int64_t mask) {
  ncclComm_t comm = group(packed, mask);
  int n = groupSize(comm);
  size_t elem = typeBytes(dtype);
  int64_t shape[4] = {d0, d1, d2, d3};
  if (splitDim < 0 || splitDim > 3 || concatDim < 0 || concatDim > 3)
    spmd::gpu::fail("all_to_all", "dimensions out of range");
  if (shape[splitDim] % n != 0)
    spmd::gpu::fail("all_to_all",
                    "the split dimension is not divisible by the group size");
  auto prod = [](const int64_t *s, int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t i = from; i < to; ++i)
      p *= s[i];
    return p;
  };
  size_t chunk = static_cast<size_t>(prod(shape, 0, 4) / n);
  size_t chunkBytes = chunk * elem;
  in = snapshot(in, chunkBytes * n);
  // What is sent: chunk k of the split dimension, [outer, part, inner].
  int64_t sOuter = prod(shape, 0, splitDim);
  int64_t sPart = shape[splitDim] / n, sInner = prod(shape, splitDim + 1, 4);
  // What is received has the split shape and lands at position k of the
  // concatenation dimension of the output, [outer, dim * n, inner].
  int64_t split[4] = {d0, d1, d2, d3};
  split[splitDim] /= n;
  int64_t cOuter = prod(split, 0, concatDim), cDim = split[concatDim];
  int64_t cInner = prod(split, concatDim + 1, 4);
  auto copy2d = [](CUdeviceptr dst, size_t dstPitch, CUdeviceptr src,
                   size_t srcPitch, size_t width, size_t height) {
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = srcPitch;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dst;
    c.dstPitch = dstPitch;
    c.WidthInBytes = width;
    c.Height = height;
    spmd::gpu::checkCu(cuMemcpy2DAsync(&c, rt().stream),
                       "cuMemcpy2DAsync (all_to_all)");
  };
  auto base = [](int64_t address) { return static_cast<CUdeviceptr>(address); };
  CUdeviceptr send = base(in), recv = base(out), sendScratch = 0,
              recvScratch = 0;
  if (sOuter > 1) {
    sendScratch = spmd::gpu::cachedAlloc(chunkBytes * n, rt().stream);
    size_t row = static_cast<size_t>(sPart * sInner) * elem;
    for (int k = 0; k < n; ++k)
      copy2d(sendScratch + k * chunkBytes, row, base(in) + k * row, row * n,
             row, static_cast<size_t>(sOuter));
    send = sendScratch;
  }
  if (cOuter > 1) {
    recvScratch = spmd::gpu::cachedAlloc(chunkBytes * n, rt().stream);
    recv = recvScratch;
  }
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  for (int k = 0; k < n; ++k) {
    checkNccl(ncclSend(ptr(static_cast<int64_t>(send + k * chunkBytes)), chunk,
                       ncclType(dtype), k, comm, rt().stream),
              "ncclSend (all_to_all)");
    checkNccl(ncclRecv(ptr(static_cast<int64_t>(recv + k * chunkBytes)), chunk,
                       ncclType(dtype), k, comm, rt().stream),
              "ncclRecv (all_to_all)");
  }
  checkNccl(ncclGroupEnd(), "ncclGroupEnd");
  afterEnqueued([=] {
    if (recvScratch) {
      size_t row = static_cast<size_t>(cDim * cInner) * elem;
      for (int k = 0; k < n; ++k)
        copy2d(base(out) + k * row, row * n, recvScratch + k * chunkBytes, row,
               row, static_cast<size_t>(cOuter));
      spmd::gpu::cachedFree(recvScratch, rt().stream);
    }
    if (sendScratch)
      spmd::gpu::cachedFree(sendScratch, rt().stream);
  });
  return record("all_to_all", packed, mask);
}

void spmdGroupStart(void) {
  spmdInit();
  if (rt().groupDepth++ == 0)
    checkNccl(ncclGroupStart(), "ncclGroupStart");
}

void spmdGroupEnd(void) {
  if (rt().groupDepth <= 0)
    spmd::gpu::fail("spmdGroupEnd", "no group is open");
  if (--rt().groupDepth == 0)
    flushGroup();
}

void spmdWait(int64_t handle) {
  if (rt().groupDepth > 0)
    spmd::gpu::fail("spmdWait", "waiting inside a group would deadlock");
  if (!handle)
    return;
  auto event = reinterpret_cast<CUevent>(handle);
  auto it = rt().started.find(handle);
  if (it == rt().started.end())
    spmd::gpu::fail("spmdWait", "unknown handle");
  Runtime::Started what = it->second;
  rt().started.erase(it);
  if (rt().programDepth > 0) {
    // Inside a program: its stream waits, the host goes on.
    spmd::gpu::checkCu(cuStreamWaitEvent(rt().programStream, event, 0),
                       "cuStreamWaitEvent (program stream)");
    for (CUdeviceptr copy : what.snapshots)
      spmd::gpu::cachedFree(copy, rt().programStream);
    rt().pendingOp = what.op;
    rt().pendingPacked = what.packed;
    rt().pendingMask = what.mask;
  } else {
    waitPolling(event, what.op, what.packed, what.mask);
  }
  spmd::gpu::checkCu(cuEventDestroy(event), "cuEventDestroy");
}

void spmdAllReduce(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int32_t kind, int64_t packed, int64_t mask) {
  spmdWait(startBlocking([&] {
    return spmdAllReduceStart(in, out, count, dtype, kind, packed, mask);
  }));
}

void spmdAllGather(int64_t in, int64_t out, int64_t outer, int64_t dim,
                   int64_t inner, int32_t dtype, int64_t packed, int64_t mask) {
  spmdWait(startBlocking([&] {
    return spmdAllGatherStart(in, out, outer, dim, inner, dtype, packed, mask);
  }));
}

void spmdReduceScatter(int64_t in, int64_t out, int64_t outer, int64_t dim,
                       int64_t inner, int32_t dtype, int32_t kind,
                       int64_t packed, int64_t mask) {
  spmdWait(startBlocking([&] {
    return spmdReduceScatterStart(in, out, outer, dim, inner, dtype, kind,
                                  packed, mask);
  }));
}

void spmdAllToAll4(int64_t in, int64_t out, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3, int64_t splitDim, int64_t concatDim,
                   int32_t dtype, int64_t packed, int64_t mask) {
  spmdWait(startBlocking([&] {
    return spmdAllToAll4Start(in, out, d0, d1, d2, d3, splitDim, concatDim,
                              dtype, packed, mask);
  }));
}

void spmdBroadcast(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int64_t root, int64_t packed, int64_t mask) {
  spmdWait(startBlocking([&] {
    return spmdBroadcastStart(in, out, count, dtype, root, packed, mask);
  }));
}

} // extern "C"

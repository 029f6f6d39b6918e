//===- NcclRuntime.h - libSpmdGpuRuntime's shared state -----*- C++ -*-===//
//
// What the files of the spmd runtime on NCCL share (private to
// lib/Runtime/Gpu): the process's runtime state (communicators, streams,
// the state registry, the program stream, an open CUDA graph capture) and
// the few helpers more than one of them calls. NcclBootstrap.cpp starts
// and ends the runtime, NcclCollectives.cpp enqueues the collectives,
// GpuPrograms.cpp runs compiled programs (the program stream, CUDA graphs,
// state and constants), GpuBlas.cpp their matmuls on cuBLAS.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_NCCLRUNTIME_H
#define SPMD_RUNTIME_GPU_NCCLRUNTIME_H

#include "../JobChecks.h"
#include "../SetupWatchdog.h"
#include "../StateRegistry.h"
#include "GpuCommon.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace spmd::gpu::nccl {

/// A program constant's device copy and the host bytes it was made from.
struct Constant {
  CUdeviceptr buffer = 0;
  int64_t bytes = 0;
  std::vector<char> host;
};

struct Runtime {
  bool initialized = false;
  int rank = 0;
  int size = 1;
  int localRank = 0;
  CUstream stream = nullptr;
  ncclComm_t world = nullptr;
  std::map<std::pair<int64_t, int64_t>, ncclComm_t> groups;
  cublasHandle_t blas = nullptr;
  CUstream blasStream = nullptr;
  int device = -1;
  /// State buffers (allocated on first use, zeroed) by name.
  spmd::runtime::StateRegistry states;
  // Device copies of the programs' constants, by host address.
  std::map<int64_t, Constant> constants;
  // Inside spmdGroupStart/End: NCCL enqueues the group's operations at the
  // end, so what must follow them on the stream (events, copies out of
  // scratch buffers) waits until then.
  int groupDepth = 0;
  std::vector<std::function<void()>> afterGroup;
  /// What each started collective's event stands for (timeout messages).
  struct Started {
    const char *op;
    int64_t packed, mask;
    /// Inside a program: the input snapshots it reads, freed on the program
    /// stream once that waits for it (reused there at once next time).
    std::vector<CUdeviceptr> snapshots;
  };
  std::map<int64_t, Started> started;
  /// SPMD_TIMEOUT (JobChecks.h).
  double timeout = spmd::runtime::kDefaultTimeoutSeconds;
  std::set<uint64_t> checkedPrograms;
  /// Inside a blocking collective (spmdAllReduce, ...): the caller waits
  /// before it can touch the input, so no snapshot is needed.
  bool blocking = false;
  /// Where input snapshots are made (see snapshot()).
  CUstream copyStream = nullptr;
  /// Snapshots of the collective being started, freed after it.
  std::vector<CUdeviceptr> snapshots;
  /// While tracing: where the collective being started begins on the
  /// communication stream, and its input bytes.
  CUevent traceStart = nullptr;
  int64_t traceBytes = 0;
  /// Open spmdGpuProgramBegin calls; the stream their work is ordered on,
  /// and the event that orders the communication stream after it.
  int programDepth = 0;
  CUstream programStream = nullptr;
  CUevent programEvent = nullptr;
  /// The last collective the program stream was made to wait for since it
  /// was last synchronized (null: none; timeout messages name it).
  const char *pendingOp = nullptr;
  int64_t pendingPacked = 0, pendingMask = 0;
  /// Between spmdGpuGraphCaptureBegin and End: the program stream is
  /// captured, nothing runs; the collective the captured step waited for
  /// last (timeout messages at each launch).
  bool capturing = false;
  const char *capturedOp = nullptr;
  int64_t capturedPacked = 0, capturedMask = 0;
  /// The next graph launch runs the step just captured (counted with it).
  bool launchIsCapturedStep = false;
  /// Compiled programs run to their end (outside a capture): a step can be
  /// captured only after one did its first-call set-up.
  int64_t programsRun = 0;
};

/// A step captured as a CUDA graph, with the device buffers it owns.
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUdeviceptr> buffers;
  const char *op = nullptr;
  int64_t packed = 0, mask = 0;
};

/// The process's runtime state.
Runtime &rt();

/// Fails (spmd::gpu::fail) unless `result` is a success or in progress.
void checkNccl(ncclResult_t result, const char *op);

/// Waits for `event` while polling every communicator for asynchronous
/// errors (a dead peer ends the job instead of hanging it); past
/// SPMD_TIMEOUT the job ends naming what was waited for.
void waitPolling(CUevent event, const char *op, int64_t packed, int64_t mask);

/// Ends the job (spmd::gpu::fail) when the communicator set-up it guards
/// (the NCCL id's exchange, ncclCommInitRank, ncclCommSplit) still runs
/// after `timeoutSeconds` (SetupWatchdog.h).
class SetupWatchdog : public spmd::runtime::SetupWatchdog {
public:
  SetupWatchdog(const char *what, double timeoutSeconds)
      : spmd::runtime::SetupWatchdog(what, timeoutSeconds, spmd::gpu::fail) {}
};

/// A step begins: the GPU emulator (only it defines spmdEmuStepBegin)
/// counts what the device does per step.
void countStep();

inline void *ptr(int64_t address) { return reinterpret_cast<void *>(address); }

} // namespace spmd::gpu::nccl

#endif // SPMD_RUNTIME_GPU_NCCLRUNTIME_H

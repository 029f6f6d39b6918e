//===- SpmdNcclRuntime.cpp - the spmd runtime on NCCL ---------------------===//
//
// The C ABI of include/Spmd/Runtime/SpmdRuntime.h for programs whose buffers
// live on the GPU: bootstrap, rank queries and every collective, on NCCL,
// plus cuBLAS matmuls (spmdGpuSgemm). Addresses are device pointers.
//
// Bootstrap: the rank and job size come from torchrun's environment (RANK,
// WORLD_SIZE, LOCAL_RANK) or Open MPI's (OMPI_COMM_WORLD_RANK, ...); with
// neither the job is one rank. Rank 0 makes the NCCL unique id and hands it
// to the others: under Open MPI's mpirun by MPI_Bcast, with libmpi loaded
// at run time (dlopen), else over TCP (MASTER_ADDR, MASTER_PORT: default
// 127.0.0.1:29500). The library links no MPI, so it loads and runs where
// only CUDA and NCCL exist. SPMD_GPU_BOOTSTRAP=tcp|mpi forces one way;
// SPMD_GPU_VERBOSE=1 says which was taken.
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

#include "Spmd/Runtime/SpmdGpuRuntime.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include <arpa/inet.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <nccl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct State {
  CUdeviceptr buffer = 0;
  int64_t bytes = 0;
  int32_t dtype = 0;
};

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
  std::map<std::string, State> states;
  // Device copies of the programs' constants, by host address.
  std::map<int64_t, Constant> constants;
  std::vector<std::string> stateOrder;
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
};

/// A step captured as a CUDA graph, with the device buffers it owns.
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUdeviceptr> buffers;
  const char *op = nullptr;
  int64_t packed = 0, mask = 0;
};

Runtime &rt() {
  static Runtime r;
  return r;
}

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void checkNccl(ncclResult_t result, const char *op) {
  if (result != ncclSuccess && result != ncclInProgress)
    spmd::gpu::fail(op, ncclGetErrorString(result));
}

void checkBlas(cublasStatus_t status, const char *op) {
  if (status != CUBLAS_STATUS_SUCCESS)
    spmd::gpu::fail(op, cublasGetStatusString(status));
}

//===----------------------------------------------------------------------===//
// TCP rendezvous for the NCCL unique id
//===----------------------------------------------------------------------===//

void sendAll(int fd, const void *data, size_t n) {
  auto *p = static_cast<const char *>(data);
  while (n) {
    ssize_t k = ::send(fd, p, n, 0);
    if (k <= 0)
      spmd::gpu::fail("rendezvous send", std::strerror(errno));
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void recvAll(int fd, void *data, size_t n) {
  auto *p = static_cast<char *>(data);
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0)
      spmd::gpu::fail("rendezvous receive",
                      k == 0 ? "peer closed" : std::strerror(errno));
    p += k;
    n -= static_cast<size_t>(k);
  }
}

//===----------------------------------------------------------------------===//
// MPI broadcast of the NCCL unique id (Open MPI, loaded at run time)
//===----------------------------------------------------------------------===//

using MpiFinalizeFn = int (*)();
MpiFinalizeFn mpiFinalize = nullptr;
int (*mpiFinalized)(int *) = nullptr;

void finalizeMpiAtExit() {
  int done = 0;
  if (mpiFinalized && mpiFinalized(&done) == 0 && !done)
    mpiFinalize();
}

/// Broadcasts rank 0's id over MPI_COMM_WORLD when the job was started by
/// Open MPI's mpirun; false when it was not, or libmpi cannot be loaded
/// (unless SPMD_GPU_BOOTSTRAP=mpi asks for MPI, which then fails).
bool broadcastOverMpi(ncclUniqueId &id, int rank) {
  const char *mode = std::getenv("SPMD_GPU_BOOTSTRAP");
  bool required = mode && std::strcmp(mode, "mpi") == 0;
  if (mode && std::strcmp(mode, "tcp") == 0)
    return false;
  if (!required &&
      (std::getenv("RANK") || !std::getenv("OMPI_COMM_WORLD_SIZE")))
    return false;
  void *lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    if (required)
      spmd::gpu::fail("SPMD_GPU_BOOTSTRAP=mpi: cannot load Open MPI",
                      dlerror());
    return false;
  }
  auto initialized =
      reinterpret_cast<int (*)(int *)>(dlsym(lib, "MPI_Initialized"));
  auto init =
      reinterpret_cast<int (*)(int *, char ***)>(dlsym(lib, "MPI_Init"));
  auto bcast = reinterpret_cast<int (*)(void *, int, void *, int, void *)>(
      dlsym(lib, "MPI_Bcast"));
  mpiFinalize = reinterpret_cast<MpiFinalizeFn>(dlsym(lib, "MPI_Finalize"));
  mpiFinalized = reinterpret_cast<int (*)(int *)>(dlsym(lib, "MPI_Finalized"));
  // MPI_COMM_WORLD and MPI_BYTE are these objects' addresses in Open MPI.
  void *world = dlsym(lib, "ompi_mpi_comm_world");
  void *byte = dlsym(lib, "ompi_mpi_byte");
  if (!initialized || !init || !bcast || !mpiFinalize || !mpiFinalized ||
      !world || !byte) {
    if (required)
      spmd::gpu::fail("SPMD_GPU_BOOTSTRAP=mpi",
                      "libmpi.so.40 is not Open MPI's");
    return false;
  }
  int flag = 0;
  initialized(&flag);
  if (!flag) {
    if (init(nullptr, nullptr) != 0)
      spmd::gpu::fail("bootstrap", "MPI_Init failed");
    std::atexit(finalizeMpiAtExit);
  }
  if (rank == 0)
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (bcast(&id, static_cast<int>(sizeof(id)), byte, 0, world) != 0)
    spmd::gpu::fail("bootstrap", "MPI_Bcast of the NCCL id failed");
  return true;
}

ncclUniqueId exchangeUniqueId(int rank, int size) {
  ncclUniqueId id;
  bool verbose = envInt("SPMD_GPU_VERBOSE", 0) != 0;
  if (size == 1) {
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    return id;
  }
  if (broadcastOverMpi(id, rank)) {
    if (verbose)
      std::fprintf(stderr, "spmd gpu runtime (rank %d): NCCL id over MPI\n",
                   rank);
    return id;
  }
  if (verbose)
    std::fprintf(stderr, "spmd gpu runtime (rank %d): NCCL id over TCP\n",
                 rank);
  const char *addr = std::getenv("MASTER_ADDR");
  std::string host = addr && *addr ? addr : "127.0.0.1";
  int port = envInt("MASTER_PORT", 29500);
  int timeout = envInt("SPMD_RENDEZVOUS_TIMEOUT", 120);
  if (rank == 0) {
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    int server = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(server, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0 ||
        ::listen(server, size) != 0)
      spmd::gpu::fail("rendezvous listen (MASTER_PORT)", std::strerror(errno));
    for (int i = 1; i < size; ++i) {
      int peer = ::accept(server, nullptr, nullptr);
      if (peer < 0)
        spmd::gpu::fail("rendezvous accept", std::strerror(errno));
      sendAll(peer, &id, sizeof(id));
      ::close(peer);
    }
    ::close(server);
    return id;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || !res)
    spmd::gpu::fail("rendezvous: cannot resolve MASTER_ADDR", host.c_str());
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      recvAll(fd, &id, sizeof(id));
      ::close(fd);
      break;
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline)
      spmd::gpu::fail("rendezvous: rank 0 not reachable at MASTER_ADDR:"
                      "MASTER_PORT within SPMD_RENDEZVOUS_TIMEOUT seconds",
                      host.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  return id;
}

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
  checkNccl(ncclCommSplit(rt().world, color, rankInGroup, &comm, nullptr),
            "ncclCommSplit");
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

void *ptr(int64_t address) { return reinterpret_cast<void *>(address); }

/// The cuBLAS handle, on the program stream inside a program, else on
/// cuBLAS's own stream (its own: waiting for it does not wait for
/// collectives in flight on the communication stream).
cublasHandle_t blasHandle(const char *what, int32_t order) {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  if (!r.blas) {
    spmd::gpu::checkCu(cuStreamCreate(&r.blasStream, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate (cuBLAS)");
    spmd::gpu::trace::nameStream(r.blasStream, "GPU cuBLAS stream");
    checkBlas(cublasCreate(&r.blas), "cublasCreate");
    // SPMD_GPU_ALLOW_TF32=1: f32 GEMMs on tensor cores with inputs rounded
    // to TF32 (10 mantissa bits), as torch.backends.cuda.matmul.allow_tf32.
    const char *tf32 = std::getenv("SPMD_GPU_ALLOW_TF32");
    if (tf32 && *tf32 == '1')
      checkBlas(cublasSetMathMode(r.blas, CUBLAS_TF32_TENSOR_OP_MATH),
                "cublasSetMathMode (TF32)");
  }
  if (order != 101)
    spmd::gpu::fail(what, "only row-major (CblasRowMajor) operands");
  checkBlas(cublasSetStream(r.blas, r.programDepth > 0 ? r.programStream
                                                       : r.blasStream),
            "cublasSetStream");
  return r.blas;
}

/// Outside a program a matmul is complete when its call returns; inside,
/// it is ordered on the program stream.
void blasDone(const char *what) {
  if (rt().programDepth == 0)
    spmd::gpu::checkCu(cuStreamSynchronize(rt().blasStream), what);
}

/// The stream blasHandle set cuBLAS to.
CUstream blasStream() {
  return rt().programDepth > 0 ? rt().programStream : rt().blasStream;
}

/// "m": .., "n": .., "k": .., "batch": .. (a GEMM's trace arguments).
std::string gemmArgs(int32_t m, int32_t n, int32_t k, int32_t batch) {
  return "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
         ", \"k\": " + std::to_string(k) +
         ", \"batch\": " + std::to_string(batch) +
         spmd::gpu::trace::sourceArg();
}

cublasOperation_t blasOp(int32_t trans) {
  return trans == 112 ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/// A step begins: the GPU emulator (only it defines spmdEmuStepBegin)
/// counts what the device does per step.
void countStep() {
  static auto stepBegin =
      reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "spmdEmuStepBegin"));
  if (stepBegin)
    stepBegin();
}

} // namespace

//===----------------------------------------------------------------------===//
// spmd::gpu common pieces
//===----------------------------------------------------------------------===//

int spmd::gpu::rankForMessages() { return rt().initialized ? rt().rank : -1; }

void spmd::gpu::fail(const char *what, const char *detail) {
  std::fprintf(stderr, "spmd gpu runtime (rank %d): %s: %s\n",
               rankForMessages(), what, detail);
  std::fflush(nullptr);
  // Not exit(): its handlers would finalize MPI (the bootstrap's), which
  // waits for the very ranks this one gives up on. mpirun and torchrun end
  // the job when a rank exits non-zero.
  _exit(1);
}

void spmd::gpu::checkCu(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) {
    // The driver stub (no GPU driver installed) cannot even name errors.
    std::string what = "CUDA error " + std::to_string(int(result));
    if (result == CUDA_ERROR_STUB_LIBRARY)
      what += " (CUDA_ERROR_STUB_LIBRARY: no GPU driver on this machine)";
    fail(call, what.c_str());
  }
  fail(call, name);
}

void spmd::gpu::setDevice(int device) { rt().device = device; }

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

void spmd::gpu::ensureContext() {
  static thread_local bool current = false;
  if (current)
    return;
  checkCu(cuInit(0), "cuInit");
  int count = 0;
  checkCu(cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    fail("cuDeviceGetCount", "no CUDA device");
  Runtime &r = rt();
  if (r.device < 0) {
    int local = envInt("LOCAL_RANK",
                       envInt("OMPI_COMM_WORLD_LOCAL_RANK", envInt("RANK", 0)));
    r.device = local % count;
  }
  CUdevice device;
  checkCu(cuDeviceGet(&device, r.device), "cuDeviceGet");
  CUcontext context;
  checkCu(cuDevicePrimaryCtxRetain(&context, device),
          "cuDevicePrimaryCtxRetain");
  checkCu(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  current = true;
}

//===----------------------------------------------------------------------===//
// The C ABI
//===----------------------------------------------------------------------===//

extern "C" {

void spmdInit(void) {
  Runtime &r = rt();
  if (r.initialized)
    return;
  r.rank = envInt("RANK", envInt("OMPI_COMM_WORLD_RANK", 0));
  r.size = envInt("WORLD_SIZE", envInt("OMPI_COMM_WORLD_SIZE", 1));
  r.localRank = envInt("LOCAL_RANK", envInt("OMPI_COMM_WORLD_LOCAL_RANK", 0));
  if (r.rank < 0 || r.size < 1 || r.rank >= r.size)
    spmd::gpu::fail("spmdInit", "RANK/WORLD_SIZE are inconsistent");
  std::string error;
  if (!spmd::runtime::readTimeout(r.timeout, error))
    spmd::gpu::fail("spmdInit", error.c_str());
  // Under mpirun with RANK/WORLD_SIZE also set (by hand or a wrapper), the
  // two launchers must describe the same job.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") &&
      !spmd::runtime::checkLauncher(envInt("OMPI_COMM_WORLD_RANK", 0),
                                    envInt("OMPI_COMM_WORLD_SIZE", 1), "mpirun",
                                    error))
    spmd::gpu::fail("spmdInit", error.c_str());
  r.initialized = true;
  spmd::gpu::ensureContext();
  spmd::gpu::checkCu(cuStreamCreate(&r.stream, CU_STREAM_NON_BLOCKING),
                     "cuStreamCreate (communication)");
  spmd::gpu::trace::nameStream(r.stream, "GPU communication stream");
  ncclUniqueId id = exchangeUniqueId(r.rank, r.size);
  checkNccl(ncclCommInitRank(&r.world, r.size, id, r.rank), "ncclCommInitRank");
}

void spmdFinalize(void) {
  Runtime &r = rt();
  if (!r.initialized)
    return;
  for (auto &[key, comm] : r.groups)
    ncclCommDestroy(comm);
  r.groups.clear();
  if (r.world)
    ncclCommDestroy(r.world);
  if (r.blas)
    cublasDestroy(r.blas);
  r.world = nullptr;
  r.blas = nullptr;
  r.initialized = false;
}

int32_t spmdIsInitialized(void) { return rt().initialized ? 1 : 0; }

int32_t spmdWorldRank(void) {
  spmdInit();
  return rt().rank;
}

int32_t spmdWorldSize(void) {
  spmdInit();
  return rt().size;
}

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

static void ensureProgramStream() {
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

void spmdGpuProgramBegin(void) {
  ensureProgramStream();
  ++rt().programDepth;
}

void spmdGpuGraphCaptureBegin(void) {
  Runtime &r = rt();
  const char *what = "spmdGpuGraphCaptureBegin";
  if (r.capturing)
    spmd::gpu::fail(what, "a capture is already open");
  if (r.programDepth > 0)
    spmd::gpu::fail(what, "called inside a compiled step");
  if (r.checkedPrograms.empty())
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
  --rt().programDepth;
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

/// On the first call for a program: every rank runs the same one (their
/// hashes agree), else an error naming it.
void spmdProgramCheck(int64_t hash, const char *name) {
  // Every compiled step starts here.
  countStep();
  spmdInit();
  Runtime &r = rt();
  auto h = static_cast<uint64_t>(hash);
  if (r.checkedPrograms.count(h))
    return;
  // max(v) == v and max(~v) == ~v on every rank iff all ranks have v.
  int64_t both[2] = {hash, static_cast<int64_t>(~h)};
  CUdeviceptr buffer;
  spmd::gpu::checkCu(cuMemAlloc(&buffer, sizeof(both)),
                     "cuMemAlloc (program check)");
  spmd::gpu::checkCu(cuMemcpyAsync(buffer, reinterpret_cast<CUdeviceptr>(both),
                                   sizeof(both), r.stream),
                     "cuMemcpyAsync (program check)");
  auto address = static_cast<int64_t>(buffer);
  spmdAllReduce(address, address, 2, SPMD_I64, SPMD_MAX, r.size, 1);
  int64_t result[2];
  spmd::gpu::checkCu(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(result),
                                   buffer, sizeof(result), r.stream),
                     "cuMemcpyAsync (program check)");
  spmd::gpu::checkCu(cuStreamSynchronize(r.stream),
                     "cuStreamSynchronize (program check)");
  spmd::gpu::checkCu(cuMemFree(buffer), "cuMemFree (program check)");
  if (result[0] != both[0] || result[1] != both[1]) {
    std::string what = std::string("the ranks run different programs: this "
                                   "rank's '") +
                       name +
                       "' differs from another rank's (compile the same "
                       "module with the same options for every rank)";
    spmd::gpu::fail("spmdProgramCheck", what.c_str());
  }
  r.checkedPrograms.insert(h);
}

void spmdAbort(const char *message) {
  spmd::gpu::fail("abort", message && *message ? message : "(no message)");
}

int64_t spmdGpuStateAddress(const char *name, int64_t bytes, int32_t dtype) {
  spmd::gpu::ensureContext();
  Runtime &r = rt();
  auto it = r.states.find(name);
  if (it == r.states.end()) {
    State st;
    st.bytes = bytes;
    st.dtype = dtype;
    if (bytes > 0) {
      spmd::gpu::checkCu(cuMemAlloc(&st.buffer, static_cast<size_t>(bytes)),
                         "cuMemAlloc (state)");
      spmd::gpu::checkCu(cuMemsetD8(st.buffer, 0, static_cast<size_t>(bytes)),
                         "cuMemsetD8 (state)");
    }
    it = r.states.emplace(name, st).first;
    r.stateOrder.push_back(name);
  } else if (it->second.bytes != bytes || it->second.dtype != dtype) {
    std::string what = std::string("state \"") + name +
                       "\" used with another size or element type";
    spmd::gpu::fail("spmdGpuStateAddress", what.c_str());
  }
  return static_cast<int64_t>(it->second.buffer);
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

void spmdStateRegister(const char *name, int64_t address, int64_t bytes,
                       int32_t dtype) {
  if (spmdGpuStateAddress(name, bytes, dtype) != address) {
    std::string what = std::string("state \"") + name +
                       "\" registered at another address than its buffer";
    spmd::gpu::fail("spmdStateRegister", what.c_str());
  }
}

int64_t spmdStateData(const char *name, int64_t *bytes) {
  auto it = rt().states.find(name);
  if (it == rt().states.end()) {
    std::string what = std::string("unknown state \"") + name + "\"";
    spmd::gpu::fail("spmdStateData", what.c_str());
  }
  if (bytes)
    *bytes = it->second.bytes;
  return static_cast<int64_t>(it->second.buffer);
}

int64_t spmdStateBind(const char *name, int64_t bytes, int32_t dtype) {
  int64_t have = 0;
  int64_t address = spmdStateData(name, &have);
  const State &st = rt().states[name];
  if (have != bytes || st.dtype != dtype) {
    std::string what =
        std::string("state \"") + name + "\" has another size or element type";
    spmd::gpu::fail("spmdStateBind", what.c_str());
  }
  return address;
}

int64_t spmdStateCount(void) {
  return static_cast<int64_t>(rt().stateOrder.size());
}

const char *spmdStateName(int64_t index) {
  if (index < 0 || index >= spmdStateCount())
    spmd::gpu::fail("spmdStateName", "index out of range");
  return rt().stateOrder[static_cast<size_t>(index)].c_str();
}

void spmdGpuSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
                  int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                  int64_t b, int32_t ldb, float beta, int64_t c, int32_t ldc) {
  cublasHandle_t blas = blasHandle("spmdGpuSgemm", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap
  // the operands and keep the transposition flags.
  checkBlas(cublasSgemm(blas, blasOp(transB), blasOp(transA), n, m, k, &alpha,
                        static_cast<const float *>(ptr(b)), ldb,
                        static_cast<const float *>(ptr(a)), lda, &beta,
                        static_cast<float *>(ptr(c)), ldc),
            "cublasSgemm");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "sgemm", "blas",
                          gemmArgs(m, n, k, 1));
  blasDone("cuStreamSynchronize (sgemm)");
}

void spmdGpuSgemmStridedBatched(int32_t order, int32_t transA, int32_t transB,
                                int32_t m, int32_t n, int32_t k, float alpha,
                                int64_t a, int32_t lda, int64_t strideA,
                                int64_t b, int32_t ldb, int64_t strideB,
                                float beta, int64_t c, int32_t ldc,
                                int64_t strideC, int32_t batch) {
  cublasHandle_t blas = blasHandle("spmdGpuSgemmStridedBatched", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  checkBlas(cublasSgemmStridedBatched(
                blas, blasOp(transB), blasOp(transA), n, m, k, &alpha,
                static_cast<const float *>(ptr(b)), ldb, strideB,
                static_cast<const float *>(ptr(a)), lda, strideA, &beta,
                static_cast<float *>(ptr(c)), ldc, strideC, batch),
            "cublasSgemmStridedBatched");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "sgemm strided batched", "blas",
                          gemmArgs(m, n, k, batch));
  blasDone("cuStreamSynchronize (strided-batched sgemm)");
}

void spmdGpuGemmBf16(int32_t order, int32_t transA, int32_t transB, int32_t m,
                     int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                     int64_t b, int32_t ldb, float beta, int64_t c,
                     int32_t ldc) {
  spmdGpuGemmBf16StridedBatched(order, transA, transB, m, n, k, alpha, a, lda,
                                0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void spmdGpuGemmBf16StridedBatched(int32_t order, int32_t transA,
                                   int32_t transB, int32_t m, int32_t n,
                                   int32_t k, float alpha, int64_t a,
                                   int32_t lda, int64_t strideA, int64_t b,
                                   int32_t ldb, int64_t strideB, float beta,
                                   int64_t c, int32_t ldc, int64_t strideC,
                                   int32_t batch) {
  cublasHandle_t blas = blasHandle("spmdGpuGemmBf16StridedBatched", order);
  CUevent traced = spmd::gpu::trace::begin(blasStream());
  // bf16 operands, f32 result and accumulation (as autocast's matmuls:
  // the result is rounded to bf16 by the program after).
  checkBlas(cublasGemmStridedBatchedEx(
                blas, blasOp(transB), blasOp(transA), n, m, k, &alpha, ptr(b),
                CUDA_R_16BF, ldb, strideB, ptr(a), CUDA_R_16BF, lda, strideA,
                &beta, ptr(c), CUDA_R_32F, ldc, strideC, batch,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (bf16)");
  if (traced)
    spmd::gpu::trace::end(traced, blasStream(), "gemm bf16", "blas",
                          gemmArgs(m, n, k, batch));
  blasDone("cuStreamSynchronize (bf16 gemm)");
}

} // extern "C"

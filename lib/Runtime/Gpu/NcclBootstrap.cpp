//===- NcclBootstrap.cpp - the NCCL runtime's start and end ---------------===//
//
// The C ABI of include/Spmd/Runtime/SpmdRuntime.h for programs whose buffers
// live on the GPU (this file and NcclCollectives.cpp, GpuPrograms.cpp,
// GpuBlas.cpp; NcclRuntime.h holds what they share): start-up, rank
// queries, the ranks' program check, the end. Addresses are device
// pointers.
//
// Bootstrap: the rank and job size come from torchrun's environment (RANK,
// WORLD_SIZE, LOCAL_RANK) or Open MPI's (OMPI_COMM_WORLD_RANK, ...); with
// neither the job is one rank. Rank 0 makes the NCCL unique id and hands it
// to the others: through the key-value store the host registered with
// spmdUseStore (the Python bridge under torchrun: torch's TCPStore, which
// holds MASTER_PORT), else under Open MPI's mpirun by MPI_Bcast, with libmpi
// loaded at run time (dlopen), else over TCP (MASTER_ADDR, MASTER_PORT:
// default 127.0.0.1:29500). The library links no MPI, so it loads and runs
// where only CUDA and NCCL exist. SPMD_GPU_BOOTSTRAP=tcp|mpi forces one way
// (over a store); SPMD_GPU_VERBOSE=1 says which was taken.
//
//===----------------------------------------------------------------------===//

#include "../HostStore.h"
#include "../JobChecks.h"
#include "../MeshGroup.h"
#include "../OpenMpiDefaults.h"
#include "../ThreadBudget.h"
#include "../Trace.h"
#include "GpuCommon.h"
#include "GpuTrace.h"
#include "NcclRuntime.h"

#include "Spmd/Runtime/SpmdGpuRuntime.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

using namespace spmd::gpu::nccl;

namespace {

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

/// Seconds the NCCL id's exchange waits: SPMD_RENDEZVOUS_TIMEOUT when set,
/// else SPMD_TIMEOUT (0: a day, the watchdog is off then too).
int rendezvousSeconds() {
  int own = envInt("SPMD_RENDEZVOUS_TIMEOUT", -1);
  if (own > 0)
    return own;
  double timeout = rt().timeout;
  return timeout > 0 ? static_cast<int>(timeout + 0.999) : 86400;
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
    spmd::runtime::chooseOpenMpiDefaults();
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

/// Rank 0 puts its id in the registered store, the others wait for it and
/// read it; false without a store. The key carries torchrun's restart
/// count: a restarted job does not read the last generation's id.
bool exchangeOverStore(ncclUniqueId &id, int rank) {
  spmd::runtime::HostStore &s = spmd::runtime::hostStore();
  const char *mode = std::getenv("SPMD_GPU_BOOTSTRAP");
  if (!s.set || (mode && (std::strcmp(mode, "tcp") == 0 ||
                          std::strcmp(mode, "mpi") == 0)))
    return false;
  const char *restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  std::string key =
      std::string("spmd/gpu/nccl-id/") + (restart && *restart ? restart : "0");
  if (rank == 0) {
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (s.set(key.c_str(), &id, sizeof(id)) != 0)
      spmd::gpu::fail("bootstrap", "the store did not take the NCCL id");
    return true;
  }
  int64_t timeoutMs = int64_t(rendezvousSeconds()) * 1000;
  int64_t bytes = 0;
  if (s.wait(key.c_str(), timeoutMs) != 0 ||
      s.get(key.c_str(), &id, sizeof(id), &bytes) != 0 ||
      bytes != static_cast<int64_t>(sizeof(id)))
    spmd::gpu::fail("bootstrap", "no NCCL id from rank 0 in the store "
                                 "within the rendezvous timeout "
                                 "(SPMD_RENDEZVOUS_TIMEOUT, else "
                                 "SPMD_TIMEOUT)");
  return true;
}

ncclUniqueId exchangeUniqueId(int rank, int size) {
  ncclUniqueId id;
  bool verbose = envInt("SPMD_GPU_VERBOSE", 0) != 0;
  if (size == 1) {
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    return id;
  }
  if (exchangeOverStore(id, rank)) {
    if (verbose)
      std::fprintf(stderr,
                   "spmd gpu runtime (rank %d): NCCL id over the "
                   "store\n",
                   rank);
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
  int timeout = rendezvousSeconds();
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
                      "MASTER_PORT within the rendezvous timeout",
                      host.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  return id;
}

} // namespace

Runtime &spmd::gpu::nccl::rt() {
  static Runtime r;
  return r;
}

void spmd::gpu::nccl::checkNccl(ncclResult_t result, const char *op) {
  if (result != ncclSuccess && result != ncclInProgress)
    spmd::gpu::fail(op, ncclGetErrorString(result));
}

void spmd::gpu::nccl::countStep() {
  static auto stepBegin =
      reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "spmdEmuStepBegin"));
  if (stepBegin)
    stepBegin();
}

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
// The C ABI: start, end, ranks, program check
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
  SetupWatchdog watchdog("spmdInit (NCCL id exchange, ncclCommInitRank)",
                         r.timeout);
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

// NCCL has no side channel here for a rank that leaves: the communication
// stream's watchdog (SPMD_TIMEOUT, failed peers) ends the job instead.
void spmdAnnounceLeaving(const char *) {}

void spmdSetStep(int64_t) {}

void spmdUseStore(SpmdStoreSet set, SpmdStoreGet get, SpmdStoreWait wait) {
  if (rt().initialized)
    spmd::gpu::fail("spmdUseStore", "called after spmdInit");
  spmd::runtime::hostStore() = {set, get, wait};
}

int32_t spmdIsInitialized(void) { return rt().initialized ? 1 : 0; }

const char *spmdBackendName(void) { return "NCCL"; }

// The host's share of the node's cores, as libSpmdRuntime's (the GPU
// runtime runs no BLAS of its own; the bridge sizes torch's threads by it).
int32_t spmdThreads(void) { return spmd::runtime::threadBudget().threads; }

int32_t spmdWorldRank(void) {
  spmdInit();
  return rt().rank;
}

int32_t spmdWorldSize(void) {
  spmdInit();
  return rt().size;
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

} // extern "C"

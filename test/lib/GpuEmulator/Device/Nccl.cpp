//===- Nccl.cpp - the NCCL functions, emulated on MPI ---------------------===//
//
// The NCCL API libSpmdGpuRuntime uses, as libnccl.so.2 (see Emulator.h):
// one MPI process per rank (launch the program with mpirun; the runtime
// takes its rank from Open MPI's environment), a communicator per NCCL
// communicator, MPI_Comm_split for ncclCommSplit. Operations run on the
// emulated streams in order, as non-blocking MPI calls that hold their
// stream until they complete (a query meanwhile answers "not ready"); inside
// ncclGroupStart/End they are held and enqueued together at the group's end (as
// NCCL launches a group), the group's sends and receives as one exchange.
// Buffers must be device memory.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"
#include "HalfFloat.h"
#include "OpenMpiDefaults.h"

#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct ncclComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
};

namespace {

/// One operation of a group: a collective, or one side of a send/receive.
struct Op {
  CUstream stream;
  /// A collective: posts its non-blocking MPI call; `finish` runs when it
  /// completes.
  std::function<MPI_Request()> collective;
  std::function<void()> finish;
  // Point-to-point: posted together, completed together.
  bool isSend = false, isRecv = false;
  void *buffer = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  int peer = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

int groupDepth = 0;
std::vector<Op> pending;

void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

void ensureMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return;
  spmd::runtime::chooseOpenMpiDefaults();
  MPI_Init(nullptr, nullptr);
  std::atexit(finalizeMpi);
}

MPI_Datatype mpiType(ncclDataType_t t) {
  switch (t) {
  case ncclFloat32:
    return MPI_FLOAT;
  case ncclFloat64:
    return MPI_DOUBLE;
  case ncclInt32:
    return MPI_INT32_T;
  case ncclInt64:
    return MPI_INT64_T;
  case ncclBfloat16:
  case ncclFloat16:
    return MPI_UINT16_T; // moved; reductions widen to float first
  case ncclUint8:
    return MPI_UINT8_T;
  default:
    spmd::emu::fail("NCCL: element type not emulated");
  }
}

size_t typeBytes(ncclDataType_t t) {
  if (t == ncclUint8)
    return 1;
  if (t == ncclBfloat16 || t == ncclFloat16)
    return 2;
  return t == ncclFloat64 || t == ncclInt64 ? 8 : 4;
}

bool isHalf(ncclDataType_t t) { return t == ncclBfloat16 || t == ncclFloat16; }

/// A 16-bit float reduction's float32 buffer: filled from the input when the
/// stream reaches the collective, rounded into the output when it completes
/// (NCCL reduces 16-bit floats itself; MPI cannot).
struct Widened {
  std::vector<float> data;
  std::vector<float> out;
};

MPI_Op mpiOp(ncclRedOp_t op) {
  switch (op) {
  case ncclSum:
  case ncclAvg: // sum, then divided
    return MPI_SUM;
  case ncclProd:
    return MPI_PROD;
  case ncclMax:
    return MPI_MAX;
  case ncclMin:
    return MPI_MIN;
  default:
    spmd::emu::fail("NCCL: reduction not emulated");
  }
}

void divide(void *data, size_t count, ncclDataType_t t, int by) {
  switch (t) {
  case ncclFloat32:
    for (size_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] /= float(by);
    return;
  case ncclFloat64:
    for (size_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= double(by);
    return;
  case ncclInt32:
    for (size_t i = 0; i < count; ++i)
      static_cast<int32_t *>(data)[i] /= by;
    return;
  default:
    for (size_t i = 0; i < count; ++i)
      static_cast<int64_t *>(data)[i] /= by;
  }
}

void requireDevice(const void *p, size_t bytes, const char *op) {
  if (bytes && !spmd::emu::isDeviceMemory(p, bytes))
    spmd::emu::fail(std::string(op) + ": buffer is not device memory");
}

/// The operations of one group (or a single operation) on their stream.
struct Running {
  std::vector<Op> ops;
  std::vector<MPI_Request> requests;
  bool posted = false;
};

/// Posts every operation of the group on its first call (sends and receives,
/// then the collectives in order, all non-blocking) and reports whether all
/// have completed: like NCCL's kernels, a group whose peers have not come
/// holds its stream without holding the host.
bool progress(Running &group) {
  if (!group.posted) {
    for (Op &op : group.ops) {
      MPI_Request r;
      if (op.isSend) {
        MPI_Isend(op.buffer, op.count, op.type, op.peer, 0, op.comm, &r);
        group.requests.push_back(r);
      } else if (op.isRecv) {
        MPI_Irecv(op.buffer, op.count, op.type, op.peer, 0, op.comm, &r);
        group.requests.push_back(r);
      }
    }
    for (Op &op : group.ops)
      if (op.collective)
        group.requests.push_back(op.collective());
    group.posted = true;
  }
  int done = 0;
  MPI_Testall(static_cast<int>(group.requests.size()), group.requests.data(),
              &done, MPI_STATUSES_IGNORE);
  if (!done)
    return false;
  for (Op &op : group.ops)
    if (op.finish)
      op.finish();
  // Ready to run again: a captured group runs at every graph launch.
  group.posted = false;
  group.requests.clear();
  return true;
}

void flush(std::vector<Op> ops) {
  if (ops.empty())
    return;
  CUstream stream = ops.front().stream;
  for (Op &op : ops)
    if (op.stream != stream)
      spmd::emu::fail("NCCL: a group over several streams is not emulated");
  auto group = std::make_shared<Running>();
  group->ops = std::move(ops);
  spmd::emu::enqueuePolled(stream, [group] { return progress(*group); });
}

ncclResult_t submit(Op op) {
  spmd::emu::count(spmd::emu::Count::Collective);
  if (groupDepth > 0) {
    pending.push_back(std::move(op));
    return ncclSuccess;
  }
  flush({std::move(op)});
  return ncclSuccess;
}

ncclResult_t collective(CUstream stream, std::function<MPI_Request()> start,
                        std::function<void()> finish = {}) {
  Op op;
  op.stream = stream;
  op.collective = std::move(start);
  op.finish = std::move(finish);
  return submit(std::move(op));
}

/// A reduction (all-reduce, reduce-scatter) of `sendCount` elements into
/// `recvCount`, as NCCL computes it: 16-bit floats widened to f32 for the
/// reduction and narrowed back once it is done (MPI does not sum them),
/// ncclAvg a sum divided by the group size. `start` begins the MPI
/// reduction on (input, output, MPI type).
ncclResult_t reduction(
    cudaStream_t stream, const void *send, void *recv, size_t sendCount,
    size_t recvCount, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
    std::function<MPI_Request(const void *, void *, MPI_Datatype)> start) {
  auto average = [=](void *out, ncclDataType_t t) {
    if (op == ncclAvg)
      divide(out, recvCount, t, comm->size);
  };
  if (isHalf(type)) {
    auto wide = std::make_shared<Widened>();
    bool brain = type == ncclBfloat16;
    return collective(
        reinterpret_cast<CUstream>(stream),
        [=] {
          wide->data.resize(sendCount);
          wide->out.resize(recvCount);
          spmd::runtime::widen(send, wide->data.data(), sendCount, brain);
          return start(wide->data.data(), wide->out.data(), MPI_FLOAT);
        },
        [=] {
          average(wide->out.data(), ncclFloat32);
          spmd::runtime::narrow(wide->out.data(), recv, recvCount, brain);
        });
  }
  return collective(
      reinterpret_cast<CUstream>(stream),
      [=] { return start(send, recv, mpiType(type)); },
      [=] { average(recv, type); });
}

} // namespace

extern "C" {

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument (emulated NCCL)";
  case ncclInvalidUsage:
    return "invalid usage (emulated NCCL)";
  default:
    return "error (emulated NCCL)";
  }
}

/// How an emulated NCCL id starts.
constexpr char kIdPrefix[] = "spmd-emulated-nccl";

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  // Unique per call, as NCCL's (a host and port): an id that did not reach
  // a rank intact (a broken exchange) is caught by ncclCommInitRank.
  static unsigned calls = 0;
  std::memset(id, 0, sizeof(*id));
  std::snprintf(id->internal, sizeof(id->internal), "%s pid %ld call %u",
                kIdPrefix, static_cast<long>(getpid()), ++calls);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  ensureMpi();
  int mpiRank = 0, mpiSize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpiSize);
  if (mpiRank != rank || mpiSize != nranks)
    spmd::emu::fail("ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                    std::to_string(nranks) + ", but MPI has rank " +
                    std::to_string(mpiRank) + " of " + std::to_string(mpiSize) +
                    " (the emulated NCCL runs on MPI: launch with mpirun)");
  // Every rank must have been given rank 0's id.
  ncclUniqueId first = id;
  MPI_Bcast(&first, sizeof(first), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (std::strncmp(id.internal, kIdPrefix, sizeof(kIdPrefix) - 1) != 0 ||
      std::memcmp(&first, &id, sizeof(id)) != 0)
    spmd::emu::fail("ncclCommInitRank: rank " + std::to_string(rank) +
                    " was given another id than rank 0 (the bootstrap did "
                    "not hand rank 0's id over)");
  auto *c = new ncclComm;
  MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  c->rank = rank;
  c->size = nranks;
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *) {
  if (groupDepth > 0)
    return ncclInvalidUsage;
  auto *c = new ncclComm;
  MPI_Comm_split(comm->comm,
                 color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key,
                 &c->comm);
  if (c->comm == MPI_COMM_NULL) {
    delete c;
    *newcomm = nullptr;
    return ncclSuccess;
  }
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  *newcomm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = comm->size;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  // Operations still queued may use it: the MPI communicator is kept.
  (void)comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // The runtime aborts before it exits with an error; the process ends
  // right after, so nothing is released here.
  (void)comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *error) {
  *error = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (groupDepth <= 0)
    return ncclInvalidUsage;
  if (--groupDepth == 0) {
    std::vector<Op> ops;
    ops.swap(pending);
    flush(std::move(ops));
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t bytes = count * typeBytes(type);
  requireDevice(send, bytes, "ncclAllReduce");
  requireDevice(recv, bytes, "ncclAllReduce");
  return reduction(stream, send, recv, count, count, type, op, comm,
                   [=](const void *in, void *out, MPI_Datatype t) {
                     MPI_Request r;
                     MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                                    int(count), t, mpiOp(op), comm->comm, &r);
                     return r;
                   });
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                           ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t bytes = count * typeBytes(type);
  requireDevice(recv, bytes, "ncclBroadcast");
  if (comm->rank == root)
    requireDevice(send, bytes, "ncclBroadcast");
  return collective(reinterpret_cast<CUstream>(stream), [=] {
    if (comm->rank == root && send != recv)
      std::memcpy(recv, send, bytes);
    MPI_Request r;
    MPI_Ibcast(recv, int(count), mpiType(type), root, comm->comm, &r);
    return r;
  });
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t bytes = count * typeBytes(type);
  requireDevice(send, bytes, "ncclAllGather");
  requireDevice(recv, bytes * comm->size, "ncclAllGather");
  return collective(reinterpret_cast<CUstream>(stream), [=] {
    bool inPlace = static_cast<const char *>(recv) + comm->rank * bytes == send;
    MPI_Request r;
    MPI_Iallgather(inPlace ? MPI_IN_PLACE : send, int(count), mpiType(type),
                   recv, int(count), mpiType(type), comm->comm, &r);
    return r;
  });
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  size_t bytes = count * typeBytes(type);
  requireDevice(send, bytes * comm->size, "ncclReduceScatter");
  requireDevice(recv, bytes, "ncclReduceScatter");
  return reduction(stream, send, recv, count * comm->size, count, type, op,
                   comm, [=](const void *in, void *out, MPI_Datatype t) {
                     MPI_Request r;
                     MPI_Ireduce_scatter_block(in, out, int(count), t,
                                               mpiOp(op), comm->comm, &r);
                     return r;
                   });
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  requireDevice(send, count * typeBytes(type), "ncclSend");
  Op op;
  op.stream = reinterpret_cast<CUstream>(stream);
  op.isSend = true;
  op.buffer = const_cast<void *>(send);
  op.count = int(count);
  op.type = mpiType(type);
  op.peer = peer;
  op.comm = comm->comm;
  return submit(std::move(op));
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  requireDevice(recv, count * typeBytes(type), "ncclRecv");
  Op op;
  op.stream = reinterpret_cast<CUstream>(stream);
  op.isRecv = true;
  op.buffer = recv;
  op.count = int(count);
  op.type = mpiType(type);
  op.peer = peer;
  op.comm = comm->comm;
  return submit(std::move(op));
}

} // extern "C"

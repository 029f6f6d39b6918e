//===- MpiBackend.cpp - the runtime's collectives over MPI ----------------===//
//
// Non-blocking MPI collectives (MPI_Iallreduce, ...) on communicators split
// from MPI_COMM_WORLD. MPI is initialized here unless the host already did
// (and then finalized here too).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "OpenMpiDefaults.h"
#include "SetupWatchdog.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace spmd::runtime {
namespace {

class MpiGroup : public Group {
public:
  explicit MpiGroup(MPI_Comm comm, bool owned) : comm(comm), owned(owned) {
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    // The ring reduce-scatter's messages on a communicator of their own:
    // they never match another collective's.
    MPI_Comm_dup(comm, &ring);
  }
  ~MpiGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    if (ring != MPI_COMM_NULL)
      MPI_Comm_free(&ring);
    if (owned)
      MPI_Comm_free(&comm);
  }
  MPI_Comm comm;
  bool owned;
  MPI_Comm ring = MPI_COMM_NULL;
  /// Tags of this group's ring collectives (every rank starts them in the
  /// same order, so a message matches its own collective's receive).
  int nextRingTag = 0;
};

std::string describe(int code, const char *what);

/// A collective the backend runs itself as a ring of point-to-point steps
/// (each rank sends to the next and receives from the previous), where Open
/// MPI's non-blocking collectives (libnbc) take temporaries of the whole
/// buffer or twice it: 168 MiB per GPT-2 gradient bucket all-reduced, 336
/// MiB per bucket reduce-scattered, on top of the step's peak. Each
/// `advance` (the runtime's polling) checks the step in flight and starts
/// the next.
class Ring {
public:
  Ring(MpiGroup &group, MPI_Datatype type, size_t elem, MPI_Op op)
      : comm(group.ring), n(group.size), rank(group.rank), type(type),
        elem(elem), op(op), tag(group.nextRingTag++ % 32768) {}
  virtual ~Ring() = default;

  /// Starts the first step; false with `error` set when MPI refuses.
  virtual bool start(std::string &error) = 0;
  /// Whether the collective is complete; false with `error` set on failure.
  bool advance(std::string &error) {
    if (finished)
      return true;
    int done = 0;
    int code = MPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      error = describe(code, "MPI_Testall (ring)");
      return false;
    }
    if (done)
      finished = stepDone(error);
    return finished;
  }

protected:
  /// The step in flight completed: finish it and start the next (false),
  /// or end (true).
  virtual bool stepDone(std::string &error) = 0;

  /// (r + offset) mod n.
  int around(int offset) const { return ((rank + offset) % n + n) % n; }

  /// Sends `sendCount` elements to the next rank and receives `recvCount`
  /// from the previous one.
  bool post(const void *send, int sendCount, void *recv, int recvCount,
            std::string &error) {
    int code =
        MPI_Irecv(recv, recvCount, type, around(-1), tag, comm, &requests[0]);
    if (code == MPI_SUCCESS)
      code =
          MPI_Isend(send, sendCount, type, around(1), tag, comm, &requests[1]);
    if (code != MPI_SUCCESS) {
      error = describe(code, "MPI_Isend/MPI_Irecv (ring)");
      return false;
    }
    return true;
  }

  MPI_Comm comm;
  int n, rank;
  MPI_Datatype type;
  size_t elem;
  MPI_Op op;
  int tag;
  int step = 0;

private:
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  bool finished = false;
};

/// Reduce-scatter: in step s, rank r sends the partial sum of chunk
/// (r - s - 1) mod n and receives that of chunk (r - s - 2) mod n, adding
/// its own input's chunk to it; after n - 1 steps it holds its own chunk.
/// Step 0 sends the input's chunk as it is and the last step receives into
/// the output (reduced there in place): no temporary on 2 ranks, two chunks
/// on more.
class RingReduceScatter : public Ring {
public:
  RingReduceScatter(MpiGroup &group, const void *in, void *out, size_t chunk,
                    MPI_Datatype type, size_t elem, MPI_Op op)
      : Ring(group, type, elem, op), in(static_cast<const char *>(in)),
        out(static_cast<char *>(out)), count(static_cast<int>(chunk)),
        bytes(chunk * elem) {
    // The output may not be part of the input: its own chunk is read last.
    outInInput = this->out<this->in + bytes * n &&this->out + bytes> this->in;
    if (n > 2 || outInInput) {
      partial.resize(bytes);
      incoming.resize(bytes);
    }
  }

  bool start(std::string &error) override {
    return post(in + chunkOf(-1) * bytes, count, receiveTarget(), count, error);
  }

private:
  bool stepDone(std::string &error) override {
    // What arrived += this rank's own input chunk.
    char *arrived = receiveTarget();
    MPI_Reduce_local(in + chunkOf(-2) * bytes, arrived, count, type, op);
    if (step == n - 2) {
      if (arrived != out)
        std::memcpy(out, arrived, bytes);
      return true;
    }
    std::swap(partial, incoming);
    ++step;
    post(partial.data(), count, receiveTarget(), count, error);
    return false;
  }
  /// The chunk that this step handles, `offset` behind this rank.
  int64_t chunkOf(int offset) const { return around(offset - step); }
  /// Where this step's partial arrives: the output in the last step.
  char *receiveTarget() {
    return step == n - 2 && !outInInput ? out : incoming.data();
  }

  const char *in;
  char *out;
  int count;
  size_t bytes;
  bool outInInput = false;
  std::vector<char> partial, incoming;
};

/// All-reduce into the output buffer: a ring reduce-scatter over the
/// buffer's n segments (step s sends segment (r - s) mod n, the input's own
/// in step 0, and receives segment (r - s - 1) mod n, adds the input's to
/// it and stores it in the output), after which rank r holds segment
/// (r + 1) mod n reduced; then a ring all-gather (step s sends segment
/// (r + 1 - s) mod n, receives segment (r - s) mod n in place). Partials
/// arrive in the output and are reduced there: no temporary memory (one
/// segment, 1/n of the buffer, when the input overlaps the output). Every
/// rank ends with the same bits (each segment is reduced once, then
/// copied).
class RingAllReduce : public Ring {
public:
  RingAllReduce(MpiGroup &group, const void *in, void *out, size_t count,
                MPI_Datatype type, size_t elem, MPI_Op op)
      : Ring(group, type, elem, op), in(static_cast<const char *>(in)),
        out(static_cast<char *>(out)), count(count),
        segment((count + n - 1) / n) {
    if (this->out < this->in + count * elem &&
        this->in < this->out + count * elem)
      incoming.resize(segment * elem);
  }

  bool start(std::string &error) override { return postStep(error); }

private:
  /// Elements of segment k (the last ones may be short or empty), and where
  /// it starts in `base`.
  int size(int64_t k) const {
    int64_t begin = std::min<int64_t>(k * segment, count);
    return static_cast<int>(std::min<int64_t>(begin + segment, count) - begin);
  }
  template <typename T> T *at(T *base, int64_t k) const {
    return base + std::min<int64_t>(k * segment, count) * elem;
  }
  bool gathering() const { return step >= n - 1; }
  /// Where segment k's partial arrives: its place in the output, unless
  /// that is the input too.
  char *partialTarget(int64_t k) {
    return incoming.empty() ? at(out, k) : incoming.data();
  }

  bool postStep(std::string &error) {
    if (!gathering()) {
      int send = around(-step), recv = around(-step - 1);
      const char *from = step == 0 ? at(in, send) : at(out, send);
      return post(from, size(send), partialTarget(recv), size(recv), error);
    }
    int s = step - (n - 1);
    int send = around(1 - s), recv = around(-s);
    return post(at(out, send), size(send), at(out, recv), size(recv), error);
  }
  bool stepDone(std::string &error) override {
    if (!gathering()) {
      // The partial that arrived += the input's segment, in the output.
      int recv = around(-step - 1);
      char *arrived = partialTarget(recv);
      MPI_Reduce_local(at(in, recv), arrived, size(recv), type, op);
      if (arrived != at(out, recv))
        std::memcpy(at(out, recv), arrived, size(recv) * elem);
    }
    if (++step == 2 * (n - 1))
      return true;
    postStep(error);
    return false;
  }

  const char *in;
  char *out;
  int64_t count, segment;
  std::vector<char> incoming;
};

class MpiRequest : public Request {
public:
  MPI_Request request = MPI_REQUEST_NULL;
  /// A collective the backend runs itself (instead of `request`).
  std::unique_ptr<Ring> ring;
  /// Why the start failed (the test reports it).
  std::string error;
};

/// The MPI error text of `code` after `what`.
std::string describe(int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(what) + " failed: " + text;
}

MPI_Datatype mpiType(int32_t dtype) {
  switch (dtype) {
  case SPMD_F64:
    return MPI_DOUBLE;
  case SPMD_I32:
    return MPI_INT32_T;
  case SPMD_I64:
    return MPI_INT64_T;
  case SPMD_BF16:
  case SPMD_F16:
    return MPI_UINT16_T; // moved, never reduced (the runtime widens first)
  case SPMD_BOOL:
    return MPI_UINT8_T;
  default:
    return MPI_FLOAT;
  }
}

/// All-reduces and reduce-scatters of at least this many input bytes run
/// as a Ring; smaller ones (latency-bound) as Open MPI's own.
constexpr size_t kRingBytes = size_t(1) << 20;

MPI_Op mpiOp(int32_t kind) {
  switch (kind) {
  case SPMD_MAX:
    return MPI_MAX;
  case SPMD_MIN:
    return MPI_MIN;
  case SPMD_PROD:
    return MPI_PROD;
  default: // SPMD_SUM, SPMD_AVG (divided afterwards)
    return MPI_SUM;
  }
}

class MpiBackend : public Backend {
public:
  MpiBackend(bool ownsMpi)
      : ownsMpi(ownsMpi), worldGroup(MPI_COMM_WORLD, false) {
    // Notices of ranks that leave come on a communicator of their own, so
    // that they never match a collective's messages.
    if (MPI_Comm_dup(MPI_COMM_WORLD, &notices) == MPI_SUCCESS)
      MPI_Irecv(notice, sizeof(notice) - 1, MPI_CHAR, MPI_ANY_SOURCE, 0,
                notices, &noticeRecv);
  }

  const char *name() const override { return "MPI"; }
  int worldRank() const override { return worldGroup.rank; }
  int worldSize() const override { return worldGroup.size; }
  Group &world() override { return worldGroup; }

  std::unique_ptr<Group> join(int64_t color, int64_t key, int,
                              const std::string &) override {
    MPI_Comm comm;
    if (MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                       static_cast<int>(key), &comm) != MPI_SUCCESS)
      return nullptr;
    return std::make_unique<MpiGroup>(comm, true);
  }

  template <typename Start>
  std::unique_ptr<Request> start(const char *what, Start &&fn) {
    auto r = std::make_unique<MpiRequest>();
    int code = fn(&r->request);
    if (code != MPI_SUCCESS)
      r->error = describe(code, what);
    return r;
  }

  static MPI_Comm comm(Group &g) { return static_cast<MpiGroup &>(g).comm; }

  /// Whether a collective of `bytes` whose messages hold `messageCount`
  /// elements runs as a Ring on `group`.
  static bool useRing(MpiGroup &group, size_t bytes, size_t messageCount) {
    return group.size > 1 && group.ring != MPI_COMM_NULL &&
           bytes >= kRingBytes && messageCount <= size_t(INT32_MAX);
  }

  /// A request that runs `ring`, started.
  static std::unique_ptr<Request> startRing(std::unique_ptr<Ring> ring) {
    auto r = std::make_unique<MpiRequest>();
    ring->start(r->error);
    r->ring = std::move(ring);
    return r;
  }

  std::unique_ptr<Request> allReduce(Group &g, const void *in, void *out,
                                     size_t count, int32_t dtype,
                                     int32_t kind) override {
    auto &group = static_cast<MpiGroup &>(g);
    size_t elem = elementSize(dtype);
    if (useRing(group, count * elem, (count + group.size - 1) / group.size))
      return startRing(std::make_unique<RingAllReduce>(
          group, in, out, count, mpiType(dtype), elem, mpiOp(kind)));
    return start("MPI_Iallreduce", [&](MPI_Request *r) {
      return MPI_Iallreduce(in, out, static_cast<int>(count), mpiType(dtype),
                            mpiOp(kind), comm(g), r);
    });
  }
  std::unique_ptr<Request> allGather(Group &g, const void *in, void *out,
                                     size_t chunk, int32_t dtype) override {
    return start("MPI_Iallgather", [&](MPI_Request *r) {
      return MPI_Iallgather(in, static_cast<int>(chunk), mpiType(dtype), out,
                            static_cast<int>(chunk), mpiType(dtype), comm(g),
                            r);
    });
  }
  std::unique_ptr<Request> reduceScatter(Group &g, const void *in, void *out,
                                         size_t chunk, int32_t dtype,
                                         int32_t kind) override {
    auto &group = static_cast<MpiGroup &>(g);
    size_t elem = elementSize(dtype);
    if (useRing(group, chunk * elem * group.size, chunk))
      return startRing(std::make_unique<RingReduceScatter>(
          group, in, out, chunk, mpiType(dtype), elem, mpiOp(kind)));
    return start("MPI_Ireduce_scatter_block", [&](MPI_Request *r) {
      return MPI_Ireduce_scatter_block(in, out, static_cast<int>(chunk),
                                       mpiType(dtype), mpiOp(kind), comm(g), r);
    });
  }
  std::unique_ptr<Request> allToAll(Group &g, const void *in, void *out,
                                    size_t chunk, int32_t dtype) override {
    return start("MPI_Ialltoall", [&](MPI_Request *r) {
      return MPI_Ialltoall(in, static_cast<int>(chunk), mpiType(dtype), out,
                           static_cast<int>(chunk), mpiType(dtype), comm(g), r);
    });
  }
  std::unique_ptr<Request> broadcast(Group &g, void *data, size_t count,
                                     int32_t dtype, int root) override {
    return start("MPI_Ibcast", [&](MPI_Request *r) {
      return MPI_Ibcast(data, static_cast<int>(count), mpiType(dtype), root,
                        comm(g), r);
    });
  }
  std::unique_ptr<Request> barrier(Group &g) override {
    return start("MPI_Ibarrier",
                 [&](MPI_Request *r) { return MPI_Ibarrier(comm(g), r); });
  }

  bool test(Request &request, std::string &error) override {
    auto &r = static_cast<MpiRequest &>(request);
    if (!r.error.empty()) {
      error = r.error;
      return false;
    }
    if (r.ring)
      return r.ring->advance(error);
    int done = 0;
    int code = MPI_Test(&r.request, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) {
      error = describe(code, "MPI_Test");
      return false;
    }
    return done;
  }

  void announceLeaving(const std::string &why) override {
    if (notices == MPI_COMM_NULL)
      return;
    std::string text = why.substr(0, sizeof(notice) - 2);
    for (int peer = 0; peer < worldGroup.size; ++peer) {
      if (peer == worldGroup.rank)
        continue;
      // Small: sent eagerly; freed here, completed by MPI in the background.
      MPI_Request request;
      if (MPI_Isend(text.c_str(), static_cast<int>(text.size() + 1), MPI_CHAR,
                    peer, 0, notices, &request) == MPI_SUCCESS)
        MPI_Request_free(&request);
    }
  }

  bool peerLeft(int &rank, std::string &why) override {
    if (leftRank < 0 && noticeRecv != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Status status;
      if (MPI_Test(&noticeRecv, &done, &status) == MPI_SUCCESS && done)
        leftRank = status.MPI_SOURCE;
    }
    if (leftRank < 0)
      return false;
    rank = leftRank;
    why = notice;
    return true;
  }

  [[noreturn]] void abortJob() override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

  void finalize() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    if (noticeRecv != MPI_REQUEST_NULL) {
      MPI_Cancel(&noticeRecv);
      MPI_Wait(&noticeRecv, MPI_STATUS_IGNORE);
    }
    if (ownsMpi)
      MPI_Finalize();
  }

private:
  bool ownsMpi;
  MpiGroup worldGroup;
  /// A duplicate of the world for leave notices, the receive posted for
  /// the next one, its text, and the rank it came from (-1: none yet).
  MPI_Comm notices = MPI_COMM_NULL;
  MPI_Request noticeRecv = MPI_REQUEST_NULL;
  char notice[512] = {};
  int leftRank = -1;
};

} // namespace

std::unique_ptr<Backend> createMpiBackend(double timeoutSeconds,
                                          std::string &error) {
  int up = 0;
  MPI_Initialized(&up);
  bool owns = false;
  if (!up) {
    int provided = 0;
    chooseOpenMpiDefaults();
    // MPI_Init waits for every rank of the job: one that never starts
    // would hang it.
    SetupWatchdog watchdog("spmdInit (MPI_Init_thread)", timeoutSeconds,
                           failSetup);
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      error = "MPI_Init_thread failed";
      return nullptr;
    }
    owns = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiBackend>(owns);
}

} // namespace spmd::runtime

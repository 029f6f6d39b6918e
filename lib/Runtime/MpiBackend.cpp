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

#include <cstdio>
#include <cstdlib>

namespace spmd::runtime {
namespace {

class MpiGroup : public Group {
public:
  explicit MpiGroup(MPI_Comm comm, bool owned) : comm(comm), owned(owned) {
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
  }
  ~MpiGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned && !finalized)
      MPI_Comm_free(&comm);
  }
  MPI_Comm comm;
  bool owned;
};

class MpiRequest : public Request {
public:
  MPI_Request request = MPI_REQUEST_NULL;
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

  std::unique_ptr<Request> allReduce(Group &g, const void *in, void *out,
                                     size_t count, int32_t dtype,
                                     int32_t kind) override {
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

//===- Backend.h - the transports of the CPU runtime ------------*- C++ -*-===//
//
// libSpmdRuntime's C ABI (SpmdRuntime.cpp) packs and unpacks buffers, checks
// calls and keeps the state registry; a Backend moves the bytes. Two exist:
// MPI (MpiBackend.cpp, for mpirun) and Gloo (GlooBackend.cpp, for torchrun:
// the library torch.distributed's CPU backend uses). Every collective is
// non-blocking: it starts on buffers the runtime owns until `test` reports it
// done, and runs on a group of ranks (one group per mesh and axes).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_BACKEND_H
#define SPMD_RUNTIME_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spmd::runtime {

/// The ranks of one group, as a backend joined them.
class Group {
public:
  virtual ~Group() = default;
  int size = 1; ///< ranks in the group
  int rank = 0; ///< this rank's position in it
};

/// A started collective; `Backend::test` polls it.
class Request {
public:
  virtual ~Request() = default;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "MPI", "Gloo": what messages call it.
  virtual const char *name() const = 0;
  virtual int worldRank() const = 0;
  virtual int worldSize() const = 0;

  /// The group of the ranks that pass the same `color` (every rank of the
  /// world calls this together), ordered by `key`; `size` ranks join it.
  /// `label` names it uniquely among this job's groups.
  virtual std::unique_ptr<Group> join(int64_t color, int64_t key, int size,
                                      const std::string &label) = 0;
  /// The group of every rank of the world.
  virtual Group &world() = 0;

  /// Collectives on contiguous buffers of `count` elements of `dtype` (an
  /// SpmdDType) reduced with `kind` (an SpmdReduction, SPMD_AVG as a sum).
  /// Gather and scatter move `chunk` elements to or from each rank, in group
  /// order; all_to_all sends chunk k to rank k.
  virtual std::unique_ptr<Request> allReduce(Group &g, const void *in,
                                             void *out, size_t count,
                                             int32_t dtype, int32_t kind) = 0;
  virtual std::unique_ptr<Request> allGather(Group &g, const void *in,
                                             void *out, size_t chunk,
                                             int32_t dtype) = 0;
  virtual std::unique_ptr<Request> reduceScatter(Group &g, const void *in,
                                                 void *out, size_t chunk,
                                                 int32_t dtype,
                                                 int32_t kind) = 0;
  virtual std::unique_ptr<Request> allToAll(Group &g, const void *in, void *out,
                                            size_t chunk, int32_t dtype) = 0;
  virtual std::unique_ptr<Request> broadcast(Group &g, void *data, size_t count,
                                             int32_t dtype, int root) = 0;
  virtual std::unique_ptr<Request> barrier(Group &g) = 0;

  /// Whether `request` completed; false with `error` set when it failed.
  virtual bool test(Request &request, std::string &error) = 0;

  /// Tells every other rank, without waiting, that this one leaves the job
  /// and why (`why`: one line). A backend without a side channel for it
  /// says nothing (its peers then meet the timeout or a failed transport).
  virtual void announceLeaving(const std::string &why) {}
  /// Whether another rank announced that it left (announceLeaving): which
  /// rank, and why.
  virtual bool peerLeft(int &rank, std::string &why) { return false; }
  /// After a collective failed on `error` (the transport's own failure):
  /// whether a rank announced that it left, waiting up to `seconds` for the
  /// announcement (a rank's sockets may close just before its notice is
  /// seen). Backends whose transport fails when a peer exits (Gloo) name
  /// the rank this way; the default asks peerLeft once.
  virtual bool leftBefore(const std::string &error, double seconds, int &rank,
                          std::string &why) {
    return peerLeft(rank, why);
  }

  /// Publishes that this rank has been waiting in a collective for a while
  /// (`waiting`), or that that wait ended, where the backend has a side
  /// channel for it; a rank that times out then tells which ranks were not
  /// waiting with it (notWaiting).
  virtual void noteLongWait(bool waiting) {}
  /// Of `ranks` (world ranks), those that published no long wait: not in a
  /// collective for a while, so hanging or elsewhere. Empty when the
  /// backend cannot tell.
  virtual std::vector<int64_t> notWaiting(const std::vector<int64_t> &ranks) {
    return {};
  }

  /// Takes every rank of the job down (never returns).
  [[noreturn]] virtual void abortJob() = 0;
  /// Ends the backend (the runtime then reports itself uninitialized).
  virtual void finalize() = 0;
};

/// The MPI backend: joins (or initializes, under `timeoutSeconds`)
/// MPI_COMM_WORLD.
std::unique_ptr<Backend> createMpiBackend(double timeoutSeconds,
                                          std::string &error);
/// Ends this process with a set-up error before any backend exists (what
/// SetupWatchdog calls; the launcher then ends the other ranks).
[[noreturn]] void failSetup(const char *call, const char *message);
/// The Gloo backend over the store the host registered (spmdUseStore), else
/// the directory SPMD_GLOO_STORE names; rank and size from RANK/WORLD_SIZE
/// (torchrun) or Open MPI's OMPI_COMM_WORLD_RANK/SIZE. Null with `error` set
/// when it cannot start (or the runtime was built without Gloo).
std::unique_ptr<Backend> createGlooBackend(double timeoutSeconds,
                                           std::string &error);

/// Bytes of one element of an SpmdDType.
size_t elementSize(int32_t dtype);

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_BACKEND_H

//===- SpmdRuntime.cpp - collectives and state for spmd programs ----------===//
//
// The C ABI of libSpmdRuntime: packs chunks for the collectives, checks calls
// and timeouts, keeps the state registry. A Backend (Backend.h) moves the
// bytes: MPI under mpirun, Gloo under torchrun.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Runtime/SpmdRuntime.h"
#include "Trace.h"

#include "Backend.h"
#include "HalfFloat.h"
#include "HostMapping.h"
#include "JobChecks.h"
#include "MeshGroup.h"
#include "Progress.h"
#include "StateRegistry.h"
#include "ThreadBudget.h"

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using spmd::runtime::Backend;
using spmd::runtime::Group;
using spmd::runtime::Request;

namespace {

/// A started collective: its request, the runtime-owned buffers it reads or
/// fills (the caller's input may be freed right after the start), and what
/// to do into the caller's output when it completes.
struct Pending {
  Pending(const char *call, int64_t meshShape, int64_t axesMask,
          int64_t groupSize, int64_t bytes)
      : call(call), meshShape(meshShape), axesMask(axesMask), bytes(bytes),
        groupSize(groupSize) {}
  const char *call;
  int64_t meshShape, axesMask;
  /// For traces: bytes of this rank's input, the group's size, and when
  /// the collective started (0 when tracing was off).
  int64_t bytes = 0, groupSize = 1, startNs = 0;
  std::unique_ptr<Request> request;
  std::vector<char> send, recv;
  std::function<void(Pending &)> finish;
  /// What polling it while another collective was waited for found: it
  /// completed, or it failed (reported at its own wait).
  bool completed = false;
  std::string error;
};

struct Runtime {
  std::unique_ptr<Backend> backend;
  std::map<int64_t, Pending> pending;
  int64_t lastHandle = 0;
  bool initialized = false;
  /// The thread that initialized the runtime: the only one that calls the
  /// backend (MPI is initialized MPI_THREAD_FUNNELED).
  std::thread::id owner;
  /// SPMD_RUNTIME_CHECK=1: every collective first checks that all ranks of
  /// its group make the same call (kind, element type, sizes).
  bool checkCalls = false;
  /// SPMD_TIMEOUT: seconds a rank waits for the others in one collective
  /// before it takes the job down (<= 0: forever).
  double timeout = spmd::runtime::kDefaultTimeoutSeconds;
  /// Programs every rank has confirmed it runs too (spmdProgramCheck).
  std::set<uint64_t> checkedPrograms;
  int rank = 0;
  int size = 1;
  /// Threads this rank's BLAS runs (ThreadBudget.h); 0: the user's choice.
  int threads = 0;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Group>> groups;
  spmd::runtime::StateRegistry states;
  /// The step this rank is in (spmdSetStep; -1: never set), and whether it
  /// told the others it leaves (spmdAnnounceLeaving).
  int64_t step = -1;
  bool announced = false;
};

// OpenBLAS's thread control, when the BLAS linked is OpenBLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

Runtime &rt() {
  static Runtime runtime;
  return runtime;
}

[[noreturn]] void fail(const char *call, const char *fmt, ...) {
  char message[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  Runtime &r = rt();
  std::fprintf(stderr, "spmd runtime: rank %d: %s: %s\n",
               r.backend ? r.rank : -1, call, message);
  std::fflush(stderr);
  if (r.backend)
    r.backend->abortJob();
  std::_Exit(1); // no job to take down yet: this process ends
}

/// fail() with a ready message (the state registry's errors).
[[noreturn]] void failWith(const char *call, const std::string &message) {
  fail(call, "%s", message.c_str());
}

/// A zero-filled, 128-byte aligned buffer of `bytes` for a state, never
/// freed (the host's views of state live as long as the process). Large
/// ones are anonymous mappings (HostMapping.h): their pages cost memory
/// only once touched, as a library's `.bss` did.
void *allocateStateBuffer(int64_t bytes) {
  constexpr int64_t kAlignment = 128, kMapped = int64_t(1) << 16;
  auto size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  if (bytes >= kMapped)
    return spmd::runtime::mapZeroedPages(size, /*huge=*/false);
  size = (size + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, size);
  if (p)
    std::memset(p, 0, size);
  return p;
}

/// How far this rank got, for the messages that end the job.
std::string stepText(int64_t step) {
  return step >= 0 ? " (this rank has started " + std::to_string(step) +
                         " compiled steps)"
                   : "";
}

/// Who is missing from a collective this rank timed out in, and why that may
/// be: the other rank of a group of two, else the members that the backend
/// knows were not waiting in one, else "a rank".
std::string missingText(int64_t meshShape, int64_t axesMask) {
  Runtime &r = rt();
  std::vector<int64_t> others;
  for (int64_t member :
       spmd::runtime::groupMembers(meshShape, axesMask, r.rank))
    if (member != r.rank)
      others.push_back(member);
  std::vector<int64_t> missing =
      others.size() == 1 ? others : r.backend->notWaiting(others);
  const char *why = "stopped calling the step, hangs, crashed or runs "
                    "another program";
  if (missing.empty())
    return std::string("a rank ") + why;
  std::string ranks;
  for (int64_t m : missing)
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(m);
  bool one = missing.size() == 1;
  return (one ? "rank " : "ranks ") + ranks + (one ? " is" : " are") +
         " not in it (" + (one ? "it " : "they ") + why + ")";
}

/// Publishes a long wait (Backend::noteLongWait) once it passes a second
/// (half the timeout if that is shorter), and its end.
class LongWaitNote {
public:
  explicit LongWaitNote(double timeout)
      : after(timeout > 0 ? std::min(1.0, timeout / 2) : 1.0) {}
  ~LongWaitNote() {
    if (published)
      rt().backend->noteLongWait(false);
  }
  void waited(double seconds) {
    if (!published && seconds > after) {
      rt().backend->noteLongWait(true);
      published = true;
    }
  }

private:
  double after;
  bool published = false;
};

/// Polls every tracked collective but `awaited` once, without waiting (see
/// Progress.h); what it finds is kept for the collective's own wait.
void pollPending(const Pending *awaited) {
  Runtime &r = rt();
  for (auto &entry : r.pending) {
    Pending &p = entry.second;
    if (&p == awaited || p.completed || !p.error.empty())
      continue;
    p.completed = r.backend->test(*p.request, p.error);
  }
}

/// Waits for `request` (tracked as `awaited`, or untracked: null) for at
/// most the run's timeout; past it, the job ends with what was waited for.
/// Backends cannot time out a wait, so this polls, and it polls the other
/// collectives in flight with it, so that they progress too.
void waitTimed(Request &request, const char *call, int64_t meshShape,
               int64_t axesMask, Pending *awaited = nullptr) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Runtime &r = rt();
  double timeout = r.timeout;
  std::string error;
  // When another rank announced it left: since when. The wait goes on for
  // a grace period (the leaving rank may have sent its part of this very
  // collective before it left), then the job ends naming it.
  constexpr double kLeftGraceSeconds = 2;
  std::optional<Clock::time_point> leftSince;
  int leftRank = -1;
  std::string leftWhy;
  LongWaitNote note(timeout);
  auto endForLeft = [&]() -> void {
    std::string where = spmd::runtime::describeGroup(meshShape, axesMask);
    fail(call,
         "rank %d left the job (%s) while this rank waits for it in a "
         "collective of %s%s: ending the job",
         leftRank, leftWhy.c_str(), where.c_str(), stepText(r.step).c_str());
  };
  for (unsigned spins = 0;; ++spins) {
    if (awaited && awaited->completed)
      return;
    if (awaited && !awaited->error.empty())
      error = awaited->error;
    else if (r.backend->test(request, error))
      return;
    if (!error.empty()) {
      if (r.backend->leftBefore(error, kLeftGraceSeconds, leftRank, leftWhy))
        endForLeft();
      fail(call, "%s", error.c_str());
    }
    pollPending(awaited);
    // Spin first (a collective usually completes within microseconds),
    // then yield the core to the ranks it is waiting for.
    if (spins < 1024)
      continue;
    if (!leftSince && r.backend->peerLeft(leftRank, leftWhy))
      leftSince = Clock::now();
    if (leftSince &&
        std::chrono::duration<double>(Clock::now() - *leftSince).count() >
            kLeftGraceSeconds)
      endForLeft();
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    note.waited(waited);
    if (timeout > 0 && waited > timeout) {
      std::string where = spmd::runtime::describeGroup(meshShape, axesMask);
      std::string missing = missingText(meshShape, axesMask);
      fail(call,
           "timed out after %.1f s waiting for the other ranks of %s%s "
           "(SPMD_TIMEOUT=%g s): %s; no rank said it left",
           waited, where.c_str(), stepText(r.step).c_str(), timeout,
           missing.c_str());
    }
    std::this_thread::sleep_for(
        std::chrono::microseconds(spins < 4096 ? 1 : 50));
  }
}

/// Compiled programs initialize lazily; an explicit second spmdInit fails.
void ensureInit() {
  if (!rt().initialized)
    spmdInit();
}

void checkType(int32_t dtype, const char *call) {
  ensureInit(); // so that the error names this rank
  if (dtype < SPMD_F32 || dtype > SPMD_BOOL)
    fail(call, "unknown element type code %d", dtype);
}

/// Takes SPMD_INPUT_STAYS off `dtype`: whether the caller promised that the
/// input stays allocated and unwritten until the wait.
bool inputStays(int32_t &dtype) {
  bool stays = (dtype & SPMD_INPUT_STAYS) != 0;
  dtype &= ~int32_t(SPMD_INPUT_STAYS);
  return stays;
}

void checkKind(int32_t kind, const char *call) {
  if (kind < SPMD_SUM || kind > SPMD_PROD)
    fail(call, "unknown reduction kind %d", kind);
}

/// The group spanned by `axesMask` that this rank is in. Joined once per
/// (mesh, axes) and cached.
Group &groupOf(int64_t meshShape, int64_t axesMask, const char *call) {
  ensureInit();
  Runtime &r = rt();
  auto key = std::make_pair(meshShape, axesMask);
  auto it = r.groups.find(key);
  if (it != r.groups.end())
    return *it->second;
  spmd::runtime::GroupPosition g =
      spmd::runtime::groupPosition(meshShape, axesMask, r.rank);
  if (g.meshSize != r.size)
    fail(call, "the mesh has %lld ranks but the job has %d",
         static_cast<long long>(g.meshSize), r.size);
  std::vector<int64_t> shape = spmd::runtime::unpackMeshShape(meshShape);
  int groupSize = 1;
  for (size_t a = 0; a < shape.size(); ++a)
    if (axesMask & (int64_t(1) << a))
      groupSize *= static_cast<int>(shape[a]);
  // Joining blocks until every rank joins: a timed barrier first, so a rank
  // that never comes ends the job instead of hanging it.
  std::unique_ptr<Request> barrier = r.backend->barrier(r.backend->world());
  waitTimed(*barrier, call, meshShape, axesMask);
  std::string label =
      "mesh" + std::to_string(meshShape) + "/axes" + std::to_string(axesMask);
  std::unique_ptr<Group> group =
      r.backend->join(g.color, g.key, groupSize, label);
  if (!group)
    fail(call, "%s could not form the group of %s", r.backend->name(),
         spmd::runtime::describeGroup(meshShape, axesMask).c_str());
  return *r.groups.emplace(key, std::move(group)).first->second;
}

void *ptr(int64_t address) { return reinterpret_cast<void *>(address); }

/// Whether every rank of `group` passed the same `value` (one all_reduce of
/// the value and its complement under max, within the timeout).
bool sameOnAllRanks(Group &group, uint64_t value, const char *call,
                    int64_t meshShape = 0, int64_t axesMask = 0) {
  int64_t both[2] = {static_cast<int64_t>(value >> 1),
                     static_cast<int64_t>((~value) >> 1)};
  int64_t low[2] = {static_cast<int64_t>(value & 1),
                    static_cast<int64_t>((~value) & 1)};
  // Signed max over the 63 high bits and the low bit of v and ~v.
  int64_t packed[4] = {both[0], both[1], low[0], low[1]};
  int64_t result[4];
  std::unique_ptr<Request> request =
      rt().backend->allReduce(group, packed, result, 4, SPMD_I64, SPMD_MAX);
  waitTimed(*request, call, meshShape, axesMask);
  // max(v) == v and max(~v) == ~v, i.e. min(v) == v, for every rank's v.
  return std::memcmp(packed, result, sizeof(packed)) == 0;
}

/// In check mode, verifies that every rank of `group` is making the same
/// call; a mismatch would otherwise hang or corrupt memory.
void checkSameCall(Group &group, const char *call, int64_t meshShape,
                   int64_t axesMask, std::initializer_list<int64_t> fields) {
  if (!rt().checkCalls)
    return;
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    hash ^= v;
    hash *= 1099511628211ull;
  };
  for (const char *c = call; *c; ++c)
    mix(static_cast<unsigned char>(*c));
  for (int64_t f : fields)
    mix(static_cast<uint64_t>(f));
  if (!sameOnAllRanks(group, hash, call, meshShape, axesMask))
    fail(call, "the ranks of the group disagree on the call (collective kind, "
               "element type or sizes differ)");
}

/// What every collective's start begins with: the element type and, for a
/// reduction (`kind` >= 0), its kind checked, the group this rank is in,
/// and, with SPMD_RUNTIME_CHECK=1, the check that every rank of it makes
/// this call with these `fields`.
Group &joinCall(const char *call, int32_t dtype, int32_t kind,
                int64_t meshShape, int64_t axesMask,
                std::initializer_list<int64_t> fields) {
  checkType(dtype, call);
  if (kind >= 0)
    checkKind(kind, call);
  Group &group = groupOf(meshShape, axesMask, call);
  checkSameCall(group, call, meshShape, axesMask, fields);
  return group;
}

/// Divides every element by n (for avg).
void divide(void *data, int64_t count, int32_t dtype, int n) {
  if (dtype == SPMD_F32) {
    auto *p = static_cast<float *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= static_cast<float>(n);
  } else if (dtype == SPMD_F64) {
    auto *p = static_cast<double *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] /= static_cast<double>(n);
  }
}

bool isHalf(int32_t dtype) { return dtype == SPMD_BF16 || dtype == SPMD_F16; }

/// The float32 copy of `count` 16-bit floats (reductions run in float32).
std::vector<char> widened(const void *in, size_t count, int32_t dtype) {
  std::vector<char> wide(count * sizeof(float));
  spmd::runtime::widen(in, reinterpret_cast<float *>(wide.data()), count,
                       dtype == SPMD_BF16);
  return wide;
}

/// What a 16-bit reduction does when it completes: its float32 result
/// (averaged over `n` ranks for avg) rounded once into the caller's `out`.
std::function<void(Pending &)> roundBack(int64_t out, size_t count,
                                         int32_t dtype, int32_t kind, int n) {
  return [=](Pending &q) {
    auto *sum = reinterpret_cast<float *>(q.recv.data());
    if (kind == SPMD_AVG)
      divide(sum, static_cast<int64_t>(count), SPMD_F32, n);
    spmd::runtime::narrow(sum, ptr(out), count, dtype == SPMD_BF16);
  };
}

int64_t track(Pending &&p) {
  Runtime &r = rt();
  if (spmd::trace::on())
    p.startNs = spmd::trace::now();
  int64_t handle = ++r.lastHandle;
  r.pending.emplace(handle, std::move(p));
  return handle;
}

/// The backend SPMD_BACKEND names, else Gloo when a torchrun-style launcher
/// started this process (torchrun's agent sets TORCHELASTIC_RUN_ID; others
/// set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT) outside an mpirun job,
/// else MPI. The Python bridge applies the same rule to register its store.
bool wantGloo() {
  if (const char *name = std::getenv("SPMD_BACKEND"); name && *name) {
    if (std::strcmp(name, "gloo") == 0)
      return true;
    if (std::strcmp(name, "mpi") == 0)
      return false;
    fail("spmdInit", "SPMD_BACKEND must be 'mpi' or 'gloo', found '%s'", name);
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE"))
    return false;
  if (std::getenv("TORCHELASTIC_RUN_ID"))
    return true;
  for (const char *name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    if (!std::getenv(name))
      return false;
  return true;
}

} // namespace

namespace spmd::runtime {
void progressCollectives() {
  Runtime &r = rt();
  if (r.pending.empty() || std::this_thread::get_id() != r.owner)
    return;
  pollPending(nullptr);
}

void failSetup(const char *call, const char *message) {
  // No backend yet: the rank the launcher gave, for the message.
  const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank)
    rank = std::getenv("RANK");
  std::fprintf(stderr, "spmd runtime: rank %s: %s: %s\n", rank ? rank : "-1",
               call, message);
  std::fflush(nullptr);
  std::_Exit(1); // the launcher ends the other ranks
}

size_t elementSize(int32_t dtype) {
  if (dtype == SPMD_BOOL)
    return 1;
  if (dtype == SPMD_BF16 || dtype == SPMD_F16)
    return 2;
  return dtype == SPMD_F64 || dtype == SPMD_I64 ? 8 : 4;
}
} // namespace spmd::runtime

extern "C" {

void spmdInit(void) {
  Runtime &r = rt();
  if (r.initialized)
    fail("spmdInit", "the runtime is already initialized");
  std::string error;
  if (!spmd::runtime::readTimeout(r.timeout, error))
    fail("spmdInit", "%s", error.c_str());
  bool gloo = wantGloo();
  r.backend = gloo ? spmd::runtime::createGlooBackend(r.timeout, error)
                   : spmd::runtime::createMpiBackend(r.timeout, error);
  if (!r.backend)
    spmd::runtime::failSetup("spmdInit", error.c_str());
  r.rank = r.backend->worldRank();
  r.size = r.backend->worldSize();
  r.owner = std::this_thread::get_id();
  // OpenBLAS (the runtime's own spmdSgemm) to the rank's share of the
  // node's cores; a BLAS without this call keeps its own setting.
  r.threads = spmd::runtime::threadBudget().threads;
  if (r.threads > 0 && openblas_set_num_threads)
    openblas_set_num_threads(r.threads);
  // The host's large blocks (torch's sgemm packing buffers, tensors) in the
  // heap to be reused, not mapped and unmapped per call: with glibc's
  // defaults a GPT-2 124M step took 90-230k more page faults. The heap
  // then keeps what it freed (a model's replaced parameters): the bridge
  // returns that with malloc_trim once a program's state is bound.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const char *check = std::getenv("SPMD_RUNTIME_CHECK");
  r.checkCalls = check && *check && std::strcmp(check, "0") != 0;
  std::string job = std::string("the ") + r.backend->name() + " runtime";
  if (!spmd::runtime::checkLauncher(r.rank, r.size, job.c_str(), error))
    fail("spmdInit", "%s", error.c_str());
  r.initialized = true;
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] {
      if (rt().initialized)
        spmdFinalize();
    });
  }
}

void spmdSetStep(int64_t step) { rt().step = step; }

void spmdAnnounceLeaving(const char *why) {
  Runtime &r = rt();
  if (!r.initialized || r.announced)
    return;
  r.announced = true;
  r.backend->announceLeaving(why ? why : "");
}

void spmdFinalize(void) {
  Runtime &r = rt();
  if (!r.initialized)
    fail("spmdFinalize", "the runtime is not initialized");
  if (!r.announced) {
    std::string why = "it finalized the runtime";
    if (r.step >= 0)
      why += " after " + std::to_string(r.step) + " compiled steps";
    spmdAnnounceLeaving(why.c_str());
  }
  r.groups.clear();
  r.pending.clear();
  r.initialized = false;
  r.backend->finalize();
  r.backend.reset();
}

int32_t spmdIsInitialized(void) { return rt().initialized; }

int32_t spmdWorldRank(void) {
  ensureInit();
  return rt().rank;
}

int32_t spmdWorldSize(void) {
  ensureInit();
  return rt().size;
}

int32_t spmdThreads(void) {
  ensureInit();
  return rt().threads;
}

const char *spmdBackendName(void) {
  ensureInit();
  return rt().backend->name();
}

int64_t spmdAxisIndex(int64_t meshShape, int64_t axesMask) {
  return groupOf(meshShape, axesMask, "spmdAxisIndex").rank;
}

int64_t spmdAllReduceStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int32_t kind, int64_t meshShape,
                           int64_t axesMask) {
  const char *call = "all_reduce";
  bool stays = inputStays(dtype);
  Group &group =
      joinCall(call, dtype, kind, meshShape, axesMask, {count, dtype, kind});
  int n = group.size;
  Pending p(call, meshShape, axesMask, n,
            count * int64_t(spmd::runtime::elementSize(dtype)));
  if (isHalf(dtype)) {
    // In float32, rounded back once when it completes.
    p.send = widened(ptr(in), static_cast<size_t>(count), dtype);
    p.recv.resize(p.send.size());
    p.request =
        rt().backend->allReduce(group, p.send.data(), p.recv.data(),
                                static_cast<size_t>(count), SPMD_F32, kind);
    p.finish = roundBack(out, static_cast<size_t>(count), dtype, kind, n);
    return track(std::move(p));
  }
  // The input in place when it stays (and is not the output), else a copy
  // (the caller may free or overwrite it before the wait).
  const void *send = ptr(in);
  if (!stays || in == out) {
    p.send.assign(static_cast<char *>(ptr(in)),
                  static_cast<char *>(ptr(in)) +
                      count * spmd::runtime::elementSize(dtype));
    send = p.send.data();
  }
  p.request = rt().backend->allReduce(group, send, ptr(out),
                                      static_cast<size_t>(count), dtype, kind);
  if (kind == SPMD_AVG)
    p.finish = [=](Pending &) { divide(ptr(out), count, dtype, n); };
  return track(std::move(p));
}

int64_t spmdAllGatherStart(int64_t in, int64_t out, int64_t outer, int64_t dim,
                           int64_t inner, int32_t dtype, int64_t meshShape,
                           int64_t axesMask) {
  const char *call = "all_gather";
  bool stays = inputStays(dtype);
  Group &group = joinCall(call, dtype, /*kind=*/-1, meshShape, axesMask,
                          {outer, dim, inner, dtype});
  int n = group.size;
  size_t elem = spmd::runtime::elementSize(dtype);
  size_t chunk = static_cast<size_t>(outer * dim * inner);
  Pending p(call, meshShape, axesMask, n, int64_t(chunk * elem));
  const void *send = ptr(in);
  if (!stays) {
    p.send.assign(static_cast<char *>(ptr(in)),
                  static_cast<char *>(ptr(in)) + chunk * elem);
    send = p.send.data();
  }
  // Whole chunks arrive rank after rank; along an inner dimension they are
  // interleaved into place when the gather completes.
  void *target = ptr(out);
  if (outer != 1) {
    p.recv.resize(chunk * n * elem);
    target = p.recv.data();
    p.finish = [=](Pending &q) {
      size_t row = static_cast<size_t>(dim * inner) * elem;
      char *dst = static_cast<char *>(ptr(out));
      for (int64_t o = 0; o < outer; ++o)
        for (int k = 0; k < n; ++k)
          std::memcpy(dst + (o * n + k) * row,
                      q.recv.data() + (k * chunk) * elem + o * row, row);
    };
  }
  p.request = rt().backend->allGather(group, send, target, chunk, dtype);
  return track(std::move(p));
}

int64_t spmdReduceScatterStart(int64_t in, int64_t out, int64_t outer,
                               int64_t dim, int64_t inner, int32_t dtype,
                               int32_t kind, int64_t meshShape,
                               int64_t axesMask) {
  const char *call = "reduce_scatter";
  bool stays = inputStays(dtype);
  Group &group = joinCall(call, dtype, kind, meshShape, axesMask,
                          {outer, dim, inner, dtype, kind});
  int n = group.size;
  if (dim % n != 0)
    fail(call, "dimension %lld is not divisible by the group size %d",
         static_cast<long long>(dim), n);
  size_t elem = spmd::runtime::elementSize(dtype);
  int64_t part = dim / n;
  size_t chunk = static_cast<size_t>(outer * part * inner);
  // Rank k's chunk contiguous: [k][outer][part][inner].
  Pending p(call, meshShape, axesMask, n, outer * dim * inner * int64_t(elem));
  if (stays && outer == 1 && !isHalf(dtype)) {
    // Already [k][part][inner]: read in place.
    p.request = rt().backend->reduceScatter(group, ptr(in), ptr(out), chunk,
                                            dtype, kind);
    if (kind == SPMD_AVG)
      p.finish = [=](Pending &) {
        divide(ptr(out), static_cast<int64_t>(chunk), dtype, n);
      };
    return track(std::move(p));
  }
  p.send.resize(chunk * n * elem);
  size_t row = static_cast<size_t>(part * inner) * elem;
  const char *src = static_cast<const char *>(ptr(in));
  for (int k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(p.send.data() + (k * chunk) * elem + o * row,
                  src + (o * dim * inner + k * part * inner) * elem, row);
  if (isHalf(dtype)) {
    // In float32, rounded back once when it completes.
    p.send = widened(p.send.data(), chunk * n, dtype);
    p.recv.resize(chunk * sizeof(float));
    p.request = rt().backend->reduceScatter(group, p.send.data(), p.recv.data(),
                                            chunk, SPMD_F32, kind);
    p.finish = roundBack(out, chunk, dtype, kind, n);
    return track(std::move(p));
  }
  p.request = rt().backend->reduceScatter(group, p.send.data(), ptr(out), chunk,
                                          dtype, kind);
  if (kind == SPMD_AVG)
    p.finish = [=](Pending &) {
      divide(ptr(out), static_cast<int64_t>(chunk), dtype, n);
    };
  return track(std::move(p));
}

int64_t spmdAllToAll4Start(int64_t in, int64_t out, int64_t d0, int64_t d1,
                           int64_t d2, int64_t d3, int64_t splitDim,
                           int64_t concatDim, int32_t dtype, int64_t meshShape,
                           int64_t axesMask) {
  const char *call = "all_to_all";
  Group &group = joinCall(call, dtype, /*kind=*/-1, meshShape, axesMask,
                          {d0, d1, d2, d3, splitDim, concatDim, dtype});
  int n = group.size;
  std::array<int64_t, 4> shape = {d0, d1, d2, d3};
  if (splitDim < 0 || splitDim > 3 || concatDim < 0 || concatDim > 3)
    fail(call, "dimensions out of range");
  if (shape[splitDim] % n != 0)
    fail(call, "split dimension %lld is not divisible by the group size %d",
         static_cast<long long>(shape[splitDim]), n);
  size_t elem = spmd::runtime::elementSize(dtype);
  auto prod = [](const std::array<int64_t, 4> &s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; ++i)
      p *= s[i];
    return p;
  };
  int64_t total = prod(shape, 0, 4);
  size_t chunk = static_cast<size_t>(total / n);
  Pending p(call, meshShape, axesMask, n, total * int64_t(elem));
  p.send.resize(total * elem);
  p.recv.resize(total * elem);
  {
    // Chunk k of the split dimension, contiguous.
    int64_t outer = prod(shape, 0, splitDim), dim = shape[splitDim];
    int64_t inner = prod(shape, splitDim + 1, 4), part = dim / n;
    size_t row = static_cast<size_t>(part * inner) * elem;
    const char *src = static_cast<const char *>(ptr(in));
    for (int k = 0; k < n; ++k)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(p.send.data() + (k * chunk) * elem + o * row,
                    src + (o * dim * inner + k * part * inner) * elem, row);
  }
  p.request =
      rt().backend->allToAll(group, p.send.data(), p.recv.data(), chunk, dtype);
  // Received chunks have the split shape; they are concatenated along
  // concatDim in group order.
  std::array<int64_t, 4> split = shape;
  split[splitDim] /= n;
  p.finish = [=](Pending &q) {
    int64_t outer = prod(split, 0, concatDim), dim = split[concatDim];
    int64_t inner = prod(split, concatDim + 1, 4);
    size_t row = static_cast<size_t>(dim * inner) * elem;
    char *dst = static_cast<char *>(ptr(out));
    for (int k = 0; k < n; ++k)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + (o * n + k) * row,
                    q.recv.data() + (k * chunk) * elem + o * row, row);
  };
  return track(std::move(p));
}

int64_t spmdBroadcastStart(int64_t in, int64_t out, int64_t count,
                           int32_t dtype, int64_t root, int64_t meshShape,
                           int64_t axesMask) {
  const char *call = "broadcast";
  Group &group = joinCall(call, dtype, /*kind=*/-1, meshShape, axesMask,
                          {count, dtype, root});
  int n = group.size;
  if (root < 0 || root >= n)
    fail(call, "root %lld is out of range for a group of %d",
         static_cast<long long>(root), n);
  if (in != out)
    std::memcpy(ptr(out), ptr(in), count * spmd::runtime::elementSize(dtype));
  Pending p(call, meshShape, axesMask, n,
            count * int64_t(spmd::runtime::elementSize(dtype)));
  p.request =
      rt().backend->broadcast(group, ptr(out), static_cast<size_t>(count),
                              dtype, static_cast<int>(root));
  return track(std::move(p));
}

/* Groups of collectives (a coalesced collective's operands): both backends'
 * collectives already run concurrently with the program, so a group needs no
 * bookkeeping here (NCCL's runtime launches a group together). */
void spmdGroupStart(void) {}
void spmdGroupEnd(void) {}

void spmdWait(int64_t handle) {
  Runtime &r = rt();
  auto it = r.pending.find(handle);
  if (it == r.pending.end()) {
    // A future may be waited on twice; the second wait finds it done.
    if (handle > 0 && handle <= r.lastHandle)
      return;
    fail("spmdWait", "unknown handle %lld", static_cast<long long>(handle));
  }
  Pending &p = it->second;
  int64_t waitStart = p.startNs ? spmd::trace::now() : 0;
  waitTimed(*p.request, p.call, p.meshShape, p.axesMask, &p);
  if (p.finish)
    p.finish(p);
  if (p.startNs && spmd::trace::on()) {
    int64_t end = spmd::trace::now();
    std::string args = "\"bytes\": " + std::to_string(p.bytes) +
                       ", \"group size\": " + std::to_string(p.groupSize) +
                       ", \"handle\": " + std::to_string(handle);
    spmd::trace::record(p.call, "collective", p.startNs, end, args,
                        spmd::trace::kCollectiveThread);
    spmd::trace::record(std::string("wait ") + p.call, "wait", waitStart, end,
                        args, spmd::trace::kComputeThread);
  }
  r.pending.erase(it);
}

int64_t spmdCollectivesInFlight(void) {
  const std::map<int64_t, Pending> &pending = rt().pending;
  return std::count_if(pending.begin(), pending.end(), [](const auto &entry) {
    return !entry.second.completed;
  });
}

void spmdAllReduce(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int32_t kind, int64_t meshShape, int64_t axesMask) {
  spmdWait(
      spmdAllReduceStart(in, out, count, dtype, kind, meshShape, axesMask));
}

void spmdAllGather(int64_t in, int64_t out, int64_t outer, int64_t dim,
                   int64_t inner, int32_t dtype, int64_t meshShape,
                   int64_t axesMask) {
  spmdWait(spmdAllGatherStart(in, out, outer, dim, inner, dtype, meshShape,
                              axesMask));
}

void spmdReduceScatter(int64_t in, int64_t out, int64_t outer, int64_t dim,
                       int64_t inner, int32_t dtype, int32_t kind,
                       int64_t meshShape, int64_t axesMask) {
  spmdWait(spmdReduceScatterStart(in, out, outer, dim, inner, dtype, kind,
                                  meshShape, axesMask));
}

void spmdAllToAll4(int64_t in, int64_t out, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3, int64_t splitDim, int64_t concatDim,
                   int32_t dtype, int64_t meshShape, int64_t axesMask) {
  spmdWait(spmdAllToAll4Start(in, out, d0, d1, d2, d3, splitDim, concatDim,
                              dtype, meshShape, axesMask));
}

void spmdBroadcast(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int64_t root, int64_t meshShape, int64_t axesMask) {
  spmdWait(
      spmdBroadcastStart(in, out, count, dtype, root, meshShape, axesMask));
}

void spmdProgramCheck(int64_t hash, const char *name) {
  ensureInit();
  Runtime &r = rt();
  auto h = static_cast<uint64_t>(hash);
  if (r.checkedPrograms.count(h))
    return;
  if (!sameOnAllRanks(r.backend->world(), h, "spmdProgramCheck"))
    fail("spmdProgramCheck",
         "the ranks run different programs: this rank's '%s' has hash "
         "%016llx and another rank's differs (compile the same module with "
         "the same options for every rank)",
         name, static_cast<unsigned long long>(h));
  r.checkedPrograms.insert(h);
}

void spmdAbort(const char *message) {
  fail("abort", "%s", message && *message ? message : "(no message)");
}

void spmdStateRegister(const char *name, int64_t address, int64_t bytes,
                       int32_t dtype) {
  std::string error;
  if (!rt().states.add(name, address, bytes, dtype, error))
    failWith("spmdStateRegister", error);
}

int64_t spmdStateAddress(const char *name, int64_t bytes, int32_t dtype) {
  Runtime &r = rt();
  std::string error;
  if (r.states.find(name)) {
    const auto *state = r.states.bind(name, bytes, dtype, error);
    if (!state)
      failWith("spmdStateAddress", error);
    return state->address;
  }
  void *buffer = allocateStateBuffer(bytes);
  if (!buffer)
    fail("spmdStateAddress", "cannot allocate %lld bytes for state '%s'",
         static_cast<long long>(bytes), name);
  auto address = reinterpret_cast<int64_t>(buffer);
  if (!r.states.add(name, address, bytes, dtype, error))
    failWith("spmdStateAddress", error);
  return address;
}

SPMD_DEFINE_STATE_READERS(rt().states, failWith)

} // extern "C"

//===- GlooBackend.cpp - the runtime's collectives over Gloo --------------===//
//
// For jobs launched by torchrun: Gloo (the library of torch.distributed's
// CPU backend) over TCP, with rendezvous through a key-value store. The
// Python bridge registers torch's own store (the TCPStore at MASTER_ADDR:
// MASTER_PORT that torchrun's agent or rank 0 hosts, so it works across
// nodes) with spmdUseStore; programs run without Python can use a directory
// every rank sees (SPMD_GLOO_STORE, Gloo's FileStore).
//
// Gloo's collectives block, so one worker thread runs them in the order the
// program started them (the same order on every rank), and the program
// computes meanwhile, as with MPI's non-blocking calls. Gloo has no
// reduce-scatter with a custom reduction: it is an all_reduce of the whole
// buffer that keeps this rank's chunk (twice the traffic of a ring
// reduce-scatter; see docs/Rationale.md).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "HostStore.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

/// A gloo Store over the host's callbacks; a failed call throws.
class CallbackStore : public gloo::rendezvous::Store {
public:
  void set(const std::string &key, const std::vector<char> &data) override {
    if (spmd::runtime::hostStore().set(key.c_str(), data.data(),
                                       static_cast<int64_t>(data.size())) != 0)
      throw std::runtime_error("store set of '" + key + "' failed");
  }
  std::vector<char> get(const std::string &key) override {
    std::vector<char> data(4096);
    for (int attempt = 0; attempt < 2; ++attempt) {
      int64_t bytes = 0;
      int32_t status = spmd::runtime::hostStore().get(
          key.c_str(), data.data(), static_cast<int64_t>(data.size()), &bytes);
      if (status == 0) {
        data.resize(static_cast<size_t>(bytes));
        return data;
      }
      if (status != 1 || bytes <= static_cast<int64_t>(data.size()))
        break;
      data.resize(static_cast<size_t>(bytes)); // too small: once more
    }
    throw std::runtime_error("store get of '" + key + "' failed");
  }
  void wait(const std::vector<std::string> &keys) override {
    wait(keys, kDefaultTimeout);
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    std::string joined;
    for (const std::string &k : keys)
      joined += (joined.empty() ? "" : "\n") + k;
    if (spmd::runtime::hostStore().wait(joined.c_str(), timeout.count()) != 0)
      throw std::runtime_error("timed out after " +
                               std::to_string(timeout.count() / 1000) +
                               " s waiting in the store for the other ranks "
                               "(rendezvous)");
  }
};

} // namespace

extern "C" void spmdUseStore(SpmdStoreSet set, SpmdStoreGet get,
                             SpmdStoreWait wait) {
  spmd::runtime::hostStore() = {set, get, wait};
}

namespace spmd::runtime {
namespace {

using Millis = std::chrono::milliseconds;

class GlooGroup : public Group {
public:
  std::shared_ptr<gloo::rendezvous::Context> context;
  /// Tags of this group's collectives (every rank starts them in the same
  /// order, so the tags match).
  uint32_t nextTag = 0;
};

/// A collective the worker runs: `done` is set (release) after `error`.
struct Job {
  std::function<void()> run;
  std::atomic<bool> done{false};
  std::string error;
};

class GlooRequest : public Request {
public:
  std::shared_ptr<Job> job;
};

/// One thread runs every collective, in start order.
class Worker {
public:
  Worker() : thread([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    ready.notify_one();
    thread.join();
  }
  void push(std::shared_ptr<Job> job) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(job));
    }
    ready.notify_one();
  }

private:
  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty())
          return;
        job = std::move(queue.front());
        queue.pop_front();
      }
      try {
        job->run();
      } catch (const std::exception &e) {
        job->error = e.what();
      }
      job->done.store(true, std::memory_order_release);
    }
  }
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::shared_ptr<Job>> queue;
  bool stopping = false;
  std::thread thread;
};

template <typename T> T apply(int32_t kind, T a, T b) {
  switch (kind) {
  case SPMD_MAX:
    return std::max(a, b);
  case SPMD_MIN:
    return std::min(a, b);
  case SPMD_PROD:
    return a * b;
  default: // SPMD_SUM, SPMD_AVG (divided afterwards)
    return a + b;
  }
}

template <typename T> gloo::AllreduceOptions::Func reduction(int32_t kind) {
  return [kind](void *out, const void *a, const void *b, size_t n) {
    auto *o = static_cast<T *>(out);
    auto *x = static_cast<const T *>(a);
    auto *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i)
      o[i] = apply<T>(kind, x[i], y[i]);
  };
}

/// Calls `fn.template operator()<T>()` with the C++ type of `dtype`.
template <typename Fn> void withType(int32_t dtype, Fn &&fn) {
  switch (dtype) {
  case SPMD_F64:
    fn(double());
    return;
  case SPMD_I32:
    fn(int32_t());
    return;
  case SPMD_I64:
    fn(int64_t());
    return;
  case SPMD_BF16:
  case SPMD_F16:
    fn(uint16_t()); // moved, never reduced (the runtime widens first)
    return;
  case SPMD_BOOL:
    fn(uint8_t());
    return;
  default:
    fn(float());
  }
}

/// A full-mesh Gloo context of `size` ranks through `store` under `prefix`.
std::shared_ptr<gloo::rendezvous::Context>
connect(gloo::rendezvous::Store &store, const std::string &prefix, int rank,
        int size, std::shared_ptr<gloo::transport::Device> &device,
        Millis timeout) {
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(timeout);
  gloo::rendezvous::PrefixStore scoped(prefix, store);
  context->connectFullMesh(scoped, device);
  // connectFullMesh returns once this rank's pairs are up, while a peer may
  // still be finishing its handshake with it: a rank that then exits (a
  // short job, an error) would close a socket the peer still reads. Every
  // rank says it is connected and waits for the others first.
  scoped.set("connected/" + std::to_string(rank), std::vector<char>{'1'});
  std::vector<std::string> keys;
  for (int peer = 0; peer < size; ++peer)
    keys.push_back("connected/" + std::to_string(peer));
  scoped.wait(keys, timeout);
  return context;
}

/// What a failed collective's error gets when a peer's socket closed.
constexpr const char *kPeerClosed =
    " (another rank's connection closed: it left the job or crashed; its "
    "own output says why)";

class GlooBackend : public Backend {
public:
  GlooBackend(std::unique_ptr<gloo::rendezvous::Store> store,
              std::shared_ptr<gloo::transport::Device> device, Millis timeout,
              std::string job)
      : store(std::move(store)), device(std::move(device)), timeout(timeout),
        prefix("spmd/" + job + "/") {}

  bool start(int rank, int size, std::string &error) {
    // Who came: a rank that times out here names the ranks that never did.
    trySet("joined/" + std::to_string(rank), "1");
    try {
      worldGroup.context =
          connect(*store, prefix + "world", rank, size, device, timeout);
    } catch (const std::exception &e) {
      std::string absent;
      for (int peer = 0; peer < size; ++peer)
        if (peer != rank && !tryGet("joined/" + std::to_string(peer)))
          absent += (absent.empty() ? "" : ", ") + std::to_string(peer);
      error = "Gloo rendezvous of the world failed on rank " +
              std::to_string(rank) + " of " + std::to_string(size) + ": " +
              e.what();
      if (!absent.empty())
        error += "; never joined: rank(s) " + absent +
                 " (not started, failed before their first collective, or "
                 "later than SPMD_TIMEOUT)";
      return false;
    }
    worldGroup.rank = rank;
    worldGroup.size = size;
    worker = std::make_unique<Worker>();
    // Where this rank's process runs: a peer whose connection closes
    // without a notice is then named when its process is gone.
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::string where = std::string(host) + " " + std::to_string(getpid());
    trySet("pid/" + std::to_string(rank), where);
    return true;
  }

  const char *name() const override { return "Gloo"; }
  int worldRank() const override { return worldGroup.rank; }
  int worldSize() const override { return worldGroup.size; }
  Group &world() override { return worldGroup; }

  std::unique_ptr<Group> join(int64_t color, int64_t key, int size,
                              const std::string &label) override {
    auto group = std::make_unique<GlooGroup>();
    group->rank = static_cast<int>(key);
    group->size = size;
    try {
      group->context =
          connect(*store, prefix + label + "/" + std::to_string(color),
                  group->rank, size, device, timeout);
    } catch (const std::exception &) {
      return nullptr;
    }
    return group;
  }

  /// Queues `run(group, options)` for the worker; `options` sets the tag
  /// (the group's next, the same on every rank) and the timeout on a Gloo
  /// options object.
  template <typename Run>
  std::unique_ptr<Request> enqueueOn(Group &g, Run run) {
    GlooGroup *group = &static_cast<GlooGroup &>(g);
    uint32_t tag = group->nextTag++;
    Millis limit = timeout;
    auto request = std::make_unique<GlooRequest>();
    request->job = std::make_shared<Job>();
    request->job->run = [group, tag, limit, run] {
      run(*group, [&](auto &opts) {
        opts.setTag(tag);
        opts.setTimeout(limit);
      });
    };
    worker->push(request->job);
    return request;
  }

  /// All_reduce of `count` elements of `data` in place (on the worker).
  template <typename Options>
  static void allReduceInPlace(GlooGroup &group, Options &&options, void *data,
                               size_t count, int32_t dtype, int32_t kind) {
    withType(dtype, [&](auto zero) {
      using T = decltype(zero);
      gloo::AllreduceOptions opts(group.context);
      opts.setOutput(static_cast<T *>(data), count);
      opts.setReduceFunction(reduction<T>(kind));
      options(opts);
      gloo::allreduce(opts);
    });
  }

  std::unique_ptr<Request> allReduce(Group &g, const void *in, void *out,
                                     size_t count, int32_t dtype,
                                     int32_t kind) override {
    return enqueueOn(g, [=](GlooGroup &group, auto options) {
      if (in != out)
        std::memcpy(out, in, count * elementSize(dtype));
      allReduceInPlace(group, options, out, count, dtype, kind);
    });
  }

  std::unique_ptr<Request> allGather(Group &g, const void *in, void *out,
                                     size_t chunk, int32_t dtype) override {
    return enqueueOn(g, [=](GlooGroup &group, auto options) {
      withType(dtype, [&](auto zero) {
        using T = decltype(zero);
        gloo::AllgatherOptions opts(group.context);
        opts.setInput(const_cast<T *>(static_cast<const T *>(in)), chunk);
        opts.setOutput(static_cast<T *>(out), chunk * group.size);
        options(opts);
        gloo::allgather(opts);
      });
    });
  }

  std::unique_ptr<Request> reduceScatter(Group &g, const void *in, void *out,
                                         size_t chunk, int32_t dtype,
                                         int32_t kind) override {
    return enqueueOn(g, [=](GlooGroup &group, auto options) {
      size_t elem = elementSize(dtype);
      std::vector<char> whole(static_cast<const char *>(in),
                              static_cast<const char *>(in) +
                                  chunk * group.size * elem);
      allReduceInPlace(group, options, whole.data(), chunk * group.size, dtype,
                       kind);
      std::memcpy(out, whole.data() + group.rank * chunk * elem, chunk * elem);
    });
  }

  std::unique_ptr<Request> allToAll(Group &g, const void *in, void *out,
                                    size_t chunk, int32_t dtype) override {
    return enqueueOn(g, [=](GlooGroup &group, auto options) {
      withType(dtype, [&](auto zero) {
        using T = decltype(zero);
        gloo::AlltoallOptions opts(group.context);
        opts.setInput(const_cast<T *>(static_cast<const T *>(in)),
                      chunk * group.size);
        opts.setOutput(static_cast<T *>(out), chunk * group.size);
        options(opts);
        gloo::alltoall(opts);
      });
    });
  }

  std::unique_ptr<Request> broadcast(Group &g, void *data, size_t count,
                                     int32_t dtype, int root) override {
    return enqueueOn(g, [=](GlooGroup &group, auto options) {
      withType(dtype, [&](auto zero) {
        using T = decltype(zero);
        gloo::BroadcastOptions opts(group.context);
        opts.setOutput(static_cast<T *>(data), count);
        opts.setRoot(root);
        options(opts);
        gloo::broadcast(opts);
      });
    });
  }

  std::unique_ptr<Request> barrier(Group &g) override {
    return enqueueOn(g, [](GlooGroup &group, auto options) {
      gloo::BarrierOptions opts(group.context);
      options(opts);
      gloo::barrier(opts);
    });
  }

  bool test(Request &request, std::string &error) override {
    Job &job = *static_cast<GlooRequest &>(request).job;
    if (!job.done.load(std::memory_order_acquire))
      return false;
    if (!job.error.empty()) {
      error = "Gloo: " + job.error;
      // A peer's socket closed: under torchrun the usual cause is a rank
      // that exited (sys.exit, a crash) while this one waits for it.
      for (const char *closed : {"Connection reset", "Connection closed",
                                 "closed by peer", "Broken pipe"})
        if (job.error.find(closed) != std::string::npos) {
          error += kPeerClosed;
          break;
        }
      return false;
    }
    return true;
  }

  /// Sets this job's `key` to `value`; false when the store is gone (the
  /// launcher ended).
  bool trySet(const std::string &key, const std::string &value) {
    try {
      store->set(prefix + key, std::vector<char>(value.begin(), value.end()));
      return true;
    } catch (const std::exception &) {
      return false;
    }
  }

  /// This job's `key`, or nullopt when it is not set (checked without
  /// waiting).
  std::optional<std::string> tryGet(const std::string &key) {
    try {
      if (!hasKey(prefix + key))
        return std::nullopt;
      std::vector<char> data = store->get(prefix + key);
      return std::string(data.begin(), data.end());
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }

  /// A notice under this job's keys: `left/RANK` holds why.
  void announceLeaving(const std::string &why) override {
    trySet("left/" + std::to_string(worldGroup.rank), why);
  }

  /// `waiting/RANK`: 1 while this rank waits long in a collective.
  void noteLongWait(bool waiting) override {
    trySet("waiting/" + std::to_string(worldGroup.rank), waiting ? "1" : "0");
  }

  std::vector<int64_t> notWaiting(const std::vector<int64_t> &ranks) override {
    std::vector<int64_t> missing;
    for (int64_t peer : ranks)
      if (tryGet("waiting/" + std::to_string(peer)).value_or("0") != "1")
        missing.push_back(peer);
    return missing;
  }

  /// Whether `peer`'s process ran on this host and is gone (or a zombie):
  /// it ended without a notice (os._exit, a signal, a crash).
  bool processGone(int peer, std::string &why) {
    std::optional<std::string> where = tryGet("pid/" + std::to_string(peer));
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::string mine = std::string(host) + " ";
    if (!where || where->rfind(mine, 0) != 0)
      return false;
    std::string pid = where->substr(mine.size());
    std::FILE *stat = std::fopen(("/proc/" + pid + "/stat").c_str(), "r");
    char state = 'X';
    if (stat) {
      // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
      char line[512] = {};
      size_t n = std::fread(line, 1, sizeof(line) - 1, stat);
      std::fclose(stat);
      const char *close = std::strrchr(line, ')');
      if (n && close && close[1] == ' ')
        state = close[2];
    }
    if (state != 'X' && state != 'Z')
      return false;
    why = "its process (pid " + pid +
          ") ended without a notice: os._exit, a signal or a crash";
    return true;
  }

  /// Gloo fails a collective at once when a peer's sockets close, before
  /// this rank could see its notice: on such a failure, look for a notice
  /// (a short wait per rank) until `seconds` have passed.
  bool leftBefore(const std::string &error, double seconds, int &rank,
                  std::string &why) override {
    if (error.find(kPeerClosed) == std::string::npos)
      return false;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(seconds);
    do {
      for (int peer = 0; peer < worldGroup.size; ++peer) {
        if (peer == worldGroup.rank)
          continue;
        if (std::optional<std::string> notice =
                tryGet("left/" + std::to_string(peer))) {
          rank = peer;
          why = *notice;
          return true;
        }
      }
      // A notice is written before its process exits: a peer already gone
      // without one left none.
      for (int peer = 0; peer < worldGroup.size; ++peer)
        if (peer != worldGroup.rank && processGone(peer, why)) {
          rank = peer;
          return true;
        }
      std::this_thread::sleep_for(Millis(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

  /// Whether `key` is set, without waiting.
  bool hasKey(const std::string &key) {
    try {
      // 0: the host's store only checks; gloo's FileStore checks once.
      store->wait({key}, Millis(0));
      return true;
    } catch (const std::exception &) {
      return false;
    }
  }

  [[noreturn]] void abortJob() override {
    // No job-wide abort in Gloo: this process ends, and the launcher
    // (torchrun, mpirun) ends the others; their peers' sockets close, so
    // a rank waiting on this one fails at once instead of at its timeout.
    std::fflush(nullptr);
    _exit(1);
  }

  void finalize() override { worker.reset(); }

private:
  std::unique_ptr<gloo::rendezvous::Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  Millis timeout;
  /// Keys of this job (a store may outlive a job: a torchrun restart, a
  /// directory used again).
  std::string prefix;
  GlooGroup worldGroup;
  std::unique_ptr<Worker> worker;
};

/// The first of `names` set in the environment, as an int (-1: none).
long envInt(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (const char *text = std::getenv(name); text && *text)
      return std::strtol(text, nullptr, 10);
  return -1;
}

/// What tells this job from earlier ones using the same store.
std::string jobKey() {
  if (const char *run = std::getenv("TORCHELASTIC_RUN_ID"); run && *run) {
    const char *restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
    return std::string(run) + "." + (restart ? restart : "0");
  }
  for (const char *name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"})
    if (const char *id = std::getenv(name); id && *id)
      return id;
  return "job";
}

} // namespace

std::unique_ptr<Backend> createGlooBackend(double timeoutSeconds,
                                           std::string &error) {
  long rank = envInt({"RANK", "OMPI_COMM_WORLD_RANK"});
  long size = envInt({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"});
  if (rank < 0 || size < 1 || rank >= size) {
    error = "the Gloo backend takes its rank and size from RANK and "
            "WORLD_SIZE (torchrun sets them) or Open MPI's environment; "
            "neither is set";
    return nullptr;
  }
  std::unique_ptr<gloo::rendezvous::Store> store;
  if (spmd::runtime::hostStore().set) {
    store = std::make_unique<CallbackStore>();
  } else if (const char *dir = std::getenv("SPMD_GLOO_STORE"); dir && *dir) {
    ::mkdir(dir, 0700); // every rank may try; one wins
    store = std::make_unique<gloo::rendezvous::FileStore>(dir);
  } else {
    error = "the Gloo backend needs a store to meet the other ranks: run "
            "through the spmd Python package (it registers torch's TCPStore "
            "at MASTER_ADDR:MASTER_PORT) or set SPMD_GLOO_STORE to an empty "
            "directory every rank sees";
    return nullptr;
  }
  // Rendezvous and every collective share the run's timeout (<= 0: a day).
  Millis timeout(timeoutSeconds > 0
                     ? static_cast<int64_t>(timeoutSeconds * 1000)
                     : int64_t(24) * 3600 * 1000);
  gloo::transport::tcp::attr attr;
  if (const char *iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
    attr.iface = iface;
  else if (const char *host = std::getenv("SPMD_GLOO_HOSTNAME"); host && *host)
    attr.hostname = host;
  else if (envInt({"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) == size)
    attr.hostname = "127.0.0.1"; // one node: loopback always resolves
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception &e) {
    error = std::string("Gloo could not open a TCP device (set "
                        "GLOO_SOCKET_IFNAME to the network interface): ") +
            e.what();
    return nullptr;
  }
  auto backend = std::make_unique<GlooBackend>(
      std::move(store), std::move(device), timeout, jobKey());
  if (!backend->start(static_cast<int>(rank), static_cast<int>(size), error))
    return nullptr;
  return backend;
}

} // namespace spmd::runtime

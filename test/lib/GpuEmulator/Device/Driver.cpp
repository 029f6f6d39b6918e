//===- Driver.cpp - the CUDA driver functions, emulated on the CPU --------===//
//
// The driver API libSpmdGpuRuntime uses, as libcuda.so.1 (see Emulator.h).
// Kernels are the host functions spmd-lower-to-nvvm{emulate=1} compiles:
// a module "image" is the text `spmd-emulated-kernels:<module>`, a kernel
// `__spmd_emu_<module>__<kernel>` looked up first in the shared library that
// holds the image (a program spmd.compile loaded with RTLD_LOCAL; two such
// programs may name their kernels alike), then in the process (link an
// executable with -rdynamic). What a GPU would reject is rejected with a
// message: block and grid sizes beyond the hardware's limits, kernels given
// pointers outside device memory, cuBLAS/NCCL buffers outside device memory,
// real cubins.
//
// Device memory lives in one reserved address range that is inaccessible
// except while the emulated device works (a kernel, a copy, a collective):
// host code that reads or writes device memory is stopped with a message
// naming the address, where a GPU would crash or read garbage. It is filled
// with 0xff bytes when allocated (NaN as floats), so results computed from
// memory nobody wrote show up. Copies from or to pageable host memory wait
// for their stream first and happen at once (as CUDA's do); everything else
// runs when the host waits for it, or, with SPMD_EMU_SCHEDULE=random:SEED,
// also at random moments.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct CUgraph_st;

struct CUstream_st {
  /// Work items: each returns true when done (see enqueuePolled).
  std::deque<std::function<bool()>> queue;
  /// An item of this stream is running (one that waits for another
  /// stream runs that one meanwhile): the next must not start before it
  /// ends, as on a GPU.
  bool running = false;
  /// The graph this stream's work goes into while it is captured (it began
  /// the capture, or joined it by waiting for an event recorded in it).
  CUgraph_st *capture = nullptr;
  /// Items captured from this stream, and how many of them the capturing
  /// stream has waited for (a joined stream must be joined back).
  size_t captured = 0, joinedUpTo = 0;
};

/// A captured stream sequence. Its work items are kept in the order the
/// host issued them, which respects every dependency the capture recorded
/// (a stream can only wait for an event already recorded): a launch runs
/// them one after the other on its stream.
struct CUgraph_st {
  CUstream origin = nullptr;
  std::vector<CUstream> joined;
  std::vector<std::function<bool()>> items;
  /// Set when the capture was invalidated (an operation a capture cannot
  /// hold); cuStreamEndCapture then fails.
  const char *invalid = nullptr;
  /// False once the capture ended (events recorded in it outlive it).
  std::shared_ptr<bool> open = std::make_shared<bool>(true);
};

struct CUgraphExec_st {
  std::vector<std::function<bool()>> items;
};

namespace {

/// One recording of an event: done once its stream ran up to it.
struct Marker {
  CUstream stream = nullptr;
  bool done = true;
  /// Recorded in a capture (`captureOpen` set; true while it lasts): only
  /// streams of that capture may wait for it, after `capturedCount` items
  /// of its stream; the host may not wait for it.
  CUgraph_st *capture = nullptr;
  std::shared_ptr<bool> captureOpen;
  size_t capturedCount = 0;
  /// When the stream reached it (steady clock, ns; 0 until then).
  int64_t reachedNs = 0;
};

} // namespace

struct CUevent_st {
  std::shared_ptr<Marker> last = std::make_shared<Marker>();
};

struct CUmod_st {
  std::string name;
  /// The shared library the image lies in (dlopen handle), or null: the
  /// image is in the executable.
  void *library = nullptr;
};

struct CUfunc_st {
  std::string name;
  void (*entry)(void **, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                void (*)(void *)) = nullptr;
  const int64_t *params = nullptr;
};

struct CUctx_st {};

namespace {

/// The reserved range device memory comes from, bump-allocated (freed
/// memory is given back to the OS, its addresses are not reused).
struct Arena {
  char *base = nullptr;
  size_t reserved = size_t(1) << 36; // 64 GiB of addresses, no memory
  size_t used = 0;
  int openDepth = 0;
};

struct Driver {
  Arena arena;
  CUstream_st nullStream;
  std::vector<CUstream> streams; // in creation order (never destroyed)
  // Device allocations (and managed / registered host memory): base -> bytes.
  std::map<uintptr_t, size_t> device;
  // By library handle (null: the process) and symbol.
  std::map<std::pair<void *, std::string>, CUfunction> functions;
  CUctx_st context;
  bool initialized = false;
  /// Streams captures were begun on and not yet ended.
  int capturing = 0;
};

void onFault(int, siginfo_t *info, void *);

Driver &drv() {
  static Driver *d = new Driver; // never destroyed: used at exit
  return *d;
}

/// The counts of one step (Emulator.h), and the distinct kernels launched.
struct StepCounts {
  size_t n[size_t(spmd::emu::Count::NumCounts)] = {};
  size_t bytes[size_t(spmd::emu::Count::NumCounts)] = {};
  std::map<std::string, size_t> kernels;
};

std::vector<StepCounts> &steps() {
  static auto *s = new std::vector<StepCounts>(1); // step 0: before any
  return *s;
}

/// SPMD_EMU_COUNTS=PATH: every step's counts into PATH.<rank>, one line a
/// step: `step S launches N kernels K gemms G collectives C host_waits W
/// queries Q allocs A frees F h2d N BYTES d2h N BYTES d2d N BYTES memsets
/// M graph_launches L graph_nodes G captured C gemms_grouped R` (R: GEMMs or
/// strided batches run inside another's cuBLAS call, a grouped call's
/// groups after its first), then the same for the whole
/// `run`, then `kernel NAME launches N` for every kernel over the run.
/// SPMD_EMU_REPORT=1 prints the same to stderr.
void writeCounts(std::FILE *out, const char *rank) {
  using spmd::emu::Count;
  auto line = [&](const std::string &label, const StepCounts &c) {
    auto n = [&](Count k) { return c.n[size_t(k)]; };
    auto b = [&](Count k) { return c.bytes[size_t(k)]; };
    std::fprintf(out,
                 "%s%s launches %zu kernels %zu gemms %zu collectives "
                 "%zu host_waits %zu queries %zu allocs %zu frees %zu h2d %zu "
                 "%zu d2h %zu %zu d2d %zu %zu memsets %zu graph_launches %zu "
                 "graph_nodes %zu captured %zu gemms_grouped %zu\n",
                 rank, label.c_str(), n(Count::Launch), c.kernels.size(),
                 n(Count::Gemm), n(Count::Collective), n(Count::HostWait),
                 n(Count::Query), n(Count::Alloc), n(Count::Free),
                 n(Count::CopyH2D), b(Count::CopyH2D), n(Count::CopyD2H),
                 b(Count::CopyD2H), n(Count::CopyD2D), b(Count::CopyD2D),
                 n(Count::Memset), n(Count::GraphLaunch), n(Count::GraphNode),
                 n(Count::Captured), n(Count::GemmGrouped));
  };
  StepCounts run;
  for (size_t i = 0; i < steps().size(); ++i) {
    const StepCounts &c = steps()[i];
    line("step " + std::to_string(i), c);
    for (size_t k = 0; k < size_t(Count::NumCounts); ++k) {
      run.n[k] += c.n[k];
      run.bytes[k] += c.bytes[k];
    }
    for (auto &[name, launches] : c.kernels)
      run.kernels[name] += launches;
  }
  line("run", run);
  // Launches by kernel over the run, most launched first.
  std::vector<std::pair<size_t, std::string>> kernels;
  for (auto &[name, launches] : run.kernels)
    kernels.emplace_back(launches, name);
  std::sort(kernels.rbegin(), kernels.rend());
  for (auto &[launches, name] : kernels)
    std::fprintf(out, "%skernel %s launches %zu\n", rank, name.c_str(),
                 launches);
}

std::string rankName() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"})
    if (const char *r = std::getenv(var))
      return r;
  return "0";
}

void countsAtExit() {
  if (const char *path = std::getenv("SPMD_EMU_COUNTS"); path && *path) {
    std::string file = std::string(path) + "." + rankName();
    if (std::FILE *out = std::fopen(file.c_str(), "w")) {
      writeCounts(out, "");
      std::fclose(out);
    }
  }
  if (const char *r = std::getenv("SPMD_EMU_REPORT"); r && *r == '1') {
    std::string prefix = "spmd gpu emulator: rank " + rankName() + ": ";
    writeCounts(stderr, prefix.c_str());
  }
}

/// SPMD_EMU_REPORT=1: the device allocations still live at exit, so that a
/// program that leaks device memory per step shows it.
void reportAtExit() {
  size_t bytes = 0;
  for (auto &[base, size] : drv().device)
    bytes += size;
  std::fprintf(stderr,
               "spmd gpu emulator: at exit %zu device allocations "
               "(%zu bytes) are live\n",
               drv().device.size(), bytes);
}

Arena &arena() {
  Arena &a = drv().arena;
  if (!a.base) {
    if (const char *r = std::getenv("SPMD_EMU_REPORT"); r && *r == '1')
      std::atexit(reportAtExit);
    std::atexit(countsAtExit);
    void *p = mmap(nullptr, a.reserved, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      spmd::emu::fail("cannot reserve the address range of device memory");
    a.base = static_cast<char *>(p);
    struct sigaction sa{};
    sa.sa_sigaction = onFault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
  }
  return a;
}

Arena &arena();

/// The bytes of the whole pages holding the allocations so far.
size_t pagesUsed() {
  auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (arena().used + page - 1) / page * page;
}

/// While alive, the device's memory is accessible (the device is working).
struct DeviceAccess {
  DeviceAccess() {
    if (arena().openDepth++ == 0 && arena().used)
      mprotect(arena().base, pagesUsed(), PROT_READ | PROT_WRITE);
  }
  ~DeviceAccess() {
    if (--arena().openDepth == 0 && arena().used)
      mprotect(arena().base, pagesUsed(), PROT_NONE);
  }
  DeviceAccess(const DeviceAccess &) = delete;
  DeviceAccess &operator=(const DeviceAccess &) = delete;
};

void onFault(int, siginfo_t *info, void *) {
  char *at = static_cast<char *>(info->si_addr);
  Arena &a = arena();
  char message[200];
  int n;
  if (a.base && at >= a.base && at < a.base + a.reserved)
    n = std::snprintf(message, sizeof(message),
                      "spmd gpu emulator: host code read or wrote device "
                      "memory at %p (on a GPU: a crash or garbage)\n",
                      static_cast<void *>(at));
  else
    n = std::snprintf(message, sizeof(message),
                      "spmd gpu emulator: segmentation fault at %p\n",
                      static_cast<void *>(at));
  if (n > 0)
    (void)!write(2, message, static_cast<size_t>(n));
  _exit(1);
}

CUstream_st &streamOf(CUstream s) {
  // 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the null stream.
  if (reinterpret_cast<uintptr_t>(s) <= 2)
    return drv().nullStream;
  return *s;
}

/// SPMD_EMU_SCHEDULE=lazy (the default) runs work only when the host waits
/// for it. SPMD_EMU_SCHEDULE=random:SEED: besides what the host waits for, work
/// of any stream runs at random moments (when work is enqueued or run), as on
/// a GPU, where streams run concurrently. The default, lazy order catches
/// results read before they are ready; this one also catches buffers
/// rewritten while work on another stream still reads them.
struct Schedule {
  bool random = false;
  uint64_t state = 0;
  bool busy = false;
};

Schedule &schedule() {
  static Schedule s = [] {
    Schedule init;
    const char *v = std::getenv("SPMD_EMU_SCHEDULE");
    if (v && std::strncmp(v, "random:", 7) == 0) {
      init.random = true;
      init.state = std::strtoull(v + 7, nullptr, 10) * 2654435761u + 1;
    }
    return init;
  }();
  return s;
}

uint64_t nextRandom() {
  uint64_t &x = schedule().state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

/// What one step of a stream did.
enum class Step { Empty, Ran, Blocked };

Step step(CUstream_st &s);

/// Under the random schedule, half the time: one work item of a random
/// stream that has some.
void randomProgress() {
  Schedule &sched = schedule();
  if (!sched.random || sched.busy || nextRandom() % 2)
    return;
  std::vector<CUstream_st *> ready;
  if (!drv().nullStream.queue.empty())
    ready.push_back(&drv().nullStream);
  for (CUstream st : drv().streams)
    if (!st->queue.empty())
      ready.push_back(st);
  if (ready.empty())
    return;
  sched.busy = true;
  step(*ready[nextRandom() % ready.size()]);
  sched.busy = false;
}

/// Runs (or polls) the oldest work item of `s`: Blocked when it is still
/// waiting (a collective whose peers have not come).
Step step(CUstream_st &s) {
  randomProgress();
  if (s.queue.empty())
    return Step::Empty;
  if (s.running)
    return Step::Blocked;
  std::function<bool()> work = std::move(s.queue.front());
  s.queue.pop_front();
  bool done;
  {
    DeviceAccess device;
    s.running = true;
    done = work();
    s.running = false;
  }
  if (done)
    return Step::Ran;
  // Still waiting: it stays first on its stream.
  s.queue.push_front(std::move(work));
  return Step::Blocked;
}

void drain(CUstream_st &s) {
  while (step(s) != Step::Empty) {
  }
}

void drainAll() {
  bool busy = true;
  while (busy) {
    busy = step(drv().nullStream) != Step::Empty;
    for (CUstream s : drv().streams)
      busy |= step(*s) != Step::Empty;
  }
}

/// Runs `m`'s stream up to it; with `poll`, returns false instead of waiting
/// when the stream is blocked.
bool runUpTo(const std::shared_ptr<Marker> &m, bool poll) {
  while (!m->done) {
    Step r = step(streamOf(m->stream));
    if (r == Step::Blocked && poll)
      return false;
    if (r == Step::Empty && !m->done)
      spmd::emu::fail("internal: an event's stream ran dry before it");
  }
  return true;
}

void waitFor(const std::shared_ptr<Marker> &m) { runUpTo(m, /*poll=*/false); }

/// The allocation containing [p, p + bytes), if any.
const std::pair<const uintptr_t, size_t> *allocationOf(const void *p,
                                                       size_t bytes) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = drv().device.upper_bound(a);
  if (it == drv().device.begin())
    return nullptr;
  --it;
  if (a + bytes > it->first + it->second)
    return nullptr;
  return &*it;
}

void *allocate(size_t bytes) {
  Arena &a = arena();
  size_t rounded = std::max<size_t>((bytes + 255) / 256 * 256, 256);
  if (a.used + rounded > a.reserved)
    spmd::emu::fail("out of device memory (64 GiB of addresses used)");
  char *p = a.base + a.used;
  a.used += rounded;
  // The pages of [p, p + rounded), accessible while it is filled.
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t first = reinterpret_cast<uintptr_t>(p) / page * page;
  uintptr_t last =
      (reinterpret_cast<uintptr_t>(p) + rounded + page - 1) / page * page;
  auto *pages = reinterpret_cast<void *>(first);
  mprotect(pages, last - first, PROT_READ | PROT_WRITE);
  std::memset(p, 0xff, rounded);
  if (a.openDepth == 0)
    mprotect(pages, last - first, PROT_NONE);
  drv().device[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

/// Managed memory: the host may touch it too.
void *allocateManaged(size_t bytes) {
  void *p =
      std::aligned_alloc(256, std::max<size_t>((bytes + 255) / 256 * 256, 256));
  if (!p)
    spmd::emu::fail("out of host memory for a managed allocation");
  std::memset(p, 0xff, bytes);
  drv().device[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

void release(void *p) {
  auto it = drv().device.find(reinterpret_cast<uintptr_t>(p));
  if (it == drv().device.end())
    spmd::emu::fail("cuMemFree of a pointer that is not a device allocation");
  size_t bytes = it->second;
  drv().device.erase(it);
  char *c = static_cast<char *>(p);
  Arena &a = arena();
  if (c < a.base || c >= a.base + a.reserved) {
    std::free(p);
    return;
  }
  // Give whole pages back; the addresses stay reserved.
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t begin = (reinterpret_cast<uintptr_t>(c) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(c) + bytes) / page * page;
  if (end > begin)
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

thread_local const char *currentKernel = "";
thread_local int64_t currentParam = 0;

void checkKernelPointer(void *p) {
  ++currentParam;
  if (!p || spmd::emu::isDeviceMemory(p, 0))
    return;
  char what[256];
  std::snprintf(what, sizeof(what),
                "kernel %s is given %p, which is not device memory (a host "
                "pointer on a GPU)",
                currentKernel, p);
  spmd::emu::fail(what);
}

bool isPageable(const void *p) { return !spmd::emu::isDeviceMemory(p, 0); }

/// Device memory proper (the arena), not host memory registered with the
/// driver: what decides a copy's direction.
bool onDevice(const void *p) {
  auto *c = static_cast<const char *>(p);
  Arena &a = arena();
  return c >= a.base && c < a.base + a.reserved;
}

/// Fills `count` elements of type T at `dst` with `value`, on `stream`.
template <typename T>
CUresult memsetAsync(CUdeviceptr dst, T value, size_t count, CUstream stream) {
  spmd::emu::count(spmd::emu::Count::Memset);
  spmd::emu::enqueue(stream, [=] {
    auto *p = reinterpret_cast<T *>(dst);
    for (size_t i = 0; i < count; ++i)
      p[i] = value;
  });
  return CUDA_SUCCESS;
}

/// Ends `g`'s capture as failed (cuStreamEndCapture reports `why`) and
/// returns `error`, as CUDA does for an operation a capture cannot hold.
CUresult invalidate(CUgraph_st *g, CUresult error, const char *why) {
  if (!g->invalid)
    g->invalid = why;
  return error;
}

/// An operation that makes the host wait (or that CUDA otherwise refuses
/// in a capture): on a captured stream (`stream`), or with nullptr while
/// any stream is captured, it invalidates the capture.
CUresult refuseWhileCapturing(CUstream stream, const char *what) {
  CUstream_st *s = &streamOf(stream);
  if (!stream) {
    s = nullptr;
    for (CUstream c : drv().streams)
      if (c->capture)
        s = c;
  }
  if (!s || !s->capture)
    return CUDA_SUCCESS;
  return invalidate(s->capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, what);
}

} // namespace

void spmd::emu::enqueue(CUstream stream, std::function<void()> work) {
  enqueuePolled(stream, [work = std::move(work)] {
    work();
    return true;
  });
}

void spmd::emu::enqueuePolled(CUstream stream, std::function<bool()> work) {
  CUstream_st &s = streamOf(stream);
  if (s.capture) {
    // Captured: a node of the graph, run at each of its launches.
    s.capture->items.push_back(std::move(work));
    ++s.captured;
    return;
  }
  s.queue.push_back(std::move(work));
  randomProgress();
}

bool spmd::emu::isDeviceMemory(const void *p, size_t bytes) {
  return allocationOf(p, bytes) != nullptr;
}

void spmd::emu::count(Count what, size_t bytes) {
  StepCounts &c = steps().back();
  if (drv().capturing > 0 && what == Count::GemmGrouped)
    return; // its call is counted as captured
  if (drv().capturing > 0 && what != Count::HostWait && what != Count::Query &&
      what != Count::Alloc && what != Count::Free)
    what = Count::Captured;
  ++c.n[size_t(what)];
  c.bytes[size_t(what)] += bytes;
}

void spmd::emu::fail(const std::string &what) {
  std::fprintf(stderr, "spmd gpu emulator: %s\n", what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

extern "C" {

/// Called by libSpmdGpuRuntime at the entry of every compiled step (looked
/// up with dlsym: only the emulator has it).
void spmdEmuStepBegin() { steps().emplace_back(); }

CUresult cuInit(unsigned int) {
  drv().initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_IMAGE:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_INITIALIZED:
    *name = "CUDA_ERROR_NOT_INITIALIZED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_STATE:
    *name = "CUDA_ERROR_ILLEGAL_STATE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNJOINED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    *name = "CUDA_ERROR_STREAM_CAPTURE_ISOLATION";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    *name = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    return CUDA_SUCCESS;
  case CUDA_ERROR_CAPTURED_EVENT:
    *name = "CUDA_ERROR_CAPTURED_EVENT";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    *name = "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
    return CUDA_SUCCESS;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
  }
}

CUresult cuDeviceGetCount(int *count) {
  if (!drv().initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = &drv().context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }

CUresult cuCtxSynchronize(void) {
  if (CUresult r = refuseWhileCapturing(nullptr, "cuCtxSynchronize"))
    return r;
  spmd::emu::count(spmd::emu::Count::HostWait);
  drainAll();
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = new CUstream_st;
  drv().streams.push_back(*stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream stream) {
  // As on a GPU, work already enqueued still runs; the queue stays until
  // the context is synchronized (the emulator never frees a stream).
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  if (CUresult r = refuseWhileCapturing(stream, "cuStreamSynchronize"))
    return r;
  spmd::emu::count(spmd::emu::Count::HostWait);
  drain(streamOf(stream));
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  std::shared_ptr<Marker> m = event->last;
  CUstream_st &s = streamOf(stream);
  if (m->captureOpen && !*m->captureOpen)
    return CUDA_ERROR_CAPTURED_EVENT; // recorded in a capture that ended
  if (m->capture) {
    // A dependency inside a capture: the stream joins it (or, being in it,
    // waits for a joined stream's work: that work is joined back).
    if (!s.capture) {
      if (&s == &drv().nullStream)
        return invalidate(m->capture, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                          "the null stream cannot join a capture");
      s.capture = m->capture;
      s.captured = s.joinedUpTo = 0;
      m->capture->joined.push_back(&s);
    } else if (s.capture != m->capture) {
      return invalidate(s.capture, CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                        "a wait for an event of another capture");
    }
    CUstream_st &from = streamOf(m->stream);
    from.joinedUpTo = std::max(from.joinedUpTo, m->capturedCount);
    return CUDA_SUCCESS;
  }
  if (s.capture)
    // As CUDA: a dependency may not cross the capture's boundary.
    return invalidate(s.capture, CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                      "a captured stream waited for an event recorded "
                      "outside the capture");
  spmd::emu::enqueuePolled(stream, [m] { return runUpTo(m, /*poll=*/true); });
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  auto m = std::make_shared<Marker>();
  m->stream = stream;
  if (CUstream_st &s = streamOf(stream); s.capture) {
    // A point in the capture other captured streams may wait for.
    m->capture = s.capture;
    m->captureOpen = s.capture->open;
    m->capturedCount = s.captured;
    event->last = m;
    return CUDA_SUCCESS;
  }
  m->done = false;
  event->last = m;
  spmd::emu::enqueue(stream, [m] {
    m->done = true;
    m->reachedNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  });
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  if (start->last->captureOpen || end->last->captureOpen)
    return CUDA_ERROR_CAPTURED_EVENT;
  // As the driver: both must have been recorded and reached.
  if (!start->last->reachedNs || !end->last->reachedNs)
    return start->last->done && end->last->done ? CUDA_ERROR_INVALID_HANDLE
                                                : CUDA_ERROR_NOT_READY;
  *ms = float(double(end->last->reachedNs - start->last->reachedNs) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  if (event->last->captureOpen)
    return CUDA_ERROR_CAPTURED_EVENT;
  spmd::emu::count(spmd::emu::Count::HostWait);
  waitFor(event->last);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event) {
  if (event->last->captureOpen)
    return CUDA_ERROR_CAPTURED_EVENT;
  spmd::emu::count(spmd::emu::Count::Query);
  // The host is waiting for it: run the stream up to the event, unless it
  // is blocked (a collective whose peers have not come yet).
  return runUpTo(event->last, /*poll=*/true) ? CUDA_SUCCESS
                                             : CUDA_ERROR_NOT_READY;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  spmd::emu::count(spmd::emu::Count::Alloc, bytes);
  *ptr = reinterpret_cast<CUdeviceptr>(allocate(bytes));
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream stream) {
  // A captured allocation is a graph memory node on a GPU: not emulated.
  if (CUresult r = refuseWhileCapturing(stream, "cuMemAllocAsync"))
    return r;
  spmd::emu::count(spmd::emu::Count::Alloc, bytes);
  *ptr = reinterpret_cast<CUdeviceptr>(allocate(bytes));
  return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned int) {
  spmd::emu::count(spmd::emu::Count::Alloc, bytes);
  *ptr = reinterpret_cast<CUdeviceptr>(allocateManaged(bytes));
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr ptr) {
  // Frees wait for the device (as cuMemFree does).
  spmd::emu::count(spmd::emu::Count::Free);
  spmd::emu::count(spmd::emu::Count::HostWait);
  drainAll();
  release(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  spmd::emu::count(spmd::emu::Count::Free);
  if (!allocationOf(reinterpret_cast<void *>(ptr), 0))
    spmd::emu::fail("cuMemFreeAsync of a pointer that is not a device "
                    "allocation");
  spmd::emu::enqueue(stream, [ptr] { release(reinterpret_cast<void *>(ptr)); });
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t bytes, unsigned int) {
  drv().device[reinterpret_cast<uintptr_t>(p)] = bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p) {
  drv().device.erase(reinterpret_cast<uintptr_t>(p));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  void *d = reinterpret_cast<void *>(dst);
  const void *s = reinterpret_cast<const void *>(src);
  spmd::emu::count(!onDevice(s)   ? spmd::emu::Count::CopyH2D
                   : !onDevice(d) ? spmd::emu::Count::CopyD2H
                                  : spmd::emu::Count::CopyD2D,
                   bytes);
  if (isPageable(d) || isPageable(s)) {
    // Pageable host memory: after the stream's earlier work, at once.
    if (CUresult r = refuseWhileCapturing(stream, "a copy to or from "
                                                  "pageable host memory"))
      return r;
    spmd::emu::count(spmd::emu::Count::HostWait);
    drain(streamOf(stream));
    DeviceAccess device;
    std::memcpy(d, s, bytes);
    return CUDA_SUCCESS;
  }
  spmd::emu::enqueue(stream, [=] { std::memcpy(d, s, bytes); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *copy, CUstream stream) {
  if (copy->srcMemoryType != CU_MEMORYTYPE_DEVICE ||
      copy->dstMemoryType != CU_MEMORYTYPE_DEVICE)
    spmd::emu::fail("cuMemcpy2DAsync: only device-to-device copies");
  CUDA_MEMCPY2D c = *copy;
  auto *dst = reinterpret_cast<char *>(c.dstDevice + c.dstY * c.dstPitch +
                                       c.dstXInBytes);
  auto *src = reinterpret_cast<const char *>(c.srcDevice + c.srcY * c.srcPitch +
                                             c.srcXInBytes);
  size_t lastDst = (c.Height - 1) * c.dstPitch + c.WidthInBytes;
  size_t lastSrc = (c.Height - 1) * c.srcPitch + c.WidthInBytes;
  if (c.Height && (!allocationOf(dst, lastDst) || !allocationOf(src, lastSrc)))
    spmd::emu::fail("cuMemcpy2DAsync outside a device allocation");
  spmd::emu::count(spmd::emu::Count::CopyD2D, c.Height * c.WidthInBytes);
  spmd::emu::enqueue(stream, [=] {
    for (size_t row = 0; row < c.Height; ++row)
      std::memcpy(dst + row * c.dstPitch, src + row * c.srcPitch,
                  c.WidthInBytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  if (CUresult r = refuseWhileCapturing(nullptr, "cuMemsetD8"))
    return r;
  spmd::emu::count(spmd::emu::Count::Memset);
  spmd::emu::count(spmd::emu::Count::HostWait);
  drainAll();
  DeviceAccess device;
  std::memset(reinterpret_cast<void *>(dst), value, count);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream stream) {
  return memsetAsync<uint16_t>(dst, value, count, stream);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream stream) {
  return memsetAsync<uint32_t>(dst, value, count, stream);
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  static const char prefix[] = "spmd-emulated-kernels:";
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, prefix, sizeof(prefix) - 1) != 0) {
    std::fprintf(stderr,
                 "spmd gpu emulator: this module is a real GPU binary; the "
                 "emulator runs programs compiled with "
                 "--spmd-lower-to-nvvm=\"emulate=1\"\n");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *module = new CUmod_st{std::string(text + sizeof(prefix) - 1), nullptr};
  // The library the image is a constant of: its kernels are there, even
  // when it was loaded with RTLD_LOCAL (dlsym(RTLD_DEFAULT) misses them).
  Dl_info info;
  if (dladdr(image, &info) && info.dli_fname && *info.dli_fname) {
    void *self = dlopen(nullptr, RTLD_NOW);
    void *lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (lib && lib != self)
      (*module)->library = lib;
    else if (lib)
      dlclose(lib);
  }
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int,
                            CUjit_option *, void **) {
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(CUmodule module) {
  if (module->library)
    dlclose(module->library);
  delete module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  std::string symbol = "__spmd_emu_" + module->name + "__" + name;
  auto key = std::make_pair(module->library, symbol);
  auto it = drv().functions.find(key);
  if (it != drv().functions.end()) {
    *function = it->second;
    return CUDA_SUCCESS;
  }
  void *scope = module->library ? module->library : RTLD_DEFAULT;
  void *entry = dlsym(scope, symbol.c_str());
  void *params = dlsym(scope, (symbol + "_params").c_str());
  if (!entry || !params) {
    std::fprintf(stderr,
                 "spmd gpu emulator: kernel %s not found in the process "
                 "(link the program with -rdynamic)\n",
                 symbol.c_str());
    return CUDA_ERROR_NOT_FOUND;
  }
  auto *f = new CUfunc_st;
  f->name = symbol;
  f->entry = reinterpret_cast<decltype(f->entry)>(entry);
  f->params = static_cast<const int64_t *>(params);
  drv().functions[key] = f;
  *function = f;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridX, unsigned int gridY,
                        unsigned int gridZ, unsigned int blockX,
                        unsigned int blockY, unsigned int blockZ,
                        unsigned int sharedBytes, CUstream stream,
                        void **params, void **extra) {
  // The limits of NVIDIA GPUs since compute capability 3.0.
  uint64_t threads = uint64_t(blockX) * blockY * blockZ;
  if (threads == 0 || threads > 1024 || blockX > 1024 || blockY > 1024 ||
      blockZ > 64 || gridX == 0 || gridY == 0 || gridZ == 0 || gridY > 65535 ||
      gridZ > 65535 || gridX > 0x7fffffffu) {
    std::fprintf(stderr,
                 "spmd gpu emulator: %s launched with grid %ux%ux%u, block "
                 "%ux%ux%u: beyond a GPU's limits\n",
                 f->name.c_str(), gridX, gridY, gridZ, blockX, blockY, blockZ);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (sharedBytes || extra)
    spmd::emu::fail(f->name + ": dynamic shared memory and `extra` launch "
                              "parameters are not emulated");
  spmd::emu::count(spmd::emu::Count::Launch);
  if (!drv().capturing)
    ++steps().back().kernels[f->name];
  // The parameters are read at launch, as the driver does.
  int64_t count = f->params[0];
  size_t total = 0;
  for (int64_t i = 0; i < count; ++i)
    total += (static_cast<size_t>(f->params[1 + i]) + 7) / 8 * 8;
  auto storage = std::make_shared<std::vector<char>>(total);
  auto slots = std::make_shared<std::vector<void *>>(count);
  size_t at = 0;
  for (int64_t i = 0; i < count; ++i) {
    auto bytes = static_cast<size_t>(f->params[1 + i]);
    std::memcpy(storage->data() + at, params[i], bytes);
    (*slots)[i] = storage->data() + at;
    at += (bytes + 7) / 8 * 8;
  }
  spmd::emu::enqueue(stream, [=] {
    currentKernel = f->name.c_str();
    currentParam = 0;
    f->entry(slots->data(), gridX, gridY, gridZ, blockX, blockY, blockZ,
             checkKernelPointer);
    (void)storage;
  });
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Stream capture and graphs
//===----------------------------------------------------------------------===//

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  CUstream_st &s = streamOf(stream);
  if (&s == &drv().nullStream)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s.capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  // Every mode behaves as relaxed here: what a capture cannot hold (a host
  // wait on a captured stream or event, a dependency crossing its
  // boundary, a captured allocation) is refused in all of them.
  auto *g = new CUgraph_st;
  g->origin = stream;
  s.capture = g;
  ++drv().capturing;
  s.captured = s.joinedUpTo = 0;
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  CUstream_st &s = streamOf(stream);
  *status = !s.capture           ? CU_STREAM_CAPTURE_STATUS_NONE
            : s.capture->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  CUstream_st &s = streamOf(stream);
  *graph = nullptr;
  if (!s.capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  CUgraph_st *g = s.capture;
  if (g->origin != stream)
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  // The capture ends for every stream in it.
  bool unjoined = false;
  for (CUstream j : g->joined) {
    unjoined |= j->joinedUpTo < j->captured;
    j->capture = nullptr;
  }
  s.capture = nullptr;
  *g->open = false;
  --drv().capturing;
  if (g->invalid || unjoined) {
    if (const char *v = std::getenv("SPMD_EMU_REPORT"); v && *v == '1')
      std::fprintf(stderr, "spmd gpu emulator: capture failed: %s\n",
                   g->invalid ? g->invalid
                              : "a joined stream's work was not joined back");
    CUresult error = g->invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    delete g;
    return error;
  }
  *graph = g;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                     unsigned long long) {
  auto *e = new CUgraphExec_st;
  e->items = graph->items;
  *exec = e;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (streamOf(stream).capture)
    return invalidate(streamOf(stream).capture,
                      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "a graph launched into a capture (not emulated)");
  spmd::emu::count(spmd::emu::Count::GraphLaunch);
  for (const std::function<bool()> &item : exec->items) {
    spmd::emu::count(spmd::emu::Count::GraphNode);
    spmd::emu::enqueuePolled(stream, item);
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  delete graph;
  return CUDA_SUCCESS;
}

} // extern "C"

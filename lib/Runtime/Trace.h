//===- Trace.h - what the runtime's traced calls share ----------*- C++ -*-===//
//
// The recording side of Trace.cpp: `enabled` is checked (relaxed) by every
// traced call; `record` appends one complete event.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_TRACE_H
#define SPMD_RUNTIME_TRACE_H

#include <atomic>
#include <cstdint>
#include <string>

namespace spmd::trace {

/// Chrome trace threads of a rank's process track.
constexpr int kComputeThread = 0, kCollectiveThread = 1;

/// Nanoseconds of the steady clock (spmdTraceNow).
int64_t now();

/// One complete event; `args` is the body of a JSON object ("\"k\": 1").
void record(std::string name, const char *category, int64_t start, int64_t end,
            std::string args, int thread);

/// Names trace thread `thread` (written with the events).
void nameThread(int thread, std::string name);

/// Set by a runtime whose work completes asynchronously (the GPU runtime):
/// records what it still holds, called when the trace stops.
extern void (*flushDevice)();

extern std::atomic<bool> enabled;
/// Nonzero inside a recorded call whose own calls are not recorded (the
/// attention kernels' block GEMMs).
extern thread_local int quiet;

inline bool on() { return enabled.load(std::memory_order_relaxed) && !quiet; }

/// Records the calls in its scope as one event `name` (no nested events).
class Span {
public:
  Span(const char *name, const char *category, std::string args)
      : active(on()), name(name), category(category), args(std::move(args)) {
    if (active) {
      start = now();
      ++quiet;
    }
  }
  ~Span() {
    if (active) {
      --quiet;
      record(name, category, start, now(), std::move(args), kComputeThread);
    }
  }

private:
  bool active;
  const char *name, *category;
  std::string args;
  int64_t start = 0;
};

} // namespace spmd::trace

#endif // SPMD_RUNTIME_TRACE_H

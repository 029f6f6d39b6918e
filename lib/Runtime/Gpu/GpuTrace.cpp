//===- GpuTrace.cpp - device work in step traces --------------------------===//
//
// Device work is asynchronous: its times are known only once the device has
// run it. So, while tracing, each traced piece of work is bracketed by two
// timing events on its stream (pooled, reused across steps), kept pending,
// and read when the trace stops (Trace.h's flushDevice hook): the device
// is synchronized once, and each event's time is its distance from an
// anchor event, which was recorded and waited for once when the first piece
// was traced, at a known host time. Off, a traced call costs one relaxed
// atomic load.
//
//===----------------------------------------------------------------------===//

#include "GpuTrace.h"

#include "../Trace.h"
#include "GpuCommon.h"

#include <map>
#include <mutex>
#include <vector>

namespace spmd::gpu::trace {
namespace {

struct Pending {
  CUevent start, end;
  int thread;
  std::string name, category, args;
};

struct DeviceTrace {
  std::mutex mutex;
  std::vector<Pending> pending;
  std::vector<CUevent> pool;
  /// The anchor: an event the host waited for at host time `anchorNs`.
  CUevent anchor = nullptr;
  int64_t anchorNs = 0;
  /// Trace threads of streams, from kFirstStreamThread on.
  std::map<CUstream, int> threads;
  std::map<CUfunction, std::string> functions;
};

constexpr int kFirstStreamThread = 2;

DeviceTrace &state() {
  static auto *s = new DeviceTrace;
  return *s;
}

CUevent takeEvent(DeviceTrace &s) {
  if (!s.pool.empty()) {
    CUevent event = s.pool.back();
    s.pool.pop_back();
    return event;
  }
  CUevent event;
  checkCu(cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate (trace)");
  return event;
}

int threadOf(DeviceTrace &s, CUstream stream) {
  auto [it, added] =
      s.threads.try_emplace(stream, kFirstStreamThread + int(s.threads.size()));
  if (added)
    spmd::trace::nameThread(
        it->second,
        "GPU stream " + std::to_string(it->second - kFirstStreamThread));
  return it->second;
}

/// Nanoseconds on the host clock at which `event` completed.
int64_t hostTime(DeviceTrace &s, CUevent event) {
  float ms = 0;
  checkCu(cuEventElapsedTime(&ms, s.anchor, event), "cuEventElapsedTime");
  return s.anchorNs + static_cast<int64_t>(double(ms) * 1e6);
}

/// Reads every pending event back (the trace is stopping).
void flush() {
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.pending.empty())
    return;
  checkCu(cuCtxSynchronize(), "cuCtxSynchronize (trace)");
  for (Pending &p : s.pending) {
    spmd::trace::record(std::move(p.name), p.category.c_str(),
                        hostTime(s, p.start), hostTime(s, p.end),
                        std::move(p.args), p.thread);
    s.pool.push_back(p.start);
    s.pool.push_back(p.end);
  }
  s.pending.clear();
}

[[maybe_unused]] const bool registered = [] {
  spmd::trace::flushDevice = &flush;
  return true;
}();

} // namespace

CUevent begin(CUstream stream) {
  if (!spmd::trace::on())
    return nullptr;
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.anchor) {
    checkCu(cuEventCreate(&s.anchor, CU_EVENT_DEFAULT), "cuEventCreate");
    checkCu(cuEventRecord(s.anchor, stream), "cuEventRecord (trace anchor)");
    checkCu(cuEventSynchronize(s.anchor), "cuEventSynchronize (trace anchor)");
    s.anchorNs = spmd::trace::now();
  }
  CUevent start = takeEvent(s);
  checkCu(cuEventRecord(start, stream), "cuEventRecord (trace)");
  return start;
}

void end(CUevent start, CUstream stream, std::string name, const char *category,
         std::string args) {
  if (!start)
    return;
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUevent stop = takeEvent(s);
  checkCu(cuEventRecord(stop, stream), "cuEventRecord (trace)");
  s.pending.push_back(Pending{start, stop, threadOf(s, stream), std::move(name),
                              category, std::move(args)});
}

void nameStream(CUstream stream, const char *name) {
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  spmd::trace::nameThread(threadOf(s, stream), name);
}

void nameFunction(CUfunction function, const char *name) {
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.functions[function] = name;
}

namespace {

/// The source of the next traced call (set by spmdGpuTraceSource).
thread_local const char *currentSource = nullptr;

/// "model.py:30 > linear.py:134" for "/a/model.py:30|/b/linear.py:134".
std::string displayName(const char *source) {
  std::string out, text = source;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('|', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string frame = text.substr(begin, end - begin);
    size_t slash = frame.rfind('/');
    out += (out.empty() ? "" : " > ") +
           (slash == std::string::npos ? frame : frame.substr(slash + 1));
    begin = end + 1;
  }
  return out;
}

std::string functionName(CUfunction function) {
  DeviceTrace &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.functions.find(function);
  return it == s.functions.end() ? "kernel" : it->second;
}

} // namespace

std::string kernelEventName(CUfunction function) {
  return currentSource ? displayName(currentSource) : functionName(function);
}

std::string kernelEventArgs(CUfunction function) {
  return "\"kernel\": \"" + functionName(function) + "\"" + sourceArg();
}

std::string sourceArg() {
  if (!currentSource)
    return "";
  // Paths and line numbers: nothing to escape but quotes and backslashes.
  std::string escaped;
  for (const char *c = currentSource; *c; ++c) {
    if (*c == '"' || *c == '\\')
      escaped += '\\';
    escaped += *c;
  }
  return ", \"source\": \"" + escaped + "\"";
}

void setSource(const char *source) { currentSource = source; }

} // namespace spmd::gpu::trace

extern "C" void spmdGpuTraceSource(const char *source) {
  spmd::gpu::trace::setSource(source);
}

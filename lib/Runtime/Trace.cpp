//===- Trace.cpp - step traces as Chrome trace events ---------------------===//
//
// While tracing is on (spmdTraceStart .. spmdTraceStop), the runtime records
// what it runs as complete ("X") events of the Chrome trace-event format,
// which Perfetto and chrome://tracing open: each collective from its start
// to its completion (thread "collectives", with kind, bytes per rank and
// group size), each wait the program blocks in, each sgemm and each
// attention kernel (thread "compute"), and what the caller adds
// (spmdTraceEvent: the Python bridge's steps). Off, a traced call costs one
// relaxed atomic load (a region two). A region hook, set while a
// torch.profiler is on, sees each region's begin and end as they happen.
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace spmd::trace {

std::atomic<bool> enabled{false};
thread_local int quiet = 0;
void (*flushDevice)() = nullptr;

namespace {

/// Called at each region's begin (with its name) and end (with null).
std::atomic<SpmdRegionHook> regionHook{nullptr};

struct Event {
  std::string name, category, args;
  int64_t start, end;
  int thread;
};

std::mutex mutex;
std::vector<Event> &events() {
  static auto *list = new std::vector<Event>;
  return *list;
}
std::map<int, std::string> &threadNames() {
  static auto *names = new std::map<int, std::string>;
  return *names;
}

/// `text` as a JSON string body.
std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void nameThread(int thread, std::string name) {
  std::lock_guard<std::mutex> lock(mutex);
  threadNames()[thread] = std::move(name);
}

void record(std::string name, const char *category, int64_t start, int64_t end,
            std::string args, int thread) {
  std::lock_guard<std::mutex> lock(mutex);
  events().push_back(
      Event{std::move(name), category, std::move(args), start, end, thread});
}

} // namespace spmd::trace

using namespace spmd::trace;

extern "C" {

int64_t spmdTraceNow(void) { return now(); }

void spmdTraceStart(void) {
  std::lock_guard<std::mutex> lock(mutex);
  events().clear();
  enabled.store(true, std::memory_order_relaxed);
}

int64_t spmdTraceBegin(const char *name) {
  if (auto hook = regionHook.load(std::memory_order_relaxed))
    hook(name);
  return on() ? now() : 0;
}

void spmdTraceEnd(int64_t start, const char *name) {
  if (start && on())
    record(name, "region", start, now(), "", kComputeThread);
  if (auto hook = regionHook.load(std::memory_order_relaxed))
    hook(nullptr);
}

void spmdTraceSetRegionHook(SpmdRegionHook hook) {
  regionHook.store(hook, std::memory_order_relaxed);
}

void spmdTraceEvent(const char *name, const char *category, int64_t start,
                    int64_t end, const char *args) {
  if (!enabled.load(std::memory_order_relaxed))
    return;
  record(name, category, start, end, args ? args : "", kComputeThread);
}

int32_t spmdTraceStop(const char *path, int32_t rank) {
  if (flushDevice)
    flushDevice();
  std::lock_guard<std::mutex> lock(mutex);
  enabled.store(false, std::memory_order_relaxed);
  FILE *file = std::fopen(path, "w");
  if (!file)
    return -1;
  std::fputs("[\n", file);
  bool first = true;
  for (const auto &[thread, name] : threadNames()) {
    std::fprintf(file,
                 "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
                 "\"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                 first ? "" : ",\n", rank, thread, escape(name).c_str());
    first = false;
  }
  for (const Event &e : events()) {
    // Microseconds, as the format has them (fractions keep nanoseconds).
    std::fprintf(file,
                 "%s{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", "
                 "\"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, "
                 "\"args\": {%s}}",
                 first ? "" : ",\n", escape(e.name).c_str(), e.category.c_str(),
                 double(e.start) / 1e3, double(e.end - e.start) / 1e3, rank,
                 e.thread, e.args.c_str());
    first = false;
  }
  std::fputs("\n]\n", file);
  events().clear();
  return std::fclose(file) == 0 ? 0 : -1;
}

} // extern "C"

//===- SetupWatchdog.h - a timeout around blocking set-up calls -*- C++ -*-===//
//
// Shared by the CPU and the GPU runtimes: MPI_Init, the NCCL id exchange,
// ncclCommInitRank and ncclCommSplit block until every rank arrives and
// cannot be given a timeout. A watchdog thread ends the job when the call
// it guards still runs after SPMD_TIMEOUT, so a rank that never starts,
// crashes before its first collective or hangs ends the job with a message
// instead of hanging it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_SETUPWATCHDOG_H
#define SPMD_RUNTIME_SETUPWATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace spmd::runtime {

/// Calls `expire(what, message)` (which must end the process) when it is
/// still in scope `timeoutSeconds` after it was made; disarmed when it goes
/// out of scope. A timeout <= 0 (SPMD_TIMEOUT=0) arms nothing.
class SetupWatchdog {
public:
  using Expire = void (*)(const char *what, const char *message);

  SetupWatchdog(const char *what, double timeoutSeconds, Expire expire) {
    if (timeoutSeconds <= 0)
      return;
    state = std::make_shared<State>();
    state->thread = std::thread([s = state, what, timeoutSeconds, expire] {
      std::unique_lock<std::mutex> lock(s->mutex);
      if (s->wake.wait_for(lock, std::chrono::duration<double>(timeoutSeconds),
                           [&] { return s->done; }))
        return;
      char message[256];
      std::snprintf(message, sizeof(message),
                    "timed out after %.1f s waiting for the other ranks to "
                    "set up the communicator (SPMD_TIMEOUT=%g s): a rank did "
                    "not start, crashed or hangs before its first collective",
                    timeoutSeconds, timeoutSeconds);
      expire(what, message);
    });
  }
  ~SetupWatchdog() {
    if (!state)
      return;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->done = true;
    }
    state->wake.notify_one();
    state->thread.join();
  }
  SetupWatchdog(const SetupWatchdog &) = delete;
  SetupWatchdog &operator=(const SetupWatchdog &) = delete;

private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    bool done = false;
    std::thread thread;
  };
  std::shared_ptr<State> state;
};

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_SETUPWATCHDOG_H

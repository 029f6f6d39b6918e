//===- CudaOnHost.cpp - a block's threads as fibers -----------------------===//
//
// runBlocks for CudaOnHost.h: each block's threads run as ucontext fibers,
// round-robin, each until it finishes or waits: at a barrier for its block,
// at a shuffle for its warp (lanes leave their value in a slot, wait for
// the warp, read their source lane's slot; two slot sets alternate, so a
// lane cannot overwrite a value another lane has yet to read). When every
// running thread waits, the scheduler releases whichever group is
// complete; none being complete is a deadlock, reported with the kernel
// threads' states. Threads that returned count as arrived (as on current
// GPUs, where exited threads do not hold a barrier up).
//
//===----------------------------------------------------------------------===//

#include "CudaOnHost.h"
#include "Emulator.h"

#include <ucontext.h>

#include <string>
#include <vector>

namespace spmd::cudahost {
namespace {

enum class Wait { None, Barrier, Warp, Done };

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  ThreadState ids;
  Wait wait = Wait::None;
  int lane = 0, warp = 0;
  unsigned shuffles = 0; // shuffles done: which slot set the next one uses
};

constexpr int kWarp = 32;
constexpr size_t kStack = 256 * 1024;

struct Scheduler {
  ucontext_t main;
  std::vector<Fiber> fibers;
  Fiber *running = nullptr;
  const std::function<void()> *kernel = nullptr;
  // Shuffle slots: [set][thread].
  std::vector<float> slots[2];
};

Scheduler &scheduler() {
  static Scheduler s;
  return s;
}

ThreadState outside;

void fiberMain() {
  Scheduler &s = scheduler();
  (*s.kernel)();
  s.running->wait = Wait::Done;
  swapcontext(&s.running->context, &s.main);
}

/// Back to the scheduler until released.
void suspend(Wait why) {
  Scheduler &s = scheduler();
  Fiber *self = s.running;
  self->wait = why;
  swapcontext(&self->context, &s.main);
}

/// Releases the waiting groups that are complete; false when none is.
bool release(std::vector<Fiber> &fibers) {
  bool any = false;
  bool allAtBarrier = true, someAtBarrier = false;
  for (Fiber &f : fibers) {
    if (f.wait == Wait::Done)
      continue;
    allAtBarrier &= f.wait == Wait::Barrier;
    someAtBarrier |= f.wait == Wait::Barrier;
  }
  if (someAtBarrier && allAtBarrier) {
    for (Fiber &f : fibers)
      if (f.wait == Wait::Barrier)
        f.wait = Wait::None;
    return true;
  }
  for (size_t w0 = 0; w0 < fibers.size(); w0 += kWarp) {
    size_t end = std::min(fibers.size(), w0 + kWarp);
    bool complete = true, waiting = false;
    for (size_t i = w0; i < end; ++i) {
      if (fibers[i].wait == Wait::Done)
        continue;
      complete &= fibers[i].wait == Wait::Warp;
      waiting |= fibers[i].wait == Wait::Warp;
    }
    if (waiting && complete) {
      for (size_t i = w0; i < end; ++i)
        if (fibers[i].wait == Wait::Warp)
          fibers[i].wait = Wait::None;
      any = true;
    }
  }
  return any;
}

} // namespace

ThreadState &current() {
  Scheduler &s = scheduler();
  return s.running ? s.running->ids : outside;
}

void runBlocks(Dim3 grid, Dim3 block, const std::function<void()> &kernel) {
  Scheduler &s = scheduler();
  size_t threads = size_t(block.x) * block.y * block.z;
  s.fibers.resize(threads);
  s.slots[0].assign(threads, 0.0f);
  s.slots[1].assign(threads, 0.0f);
  s.kernel = &kernel;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        for (size_t t = 0; t < threads; ++t) {
          Fiber &f = s.fibers[t];
          f.stack.resize(kStack);
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.data();
          f.context.uc_stack.ss_size = f.stack.size();
          f.context.uc_link = nullptr;
          makecontext(&f.context, fiberMain, 0);
          f.ids.block = {bx, by, bz};
          f.ids.gridSize = grid;
          f.ids.blockSize = block;
          f.ids.thread = {unsigned(t % block.x),
                          unsigned(t / block.x % block.y),
                          unsigned(t / (size_t(block.x) * block.y))};
          f.wait = Wait::None;
          f.lane = int(t % kWarp);
          f.warp = int(t / kWarp);
          f.shuffles = 0;
        }
        for (;;) {
          bool ran = false, live = false;
          for (Fiber &f : s.fibers) {
            if (f.wait == Wait::Done)
              continue;
            live = true;
            if (f.wait != Wait::None)
              continue;
            s.running = &f;
            swapcontext(&s.main, &f.context);
            s.running = nullptr;
            ran = true;
          }
          if (!live)
            break;
          if (!ran && !release(s.fibers)) {
            size_t barrier = 0, warp = 0, done = 0;
            for (Fiber &f : s.fibers) {
              barrier += f.wait == Wait::Barrier;
              warp += f.wait == Wait::Warp;
              done += f.wait == Wait::Done;
            }
            std::string what =
                "block (" + std::to_string(bx) + ", " + std::to_string(by) +
                ", " + std::to_string(bz) + "): " + std::to_string(barrier) +
                " threads at a barrier, " + std::to_string(warp) +
                " at a warp shuffle, " + std::to_string(done) +
                " returned: they wait for each other (a barrier or shuffle "
                "not every thread of the block or warp reaches)";
            spmd::emu::fail("emulated kernel deadlocks: " + what);
          }
        }
      }
  s.kernel = nullptr;
}

void syncThreads() { suspend(Wait::Barrier); }

namespace {
float exchange(float v, int src) {
  Scheduler &s = scheduler();
  Fiber *self = s.running;
  std::vector<float> &slots = s.slots[self->shuffles++ & 1];
  size_t base = size_t(self->warp) * kWarp;
  slots[base + self->lane] = v;
  suspend(Wait::Warp);
  size_t from = base + size_t(src & (kWarp - 1));
  return from < slots.size() ? slots[from] : v;
}
} // namespace

float shuffle(float v, int src) { return exchange(v, src); }

float shuffleXor(float v, int laneMask) {
  return exchange(v, scheduler().running->lane ^ laneMask);
}

} // namespace spmd::cudahost

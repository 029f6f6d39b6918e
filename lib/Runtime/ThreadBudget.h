//===- ThreadBudget.h - threads per rank: the node's cores over its ranks -===//
//
// Each rank's BLAS (and whatever else runs threads inside a step) would
// start one thread per core by default; with one rank per core that is N^2
// threads spinning against each other, and beside any other load a step
// slows down several times (bench/gpt2.py --load). torchrun sets
// OMP_NUM_THREADS=1 for this reason; the runtime sizes itself, whoever
// launches it: the cores this process may run on over the ranks on this
// node, unless the user chose (OMP_NUM_THREADS or OPENBLAS_NUM_THREADS).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_THREADBUDGET_H
#define SPMD_RUNTIME_THREADBUDGET_H

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace spmd::runtime {

/// A positive integer environment variable, or 0.
inline int positiveEnv(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return 0;
  char *end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed > 0 && parsed < (1 << 20))
             ? static_cast<int>(parsed)
             : 0;
}

struct ThreadBudget {
  /// Threads one rank may use; 0 when the user chose (nothing is set then).
  int threads = 0;
  int cores = 1;
  int localRanks = 1;
  /// Why, for reports: "2 cores / 2 ranks on this node" or the variable.
  std::string reason;
};

/// The budget of this process: the cores it may run on (its CPU affinity),
/// as they are when the launcher bound it to fewer than the node has, else
/// over the ranks on this node (LOCAL_WORLD_SIZE from torchrun,
/// OMPI_COMM_WORLD_LOCAL_SIZE from mpirun; 1 when neither says), at least 1.
inline ThreadBudget threadBudget() {
  ThreadBudget budget;
  cpu_set_t set;
  CPU_ZERO(&set);
  budget.cores = sched_getaffinity(0, sizeof(set), &set) == 0
                     ? std::max(1, CPU_COUNT(&set))
                     : 1;
  budget.localRanks = positiveEnv("LOCAL_WORLD_SIZE");
  if (!budget.localRanks)
    budget.localRanks = positiveEnv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!budget.localRanks)
    budget.localRanks = 1;
  for (const char *chosen : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (std::getenv(chosen) && *std::getenv(chosen)) {
      budget.reason = std::string(chosen) + " is set";
      return budget;
    }
  }
  // A launcher that bound the rank to some of the cores (mpirun's
  // --bind-to core) already gave it its share.
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0 && budget.cores < online) {
    budget.threads = budget.cores;
    budget.reason =
        std::to_string(budget.cores) + " cores this rank is bound to";
    return budget;
  }
  budget.threads = std::max(1, budget.cores / budget.localRanks);
  budget.reason = std::to_string(budget.cores) + " cores / " +
                  std::to_string(budget.localRanks) + " ranks on this node";
  return budget;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_THREADBUDGET_H

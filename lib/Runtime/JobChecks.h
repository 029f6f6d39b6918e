//===- JobChecks.h - timeouts and launch checks of both runtimes -*- C++
//-*-===//
//
// Shared by the MPI and the NCCL runtimes: how long a rank waits for the
// others before it takes the job down (SPMD_TIMEOUT), how a group is named in
// that message, and the check that the launcher's idea of the job (torchrun's
// RANK / WORLD_SIZE) matches the runtime's.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_JOBCHECKS_H
#define SPMD_RUNTIME_JOBCHECKS_H

#include "MeshGroup.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace spmd::runtime {

/// 30 minutes, torch.distributed's default process-group timeout: long
/// enough for rank 0 to compile a large program while the others wait.
constexpr double kDefaultTimeoutSeconds = 1800;

/// Reads SPMD_TIMEOUT (seconds; 0 waits forever) into `timeout`; false with
/// `error` set when it is not a number.
inline bool readTimeout(double &timeout, std::string &error) {
  const char *text = std::getenv("SPMD_TIMEOUT");
  if (!text || !*text)
    return true;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || value != value) {
    error = std::string("SPMD_TIMEOUT must be a number of seconds (0: no "
                        "timeout), found '") +
            text + "'";
    return false;
  }
  timeout = value;
  return true;
}

/// "mesh 2x2, axes [0, 1] (a group of 4 ranks)".
inline std::string describeGroup(int64_t packed, int64_t mask) {
  std::vector<int64_t> shape = unpackMeshShape(packed);
  if (shape.empty())
    return "the whole job";
  std::string text = "mesh ";
  int64_t ranks = 1;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    text += (a ? "x" : "") + std::to_string(shape[a]);
    if (mask & (int64_t(1) << a))
      ranks *= shape[a];
  }
  text += ", axes [";
  bool first = true;
  for (std::size_t a = 0; a < shape.size(); ++a)
    if (mask & (int64_t(1) << a)) {
      text += (first ? "" : ", ") + std::to_string(a);
      first = false;
    }
  text += "] (a group of " + std::to_string(ranks) + " ranks)";
  return text;
}

/// Whether the launcher's RANK / WORLD_SIZE (torchrun sets them), where set,
/// agree with the job `job` describes (e.g. "the MPI runtime"); false with
/// `error` saying how to launch otherwise. Without this, torchrun starting N
/// processes of the MPI runtime gives N silent single-rank jobs.
inline bool checkLauncher(int rank, int size, const char *job,
                          std::string &error) {
  const char *worldText = std::getenv("WORLD_SIZE");
  const char *rankText = std::getenv("RANK");
  long world = worldText ? std::strtol(worldText, nullptr, 10) : size;
  long launcherRank = rankText ? std::strtol(rankText, nullptr, 10) : rank;
  if (world == size && launcherRank == rank)
    return true;
  error = std::string("the launcher started this process as rank ") +
          (rankText ? rankText : "?") + " of " + (worldText ? worldText : "?") +
          " (RANK, WORLD_SIZE; torchrun sets them) but " + job +
          " has a job of " + std::to_string(size) +
          " rank(s) with this process as rank " + std::to_string(rank) +
          "; every rank would train alone. Launch the CPU path with "
          "`mpirun -np " +
          (worldText ? worldText : "N") +
          " python3 SCRIPT` (unset RANK and WORLD_SIZE, or make them match)";
  return false;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_JOBCHECKS_H

//===- Progress.h - collectives move while the program computes -*- C++ -*-===//
//
// The MPI backend's collectives move only when polled: a ring starts its next
// step, and Open MPI's shared-memory transport serves a peer's rendezvous
// (the peer's send completes once this rank has read it), inside an MPI
// call. A collective started early and waited for late (fully_shard's
// prefetched all-gathers, a bucket's all-reduce) would otherwise move only
// at waits, and a rank's waits would hold up its peers' sends. So the
// runtime polls every collective in flight at its kernels' entries (sgemm,
// attention) and while it waits for any one of them.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_PROGRESS_H
#define SPMD_RUNTIME_PROGRESS_H

namespace spmd::runtime {

/// Polls each collective in flight once, without waiting; a completion or
/// a failure is kept for its wait (spmdWait). Does nothing with none in
/// flight, or off the thread that initialized the runtime.
void progressCollectives();

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_PROGRESS_H

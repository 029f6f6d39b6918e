//===- OpenMpiDefaults.h - Open MPI settings chosen before MPI_Init -------===//
//
// Called just before every MPI_Init of the runtimes (and the GPU emulator's
// NCCL). A job whose ranks all run on one node (mpirun's
// OMPI_COMM_WORLD_LOCAL_SIZE equals OMPI_COMM_WORLD_SIZE) gets Open MPI's ob1
// messaging layer (shared memory through the vader BTL) unless the user
// chose one (`--mca pml ...` reaches the ranks as OMPI_MCA_pml): Open MPI
// 4.1 otherwise initializes UCX first, which probes every network device and
// costs ~0.2 s per process before the first collective, for shared memory
// that ob1 provides as well. Multi-node jobs keep Open MPI's own choice.
// Every rank sees the same two variables, so all pick the same layer.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_OPENMPIDEFAULTS_H
#define SPMD_RUNTIME_OPENMPIDEFAULTS_H

#include <cstdlib>
#include <cstring>

namespace spmd::runtime {

inline void chooseOpenMpiDefaults() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!size || !local || std::strcmp(size, local) != 0)
    return;
  ::setenv("OMPI_MCA_pml", "ob1", /*overwrite=*/0);
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_OPENMPIDEFAULTS_H

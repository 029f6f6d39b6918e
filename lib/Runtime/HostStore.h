//===- HostStore.h - the key-value store the host registered ---*- C++ -*-===//
//
// spmdUseStore's callbacks (SpmdRuntime.h): the store the Python bridge
// registers (torch's TCPStore under torchrun). Each runtime keeps its own:
// libSpmdRuntime's Gloo backend meets the other ranks through it,
// libSpmdGpuRuntime hands the NCCL id over through it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_HOSTSTORE_H
#define SPMD_RUNTIME_HOSTSTORE_H

#include "Spmd/Runtime/SpmdRuntime.h"

namespace spmd::runtime {

struct HostStore {
  SpmdStoreSet set = nullptr;
  SpmdStoreGet get = nullptr;
  SpmdStoreWait wait = nullptr;
};

/// The registered store (all null: none was).
inline HostStore &hostStore() {
  static HostStore store;
  return store;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_HOSTSTORE_H

//===- GlooMissing.cpp - the runtime built without Gloo -------------------===//
//
// Built when CMake found no Gloo (libgloo-dev): asking for the Gloo backend
// is an error that says how to get it.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include "Spmd/Runtime/SpmdRuntime.h"

extern "C" void spmdUseStore(SpmdStoreSet, SpmdStoreGet, SpmdStoreWait) {}

namespace spmd::runtime {

std::unique_ptr<Backend> createGlooBackend(double, std::string &error) {
  error = "this libSpmdRuntime was built without Gloo (apt-get install "
          "libgloo-dev, then rebuild), so it cannot join a torchrun job; "
          "launch with `mpirun -np N python3 SCRIPT` instead";
  return nullptr;
}

} // namespace spmd::runtime

//===- VerifyGpuHostCode.cpp - host code must not touch device memory ----===//
//
// After kernel outlining, every buffer of a host function is device memory
// (spmd-gpu-memory), so a memref load or store left in host code (of a
// buffer that is not a 0-d scalar spmd-gpu-memory copied to the host, or in
// a loop the GPU mapping did not take) would dereference a device pointer on
// the CPU. Reported, located, instead of a crash at run time.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDVERIFYGPUHOSTCODEPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdVerifyGpuHostCodePass
    : public spmd::impl::SpmdVerifyGpuHostCodePassBase<
          SpmdVerifyGpuHostCodePass> {
  void runOnOperation() override {
    bool failed = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.walk([&](Operation *op) {
        if (!isa<memref::LoadOp, memref::StoreOp>(op) ||
            op->hasAttr(spmd::SpmdDialect::getHostCopyAttrName()))
          return;
        op->emitError("spmd-lower-to-nvvm: host code reads or writes device "
                      "memory here (a scalar taken out of a tensor, or a "
                      "loop the GPU mapping did not take); not supported");
        failed = true;
      });
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace

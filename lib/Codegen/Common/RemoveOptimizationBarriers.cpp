//===- RemoveOptimizationBarriers.cpp - barriers gone before buffers ------===//
//
// spmd-remove-optimization-barriers: each spmd.optimization_barrier is
// replaced by its input right before bufferization (the barrier only had to
// keep CSE from merging recomputed ops into the forward's while the program
// was on tensors).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDREMOVEOPTIMIZATIONBARRIERSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdRemoveOptimizationBarriersPass
    : spmd::impl::SpmdRemoveOptimizationBarriersPassBase<
          SpmdRemoveOptimizationBarriersPass> {
  void runOnOperation() override {
    getOperation().walk([](spmd::OptimizationBarrierOp barrier) {
      barrier.getResult().replaceAllUsesWith(barrier.getInput());
      barrier.erase();
    });
  }
};

} // namespace

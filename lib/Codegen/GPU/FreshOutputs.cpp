//===- FreshOutputs.cpp - one output tensor per op before bufferization ---===//
//
// CSE merges the tensor.empty of every op of one shape into one. One-shot
// bufferization then gives those ops one buffer, and computes an
// elementwise op in place over an earlier op's result when nothing reads
// that result afterwards: the MSE loss's gradient over the difference its
// sum read just before. On the GPU that write-after-read orders the two
// readers of the difference (the sum and the gradient), which could
// otherwise share a launch. Each op gets its own tensor.empty here, so
// each gets its own buffer (the GPU runtime's cache reuses freed device
// buffers anyway).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUFRESHOUTPUTSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdGpuFreshOutputsPass
    : public spmd::impl::SpmdGpuFreshOutputsPassBase<SpmdGpuFreshOutputsPass> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> shared;
    getOperation()->walk([&](tensor::EmptyOp empty) {
      if (!empty->hasOneUse())
        shared.push_back(empty);
    });
    for (tensor::EmptyOp empty : shared) {
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : empty->getUses()) {
        auto user = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
        if (user && user.isDpsInit(&use))
          inits.push_back(&use);
      }
      if (inits.empty())
        continue;
      // The first writer in program order keeps the original.
      OpOperand *keep = inits.front();
      for (OpOperand *use : inits) {
        Operation *x = use->getOwner(), *y = keep->getOwner();
        if (x->getBlock() == y->getBlock() && x->isBeforeInBlock(y))
          keep = use;
      }
      for (OpOperand *use : inits) {
        if (use == keep)
          continue;
        OpBuilder b(use->getOwner());
        use->set(b.clone(*empty)->getResult(0));
      }
    }
  }
};

} // namespace

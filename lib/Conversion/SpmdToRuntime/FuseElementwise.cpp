//===- FuseElementwise.cpp - elementwise producers into their consumers ---===//
//
// spmd-fuse-elementwise: on tensors, before bufferization, an elementwise
// linalg.generic whose only user is another linalg.generic is computed
// inside that user's loop nest, so the intermediate tensor is never
// written to memory. Shared by the CPU and GPU lowerings.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDFUSEELEMENTWISEPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// Fuse when the producer's value has no other user (nothing is computed
/// twice) and the consumer reads it once per iteration of its own loops
/// (a permutation: a broadcast operand would be recomputed for every
/// element it is broadcast to).
bool worthFusing(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  return consumer && consumer.getMatchingIndexingMap(fused).isPermutation();
}

/// A fill that is the init of several ops (CSE merges the zero fills of
/// every reduction and matmul of a shape into one) is cloned for each, with
/// its own tensor.empty. Shared, bufferization would copy the one filled
/// buffer into every user's output; cloned, each output is filled in
/// place, and a zero fill right before a matmul becomes BLAS's beta = 0.
void fillPerUser(Operation *root) {
  SmallVector<linalg::FillOp> fills;
  root->walk([&](linalg::FillOp fill) {
    if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
      fills.push_back(fill);
  });
  for (linalg::FillOp fill : fills) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : fill->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      auto user = dyn_cast<DestinationStyleOpInterface>(use->getOwner());
      if (!user || !user.isDpsInit(use))
        continue;
      OpBuilder b(user);
      IRMapping mapping;
      Value dest = fill.getOutputs()[0];
      if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
        mapping.map(dest, b.clone(*empty)->getResult(0));
      use->set(b.clone(*fill, mapping)->getResult(0));
    }
    if (fill->use_empty())
      fill->erase();
  }
}

struct SpmdFuseElementwisePass
    : spmd::impl::SpmdFuseElementwisePassBase<SpmdFuseElementwisePass> {
  void runOnOperation() override {
    fillPerUser(getOperation());
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, worthFusing);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

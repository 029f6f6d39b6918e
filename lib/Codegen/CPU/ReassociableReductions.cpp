//===- ReassociableReductions.cpp - reductions LLVM may vectorize ---------===//
//
// spmd-reassociable-reductions: the combining operation of every linalg
// reduction on buffers (the one that folds an element into the
// accumulator) is marked `reassoc`, which lets LLVM's loop vectorizer keep
// the accumulator as several partial results in vector lanes.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDREASSOCIABLEREDUCTIONSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The combiners a reduction may run in any order up to rounding (sums,
/// products) or exactly (the max and min forms).
bool isCombiner(Operation *op) {
  return isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp>(op);
}

void markCombiners(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0 || !op.hasPureBufferSemantics())
    return;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    // The value yielded for this init must be one combiner of the
    // accumulator and something else.
    Value yielded = op.getMatchingYieldValue(&init)->get();
    Operation *combiner = yielded.getDefiningOp();
    if (!combiner || !isCombiner(combiner) ||
        !llvm::is_contained(combiner->getOperands(), acc))
      continue;
    auto fastmath = cast<arith::ArithFastMathInterface>(combiner);
    arith::FastMathFlags flags = fastmath.getFastMathFlagsAttr().getValue();
    combiner->setAttr(
        fastmath.getFastMathAttrName(),
        arith::FastMathFlagsAttr::get(op.getContext(),
                                      flags | arith::FastMathFlags::reassoc));
  }
}

struct SpmdReassociableReductionsPass
    : spmd::impl::SpmdReassociableReductionsPassBase<
          SpmdReassociableReductionsPass> {
  void runOnOperation() override {
    getOperation()->walk([](linalg::LinalgOp op) { markCombiners(op); });
  }
};

} // namespace

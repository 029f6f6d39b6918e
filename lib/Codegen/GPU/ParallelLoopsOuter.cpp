//===- ParallelLoopsOuter.cpp - parallel dimensions first, for the GPU ----===//
//
// Loop lowering keeps a linalg op's dimension order, so a reduction over an
// outer dimension (a bias gradient: sum over the batch, for each feature)
// becomes a host loop over the batch that launches one kernel per step. With
// the parallel dimensions moved in front (generalizing named ops first), it
// becomes one kernel whose threads each loop over the reduction.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUPARALLELLOOPSOUTERPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdGpuParallelLoopsOuterPass
    : public spmd::impl::SpmdGpuParallelLoopsOuterPassBase<
          SpmdGpuParallelLoopsOuterPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() || op.getNumParallelLoops() == 0 ||
          op.getNumReductionLoops() == 0)
        return;
      // Already parallel dimensions first?
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      bool seenReduction = false;
      for (utils::IteratorType it : iterators) {
        if (it == utils::IteratorType::reduction)
          seenReduction = true;
        else if (seenReduction) {
          work.push_back(op);
          return;
        }
      }
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : work) {
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> g =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          continue; // stays as it is: correct, one launch per outer step
        generic = *g;
      }
      SmallVector<unsigned> order;
      SmallVector<utils::IteratorType> iterators =
          generic.getIteratorTypesArray();
      for (auto [d, it] : llvm::enumerate(iterators))
        if (it == utils::IteratorType::parallel)
          order.push_back(d);
      for (auto [d, it] : llvm::enumerate(iterators))
        if (it != utils::IteratorType::parallel)
          order.push_back(d);
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
        continue;
    }
  }
};

} // namespace

//===- Distribute.cpp - the distribution pipeline as one pass -------------===//
//
// Runs the phases of spmd-erase-dead-results, spmd-fold-splat-reductions,
// spmd-propagate, spmd-expand, spmd-dedup-collectives and one
// canonicalization sweep back to back, verifying once at the end.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDDISTRIBUTEPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

struct SpmdDistributePass
    : public spmd::impl::SpmdDistributePassBase<SpmdDistributePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *ctx) override {
    // What the canonicalize pass collects: every loaded dialect's and
    // registered op's canonicalization patterns.
    RewritePatternSet owned(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(owned);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(owned, ctx);
    canonicalization = FrozenRewritePatternSet(std::move(owned));
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto verifyPhase = [&] {
      return verifyEachPhase ? verify(module) : success();
    };
    eraseDeadResults(module);
    foldSplatReductions(module);
    ShardingRuleCache rules;
    if (failed(propagatePlacements(module, &rules)) || failed(verifyPhase()) ||
        failed(expandToLocal(module, &rules)) || failed(verifyPhase()))
      return signalPassFailure();
    dedupCollectives(module);
    if (failed(verifyPhase()))
      return signalPassFailure();
    // One sweep of folds and dead-code removal is all expansion leaves to
    // clean up; no control flow to simplify. Not converging within one
    // sweep is not an error (as for the canonicalize pass).
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .setMaxIterations(1);
    (void)applyPatternsGreedily(module, canonicalization, config);
  }

  FrozenRewritePatternSet canonicalization;
};

} // namespace

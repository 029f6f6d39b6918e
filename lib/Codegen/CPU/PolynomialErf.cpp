//===- PolynomialErf.cpp - math.erf as arithmetic the vectorizer takes ----===//
//
// spmd-polynomial-erf: f32 math.erf becomes upstream MLIR's rational
// approximation, plain arithmetic that LLVM vectorizes, instead of a libm
// call per element that it cannot (LLVM maps no libmvec function to erff).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDPOLYNOMIALERFPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdPolynomialErfPass
    : spmd::impl::SpmdPolynomialErfPassBase<SpmdPolynomialErfPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

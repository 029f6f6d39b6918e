//===- PolynomialMath.cpp - erf and tanh as vectorizable arithmetic -------===//
//
// spmd-polynomial-math: f32 math.erf and math.tanh become upstream MLIR's
// rational approximations, plain arithmetic that LLVM vectorizes, instead
// of a libm call per element that it cannot (LLVM maps no libmvec function
// to erff or tanhf here; glibc's tanhf calls expm1f in turn).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDPOLYNOMIALMATHPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct SpmdPolynomialMathPass
    : spmd::impl::SpmdPolynomialMathPassBase<SpmdPolynomialMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    populatePolynomialApproximateTanhPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

//===- LegalizeHalfConversions.cpp - 16-bit float conversions -------------===//
//
// arith-expand{include-bf16} turns f32 <-> bf16 conversions into integer code
// but leaves f64 <-> bf16 ones, which LLVM lowers to __truncdfbf2 (missing
// from libgcc before GCC 13). Going through f32 is what PyTorch does for a
// double-to-bfloat16 conversion. Conversions also lose the fastmath flags
// math-extend-to-supported-types gives them. See
// spmd-legalize-half-conversions in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDLEGALIZEHALFCONVERSIONSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// `type` with its element type replaced by f32.
Type withF32(Type type) {
  Type f32 = Float32Type::get(type.getContext());
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(f32);
  return f32;
}

bool isElement(Type type, bool (Type::*is)() const) {
  return (getElementTypeOrSelf(type).*is)();
}

struct TruncViaF32 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isElement(op.getIn().getType(), &Type::isF64) ||
        !isElement(op.getType(), &Type::isBF16))
      return failure();
    Value f32 = arith::TruncFOp::create(rewriter, op.getLoc(),
                                        withF32(op.getType()), op.getIn());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), f32);
    return success();
  }
};

struct ExtViaF32 : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isElement(op.getIn().getType(), &Type::isBF16) ||
        !isElement(op.getType(), &Type::isF64))
      return failure();
    Value f32 = arith::ExtFOp::create(rewriter, op.getLoc(),
                                      withF32(op.getType()), op.getIn());
    rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(), f32);
    return success();
  }
};

struct SpmdLegalizeHalfConversionsPass
    : public spmd::impl::SpmdLegalizeHalfConversionsPassBase<
          SpmdLegalizeHalfConversionsPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op))
        op->removeAttr("fastmath");
    });
    RewritePatternSet patterns(&getContext());
    patterns.add<TruncViaF32, ExtViaF32>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

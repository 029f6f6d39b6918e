//===- Bf16BitsInMemory.cpp - bf16 through memory as i16 ------------------===//
//
// After arith-expand{include-bf16}, bf16 values only pass between integer
// code and memory; storing and loading their bits as i16 keeps LLVM from
// rounding them through float registers with __truncsfbf2 (missing from
// libgcc before GCC 13). See spmd-bf16-bits-in-memory in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDBF16BITSINMEMORYPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// store (bitcast %bits : i16 to bf16) -> store %bits.
struct StoreBits : OpRewritePattern<LLVM::StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::StoreOp store,
                                PatternRewriter &rewriter) const override {
    auto cast = store.getValue().getDefiningOp<LLVM::BitcastOp>();
    if (!cast || !isa<BFloat16Type>(cast.getType()) ||
        !cast.getArg().getType().isInteger(16))
      return failure();
    rewriter.modifyOpInPlace(
        store, [&] { store.getValueMutable().assign(cast.getArg()); });
    return success();
  }
};

/// bitcast (load %p : bf16) : bf16 to i16 -> load %p : i16.
struct LoadBits : OpRewritePattern<LLVM::BitcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::BitcastOp cast,
                                PatternRewriter &rewriter) const override {
    auto load = cast.getArg().getDefiningOp<LLVM::LoadOp>();
    if (!load || !isa<BFloat16Type>(load.getType()) ||
        !cast.getType().isInteger(16))
      return failure();
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(
        cast, cast.getType(), load.getAddr(), load.getAlignment().value_or(0),
        load.getVolatile_(), load.getNontemporal());
    return success();
  }
};

/// select %c, %a, %b : bf16 -> bitcast (select %c, %a', %b' : i16): a
/// choice between two values moves bits (a fused kernel selects a bf16
/// constant, such as masked_fill's -inf, passed to it by value).
struct SelectBits : OpRewritePattern<LLVM::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::SelectOp select,
                                PatternRewriter &rewriter) const override {
    if (!isa<BFloat16Type>(select.getType()))
      return failure();
    Location loc = select.getLoc();
    Type i16 = rewriter.getI16Type();
    auto bits = [&](Value v) {
      return LLVM::BitcastOp::create(rewriter, loc, i16, v).getResult();
    };
    Value chosen = LLVM::SelectOp::create(rewriter, loc, select.getCondition(),
                                          bits(select.getTrueValue()),
                                          bits(select.getFalseValue()));
    rewriter.replaceOpWithNewOp<LLVM::BitcastOp>(select, select.getType(),
                                                 chosen);
    return success();
  }
};

struct SpmdBf16BitsInMemoryPass
    : public spmd::impl::SpmdBf16BitsInMemoryPassBase<
          SpmdBf16BitsInMemoryPass> {
  void runOnOperation() override {
    // Most programs hold no bf16 value at all: one walk, not a rewrite.
    auto isBf16 = [](Type t) { return isa<BFloat16Type>(t); };
    bool any = getOperation()
                   ->walk([&](Operation *op) {
                     return llvm::any_of(op->getResultTypes(), isBf16)
                                ? WalkResult::interrupt()
                                : WalkResult::advance();
                   })
                   .wasInterrupted();
    if (!any)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<StoreBits, LoadBits, SelectBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

//===- Bf16BitsInMemory.cpp - bf16 through memory as i16 ------------------===//
//
// After arith-expand{include-bf16}, bf16 values only pass between integer
// code and memory; storing and loading their bits as i16 keeps LLVM from
// rounding them through float registers with __truncsfbf2 (missing from
// libgcc before GCC 13). See spmd-bf16-bits-in-memory in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDBF16BITSINMEMORYPASS
#include "Spmd/Conversion/Passes.h.inc"
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

struct SpmdBf16BitsInMemoryPass
    : public spmd::impl::SpmdBf16BitsInMemoryPassBase<
          SpmdBf16BitsInMemoryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StoreBits, LoadBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

//===- FoldTransposeIntoMatmul.cpp - no materialized transposes for GEMM --===//
//
// `x @ W^T` arrives from torch-mlir as a linalg.transpose feeding a
// linalg.matmul; the matmul can read W through a transposed indexing map
// instead (the BLAS lowerings pass the transposition flag), which saves a
// copy of the weight per use and step.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/Transforms/MatmulMaps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDFOLDTRANSPOSEINTOMATMULPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The input of `v` when it is a transpose on tensors of its last two
/// dimensions: [1, 0] (`batched` false), [0, 2, 1] (true).
Value transposedSource(Value v, bool batched) {
  static constexpr int64_t kSwap2[] = {1, 0}, kSwap3[] = {0, 2, 1};
  auto transpose = v.getDefiningOp<linalg::TransposeOp>();
  ArrayRef<int64_t> swap =
      batched ? ArrayRef<int64_t>(kSwap3) : ArrayRef<int64_t>(kSwap2);
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != swap)
    return {};
  return transpose.getInput();
}

struct SpmdFoldTransposeIntoMatmulPass
    : public spmd::impl::SpmdFoldTransposeIntoMatmulPassBase<
          SpmdFoldTransposeIntoMatmulPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
      auto batched = dyn_cast<linalg::BatchMatmulOp>(op.getOperation());
      if (op.hasPureTensorSemantics() &&
          ((matmul && !matmul.hasUserDefinedMaps() &&
            matmul.getCast() == linalg::TypeFn::cast_signed) ||
           (batched && !batched.hasUserDefinedMaps() &&
            batched.getCast() == linalg::TypeFn::cast_signed)))
        matmuls.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    MLIRContext *ctx = &getContext();
    for (linalg::LinalgOp op : matmuls) {
      bool batched = isa<linalg::BatchMatmulOp>(op.getOperation());
      Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
      Value at = transposedSource(a, batched),
            bt = transposedSource(b, batched);
      if (!at && !bt)
        continue;
      // One transposed operand at a time: the BLAS lowerings take either.
      if (at && bt)
        bt = {};
      SmallVector<AffineMap, 3> maps =
          spmd::matmulMaps(ctx, batched, bool(at), bool(bt));
      rewriter.setInsertionPoint(op);
      NamedAttribute attr = rewriter.getNamedAttr(
          "indexing_maps", rewriter.getAffineMapArrayAttr(maps));
      SmallVector<Value> inputs{at ? at : a, bt ? bt : b};
      auto rebuild = [&](auto opClass) -> Operation * {
        using OpTy = decltype(opClass);
        return OpTy::create(rewriter, op.getLoc(), op->getResultTypes(), inputs,
                            op.getDpsInits(), {attr});
      };
      Operation *folded = batched ? rebuild(linalg::BatchMatmulOp())
                                  : rebuild(linalg::MatmulOp());
      rewriter.replaceOp(op, folded->getResults());
    }
  }
};

} // namespace

//===- FoldTransposeIntoMatmul.cpp - no materialized transposes for GEMM --===//
//
// `x @ W^T` arrives from torch-mlir as a linalg.transpose feeding a
// linalg.matmul; the matmul can read W through a transposed indexing map
// instead (the BLAS lowerings pass the transposition flag), which saves a
// copy of the weight per use and step.
//
//===----------------------------------------------------------------------===//

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

/// The input of `v` when it is a 2-D [1, 0] transpose on tensors.
Value transposedSource(Value v) {
  auto transpose = v.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  return transpose.getInput();
}

struct SpmdFoldTransposeIntoMatmulPass
    : public spmd::impl::SpmdFoldTransposeIntoMatmulPassBase<
          SpmdFoldTransposeIntoMatmulPass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) {
      if (op.hasPureTensorSemantics() && !op.hasUserDefinedMaps() &&
          op.getCast() == linalg::TypeFn::cast_signed)
        matmuls.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    MLIRContext *ctx = &getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    for (linalg::MatmulOp op : matmuls) {
      Value a = op.getInputs()[0], b = op.getInputs()[1];
      Value at = transposedSource(a), bt = transposedSource(b);
      if (!at && !bt)
        continue;
      // One transposed operand at a time: the BLAS lowerings take either.
      if (at && bt)
        bt = {};
      SmallVector<AffineMap> maps{
          AffineMap::get(3, 0, {at ? k : m, at ? m : k}, ctx),
          AffineMap::get(3, 0, {bt ? n : k, bt ? k : n}, ctx),
          AffineMap::get(3, 0, {m, n}, ctx)};
      rewriter.setInsertionPoint(op);
      auto folded = linalg::MatmulOp::create(
          rewriter, op.getLoc(), op->getResultTypes(),
          ValueRange{at ? at : a, bt ? bt : b}, op.getOutputs(),
          {rewriter.getNamedAttr("indexing_maps",
                                 rewriter.getAffineMapArrayAttr(maps))});
      rewriter.replaceOp(op, folded->getResults());
    }
  }
};

} // namespace

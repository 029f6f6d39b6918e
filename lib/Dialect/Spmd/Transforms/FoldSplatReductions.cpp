//===- FoldSplatReductions.cpp - sums of splats are splats ----------------===//
//
// The backward of `x.sum()` over a batch reduces a splat of ones of the
// batch's shape for a bias gradient: PyTorch's expand of the scalar
// gradient, which torch-mlir imports as a splat constant. Nothing
// distributed reaches that reduction, so propagation would keep it
// replicated and every rank would materialize and sum a tensor of the
// global batch's shape. Its value is known: init + c * (reduced elements),
// a splat of the result's shape.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDFOLDSPLATREDUCTIONSPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The float a tensor value is everywhere: a splat constant, or a
/// linalg.fill of a constant.
std::optional<APFloat> splatValue(Value v) {
  if (auto constant = v.getDefiningOp<arith::ConstantOp>()) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (splat && isa<FloatType>(splat.getElementType()))
      return splat.getSplatValue<APFloat>();
    return std::nullopt;
  }
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    FloatAttr scalar;
    if (fill.hasPureTensorSemantics() &&
        matchPattern(fill.getDpsInputOperand(0)->get(), m_Constant(&scalar)))
      return scalar.getValue();
  }
  return std::nullopt;
}

/// Whether `generic`'s body is `yield(in + out)` (either order).
bool isSumBody(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return false;
  auto add = dyn_cast<arith::AddFOp>(body.front());
  auto yield = dyn_cast<linalg::YieldOp>(body.back());
  if (!add || !yield || yield->getOperand(0) != add.getResult())
    return false;
  Value in = body.getArgument(0), out = body.getArgument(1);
  return (add.getLhs() == in && add.getRhs() == out) ||
         (add.getLhs() == out && add.getRhs() == in);
}

/// The splat `generic` computes, or null: a sum over reduction loops of a
/// splat input into a splat init, with static loop sizes.
Attribute foldedSum(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() == 0 ||
      !isSumBody(generic))
    return {};
  auto type = dyn_cast<RankedTensorType>(generic.getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return {};
  std::optional<APFloat> in = splatValue(generic.getDpsInputs()[0]);
  std::optional<APFloat> init = splatValue(generic.getDpsInits()[0]);
  if (!in || !init)
    return {};
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  double count = 1.0;
  for (auto [size, kind] : llvm::zip(ranges, generic.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(size))
      return {};
    if (kind == utils::IteratorType::reduction)
      count *= static_cast<double>(size);
  }
  // In double, rounded once to the element type: within float rounding of
  // the sum eager computes element by element.
  double value = init->convertToDouble() + in->convertToDouble() * count;
  auto element = cast<FloatType>(type.getElementType());
  return DenseElementsAttr::get(type, FloatAttr::get(element, value));
}

struct SpmdFoldSplatReductionsPass
    : public spmd::impl::SpmdFoldSplatReductionsPassBase<
          SpmdFoldSplatReductionsPass> {
  void runOnOperation() override { spmd::foldSplatReductions(getOperation()); }
};

} // namespace

void mlir::spmd::foldSplatReductions(Operation *root) {
  SmallVector<std::pair<linalg::GenericOp, Attribute>> folds;
  root->walk([&](linalg::GenericOp generic) {
    if (Attribute value = foldedSum(generic))
      folds.push_back({generic, value});
  });
  IRRewriter rewriter(root->getContext());
  for (auto [generic, value] : folds) {
    rewriter.setInsertionPoint(generic);
    auto constant = arith::ConstantOp::create(rewriter, generic.getLoc(),
                                              cast<TypedAttr>(value));
    rewriter.replaceOp(generic, constant.getResult());
  }
}

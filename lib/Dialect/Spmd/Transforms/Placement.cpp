//===- Placement.cpp - placements shared by propagate and expand ----------===//

#include "Spmd/Dialect/Spmd/Transforms/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::spmd;

const ShardingRule &mlir::spmd::getCachedRule(ShardingRuleCache &cache,
                                              Operation *op) {
  auto it = cache.find(op);
  if (it == cache.end())
    it = cache.try_emplace(op, ShardingRule::getOrFallback(op)).first;
  return it->second;
}

Placements mlir::spmd::getReplicated(MLIRContext *ctx, unsigned meshRank) {
  return Placements(meshRank, ReplicateAttr::get(ctx));
}

/// The placement of a value with tensor dimensions `dims` under `choice`.
/// `accumulates`: the value holds (or is the init of) a reduction's result,
/// so a sharded reduction factor leaves it Partial; `inLinearSet`: it is
/// one of the operands a Partial strategy passes through.
static PlacementAttr placementFor(const ShardingRule &rule,
                                  ArrayRef<int64_t> dims,
                                  const AxisChoice &choice, bool accumulates,
                                  bool inLinearSet, MLIRContext *ctx) {
  switch (choice.kind) {
  case AxisChoice::Replicate:
    return ReplicateAttr::get(ctx);
  case AxisChoice::Factor: {
    for (auto [d, f] : llvm::enumerate(dims))
      if (f == choice.factor)
        return ShardAttr::get(ctx, d);
    const ShardingRule::Factor &factor = rule.factors[choice.factor];
    if (accumulates && factor.isReduction)
      return PartialAttr::get(ctx, *factor.combiner);
    return ReplicateAttr::get(ctx);
  }
  case AxisChoice::Partial:
    if (accumulates || inLinearSet)
      return PartialAttr::get(ctx, choice.partialKind);
    return ReplicateAttr::get(ctx);
  }
  llvm_unreachable("unknown choice");
}

PlacementAttr mlir::spmd::getRequiredOperandPlacement(const ShardingRule &rule,
                                                      unsigned operand,
                                                      const AxisChoice &choice,
                                                      MLIRContext *ctx) {
  bool inSet = choice.kind == AxisChoice::Partial &&
               llvm::is_contained(rule.linearSets[choice.linearSet], operand);
  return placementFor(rule, rule.operandDims[operand], choice,
                      rule.operandIsInit[operand], inSet, ctx);
}

PlacementAttr mlir::spmd::getResultPlacement(const ShardingRule &rule,
                                             unsigned result,
                                             const AxisChoice &choice,
                                             MLIRContext *ctx) {
  return placementFor(rule, rule.resultDims[result], choice,
                      /*accumulates=*/true, /*inLinearSet=*/true, ctx);
}

FailureOr<RankedTensorType>
mlir::spmd::getLocalType(RankedTensorType type,
                         ArrayRef<PlacementAttr> placements, MeshOp mesh,
                         function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    SmallVector<int64_t> axes;
    for (auto [a, p] : llvm::enumerate(placements))
      if (auto shard = dyn_cast<ShardAttr>(p); shard && shard.getDim() == d)
        axes.push_back(a);
    if (axes.empty())
      continue;
    if (ShapedType::isDynamic(shape[d]))
      return emitError() << "sharding dynamic dimension " << d << " of " << type
                         << " is not supported";
    int64_t n = mesh.getGroupSize(axes);
    if (shape[d] % n == 0)
      shape[d] /= n;
    else if (axes.size() == 1)
      shape[d] = ShapedType::kDynamic;
    else
      return emitError() << "dimension " << d << " of " << type << " ("
                         << shape[d] << ") does not divide evenly over the "
                         << n
                         << " ranks of several mesh axes; uneven "
                            "sharding is supported on one axis only";
  }
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

double mlir::spmd::getRedistributionCost(PlacementAttr from, PlacementAttr to,
                                         int64_t n, double bytes) {
  if (from == to || n == 1)
    return 0.0;
  double part = static_cast<double>(n - 1) / n * bytes;
  if (isa<ReplicateAttr>(from))
    return 0.0; // local slice, or Replicate -> Partial
  if (isa<PartialAttr>(from)) {
    if (isa<ShardAttr>(to))
      return part;   // reduce_scatter
    return 2 * part; // all_reduce (then local)
  }
  // from Shard
  if (isa<ShardAttr>(to))
    return part / n; // all_to_all
  return part;       // all_gather (then local)
}

double mlir::spmd::getByteSize(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0.0;
  double count = 1.0;
  for (int64_t size : tensor.getShape())
    count *= ShapedType::isDynamic(size) ? 1.0 : static_cast<double>(size);
  Type element = tensor.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return count * std::max(1u, bits / 8);
}

bool mlir::spmd::isFlexibleOp(Operation *op) {
  if (!op)
    return false;
  if (isa<tensor::EmptyOp>(op))
    return true;
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<SplatElementsAttr>(constant.getValue()) &&
           isa<RankedTensorType>(constant.getType());
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureTensorSemantics() &&
           isFlexibleOp(fill.getDpsInitOperand(0)->get().getDefiningOp());
  return false;
}

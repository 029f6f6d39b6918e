//===- Placement.cpp - placements shared by propagate and expand ----------===//

#include "Spmd/Dialect/Spmd/Transforms/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::spmd;

// Replicate: -1; Factor f: f >= 0; Partial: -(2 + kind + 8 * linearSet).
int64_t AxisChoice::encode() const {
  switch (kind) {
  case Replicate:
    return -1;
  case Factor:
    return factor;
  case Partial:
    return -(2 + static_cast<int64_t>(partialKind) + 8 * linearSet);
  }
  llvm_unreachable("unknown choice");
}

AxisChoice AxisChoice::decode(int64_t code) {
  AxisChoice choice;
  if (code == -1)
    return choice;
  if (code >= 0) {
    choice.kind = Factor;
    choice.factor = code;
    return choice;
  }
  int64_t v = -code - 2;
  choice.kind = Partial;
  choice.partialKind = static_cast<ReductionKind>(v % 8);
  choice.linearSet = v / 8;
  return choice;
}

const ShardingRule &mlir::spmd::getCachedRule(ShardingRuleCache &cache,
                                              Operation *op) {
  auto it = cache.find(op);
  if (it == cache.end())
    it = cache.try_emplace(op, getRuleOrFallback(op)).first;
  return it->second;
}

ShardingRule mlir::spmd::getRuleOrFallback(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op)) {
    FailureOr<ShardingRule> rule = iface.getShardingRule();
    if (succeeded(rule))
      return *rule;
  }
  ShardingRule rule;
  auto noDims = [](Type type) {
    SmallVector<int64_t> dims;
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      dims.assign(tensor.getRank(), ShardingRule::kNoFactor);
    return dims;
  };
  for (Value operand : op->getOperands()) {
    rule.operandDims.push_back(noDims(operand.getType()));
    rule.operandGroups.push_back(0);
    rule.operandIsInit.push_back(false);
  }
  for (Type type : op->getResultTypes()) {
    rule.resultDims.push_back(noDims(type));
    rule.resultGroups.push_back(0);
  }
  return rule;
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

SmallVector<AxisChoice> mlir::spmd::readStrategy(Operation *op) {
  SmallVector<AxisChoice> choices;
  if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>(kStrategyAttr))
    for (int64_t code : attr.asArrayRef())
      choices.push_back(AxisChoice::decode(code));
  return choices;
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

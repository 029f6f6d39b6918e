//===- ShardingRule.cpp - factored placement rules ------------------------===//

#include "Spmd/Dialect/Spmd/IR/ShardingRule.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::spmd;

/// One group, no inits: every operand and result of `op` with the factors
/// `dimsOf` gives its type.
static void setOneGroup(ShardingRule &rule, Operation *op,
                        function_ref<SmallVector<int64_t>(Type)> dimsOf) {
  for (Value operand : op->getOperands()) {
    rule.operandDims.push_back(dimsOf(operand.getType()));
    rule.operandGroups.push_back(0);
    rule.operandIsInit.push_back(false);
  }
  for (Type type : op->getResultTypes()) {
    rule.resultDims.push_back(dimsOf(type));
    rule.resultGroups.push_back(0);
  }
}

ShardingRule ShardingRule::elementwise(Operation *op, ArrayRef<int64_t> shape) {
  ShardingRule rule;
  for (int64_t size : shape) {
    Factor factor;
    factor.size = size;
    rule.factors.push_back(factor);
  }
  auto dimsOf = [&](Type type) {
    SmallVector<int64_t> dims;
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getRank() == static_cast<int64_t>(shape.size()))
      for (int64_t d = 0; d < tensor.getRank(); ++d)
        dims.push_back(d);
    return dims;
  };
  setOneGroup(rule, op, dimsOf);
  return rule;
}

ShardingRule ShardingRule::getOrFallback(Operation *op) {
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
  setOneGroup(rule, op, noDims);
  return rule;
}

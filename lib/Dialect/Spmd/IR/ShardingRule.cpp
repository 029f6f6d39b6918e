//===- ShardingRule.cpp - factored placement rules ------------------------===//

#include "Spmd/Dialect/Spmd/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::spmd;

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
  for (Value operand : op->getOperands()) {
    rule.operandDims.push_back(dimsOf(operand.getType()));
    rule.operandGroups.push_back(0);
    rule.operandIsInit.push_back(false);
  }
  for (Type type : op->getResultTypes()) {
    rule.resultDims.push_back(dimsOf(type));
    rule.resultGroups.push_back(0);
  }
  return rule;
}

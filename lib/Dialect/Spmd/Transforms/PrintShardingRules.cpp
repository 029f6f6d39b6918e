//===- PrintShardingRules.cpp - sharding rules as remarks -----------------===//
//
// spmd-print-sharding-rules: each op's ShardingRuleOpInterface rule as a
// remark, for tests (test/Dialect/Spmd/sharding-rules.mlir).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDPRINTSHARDINGRULESPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

void printDims(llvm::raw_ostream &os, ArrayRef<SmallVector<int64_t>> all) {
  llvm::interleaveComma(all, os, [&](const SmallVector<int64_t> &dims) {
    os << "[";
    llvm::interleaveComma(dims, os, [&](int64_t f) {
      if (f == ShardingRule::kNoFactor)
        os << "-";
      else
        os << "f" << f;
    });
    os << "]";
  });
}

std::string describe(const ShardingRule &rule) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "sharding rule: (";
  printDims(os, rule.operandDims);
  os << ") -> (";
  printDims(os, rule.resultDims);
  os << ") {";
  llvm::interleaveComma(llvm::enumerate(rule.factors), os, [&](auto it) {
    const ShardingRule::Factor &f = it.value();
    os << "f" << it.index() << " = ";
    if (ShapedType::isDynamic(f.size))
      os << "?";
    else
      os << f.size;
    if (f.isReduction) {
      os << " reduction ";
      if (f.combiner)
        os << stringifyReductionKind(*f.combiner);
      else
        os << "no combiner";
    }
    if (!f.shardable)
      os << " fixed";
    if (f.requiresEven)
      os << " even";
    if (rule.numGroups > 1)
      os << " group " << f.group;
  });
  os << "}";
  if (!rule.linearSets.empty()) {
    os << "; linear in ";
    llvm::interleaveComma(rule.linearSets, os, [&](const auto &set) {
      os << "{";
      llvm::interleaveComma(set, os);
      os << "}";
    });
  }
  return text;
}

struct SpmdPrintShardingRulesPass
    : public spmd::impl::SpmdPrintShardingRulesPassBase<
          SpmdPrintShardingRulesPass> {
  void runOnOperation() override {
    getOperation().walk([](ShardingRuleOpInterface op) {
      // Scalar ops (in linalg bodies) have models too, never a rule.
      auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
      if (llvm::none_of(op->getOperandTypes(), isTensor) &&
          llvm::none_of(op->getResultTypes(), isTensor))
        return;
      FailureOr<ShardingRule> rule = op.getShardingRule();
      if (failed(rule))
        op->emitRemark("sharding rule: none");
      else
        op->emitRemark(describe(*rule));
    });
  }
};

} // namespace

//===- ShardingRule.h - how an op's iteration space meets its tensors -----===//
//
// The placement rule of an op in factored form (Shardy's OpShardingRule,
// DTensor's op strategies): the op iterates a set of factors; every tensor
// dimension of every operand and result is driven by one factor (or by none,
// then it cannot be sharded). Sharding a factor along a mesh axis shards all
// the dimensions it drives; sharding a reduction factor leaves the results
// Partial. Independent groups of factors (the entries of an optimizer or
// foreach op) are chosen separately.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_IR_SHARDINGRULE_H
#define SPMD_DIALECT_SPMD_IR_SHARDINGRULE_H

#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::spmd {

struct ShardingRule {
  static constexpr int64_t kNoFactor = -1;

  struct Factor {
    /// Static size, or ShapedType::kDynamic.
    int64_t size = 0;
    bool isReduction = false;
    /// For reductions: how partial results combine; none when the op's
    /// combiner is not a known reduction (then the factor stays unsharded).
    std::optional<ReductionKind> combiner;
    /// Only an evenly divisible size may be sharded (reshapes).
    bool requiresEven = false;
    /// False when the op reads the factor's global position (a linalg
    /// payload's `linalg.index`): it is never sharded.
    bool shardable = true;
    unsigned group = 0;
  };

  SmallVector<Factor> factors;
  /// Per operand / result: the factor of each tensor dimension (kNoFactor
  /// when the dimension cannot be sharded). Non-tensor values have none.
  SmallVector<SmallVector<int64_t>> operandDims, resultDims;
  /// Per operand / result: its factor group.
  SmallVector<unsigned> operandGroups, resultGroups;
  /// Per operand: an accumulator (a linalg init). Under a sharded reduction
  /// factor or a Partial strategy it must hold the results' Partial.
  SmallVector<bool> operandIsInit;
  /// Sets of (non-init) operands in which the op is jointly linear: when
  /// exactly one set holds partial<sum> (or partial<avg>) and every other
  /// non-init operand is replicated, the results are partial of that kind.
  SmallVector<SmallVector<unsigned>> linearSets;
  unsigned numGroups = 1;

  /// A rule with one group where every tensor operand and result has the
  /// rank-`rank` identity mapping onto `shape`'s dimensions.
  static ShardingRule elementwise(Operation *op, ArrayRef<int64_t> shape);

  /// The rule of `op` (ShardingRuleOpInterface), or the fallback when it has
  /// none: one group, every tensor replicated, nothing sharded.
  static ShardingRule getOrFallback(Operation *op);
};

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_IR_SHARDINGRULE_H

//===- AxisChoice.h - one factor group's choice on one mesh axis -*- C++
//-*-===//
//
// The element of `#spmd.strategy` (spmd-propagate's record of how it placed
// an op, read back by spmd-expand): on one mesh axis, one factor group of the
// op's ShardingRule is replicated, shards one of its factors, or passes a
// Partial through one of the rule's linear operand sets.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_IR_AXISCHOICE_H
#define SPMD_DIALECT_SPMD_IR_AXISCHOICE_H

#include "llvm/ADT/Hashing.h"

#include <cstdint>

namespace mlir::spmd {

enum class ReductionKind : uint32_t;

struct AxisChoice {
  enum Kind { Replicate, Factor, Partial } kind = Replicate;
  /// Factor: the rule's factor this axis shards.
  int64_t factor = -1;
  /// Partial: what the operands in set `linearSet` hold (and the results).
  ReductionKind partialKind{};
  unsigned linearSet = 0;

  static AxisChoice replicate() { return {}; }
  static AxisChoice sharding(int64_t factor) {
    AxisChoice c;
    c.kind = Factor;
    c.factor = factor;
    return c;
  }
  static AxisChoice partial(ReductionKind kind, unsigned linearSet) {
    AxisChoice c;
    c.kind = Partial;
    c.partialKind = kind;
    c.linearSet = linearSet;
    return c;
  }

  bool operator==(const AxisChoice &o) const {
    return kind == o.kind && factor == o.factor &&
           partialKind == o.partialKind && linearSet == o.linearSet;
  }
};

inline llvm::hash_code hash_value(const AxisChoice &c) {
  return llvm::hash_combine(c.kind, c.factor,
                            static_cast<uint32_t>(c.partialKind), c.linearSet);
}

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_IR_AXISCHOICE_H

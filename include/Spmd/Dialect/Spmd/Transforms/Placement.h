//===- Placement.h - placements shared by propagate and expand --*- C++ -*-===//
//
// spmd-propagate records, on every op it places, the strategy it chose
// (`#spmd.strategy`: per factor group and mesh axis, the sharded factor,
// replicate, or a Partial pass-through) and the specs of its results
// (`spmd.result_specs`; both names are SpmdDialect's). spmd-expand reads them
// back; both derive what an op needs of its operands from the op's ShardingRule
// with the helpers here.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_PLACEMENT_H
#define SPMD_DIALECT_SPMD_TRANSFORMS_PLACEMENT_H

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

namespace mlir::spmd {

/// One placement per mesh axis.
using Placements = SmallVector<PlacementAttr>;

/// Rules by op, so spmd-propagate and spmd-expand (which need the same rules
/// for the same ops) compute each once when run together.
using ShardingRuleCache = DenseMap<Operation *, ShardingRule>;

/// The rule of `op` from `cache`, computed and stored on first use.
const ShardingRule &getCachedRule(ShardingRuleCache &cache, Operation *op);

Placements getReplicated(MLIRContext *ctx, unsigned meshRank);

/// What operand `operand` must hold on one axis under `choice`; null for
/// non-tensor operands.
PlacementAttr getRequiredOperandPlacement(const ShardingRule &rule,
                                          unsigned operand,
                                          const AxisChoice &choice,
                                          MLIRContext *ctx);

/// What result `result` holds on one axis under `choice`; null for
/// non-tensor results.
PlacementAttr getResultPlacement(const ShardingRule &rule, unsigned result,
                                 const AxisChoice &choice, MLIRContext *ctx);

/// The per-rank type of a value of global type `type` laid out as
/// `placements` on `mesh`: sharded dimensions are divided (dynamic when a
/// single axis splits them unevenly). Fails, with `emitError`, on an uneven
/// split over several axes or a sharded dynamic dimension.
FailureOr<RankedTensorType>
getLocalType(RankedTensorType type, ArrayRef<PlacementAttr> placements,
             MeshOp mesh, function_ref<InFlightDiagnostic()> emitError);

/// Communication volume (bytes per rank) of changing one axis of size `n`
/// from `from` to `to` for a tensor of `bytes` bytes: DTensor's model
/// (all_gather and reduce_scatter (n-1)/n, all_reduce 2(n-1)/n, all_to_all
/// (n-1)/n^2, local slices and Replicate→Partial free).
double getRedistributionCost(PlacementAttr from, PlacementAttr to, int64_t n,
                             double bytes);

/// Global byte size of a tensor type (dynamic dimensions count as 1).
double getByteSize(Type type);

/// Whether `op` produces a tensor with no distributed inputs
/// (`tensor.empty`, a splat tensor constant, a fill of those): propagation
/// lets its users choose its placement and expansion builds it in whatever
/// layout a user needs, so re-slicing it is free. Null is not.
bool isFlexibleOp(Operation *op);

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_PLACEMENT_H

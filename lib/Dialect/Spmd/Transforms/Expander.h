//===- Expander.h - spmd-expand's rewriter, shared by its files -*- C++ -*-===//
//
// The state of one function's expansion to its local program: each value's
// global type and placement, this rank's axis indices, and the values
// already redistributed. Expand.cpp walks the ops (Expander::run: state,
// arguments, per-op expansion by sharding rule); Reshard.cpp holds the
// resharding steps (Expander::redistribute: one placement to another, one
// mesh axis at a time, each step one collective or a local slice).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_EXPANDER_H
#define SPMD_DIALECT_SPMD_TRANSFORMS_EXPANDER_H

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Placement.h"
#include "Spmd/Dialect/Spmd/Transforms/ShardingRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd::detail {

class Expander {
public:
  Expander(func::FuncOp func, MeshOp mesh, ShardingRuleCache &rules)
      : func(func), mesh(mesh), ctx(func.getContext()), b(ctx),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        rank(mesh.getRank()), rules(rules) {}

  LogicalResult run();

private:
  // The steps of run().
  /// The global type and placement of every tensor the function has: its
  /// arguments' specs, the results' recorded specs, annotations, states.
  void recordLayouts();
  /// The arguments' local types (collected in `argTypes`).
  LogicalResult localizeArguments();
  /// Per op kind: spmd.annotate / spmd.redistribute become collectives;
  /// loads and stores of state take its local layout; the return takes the
  /// results' specs; an op spmd-propagate placed is expanded by its rule.
  LogicalResult expandRedistribution(Operation *op);
  LogicalResult expandLoad(LoadOp load);
  LogicalResult expandStore(StoreOp store);
  LogicalResult expandReturn(func::ReturnOp ret);
  LogicalResult expandPlaced(Operation *op);

  FailureOr<RankedTensorType> localType(RankedTensorType global,
                                        ArrayRef<PlacementAttr> placements,
                                        Location loc) {
    return getLocalType(global, placements, mesh,
                        [&] { return mlir::emitError(loc); });
  }
  Value axisIndex(unsigned axis);
  Value index(int64_t v, Location loc) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  /// This rank's size of a dimension of global size `size` split unevenly
  /// over axis `axis`: clamp(size - idx * c, 0, c), c = ceil(size / n).
  Value unevenSize(int64_t size, unsigned axis, Location loc);
  /// `value` (of global type `global`, placed `from`) placed `to`: the
  /// changes undone inner axis to outer, then applied outer to inner, each
  /// by one of the steps below.
  FailureOr<Value> redistribute(Value value, RankedTensorType global,
                                Placements from, Placements to, Location loc);
  // The steps of redistribute. Each takes `v` placed `cur`, changes one
  // mesh axis (with what that needs on the inner axes), updates `cur` and
  // returns the new value.
  /// An op that is built in any layout (empty, fill): built in `to`, but a
  /// Partial that is not the fill of the reduction's identity stays
  /// replicated (`from` is set to what was built).
  FailureOr<Value> materializeFlexible(Value value, RankedTensorType global,
                                       Placements &from,
                                       ArrayRef<PlacementAttr> to,
                                       Location loc);
  /// Partial -> Shard(d) on `axis`: a reduce_scatter (uneven sizes padded
  /// to n * ceil(N / n), this rank's part kept).
  FailureOr<Value> partialToShard(Value v, RankedTensorType global,
                                  Placements &cur, unsigned axis, ShardAttr to,
                                  Location loc);
  /// Partial -> Replicate on `axis`: an all_reduce.
  Value partialToReplicate(Value v, RankedTensorType global, Placements &cur,
                           unsigned axis, Location loc);
  /// Shard(i) -> Shard(j) on `axis`: an all_to_all.
  FailureOr<Value> shardToShard(Value v, RankedTensorType global,
                                Placements &cur, unsigned axis, ShardAttr to,
                                Location loc);
  /// Undoes `axis`'s shard (the inner axes splitting the same dimension
  /// first): an all_to_all when it becomes another even shard, else an
  /// all_gather.
  FailureOr<Value> unshardAxis(Value v, RankedTensorType global,
                               Placements &cur, unsigned axis,
                               ArrayRef<PlacementAttr> to, Location loc);
  /// Replicate -> Shard(d) on `axis`: this rank's slice (no communication).
  FailureOr<Value> shardAxis(Value v, RankedTensorType global, Placements &cur,
                             unsigned axis, ShardAttr to, Location loc);
  /// Gathers the axes inside `axis` that shard `dim`.
  FailureOr<Value> gatherInnerAxes(Value v, RankedTensorType global,
                                   Placements &cur, unsigned axis, int64_t dim,
                                   Location loc);
  bool evenOn(RankedTensorType global, int64_t dim, unsigned axis);
  FailureOr<Value> materialize(Operation *def, RankedTensorType global,
                               ArrayRef<PlacementAttr> to, Location loc);
  FailureOr<Value> gather(Value v, RankedTensorType global, Placements &cur,
                          unsigned axis, int64_t dim, Location loc);
  /// What padDynamicDims did: the padded value and, per padded dimension,
  /// its real size.
  struct StaticPadding {
    Value value;
    SmallVector<std::pair<int64_t, Value>> sizes;
    /// `type` with the padded dimensions at their padded (static) size.
    RankedTensorType padType(RankedTensorType type) const {
      SmallVector<int64_t> shape(type.getShape());
      for (auto [d, size] : sizes)
        shape[d] = cast<RankedTensorType>(value.getType()).getDimSize(d);
      return type.clone(shape);
    }
  };
  StaticPadding padDynamicDims(Value v, RankedTensorType global,
                               const Placements &cur, int64_t keep,
                               Location loc);
  Value cutPadding(Value v, const StaticPadding &padding, RankedTensorType type,
                   Location loc);
  /// The start of a collective that changes axis `axis` of `v` (placed
  /// `cur`) to `to`: the placements after it, the local type they give, and
  /// `v` with its dynamic dimensions other than `keep` padded to static
  /// sizes (the collective's operand; cutPadding undoes it on its result).
  struct AxisStep {
    Placements next;
    RankedTensorType finalType;
    StaticPadding padding;
    /// finalType at the padded sizes: the collective's result type.
    RankedTensorType outType;
  };
  FailureOr<AxisStep> beginAxisStep(Value v, RankedTensorType global,
                                    const Placements &cur, unsigned axis,
                                    PlacementAttr to, int64_t keep,
                                    Location loc);
  FailureOr<Value> toPartial(Value v, unsigned axis, ReductionKind kind,
                             Location loc);
  FailureOr<Value> fill(Value like, RankedTensorType type, double value,
                        Location loc);
  LogicalResult loadUnevenState(LoadOp load, RankedTensorType local);
  LogicalResult storeUnevenState(StoreOp store);
  LogicalResult expandOp(Operation *op);
  LogicalResult localizeSizes(Operation *op);
  LogicalResult setOperand(Operation *op, unsigned index,
                           ArrayRef<PlacementAttr> want);

  func::FuncOp func;
  MeshOp mesh;
  MLIRContext *ctx;
  OpBuilder b;
  FlatSymbolRefAttr meshRef;
  unsigned rank;
  DenseMap<Value, RankedTensorType> globalTypes;
  DenseMap<Value, Placements> placements;
  DenseMap<unsigned, Value> axisIndices;
  DenseMap<std::pair<Value, Attribute>, Value> cache;
  ShardingRuleCache &rules;
  SmallVector<Operation *> dead;
  /// The function's local argument types (localizeArguments).
  SmallVector<Type> argTypes;
};

} // namespace mlir::spmd::detail

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_EXPANDER_H

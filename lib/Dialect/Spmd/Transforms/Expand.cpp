//===- Expand.cpp - global program to local program with collectives ------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"
#include "Spmd/Dialect/Spmd/Transforms/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDEXPANDPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// The identity of `kind` as a constant of `type`, when `value` holds it.
bool isIdentityOf(Attribute value, ReductionKind kind) {
  auto f = dyn_cast_or_null<FloatAttr>(value);
  if (!f)
    return false;
  double v = f.getValueAsDouble();
  switch (kind) {
  case ReductionKind::Sum:
    return v == 0.0;
  case ReductionKind::Prod:
    return v == 1.0;
  case ReductionKind::Max:
    return std::isinf(v) && v < 0;
  case ReductionKind::Min:
    return std::isinf(v) && v > 0;
  case ReductionKind::Avg:
    return true;
  }
  return false;
}

/// The static type a sharded state is stored as on each rank: its local
/// type, with every dimension that one mesh axis splits unevenly (dynamic in
/// `local`) at that axis's largest chunk, ceil(size / n). Loads cut this
/// rank's part out of it and stores pad it back, so every rank holds a
/// buffer of one size.
RankedTensorType stateStorageType(RankedTensorType global,
                                  RankedTensorType local,
                                  ArrayRef<PlacementAttr> placements,
                                  MeshOp mesh) {
  SmallVector<int64_t> shape(local.getShape());
  for (auto [a, p] : llvm::enumerate(placements)) {
    auto shard = dyn_cast<ShardAttr>(p);
    if (!shard || !local.isDynamicDim(shard.getDim()))
      continue;
    int64_t n = mesh.getShape()[a];
    shape[shard.getDim()] = (global.getDimSize(shard.getDim()) + n - 1) / n;
  }
  return local.clone(shape);
}

class Expander {
public:
  Expander(func::FuncOp func, MeshOp mesh, ShardingRuleCache &rules)
      : func(func), mesh(mesh), ctx(func.getContext()), b(ctx),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        rank(mesh.getRank()), rules(rules) {}

  LogicalResult run();

private:
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
};

Value Expander::axisIndex(unsigned axis) {
  auto it = axisIndices.find(axis);
  if (it != axisIndices.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  Value idx = AxisIndexOp::create(b, func.getLoc(), b.getIndexType(), meshRef,
                                  b.getDenseI64ArrayAttr({axis}));
  axisIndices[axis] = idx;
  return idx;
}

Value Expander::unevenSize(int64_t size, unsigned axis, Location loc) {
  int64_t n = mesh.getShape()[axis];
  int64_t chunk = (size + n - 1) / n;
  Value start =
      arith::MulIOp::create(b, loc, axisIndex(axis), index(chunk, loc));
  Value left = arith::SubIOp::create(b, loc, index(size, loc), start);
  Value low = arith::MaxSIOp::create(b, loc, left, index(0, loc));
  return arith::MinSIOp::create(b, loc, low, index(chunk, loc));
}

FailureOr<Value> Expander::fill(Value like, RankedTensorType type, double value,
                                Location loc) {
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamic.push_back(tensor::DimOp::create(b, loc, like, d));
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType(), dynamic);
  Type element = type.getElementType();
  TypedAttr attr;
  if (isa<FloatType>(element))
    attr = b.getFloatAttr(element, value);
  else if (element.isSignlessInteger())
    attr = b.getIntegerAttr(element, static_cast<int64_t>(value));
  else
    return mlir::emitError(loc) << "cannot fill a tensor of " << element;
  Value scalar = arith::ConstantOp::create(b, loc, attr);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

/// A load of a state that one axis splits unevenly reads the padded
/// storage (stateStorageType) and cuts this rank's chunk out of it: later
/// ops see the local (dynamic) type.
LogicalResult Expander::loadUnevenState(LoadOp load, RankedTensorType local) {
  Value full = load.getResult();
  RankedTensorType global = globalTypes.lookup(full);
  Placements layout = placements[full];
  Location loc = load.getLoc();
  full.setType(stateStorageType(global, local, layout, mesh));
  b.setInsertionPointAfter(load);
  SmallVector<OpFoldResult> offsets(local.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(local.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < local.getRank(); ++d)
    sizes.push_back(b.getIndexAttr(local.getDimSize(d)));
  for (auto [a, p] : llvm::enumerate(layout))
    if (auto shard = dyn_cast<ShardAttr>(p);
        shard && local.isDynamicDim(shard.getDim()))
      sizes[shard.getDim()] =
          unevenSize(global.getDimSize(shard.getDim()), a, loc);
  auto part = tensor::ExtractSliceOp::create(b, loc, local, full, offsets,
                                             sizes, strides);
  full.replaceAllUsesExcept(part.getResult(), part);
  globalTypes[part.getResult()] = global;
  placements[part.getResult()] = layout;
  return success();
}

/// A store to such a state pads this rank's chunk to the storage size (the
/// padding is never read).
LogicalResult Expander::storeUnevenState(StoreOp store) {
  Value v = store.getValue();
  auto type = cast<RankedTensorType>(v.getType());
  if (type.hasStaticShape())
    return success();
  Location loc = store.getLoc();
  auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
      store, store.getStateAttr());
  RankedTensorType storage = stateStorageType(
      state.getTensorType(), type, state.getSpec()->getPlacements(), mesh);
  b.setInsertionPoint(store);
  SmallVector<OpFoldResult> low(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(low);
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      high[d] = arith::SubIOp::create(b, loc, index(storage.getDimSize(d), loc),
                                      tensor::DimOp::create(b, loc, v, d))
                    .getResult();
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value padded = tensor::PadOp::create(b, loc, storage, v, low, high, zero);
  store->setOperand(0, padded);
  return success();
}

/// Collectives take static shapes (both runtimes size their buffers from
/// the types). A dimension that another mesh axis splits unevenly is dynamic:
/// it is padded (with zeros) to its largest chunk for the collective and cut
/// back after it. The ranks of the collective's group share their
/// coordinate on that other axis, so they hold the same real size and the
/// padding lines up across them. Dimension `keep` (-1: none) is left alone.
Expander::StaticPadding Expander::padDynamicDims(Value v,
                                                 RankedTensorType global,
                                                 const Placements &cur,
                                                 int64_t keep, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  StaticPadding padding{v, {}};
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<OpFoldResult> low(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(low);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d == keep || !type.isDynamicDim(d))
      continue;
    int64_t chunk = -1;
    for (auto [a, p] : llvm::enumerate(cur))
      if (auto shard = dyn_cast<ShardAttr>(p); shard && shard.getDim() == d) {
        int64_t n = mesh.getShape()[a];
        chunk = (global.getDimSize(d) + n - 1) / n;
      }
    if (chunk < 0)
      continue; // not from uneven sharding: left to the collective's verifier
    Value size = tensor::DimOp::create(b, loc, v, d);
    padding.sizes.push_back({d, size});
    shape[d] = chunk;
    high[d] =
        arith::SubIOp::create(b, loc, index(chunk, loc), size).getResult();
  }
  if (padding.sizes.empty())
    return padding;
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  padding.value =
      tensor::PadOp::create(b, loc, type.clone(shape), v, low, high, zero);
  return padding;
}

/// The part of `v` (a collective's result over a padded value) that holds
/// data, as `type`.
Value Expander::cutPadding(Value v, const StaticPadding &padding,
                           RankedTensorType type, Location loc) {
  if (padding.sizes.empty())
    return v;
  auto vType = cast<RankedTensorType>(v.getType());
  SmallVector<OpFoldResult> offsets(vType.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(vType.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  for (auto [d, size] : padding.sizes)
    sizes[d] = size;
  return tensor::ExtractSliceOp::create(b, loc, type, v, offsets, sizes,
                                        strides)
      .getResult();
}

FailureOr<Expander::AxisStep>
Expander::beginAxisStep(Value v, RankedTensorType global, const Placements &cur,
                        unsigned axis, PlacementAttr to, int64_t keep,
                        Location loc) {
  AxisStep step;
  step.next = cur;
  step.next[axis] = to;
  FailureOr<RankedTensorType> finalType = localType(global, step.next, loc);
  if (failed(finalType))
    return failure();
  step.finalType = *finalType;
  step.padding = padDynamicDims(v, global, cur, keep, loc);
  step.outType = step.padding.padType(step.finalType);
  return step;
}

FailureOr<Value> Expander::gather(Value v, RankedTensorType global,
                                  Placements &cur, unsigned axis, int64_t dim,
                                  Location loc) {
  FailureOr<AxisStep> step =
      beginAxisStep(v, global, cur, axis, ReplicateAttr::get(ctx), dim, loc);
  if (failed(step))
    return failure();
  const StaticPadding &padding = step->padding;
  RankedTensorType finalType = step->finalType, outType = step->outType;
  v = padding.value;
  auto inType = cast<RankedTensorType>(v.getType());
  int64_t n = mesh.getShape()[axis];
  cur = step->next;
  if (!inType.isDynamicDim(dim)) {
    Value gathered =
        AllGatherOp::create(b, loc, outType, v, meshRef, {axis}, dim)
            .getResult(0);
    return cutPadding(gathered, padding, finalType, loc);
  }
  // Uneven: pad every chunk to ceil(N / n), gather, drop the padding.
  int64_t size = outType.getDimSize(dim);
  int64_t chunk = (size + n - 1) / n;
  SmallVector<int64_t> paddedShape(inType.getShape());
  paddedShape[dim] = chunk;
  auto paddedType = inType.clone(paddedShape);
  SmallVector<OpFoldResult> low(inType.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(inType.getRank(), b.getIndexAttr(0));
  Value have = tensor::DimOp::create(b, loc, v, dim);
  high[dim] =
      arith::SubIOp::create(b, loc, index(chunk, loc), have).getResult();
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(inType.getElementType()));
  Value padded = tensor::PadOp::create(b, loc, paddedType, v, low, high, zero);
  SmallVector<int64_t> gatheredShape(paddedShape);
  gatheredShape[dim] = chunk * n;
  Value gathered = AllGatherOp::create(b, loc, inType.clone(gatheredShape),
                                       padded, meshRef, {axis}, dim)
                       .getResult(0);
  // The gathered dimension loses its padding; the others keep their local
  // size (dynamic where another mesh axis splits them unevenly).
  SmallVector<OpFoldResult> offsets(inType.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(inType.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, gathered);
  sizes[dim] = b.getIndexAttr(size);
  Value sliced = tensor::ExtractSliceOp::create(b, loc, outType, gathered,
                                                offsets, sizes, strides)
                     .getResult();
  return cutPadding(sliced, padding, finalType, loc);
}

FailureOr<Value> Expander::toPartial(Value v, unsigned axis, ReductionKind kind,
                                     Location loc) {
  // Partial avg/max/min of identical copies is the copy itself.
  if (kind != ReductionKind::Sum && kind != ReductionKind::Prod)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  FailureOr<Value> identity =
      fill(v, type, kind == ReductionKind::Sum ? 0.0 : 1.0, loc);
  if (failed(identity))
    return failure();
  Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        axisIndex(axis), index(0, loc));
  return arith::SelectOp::create(b, loc, type, isFirst, v, *identity)
      .getResult();
}

FailureOr<Value> Expander::materialize(Operation *def, RankedTensorType global,
                                       ArrayRef<PlacementAttr> to,
                                       Location loc) {
  FailureOr<RankedTensorType> type = localType(global, to, loc);
  if (failed(type))
    return failure();
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < type->getRank(); ++d) {
    if (!type->isDynamicDim(d))
      continue;
    unsigned axis = 0;
    for (auto [a, p] : llvm::enumerate(to))
      if (auto shard = dyn_cast<ShardAttr>(p); shard && shard.getDim() == d)
        axis = a;
    dynamic.push_back(unevenSize(global.getDimSize(d), axis, loc));
  }
  if (isa<tensor::EmptyOp>(def))
    return tensor::EmptyOp::create(b, loc, type->getShape(),
                                   type->getElementType(), dynamic)
        .getResult();
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto splat = cast<SplatElementsAttr>(constant.getValue());
    if (type->hasStaticShape())
      return arith::ConstantOp::create(
                 b, loc,
                 SplatElementsAttr::get(*type,
                                        splat.getSplatValue<Attribute>()))
          .getResult();
    Value scalar = arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(splat.getSplatValue<Attribute>()));
    return tensor::SplatOp::create(b, loc, *type, scalar, dynamic).getResult();
  }
  auto fillOp = cast<linalg::FillOp>(def);
  Value init = fillOp.getDpsInitOperand(0)->get();
  FailureOr<Value> newInit = materialize(
      init.getDefiningOp(), cast<RankedTensorType>(init.getType()), to, loc);
  if (failed(newInit))
    return failure();
  return linalg::FillOp::create(b, loc,
                                ValueRange{fillOp.getDpsInputOperand(0)->get()},
                                ValueRange{*newInit})
      .getResult(0);
}

/// The dimension `p` shards, or -1.
static int64_t shardDimOf(PlacementAttr p) {
  auto s = dyn_cast<ShardAttr>(p);
  return s ? s.getDim() : -1;
}

/// Whether an axis other than `axis` shards dimension `dim` in `ps`.
static bool shardedElsewhere(ArrayRef<PlacementAttr> ps, int64_t dim,
                             unsigned axis) {
  for (auto [a, p] : llvm::enumerate(ps))
    if (a != axis && shardDimOf(p) == dim)
      return true;
  return false;
}

bool Expander::evenOn(RankedTensorType global, int64_t dim, unsigned axis) {
  return global.getDimSize(dim) % mesh.getShape()[axis] == 0;
}

FailureOr<Value> Expander::materializeFlexible(Value value,
                                               RankedTensorType global,
                                               Placements &from,
                                               ArrayRef<PlacementAttr> to,
                                               Location loc) {
  // Build it in the wanted layout; a Partial of anything but a fill of the
  // reduction's identity is then made from the replicated copy.
  Operation *def = value.getDefiningOp();
  Placements direct(to);
  for (auto [a, p] : llvm::enumerate(to)) {
    auto partial = dyn_cast<PartialAttr>(p);
    if (!partial)
      continue;
    Attribute fillValue;
    if (auto fillOp = dyn_cast<linalg::FillOp>(def))
      matchPattern(fillOp.getDpsInputOperand(0)->get(), m_Constant(&fillValue));
    if (!isa<tensor::EmptyOp>(def) &&
        !isIdentityOf(fillValue, partial.getKind()))
      direct[a] = ReplicateAttr::get(ctx);
  }
  FailureOr<Value> built = materialize(def, global, direct, loc);
  if (succeeded(built))
    from = direct;
  return built;
}

FailureOr<Value> Expander::partialToShard(Value v, RankedTensorType global,
                                          Placements &cur, unsigned axis,
                                          ShardAttr to, Location loc) {
  auto partial = cast<PartialAttr>(cur[axis]);
  int64_t d = to.getDim();
  FailureOr<AxisStep> step = beginAxisStep(v, global, cur, axis, to, d, loc);
  if (failed(step))
    return failure();
  const StaticPadding &padding = step->padding;
  RankedTensorType outType = step->outType;
  v = padding.value;
  auto inType = cast<RankedTensorType>(v.getType());
  ReductionKind kind = partial.getKind();
  if (evenOn(global, d, axis)) {
    v = ReduceScatterOp::create(b, loc, outType, v, meshRef, {axis}, kind, d)
            .getResult(0);
  } else {
    // Pad to n * ceil(N / n), reduce-scatter, keep this rank's part.
    int64_t n = mesh.getShape()[axis];
    int64_t size = inType.getDimSize(d);
    int64_t chunk = (size + n - 1) / n;
    SmallVector<int64_t> shape(inType.getShape());
    shape[d] = chunk * n;
    SmallVector<OpFoldResult> low(inType.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> high(low);
    high[d] = b.getIndexAttr(chunk * n - size);
    Value zero = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(inType.getElementType()));
    Value padded =
        tensor::PadOp::create(b, loc, inType.clone(shape), v, low, high, zero);
    shape[d] = chunk;
    Value scattered = ReduceScatterOp::create(b, loc, inType.clone(shape),
                                              padded, meshRef, {axis}, kind, d)
                          .getResult(0);
    SmallVector<OpFoldResult> offsets(inType.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(inType.getRank(), b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, scattered);
    sizes[d] = unevenSize(size, axis, loc);
    v = tensor::ExtractSliceOp::create(b, loc, outType, scattered, offsets,
                                       sizes, strides);
  }
  cur = step->next;
  return cutPadding(v, padding, step->finalType, loc);
}

Value Expander::partialToReplicate(Value v, RankedTensorType global,
                                   Placements &cur, unsigned axis,
                                   Location loc) {
  auto partial = cast<PartialAttr>(cur[axis]);
  auto type = cast<RankedTensorType>(v.getType());
  StaticPadding padding = padDynamicDims(v, global, cur, -1, loc);
  Value reduced =
      AllReduceOp::create(b, loc, padding.padType(type), padding.value, meshRef,
                          {axis}, partial.getKind())
          .getResult(0);
  cur[axis] = ReplicateAttr::get(ctx);
  return cutPadding(reduced, padding, type, loc);
}

FailureOr<Value> Expander::shardToShard(Value v, RankedTensorType global,
                                        Placements &cur, unsigned axis,
                                        ShardAttr to, Location loc) {
  int64_t i = shardDimOf(cur[axis]), j = to.getDim();
  FailureOr<AxisStep> step = beginAxisStep(v, global, cur, axis, to, -1, loc);
  if (failed(step))
    return failure();
  Value exchanged =
      AllToAllOp::create(b, loc, step->outType, step->padding.value, meshRef,
                         {axis}, /*splitDim=*/j, /*concatDim=*/i)
          .getResult(0);
  cur = step->next;
  return cutPadding(exchanged, step->padding, step->finalType, loc);
}

FailureOr<Value> Expander::gatherInnerAxes(Value v, RankedTensorType global,
                                           Placements &cur, unsigned axis,
                                           int64_t dim, Location loc) {
  for (unsigned inner = axis + 1; inner < rank; ++inner) {
    if (shardDimOf(cur[inner]) != dim)
      continue;
    FailureOr<Value> g = gather(v, global, cur, inner, dim, loc);
    if (failed(g))
      return failure();
    v = *g;
  }
  return v;
}

FailureOr<Value> Expander::unshardAxis(Value v, RankedTensorType global,
                                       Placements &cur, unsigned axis,
                                       ArrayRef<PlacementAttr> to,
                                       Location loc) {
  int64_t i = shardDimOf(cur[axis]);
  // An inner axis splitting the same dimension goes first.
  FailureOr<Value> inner = gatherInnerAxes(v, global, cur, axis, i, loc);
  if (failed(inner))
    return failure();
  v = *inner;
  // A shard moving to another dimension of the same axis: one all_to_all
  // when both split evenly and no other axis is involved.
  auto toShard = dyn_cast<ShardAttr>(to[axis]);
  if (toShard && toShard.getDim() != i && !shardedElsewhere(cur, i, axis) &&
      !shardedElsewhere(cur, toShard.getDim(), axis) &&
      !shardedElsewhere(to, toShard.getDim(), axis) &&
      evenOn(global, i, axis) && evenOn(global, toShard.getDim(), axis))
    return shardToShard(v, global, cur, axis, toShard, loc);
  return gather(v, global, cur, axis, i, loc);
}

FailureOr<Value> Expander::shardAxis(Value v, RankedTensorType global,
                                     Placements &cur, unsigned axis,
                                     ShardAttr to, Location loc) {
  FailureOr<Value> inner =
      gatherInnerAxes(v, global, cur, axis, to.getDim(), loc);
  if (failed(inner))
    return failure();
  Placements next = cur;
  next[axis] = to;
  FailureOr<RankedTensorType> outType = localType(global, next, loc);
  if (failed(outType))
    return failure();
  cur = next;
  Value sliced = LocalSliceOp::create(b, loc, *outType, *inner, meshRef,
                                      b.getDenseI64ArrayAttr({axis}),
                                      b.getI64IntegerAttr(to.getDim()));
  return sliced;
}

FailureOr<Value> Expander::redistribute(Value value, RankedTensorType global,
                                        Placements from, Placements to,
                                        Location loc) {
  // On a mesh axis of one rank every placement is the whole value (a shard
  // is everything, a Partial sums one term): nothing to move there. Left
  // as they were, a change on such an axis between two shards of one
  // dimension would gather and re-slice along the other axis.
  for (unsigned a = 0; a < rank; ++a)
    if (mesh.getShape()[a] == 1)
      from[a] = to[a] = ReplicateAttr::get(ctx);
  if (from == to && !isFlexibleOp(value.getDefiningOp()))
    return value;
  auto key = std::make_pair(value, Attribute(SpecAttr::get(ctx, meshRef, to)));
  if (Value cached = cache.lookup(key))
    return cached;

  Value v = value;
  Placements cur = from;
  if (isFlexibleOp(value.getDefiningOp())) {
    FailureOr<Value> built = materializeFlexible(value, global, cur, to, loc);
    if (failed(built))
      return failure();
    v = *built;
  }

  // Inner to outer: undo the shards and partials that change.
  for (int a = rank - 1; a >= 0; --a) {
    if (cur[a] == to[a])
      continue;
    FailureOr<Value> next = v;
    if (isa<PartialAttr>(cur[a])) {
      auto shard = dyn_cast<ShardAttr>(to[a]);
      if (shard && !shardedElsewhere(cur, shard.getDim(), a) &&
          !shardedElsewhere(to, shard.getDim(), a))
        next = partialToShard(v, global, cur, a, shard, loc);
      else
        next = partialToReplicate(v, global, cur, a, loc);
    } else if (isa<ShardAttr>(cur[a])) {
      next = unshardAxis(v, global, cur, a, to, loc);
    }
    if (failed(next))
      return failure();
    v = *next;
  }

  // Outer to inner: apply the new shards and partials.
  for (unsigned a = 0; a < rank; ++a) {
    if (cur[a] == to[a])
      continue;
    FailureOr<Value> next = v;
    if (auto shard = dyn_cast<ShardAttr>(to[a])) {
      next = shardAxis(v, global, cur, a, shard, loc);
    } else if (auto partial = dyn_cast<PartialAttr>(to[a])) {
      next = toPartial(v, a, partial.getKind(), loc);
      cur[a] = to[a];
    }
    if (failed(next))
      return failure();
    v = *next;
  }
  cache[key] = v;
  return v;
}

LogicalResult Expander::setOperand(Operation *op, unsigned index,
                                   ArrayRef<PlacementAttr> want) {
  Value operand = op->getOperand(index);
  auto global = globalTypes.lookup(operand);
  if (!global)
    return success();
  auto it = placements.find(operand);
  Placements have =
      it != placements.end() ? it->second : getReplicated(ctx, rank);
  b.setInsertionPoint(op);
  FailureOr<Value> v =
      redistribute(operand, global, have, Placements(want), op->getLoc());
  if (failed(v))
    return failure();
  op->setOperand(index, *v);
  return success();
}

LogicalResult Expander::expandOp(Operation *op) {
  // Rules read operand types: they were taken while the types were global.
  const ShardingRule &rule = rules.find(op)->second;
  auto strategy =
      op->getAttrOfType<StrategyAttr>(SpmdDialect::getStrategyAttrName());
  if (!strategy || strategy.getNumGroups() != rule.numGroups)
    return op->emitError("spmd-expand needs the placement spmd-propagate "
                         "records; run spmd-propagate first");
  if (strategy.getNumAxes() != rank)
    return op->emitError() << "the op's strategy has " << strategy.getNumAxes()
                           << " choice(s) per factor group (one per mesh "
                              "axis) but the mesh has "
                           << rank << " axis(es)";
  // Tensors a region reads from above (the `tensor.extract` of a gather in
  // a linalg payload) are indexed globally: the op gets them whole.
  if (op->getNumRegions() != 0) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    for (Value value : captured) {
      RankedTensorType global = globalTypes.lookup(value);
      if (!global)
        continue;
      auto it = placements.find(value);
      Placements have =
          it != placements.end() ? it->second : getReplicated(ctx, rank);
      b.setInsertionPoint(op);
      FailureOr<Value> whole = redistribute(
          value, global, have, getReplicated(ctx, rank), op->getLoc());
      if (failed(whole))
        return failure();
      if (*whole != value)
        value.replaceUsesWithIf(*whole, [&](OpOperand &use) {
          return op->isProperAncestor(use.getOwner());
        });
    }
  }
  for (unsigned o = 0; o < op->getNumOperands(); ++o) {
    if (!isa<RankedTensorType>(op->getOperand(o).getType()))
      continue;
    Placements want;
    for (unsigned a = 0; a < rank; ++a)
      want.push_back(getRequiredOperandPlacement(
          rule, o, strategy.getChoice(rule.operandGroups[o], a), ctx));
    if (failed(setOperand(op, o, want)))
      return failure();
  }
  auto specs =
      op->getAttrOfType<ArrayAttr>(SpmdDialect::getResultSpecsAttrName());
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    auto spec = dyn_cast<SpecAttr>(specs[r]);
    if (!spec)
      continue;
    FailureOr<RankedTensorType> type = localType(
        globalTypes.lookup(result), spec.getPlacements(), op->getLoc());
    if (failed(type))
      return failure();
    result.setType(*type);
  }
  op->removeAttr(SpmdDialect::getStrategyAttrName());
  op->removeAttr(SpmdDialect::getResultSpecsAttrName());
  return localizeSizes(op);
}

/// Ops that spell sizes out (slices, expand_shape) get the local sizes of the
/// dimensions that are sharded (those are taken whole, see their rules).
LogicalResult Expander::localizeSizes(Operation *op) {
  // Each op says how (ShardingRuleOpInterface::localizeSizes, next to its
  // rule): slices take their sharded dimensions' sizes from the local
  // source, expand_shape its local result type.
  auto withRule = dyn_cast<ShardingRuleOpInterface>(op);
  if (!withRule)
    return success();
  b.setInsertionPoint(op);
  FailureOr<Operation *> local =
      withRule.localizeSizes(b, rules.find(op)->second);
  if (failed(local))
    return failure();
  if (!*local)
    return success();
  // The rebuilt op's results stand for the old ones: later uses look up
  // their global type and placement.
  for (auto [from, to] : llvm::zip(op->getResults(), (*local)->getResults())) {
    globalTypes[to] = globalTypes.lookup(from);
    // Copied out first: inserting `to` may rehash the map.
    if (auto it = placements.find(from); it != placements.end()) {
      Placements layout = it->second;
      placements[to] = std::move(layout);
    }
  }
  op->replaceAllUsesWith(*local);
  dead.push_back(op);
  return success();
}

LogicalResult Expander::run() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : func.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType())) {
      globalTypes[arg] = type;
      auto spec = func.getArgAttrOfType<SpecAttr>(
          arg.getArgNumber(), SpmdDialect::getSpecAttrName());
      placements[arg] =
          spec ? Placements(spec.getPlacements()) : getReplicated(ctx, rank);
    }
  for (Operation &op : body) {
    if (op.hasAttr(SpmdDialect::getStrategyAttrName()))
      (void)getCachedRule(rules, &op);
    auto specs =
        op.getAttrOfType<ArrayAttr>(SpmdDialect::getResultSpecsAttrName());
    for (auto [r, result] : llvm::enumerate(op.getResults())) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      globalTypes[result] = type;
      if (specs)
        if (auto spec = dyn_cast<SpecAttr>(specs[r]))
          placements[result] = Placements(spec.getPlacements());
    }
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      placements[annotate.getResult()] =
          Placements(annotate.getSpec().getPlacements());
    if (auto redistribute = dyn_cast<RedistributeOp>(op))
      placements[redistribute.getResult()] =
          Placements(redistribute.getSpec().getPlacements());
    if (auto load = dyn_cast<LoadOp>(op)) {
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          load, load.getStateAttr());
      placements[load.getResult()] =
          state && state.getSpec()
              ? Placements(state.getSpec()->getPlacements())
              : getReplicated(ctx, rank);
    }
  }

  // Local argument types.
  SmallVector<Type> argTypes;
  for (BlockArgument arg : func.getArguments()) {
    if (auto global = globalTypes.lookup(arg)) {
      FailureOr<RankedTensorType> type =
          localType(global, placements[arg], func.getLoc());
      if (failed(type))
        return failure();
      arg.setType(*type);
    }
    argTypes.push_back(arg.getType());
  }

  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  SmallVector<Operation *> flexible;
  for (Operation *op : ops) {
    if (isFlexibleOp(op)) {
      // Rebuilt per use in the layout the use needs.
      flexible.push_back(op);
      continue;
    }
    if (isa<AnnotateOp, RedistributeOp>(op)) {
      // Both become the collectives that bring the input to their spec.
      Value input = op->getOperand(0), result = op->getResult(0);
      Placements want(op->getAttrOfType<SpecAttr>("spec").getPlacements());
      b.setInsertionPoint(op);
      auto have = placements.lookup(input);
      if (have.empty())
        have = getReplicated(ctx, rank);
      FailureOr<Value> v = redistribute(input, globalTypes.lookup(input), have,
                                        want, op->getLoc());
      if (failed(v))
        return failure();
      // Later ops see the new value in the wanted layout.
      globalTypes[*v] = globalTypes.lookup(result);
      placements[*v] = want;
      result.replaceAllUsesWith(*v);
      dead.push_back(op);
      continue;
    }
    if (auto load = dyn_cast<LoadOp>(op)) {
      FailureOr<RankedTensorType> type =
          localType(globalTypes.lookup(load.getResult()),
                    placements[load.getResult()], op->getLoc());
      if (failed(type))
        return failure();
      load.getResult().setType(*type);
      if (!type->hasStaticShape() && failed(loadUnevenState(load, *type)))
        return failure();
      continue;
    }
    if (auto store = dyn_cast<StoreOp>(op)) {
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          store, store.getStateAttr());
      Placements want = state && state.getSpec()
                            ? Placements(state.getSpec()->getPlacements())
                            : getReplicated(ctx, rank);
      if (failed(setOperand(op, 0, want)) || failed(storeUnevenState(store)))
        return failure();
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Type> resultTypes;
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto spec = func.getResultAttrOfType<SpecAttr>(
            i, SpmdDialect::getSpecAttrName());
        if (spec && globalTypes.lookup(v) &&
            failed(setOperand(op, i, spec.getPlacements())))
          return failure();
        resultTypes.push_back(op->getOperand(i).getType());
      }
      func.setType(FunctionType::get(ctx, argTypes, resultTypes));
      continue;
    }
    bool placed = op->hasAttr(SpmdDialect::getStrategyAttrName());
    bool touchesTensors =
        llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
        llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
    if (!placed && !touchesTensors)
      continue;
    if (!placed)
      return op->emitError("spmd-expand needs the placement spmd-propagate "
                           "records; run spmd-propagate first");
    if (failed(expandOp(op)))
      return failure();
  }
  // Replaced ops die only now: the maps above are keyed by values, and an
  // erased value's storage could be reused by a new one mid-expansion.
  for (Operation *op : llvm::reverse(dead))
    op->erase();
  for (Operation *op : llvm::reverse(flexible)) {
    if (!op->use_empty())
      return op->emitError("spmd-expand: a use of this value was not expanded");
    op->erase();
  }
  return success();
}

struct SpmdExpandPass : public spmd::impl::SpmdExpandPassBase<SpmdExpandPass> {
  void runOnOperation() override {
    if (failed(expandToLocal(getOperation())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::spmd::expandToLocal(ModuleOp module,
                                        ShardingRuleCache *rules) {
  ShardingRuleCache own;
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (func.isExternal())
      continue;
    auto meshRef =
        func->getAttrOfType<FlatSymbolRefAttr>(SpmdDialect::getMeshAttrName());
    bool placed = false;
    func.walk([&](Operation *op) {
      placed |= op->hasAttr(SpmdDialect::getStrategyAttrName());
    });
    if (!meshRef) {
      if (!placed)
        continue;
      func.emitError("spmd-expand: placed ops in a function spmd-propagate "
                     "did not mark; run spmd-propagate first");
      return failure();
    }
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(func, meshRef);
    if (!mesh) {
      func.emitError() << meshRef << " does not name an 'spmd.mesh'";
      return failure();
    }
    func->removeAttr(SpmdDialect::getMeshAttrName());
    Expander expander(func, mesh, rules ? *rules : own);
    if (failed(expander.run()))
      return failure();
  }
  // Sharded state gets local storage.
  for (auto state : module.getOps<StateOp>()) {
    std::optional<SpecAttr> spec = state.getSpec();
    if (!spec)
      continue;
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<MeshOp>(state, spec->getMesh());
    if (!mesh)
      continue;
    FailureOr<RankedTensorType> type =
        getLocalType(state.getTensorType(), spec->getPlacements(), mesh,
                     [&] { return state.emitError(); });
    if (failed(type))
      return failure();
    state.setType(stateStorageType(state.getTensorType(), *type,
                                   spec->getPlacements(), mesh));
  }
  return success();
}

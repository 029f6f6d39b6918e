//===- Reshard.cpp - spmd-expand's resharding steps -----------------------===//
//
// Expander::redistribute: a value from one placement to another as named
// steps, each changing one mesh axis — Partial to Shard (reduce_scatter),
// Partial to Replicate (all_reduce), Shard to Shard (all_to_all), unshard
// (all_gather, or all_to_all into another even shard), Replicate to Shard
// (a local slice) — undone inner axis to outer, applied outer to inner;
// uneven dimensions padded for the collective and cut back after it.
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

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

} // namespace

namespace mlir::spmd::detail {

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

} // namespace mlir::spmd::detail

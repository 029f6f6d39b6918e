//===- Expand.cpp - global program to local program with collectives ------===//
//
// spmd-expand: walks each function's ops and gives each its local form —
// arguments and state in their local types (uneven shards in padded
// storage), annotations and redistributions as collectives (Reshard.cpp),
// every placed op expanded by its sharding rule.
//
//===----------------------------------------------------------------------===//

#include "Expander.h"

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
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDEXPANDPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;
using mlir::spmd::detail::Expander;

namespace {

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

} // namespace

namespace mlir::spmd::detail {

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

void Expander::recordLayouts() {
  for (BlockArgument arg : func.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType())) {
      globalTypes[arg] = type;
      auto spec = func.getArgAttrOfType<SpecAttr>(
          arg.getArgNumber(), SpmdDialect::getSpecAttrName());
      placements[arg] =
          spec ? Placements(spec.getPlacements()) : getReplicated(ctx, rank);
    }
  for (Operation &op : func.getBody().front()) {
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
}

LogicalResult Expander::localizeArguments() {
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
  return success();
}

LogicalResult Expander::expandRedistribution(Operation *op) {
  // spmd.annotate and spmd.redistribute both become the collectives that
  // bring the input to their spec.
  Value input = op->getOperand(0), result = op->getResult(0);
  Placements want(op->getAttrOfType<SpecAttr>("spec").getPlacements());
  b.setInsertionPoint(op);
  auto have = placements.lookup(input);
  if (have.empty())
    have = getReplicated(ctx, rank);
  FailureOr<Value> v =
      redistribute(input, globalTypes.lookup(input), have, want, op->getLoc());
  if (failed(v))
    return failure();
  // Later ops see the new value in the wanted layout.
  globalTypes[*v] = globalTypes.lookup(result);
  placements[*v] = want;
  result.replaceAllUsesWith(*v);
  dead.push_back(op);
  return success();
}

LogicalResult Expander::expandLoad(LoadOp load) {
  FailureOr<RankedTensorType> type =
      localType(globalTypes.lookup(load.getResult()),
                placements[load.getResult()], load.getLoc());
  if (failed(type))
    return failure();
  load.getResult().setType(*type);
  if (!type->hasStaticShape() && failed(loadUnevenState(load, *type)))
    return failure();
  return success();
}

LogicalResult Expander::expandStore(StoreOp store) {
  auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
      store, store.getStateAttr());
  Placements want = state && state.getSpec()
                        ? Placements(state.getSpec()->getPlacements())
                        : getReplicated(ctx, rank);
  if (failed(setOperand(store, 0, want)) || failed(storeUnevenState(store)))
    return failure();
  return success();
}

LogicalResult Expander::expandReturn(func::ReturnOp ret) {
  SmallVector<Type> resultTypes;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto spec =
        func.getResultAttrOfType<SpecAttr>(i, SpmdDialect::getSpecAttrName());
    if (spec && globalTypes.lookup(v) &&
        failed(setOperand(ret, i, spec.getPlacements())))
      return failure();
    resultTypes.push_back(ret->getOperand(i).getType());
  }
  func.setType(FunctionType::get(ctx, argTypes, resultTypes));
  return success();
}

LogicalResult Expander::expandPlaced(Operation *op) {
  bool placed = op->hasAttr(SpmdDialect::getStrategyAttrName());
  bool touchesTensors =
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
      llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
  if (!placed && !touchesTensors)
    return success();
  if (!placed)
    return op->emitError("spmd-expand needs the placement spmd-propagate "
                         "records; run spmd-propagate first");
  return expandOp(op);
}

LogicalResult Expander::run() {
  recordLayouts();
  if (failed(localizeArguments()))
    return failure();
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  SmallVector<Operation *> flexible;
  for (Operation *op : ops) {
    if (isFlexibleOp(op)) {
      // Rebuilt per use in the layout the use needs.
      flexible.push_back(op);
      continue;
    }
    LogicalResult expanded =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case<AnnotateOp, RedistributeOp>(
                [&](Operation *op) { return expandRedistribution(op); })
            .Case([&](LoadOp load) { return expandLoad(load); })
            .Case([&](StoreOp store) { return expandStore(store); })
            .Case([&](func::ReturnOp ret) { return expandReturn(ret); })
            .Default([&](Operation *op) { return expandPlaced(op); });
    if (failed(expanded))
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

} // namespace mlir::spmd::detail

namespace {

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

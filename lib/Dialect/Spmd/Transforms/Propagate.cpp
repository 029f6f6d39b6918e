//===- Propagate.cpp - a placement for every tensor value -----------------===//
//
// One forward sweep in program order. Sources are fixed: function argument
// specs, spmd.annotate / spmd.redistribute results, loaded state. For every
// other op, each factor group and mesh axis gets the candidate (replicate,
// shard one factor, or pass a Partial through a linear op) with the least
// communication to bring its operands to what it needs, plus what its
// results would cost to bring to the spec a later annotate, store or return
// asks of them. Ties go to fewer local re-slices, then to sharded compute.
// Before the bytes comes one rule: a value computed from arguments sharded
// along a mesh axis (the data-parallel batch and what derives from it) is
// not all-gathered (nor moved to another dimension) along that axis while
// another candidate keeps its shard, so no rank holds or computes over the
// global batch (gathering a small batch can be fewer bytes than all-reducing a
// gradient, but costs every rank the whole batch's compute and memory).
// One exception: a candidate that shards another factor along the axis (its
// compute still split) may gather batch data that is at least 16 times
// smaller than what keeping the batch split would move (a vocabulary-
// parallel loss gathers one bit per token instead of a [tokens, vocabulary]
// tensor).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"
#include "Spmd/Dialect/Spmd/Transforms/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <cstdint>
#include <limits>
#include <tuple>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDPROPAGATEPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// How many times fewer bytes a batch gather must move than keeping the
/// batch split would, for a candidate that still shards the op's compute
/// to take it (see Propagator::place).
constexpr double kSmallBatchGather = 16;

/// The spec sources of a function, to find its mesh.
SmallVector<std::pair<SpecAttr, Operation *>> collectSpecs(func::FuncOp func) {
  SmallVector<std::pair<SpecAttr, Operation *>> specs;
  auto add = [&](Attribute attr, Operation *at) {
    if (auto spec = dyn_cast_or_null<SpecAttr>(attr))
      specs.push_back({spec, at});
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    add(func.getArgAttr(i, SpmdDialect::getSpecAttrName()), func);
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    add(func.getResultAttr(i, SpmdDialect::getSpecAttrName()), func);
  func.walk([&](Operation *op) {
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      add(annotate.getSpec(), op);
    else if (auto redistribute = dyn_cast<RedistributeOp>(op))
      add(redistribute.getSpec(), op);
    else if (isa<LoadOp, StoreOp>(op)) {
      auto name = isa<LoadOp>(op) ? cast<LoadOp>(op).getStateAttr()
                                  : cast<StoreOp>(op).getStateAttr();
      if (auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(op, name))
        if (state.getSpec())
          add(*state.getSpec(), op);
    }
  });
  return specs;
}

class Propagator {
public:
  Propagator(func::FuncOp func, MeshOp mesh, ShardingRuleCache &rules)
      : func(func), mesh(mesh), ctx(func.getContext()), rank(mesh.getRank()),
        rules(rules) {}

  LogicalResult run();

private:
  Placements placementOf(Value value) {
    auto it = placements.find(value);
    if (it != placements.end())
      return it->second;
    return getReplicated(ctx, rank);
  }
  Placements stateSpec(FlatSymbolRefAttr name, Operation *from) {
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(from, name);
    if (state && state.getSpec())
      return Placements(state.getSpec()->getPlacements());
    return getReplicated(ctx, rank);
  }
  void collectHints();
  DictionaryAttr withSpec(DictionaryAttr dict, SpecAttr spec) {
    NamedAttrList attrs(dict);
    attrs.set(SpmdDialect::getSpecAttrName(), spec);
    return attrs.getDictionary(ctx);
  }
  LogicalResult fix(Value value, ArrayRef<PlacementAttr> spec, Operation *at);
  void place(Operation *op);
  /// What axis `a` of group `g` of `op` may do: stay replicated, shard a
  /// factor of the group (`factorSplit`: how far outer axes already split
  /// each), or keep a Partial its linear operands all have.
  SmallVector<AxisChoice> candidates(Operation *op, const ShardingRule &rule,
                                     unsigned g, unsigned a,
                                     ArrayRef<int64_t> factorSplit,
                                     ArrayRef<Placements> operandNow);
  /// A choice's cost, compared lexicographically: (batch gathers,
  /// communication bytes, local re-slices, preference).
  using ChoiceScore = std::tuple<int, double, int, int>;
  ChoiceScore score(Operation *op, const ShardingRule &rule, unsigned g,
                    unsigned a, const AxisChoice &c,
                    ArrayRef<Placements> operandNow, bool sourceLike);
  /// Records the chosen strategy and the results' placements on `op`.
  void recordStrategy(Operation *op, const ShardingRule &rule,
                      ArrayRef<AxisChoice> strategy);

  func::FuncOp func;
  MeshOp mesh;
  MLIRContext *ctx;
  unsigned rank;
  ShardingRuleCache &rules;
  DenseMap<Value, Placements> placements;
  /// Where a fixed value got its spec (for conflict notes).
  DenseMap<Value, Operation *> fixedAt;
  /// What later users ask of a value (annotate, store, return).
  DenseMap<Value, Placements> hints;
  /// Per value, the mesh axes (bits) along which it is split by batch data:
  /// computed from an argument sharded there and sharded there itself.
  /// All-gathering it along those is avoided.
  DenseMap<Value, uint64_t> batchAxes;
};

void Propagator::collectHints() {
  func.walk([&](Operation *op) {
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      hints[annotate.getInput()] =
          Placements(annotate.getSpec().getPlacements());
    else if (auto store = dyn_cast<StoreOp>(op))
      hints.try_emplace(store.getValue(),
                        stateSpec(store.getStateAttr(), store));
    else if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (auto spec = func.getResultAttrOfType<SpecAttr>(
                i, SpmdDialect::getSpecAttrName()))
          hints.try_emplace(v, Placements(spec.getPlacements()));
  });
}

/// Gives `value` the fixed spec `spec` (from `at`); a value fixed twice to
/// different specs is a conflict.
LogicalResult Propagator::fix(Value value, ArrayRef<PlacementAttr> spec,
                              Operation *at) {
  auto it = fixedAt.find(value);
  if (it != fixedAt.end() && Placements(spec) != placements[value]) {
    InFlightDiagnostic diag =
        at->emitError()
        << "conflicting specs for the same value: "
        << SpecAttr::get(ctx, FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                         spec)
        << " here, "
        << SpecAttr::get(ctx, FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                         placements[value])
        << " before (use spmd.redistribute to change a spec)";
    diag.attachNote(it->second->getLoc()) << "the other spec comes from here";
    return diag;
  }
  placements[value] = Placements(spec);
  fixedAt.try_emplace(value, at);
  return success();
}

SmallVector<AxisChoice>
Propagator::candidates(Operation *op, const ShardingRule &rule, unsigned g,
                       unsigned a, ArrayRef<int64_t> factorSplit,
                       ArrayRef<Placements> operandNow) {
  int64_t n = mesh.getShape()[a];
  SmallVector<AxisChoice> candidates;
  candidates.push_back(AxisChoice{});
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    if (factor.group != g || ShapedType::isDynamic(factor.size) ||
        factor.size < n)
      continue;
    if ((factor.isReduction && !factor.combiner) || !factor.shardable)
      continue;
    int64_t split = factorSplit[f] * n;
    bool even = factor.size % split == 0;
    if (!even && (factor.requiresEven || factorSplit[f] > 1))
      continue;
    bool used = false, twice = false;
    for (auto &dims : llvm::concat<const SmallVector<int64_t>>(
             rule.operandDims, rule.resultDims)) {
      unsigned count = llvm::count(dims, static_cast<int64_t>(f));
      used |= count > 0;
      twice |= count > 1;
    }
    if (!used || twice)
      continue;
    AxisChoice choice;
    choice.kind = AxisChoice::Factor;
    choice.factor = f;
    candidates.push_back(choice);
  }
  for (auto [s, set] : llvm::enumerate(rule.linearSets)) {
    auto first = dyn_cast<PartialAttr>(operandNow[set.front()][a]);
    if (!first || (first.getKind() != ReductionKind::Sum &&
                   first.getKind() != ReductionKind::Avg))
      continue;
    if (!llvm::all_of(set, [&](unsigned o) {
          return rule.operandGroups[o] == g && operandNow[o][a] == first;
        }))
      continue;
    AxisChoice choice;
    choice.kind = AxisChoice::Partial;
    choice.partialKind = first.getKind();
    choice.linearSet = s;
    candidates.push_back(choice);
  }

  return candidates;
}

Propagator::ChoiceScore Propagator::score(Operation *op,
                                          const ShardingRule &rule, unsigned g,
                                          unsigned a, const AxisChoice &c,
                                          ArrayRef<Placements> operandNow,
                                          bool sourceLike) {
  int64_t n = mesh.getShape()[a];
  double bytes = 0;
  int slices = 0, gathers = 0;
  for (auto [o, operand] : llvm::enumerate(op->getOperands())) {
    if (rule.operandGroups[o] != g || !isa<RankedTensorType>(operand.getType()))
      continue;
    PlacementAttr want = getRequiredOperandPlacement(rule, o, c, ctx);
    PlacementAttr have = operandNow[o][a];
    if (isFlexibleOp(operand.getDefiningOp()) || want == have)
      continue;
    if (rule.operandIsInit[o] && isa<PartialAttr>(want) &&
        isa<ReplicateAttr>(have))
      continue; // initial value of an accumulation: free
    bytes +=
        getRedistributionCost(have, want, n, getByteSize(operand.getType()));
    slices += isa<ReplicateAttr>(have) && isa<ShardAttr>(want);
    // want != have here: an all-gather, or an all-to-all onto
    // another dimension (the whole batch along the other).
    gathers += isa<ShardAttr>(have) && !isa<PartialAttr>(want) &&
               (batchAxes.lookup(operand) >> a & 1);
  }
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    if (rule.resultGroups[r] != g)
      continue;
    auto hint = hints.find(result);
    if (hint == hints.end())
      continue;
    PlacementAttr have = getResultPlacement(rule, r, c, ctx);
    bytes += getRedistributionCost(have, hint->second[a], n,
                                   getByteSize(result.getType()));
    // A replicated result its user wants sharded is computed whole and
    // sliced: a re-slice as much as a sliced operand is.
    slices += isa<ReplicateAttr>(have) && isa<ShardAttr>(hint->second[a]);
  }
  // Ops with nothing distributed to read (tensor.empty, splats, their
  // fills) stay replicated; expansion rebuilds them per use anyway.
  int preference = sourceLike ? -1 : 3;
  if (c.kind == AxisChoice::Factor)
    preference = rule.factors[c.factor].isReduction ? 1 : 0;
  else if (c.kind == AxisChoice::Partial)
    preference = 2;
  if (sourceLike && c.kind != AxisChoice::Replicate)
    preference = 4;
  return std::make_tuple(gathers, bytes, slices, preference);
}

void Propagator::place(Operation *op) {
  const ShardingRule &rule = getCachedRule(rules, op);
  SmallVector<AxisChoice> strategy(rule.numGroups * rank);
  SmallVector<Placements> operandNow;
  for (Value operand : op->getOperands())
    operandNow.push_back(placementOf(operand));

  bool sourceLike = llvm::all_of(op->getOperands(), [](Value v) {
    return !isa<RankedTensorType>(v.getType()) ||
           isFlexibleOp(v.getDefiningOp());
  });
  for (unsigned g = 0; g < rule.numGroups; ++g) {
    // Factors already sharded on outer axes of this group (nested splits).
    SmallVector<int64_t> factorSplit(rule.factors.size(), 1);
    for (unsigned a = 0; a < rank; ++a) {
      SmallVector<AxisChoice> choices =
          candidates(op, rule, g, a, factorSplit, operandNow);
      SmallVector<ChoiceScore> scores;
      double keepBatchBytes = std::numeric_limits<double>::infinity();
      for (const AxisChoice &c : choices) {
        scores.push_back(score(op, rule, g, a, c, operandNow, sourceLike));
        if (std::get<0>(scores.back()) == 0)
          keepBatchBytes = std::min(keepBatchBytes, std::get<1>(scores.back()));
      }
      // A candidate that shards a factor along the axis still splits the
      // compute; the batch it gathers is only an input. It may gather when
      // that moves a small fraction of what keeping the batch split would
      // (the vocabulary-parallel loss gathers a mask of one bit per token
      // rather than move a [tokens, vocabulary] tensor).
      for (auto [c, s] : llvm::zip(choices, scores))
        if (c.kind == AxisChoice::Factor && std::get<0>(s) > 0 &&
            std::get<1>(s) * kSmallBatchGather <= keepBatchBytes)
          std::get<0>(s) = 0;
      AxisChoice best = choices.front();
      ChoiceScore bestScore = scores.front();
      for (auto [c, s] : llvm::drop_begin(llvm::zip(choices, scores))) {
        if (s < bestScore) {
          best = c;
          bestScore = s;
        }
      }
      strategy[g * rank + a] = best;
      if (best.kind == AxisChoice::Factor)
        factorSplit[best.factor] *= mesh.getShape()[a];
    }
  }
  recordStrategy(op, rule, strategy);
}

void Propagator::recordStrategy(Operation *op, const ShardingRule &rule,
                                ArrayRef<AxisChoice> strategy) {
  // The axes along which an operand split by batch data stays split (not
  // gathered for this op).
  uint64_t derived = 0;
  for (auto [o, operand] : llvm::enumerate(op->getOperands())) {
    uint64_t axes = batchAxes.lookup(operand);
    for (unsigned a = 0; a < rank && a < 64; ++a)
      if ((axes >> a & 1) &&
          !isa<ShardAttr>(getRequiredOperandPlacement(
              rule, o, strategy[rule.operandGroups[o] * rank + a], ctx)))
        axes &= ~(uint64_t{1} << a);
    derived |= axes;
  }
  SmallVector<Attribute> resultSpecs;
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    if (!isa<RankedTensorType>(result.getType())) {
      resultSpecs.push_back(UnitAttr::get(ctx));
      continue;
    }
    Placements p;
    for (unsigned a = 0; a < rank; ++a)
      p.push_back(getResultPlacement(
          rule, r, strategy[rule.resultGroups[r] * rank + a], ctx));
    placements[result] = p;
    resultSpecs.push_back(SpecAttr::get(ctx, meshRef, p));
    // A result still split by batch data along an axis (not a Partial sum
    // over it, as a weight gradient is) carries the batch there.
    uint64_t carried = 0;
    for (unsigned a = 0; a < rank && a < 64; ++a)
      if ((derived >> a & 1) && isa<ShardAttr>(p[a]))
        carried |= uint64_t{1} << a;
    if (carried)
      batchAxes[result] = carried;
  }
  op->setAttr(SpmdDialect::getStrategyAttrName(),
              StrategyAttr::get(ctx, rank, strategy));
  op->setAttr(SpmdDialect::getResultSpecsAttrName(),
              ArrayAttr::get(ctx, resultSpecs));
}

LogicalResult Propagator::run() {
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  // Argument and result attributes are set once per function: setting them
  // one at a time rebuilds the whole list each time (quadratic).
  SmallVector<DictionaryAttr> argAttrs;
  func.getAllArgAttrs(argAttrs);
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      continue;
    auto spec = func.getArgAttrOfType<SpecAttr>(arg.getArgNumber(),
                                                SpmdDialect::getSpecAttrName());
    Placements p =
        spec ? Placements(spec.getPlacements()) : getReplicated(ctx, rank);
    if (failed(fix(arg, p, func)))
      return failure();
    for (auto [a, placement] : llvm::enumerate(p))
      if (isa<ShardAttr>(placement) && a < 64)
        batchAxes[arg] |= uint64_t{1} << a;
    if (!spec)
      argAttrs[arg.getArgNumber()] = withSpec(argAttrs[arg.getArgNumber()],
                                              SpecAttr::get(ctx, meshRef, p));
  }
  func.setAllArgAttrs(argAttrs);
  collectHints();

  DenseMap<Value, std::pair<SpecAttr, Operation *>> annotated;
  for (Operation &op : func.getBody().front()) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      // An annotation states the layout of its input too.
      auto [it, inserted] =
          annotated.try_emplace(annotate.getInput(), annotate.getSpec(), &op);
      if (!inserted && it->second.first != annotate.getSpec()) {
        InFlightDiagnostic diag =
            op.emitError() << "conflicting annotations of the same value: "
                           << annotate.getSpec() << " here, "
                           << it->second.first << " before";
        diag.attachNote(it->second.second->getLoc())
            << "the other annotation is here";
        return diag;
      }
      auto fixedIt = fixedAt.find(annotate.getInput());
      if (fixedIt != fixedAt.end() &&
          placements[annotate.getInput()] !=
              Placements(annotate.getSpec().getPlacements())) {
        InFlightDiagnostic diag =
            op.emitError() << "annotation " << annotate.getSpec()
                           << " conflicts with the spec its input already has, "
                           << SpecAttr::get(ctx, meshRef,
                                            placements[annotate.getInput()])
                           << " (use spmd.redistribute to change a spec)";
        diag.attachNote(fixedIt->second->getLoc())
            << "the input's spec comes from here";
        return diag;
      }
      if (failed(fix(annotate.getResult(), annotate.getSpec().getPlacements(),
                     &op)))
        return failure();
      continue;
    }
    if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      if (failed(fix(redistribute.getResult(),
                     redistribute.getSpec().getPlacements(), &op)))
        return failure();
      continue;
    }
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (failed(
              fix(load.getResult(), stateSpec(load.getStateAttr(), load), &op)))
        return failure();
      continue;
    }
    if (isa<StoreOp, func::ReturnOp>(op))
      continue;
    if (isa<CollectiveOpInterface, WaitOp, LocalSliceOp>(op))
      return op.emitError("spmd-propagate runs on global programs; found a "
                          "collective, which only a local program has");
    if (op.getNumRegions() && !isa<ShardingRuleOpInterface>(op) &&
        (llvm::any_of(op.getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
         llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>)))
      return op.emitError()
             << "spmd-propagate does not support '" << op.getName()
             << "' (an op with regions) on tensors";
    place(&op);
  }

  // Results without a spec get the one propagation found, so callers (and
  // spmd-expand) know what each rank returns.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<DictionaryAttr> resultAttrs;
  func.getAllResultAttrs(resultAttrs);
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (isa<RankedTensorType>(v.getType()) &&
        !func.getResultAttr(i, SpmdDialect::getSpecAttrName()))
      resultAttrs[i] =
          withSpec(resultAttrs[i], SpecAttr::get(ctx, meshRef, placementOf(v)));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

LogicalResult propagateFunction(func::FuncOp func, ShardingRuleCache &rules) {
  if (func.isExternal())
    return success();
  auto specs = collectSpecs(func);
  if (specs.empty())
    return success();
  SpecAttr first = specs.front().first;
  for (auto &[spec, at] : specs) {
    if (spec.getMesh() == first.getMesh())
      continue;
    InFlightDiagnostic diag =
        at->emitError() << "specs of one function must use one mesh; found "
                        << spec.getMesh() << " and " << first.getMesh();
    diag.attachNote(specs.front().second->getLoc())
        << first.getMesh() << " is used here";
    return failure();
  }
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(func, first.getMesh());
  if (!mesh)
    return func.emitError()
           << first.getMesh() << " does not name an 'spmd.mesh'";
  if (!func.getBody().hasOneBlock())
    return func.emitError("spmd-propagate supports single-block functions");
  func->setAttr(SpmdDialect::getMeshAttrName(), first.getMesh());
  Propagator propagator(func, mesh, rules);
  return propagator.run();
}

struct SpmdPropagatePass
    : public spmd::impl::SpmdPropagatePassBase<SpmdPropagatePass> {
  void runOnOperation() override {
    if (failed(propagatePlacements(getOperation())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::spmd::propagatePlacements(ModuleOp module,
                                              ShardingRuleCache *rules) {
  ShardingRuleCache own;
  for (auto func : module.getOps<func::FuncOp>())
    if (failed(propagateFunction(func, rules ? *rules : own)))
      return failure();
  return success();
}

//===- ShardingRules.cpp - placement rules of the ops spmd distributes ----===//
//
// External models of ShardingRuleOpInterface:
// - every linalg structured op, from its indexing maps and iterator types
//   (reduction combiners and linearity read off the payload);
// - elementwise arith/math ops on tensors;
// - tensor.empty, tensor.cast, expand_shape/collapse_shape, splat constants;
// - spmd foreach and optimizer ops, one factor group per entry;
// - spmd.attention and attention_grad: batch and heads;
// - spmd.optimization_barrier: the identity.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/Transforms/ShardingRules.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::spmd;

namespace {

//===----------------------------------------------------------------------===//
// Linearity of scalar payloads
//===----------------------------------------------------------------------===//

/// Degree of `value` in the block arguments `partial` of `body`: 0 (does not
/// depend on them), 1 (linear), or -1 (anything else, affine included).
int degree(Value value, Block *body,
           const llvm::SmallPtrSetImpl<Value> &partial) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == body && partial.contains(arg) ? 1 : 0;
  Operation *def = value.getDefiningOp();
  if (def->getBlock() != body)
    return 0;
  auto deg = [&](unsigned i) {
    return degree(def->getOperand(i), body, partial);
  };
  if (isa<arith::AddFOp, arith::SubFOp>(def)) {
    int a = deg(0), b = deg(1);
    return a == b ? a : -1;
  }
  if (isa<arith::MulFOp>(def)) {
    int a = deg(0), b = deg(1);
    return a < 0 || b < 0 || a + b > 1 ? -1 : a + b;
  }
  if (isa<arith::DivFOp>(def))
    return deg(1) == 0 ? deg(0) : -1;
  if (isa<arith::NegFOp, arith::ExtFOp>(def))
    return deg(0);
  for (unsigned i = 0, e = def->getNumOperands(); i < e; ++i)
    if (deg(i) != 0)
      return -1;
  return 0;
}

/// The combiner of reduction payload `body` for init block argument `init`:
/// the yielded value `combine(x, init)` with `x` independent of `init`.
std::optional<ReductionKind> getCombiner(Block *body, BlockArgument init,
                                         Value yielded) {
  Operation *def = yielded.getDefiningOp();
  if (!def || def->getNumOperands() != 2 || def->getBlock() != body)
    return std::nullopt;
  Value other;
  if (def->getOperand(0) == init)
    other = def->getOperand(1);
  else if (def->getOperand(1) == init)
    other = def->getOperand(0);
  else
    return std::nullopt;
  llvm::SmallPtrSet<Value, 1> initSet;
  initSet.insert(init);
  if (degree(other, body, initSet) != 0 && other != init)
    return std::nullopt;
  // `other` must not read the accumulator at all.
  llvm::SmallVector<Value> work{other};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == init)
      return std::nullopt;
    if (!seen.insert(v).second)
      continue;
    if (Operation *op = v.getDefiningOp(); op && op->getBlock() == body)
      llvm::append_range(work, op->getOperands());
  }
  if (isa<arith::AddFOp, arith::AddIOp>(def))
    return ReductionKind::Sum;
  if (isa<arith::MulFOp, arith::MulIOp>(def))
    return ReductionKind::Prod;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(def))
    return ReductionKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(def))
    return ReductionKind::Min;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

FailureOr<ShardingRule> getLinalgRule(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return failure();
  Block *body = op.getBlock();

  ShardingRule rule;
  // Named ops build their indexing maps on every query: fetch them once.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [size, iterator] : llvm::zip(ranges, iterators)) {
    ShardingRule::Factor factor{size};
    factor.isReduction = iterator == utils::IteratorType::reduction;
    rule.factors.push_back(factor);
  }

  // A payload that reads an iteration index (arange, one-hot, the column of
  // a gather) depends on that dimension's global position: it stays whole.
  if (body)
    body->walk([&](linalg::IndexOp index) {
      if (index.getDim() < rule.factors.size())
        rule.factors[index.getDim()].shardable = false;
    });

  bool hasReduction =
      llvm::any_of(rule.factors, [](auto &f) { return f.isReduction; });
  auto yield = body ? cast<linalg::YieldOp>(body->getTerminator()) : nullptr;
  std::optional<ReductionKind> combiner;
  bool combinerKnown = hasReduction && body && op.getNumDpsInits() > 0;
  for (OpOperand &operand : op->getOpOperands()) {
    SmallVector<int64_t> dims;
    bool isInit = op.isDpsInit(&operand);
    if (isa<RankedTensorType>(operand.get().getType())) {
      AffineMap map = maps[operand.getOperandNumber()];
      for (AffineExpr expr : map.getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        dims.push_back(dim ? static_cast<int64_t>(dim.getPosition())
                           : ShardingRule::kNoFactor);
      }
    }
    if (isInit && combinerKnown) {
      unsigned resultIdx = operand.getOperandNumber() - op.getNumDpsInputs();
      std::optional<ReductionKind> kind =
          getCombiner(body, op.getMatchingBlockArgument(&operand),
                      yield.getOperand(resultIdx));
      if (!kind || (combiner && *combiner != *kind))
        combinerKnown = false;
      combiner = kind;
    }
    rule.operandDims.push_back(dims);
    rule.operandGroups.push_back(0);
    rule.operandIsInit.push_back(isInit);
  }
  for (OpOperand &init : op.getDpsInitsMutable())
    rule.resultDims.push_back(rule.operandDims[init.getOperandNumber()]);
  rule.resultGroups.assign(op->getNumResults(), 0);
  for (ShardingRule::Factor &factor : rule.factors)
    if (factor.isReduction && combinerKnown)
      factor.combiner = combiner;

  // Linear sets: each input alone, and all inputs together. Inits that the
  // payload reads are part of every set (they then hold the Partial too).
  if (!body || (hasReduction && combiner != ReductionKind::Sum))
    return rule;
  llvm::SmallPtrSet<Value, 4> readInits;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.payloadUsesValueFromOperand(&init))
      readInits.insert(op.getMatchingBlockArgument(&init));
  auto isLinear = [&](ArrayRef<unsigned> inputs) {
    llvm::SmallPtrSet<Value, 4> partial(readInits.begin(), readInits.end());
    for (unsigned i : inputs)
      partial.insert(op.getMatchingBlockArgument(&op->getOpOperand(i)));
    return llvm::all_of(yield.getOperands(),
                        [&](Value v) { return degree(v, body, partial) == 1; });
  };
  SmallVector<unsigned> all;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType()))
      continue;
    all.push_back(input->getOperandNumber());
    if (isLinear({input->getOperandNumber()}))
      rule.linearSets.push_back({input->getOperandNumber()});
  }
  if (all.size() > 1 && isLinear(all))
    rule.linearSets.push_back(all);
  return rule;
}

template <typename OpTy>
struct LinalgRuleModel
    : public ShardingRuleOpInterface::ExternalModel<LinalgRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getLinalgRule(cast<linalg::LinalgOp>(op));
  }
};

//===----------------------------------------------------------------------===//
// Elementwise arith / math on tensors
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct ElementwiseRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ElementwiseRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    if (op->getNumResults() != 1 || !op->hasTrait<OpTrait::Elementwise>())
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return failure();
    ShardingRule rule = ShardingRule::elementwise(op, type.getShape());
    if (isa<arith::AddFOp, arith::SubFOp>(op))
      rule.linearSets.push_back({0, 1});
    if (isa<arith::MulFOp>(op)) {
      rule.linearSets.push_back({0});
      rule.linearSets.push_back({1});
    }
    if (isa<arith::DivFOp, arith::NegFOp, arith::ExtFOp>(op))
      rule.linearSets.push_back({0});
    return rule;
  }
};

//===----------------------------------------------------------------------===//
// tensor / constants
//===----------------------------------------------------------------------===//

struct EmptyRuleModel
    : public ShardingRuleOpInterface::ExternalModel<EmptyRuleModel,
                                                    tensor::EmptyOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return ShardingRule::elementwise(
        op, cast<tensor::EmptyOp>(op).getType().getShape());
  }
};

struct CastRuleModel
    : public ShardingRuleOpInterface::ExternalModel<CastRuleModel,
                                                    tensor::CastOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto cast = cast_op(op);
    auto source = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto dest = dyn_cast<RankedTensorType>(cast.getType());
    if (!source || !dest || source.getRank() != dest.getRank())
      return failure();
    ShardingRule rule = ShardingRule::elementwise(op, dest.getShape());
    rule.linearSets.push_back({0});
    return rule;
  }
  static tensor::CastOp cast_op(Operation *op) {
    return cast<tensor::CastOp>(op);
  }
};

/// expand_shape / collapse_shape: one factor per reassociation group; only
/// the outermost dimension of a group that is not a unit dimension (leading
/// 1s do not change the layout: [48] -> [1, 8, 6] shards on the 8) may be
/// sharded, and only evenly.
template <typename OpTy>
struct ReshapeRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ReshapeRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto reshape = cast<OpTy>(op);
    RankedTensorType source = reshape.getSrcType();
    RankedTensorType result = reshape.getResultType();
    bool expand = std::is_same_v<OpTy, tensor::ExpandShapeOp>;
    RankedTensorType grouped = expand ? result : source;
    RankedTensorType single = expand ? source : result;
    ShardingRule rule;
    SmallVector<int64_t> groupedDims(grouped.getRank(),
                                     ShardingRule::kNoFactor);
    SmallVector<int64_t> singleDims;
    for (auto [i, group] : llvm::enumerate(reshape.getReassociationIndices())) {
      int64_t outer = group.front();
      for (int64_t d : group) {
        outer = d;
        if (grouped.getDimSize(d) != 1)
          break;
      }
      ShardingRule::Factor factor{grouped.getDimSize(outer)};
      factor.requiresEven = true;
      rule.factors.push_back(factor);
      groupedDims[outer] = i;
      singleDims.push_back(i);
    }
    rule.operandDims.push_back(expand ? singleDims : groupedDims);
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      rule.operandDims.push_back({});
    rule.operandGroups.assign(op->getNumOperands(), 0);
    rule.operandIsInit.assign(op->getNumOperands(), false);
    rule.resultDims.push_back(expand ? groupedDims : singleDims);
    rule.resultGroups.push_back(0);
    rule.linearSets.push_back({0});
    (void)single;
    return rule;
  }

  /// expand_shape's result type holds the (now local) sizes; a collapse's
  /// follows its operand.
  FailureOr<Operation *> localizeSizes(Operation *op, OpBuilder &b,
                                       const ShardingRule &) const {
    if constexpr (std::is_same_v<OpTy, tensor::ExpandShapeOp>) {
      auto expand = cast<tensor::ExpandShapeOp>(op);
      if (!expand.getResultType().hasStaticShape())
        return op->emitError("spmd-expand: expand_shape of a sharded "
                             "dimension needs static sizes");
      return tensor::ExpandShapeOp::create(
                 b, op->getLoc(), expand.getResultType(), expand.getSrc(),
                 expand.getReassociationIndices())
          .getOperation();
    }
    return static_cast<Operation *>(nullptr);
  }
};

/// A rule over `type`'s dimensions where only the dimensions `keep` may be
/// sharded, for ops that move data along the others (pad, slice, concat).
ShardingRule partialIdentityRule(Operation *op, RankedTensorType type,
                                 function_ref<bool(int64_t)> keep) {
  ShardingRule rule = ShardingRule::elementwise(op, type.getShape());
  auto mask = [&](SmallVector<int64_t> &dims) {
    for (int64_t &d : dims)
      if (d != ShardingRule::kNoFactor && !keep(d))
        d = ShardingRule::kNoFactor;
  };
  for (auto &dims : rule.operandDims)
    mask(dims);
  for (auto &dims : rule.resultDims)
    mask(dims);
  return rule;
}

/// tensor.pad: unpadded dimensions may be sharded; linear when the padding
/// value is zero.
struct PadRuleModel
    : public ShardingRuleOpInterface::ExternalModel<PadRuleModel,
                                                    tensor::PadOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto pad = cast<tensor::PadOp>(op);
    SmallVector<OpFoldResult> low = pad.getMixedLowPad();
    SmallVector<OpFoldResult> high = pad.getMixedHighPad();
    ShardingRule rule =
        partialIdentityRule(op, pad.getResultType(), [&](int64_t d) {
          return isConstantIntValue(low[d], 0) &&
                 isConstantIntValue(high[d], 0);
        });
    Value padValue = pad.getConstantPaddingValue();
    if (padValue && matchPattern(padValue, m_AnyZeroFloat()))
      rule.linearSets.push_back({0});
    return rule;
  }
};

/// True when a slice covers all `size` elements of dimension `d`.
bool takesWhole(OffsetSizeAndStrideOpInterface slice, unsigned d,
                int64_t size) {
  return !slice.isDynamicOffset(d) && slice.getStaticOffset(d) == 0 &&
         !slice.isDynamicSize(d) && slice.getStaticSize(d) == size &&
         !slice.isDynamicStride(d) && slice.getStaticStride(d) == 1;
}

/// The sizes of a slice of `source` (operand 0 of `rule`, extracted or
/// inserted) whose global sizes are `global`: its dimensions with a factor
/// are taken whole, so they follow the local source.
SmallVector<OpFoldResult> localSliceSizes(OpBuilder &b, Location loc,
                                          Value source,
                                          ArrayRef<OpFoldResult> global,
                                          const ShardingRule &rule) {
  auto local = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> sizes(global);
  for (int64_t d = 0; d < local.getRank(); ++d) {
    if (rule.operandDims[0][d] == ShardingRule::kNoFactor)
      continue;
    sizes[d] =
        local.isDynamicDim(d)
            ? OpFoldResult(tensor::DimOp::create(b, loc, source, d).getResult())
            : OpFoldResult(b.getIndexAttr(local.getDimSize(d)));
  }
  return sizes;
}

/// extract_slice: dimensions taken whole may be sharded (not rank-reducing).
struct ExtractSliceRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ExtractSliceRuleModel,
                                                    tensor::ExtractSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    RankedTensorType source = slice.getSourceType();
    if (source.getRank() != slice.getType().getRank())
      return failure();
    ShardingRule rule = partialIdentityRule(op, source, [&](int64_t d) {
      return takesWhole(slice, d, source.getDimSize(d));
    });
    rule.linearSets.push_back({0});
    return rule;
  }

  FailureOr<Operation *> localizeSizes(Operation *op, OpBuilder &b,
                                       const ShardingRule &rule) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    SmallVector<OpFoldResult> sizes = localSliceSizes(
        b, op->getLoc(), slice.getSource(), slice.getMixedSizes(), rule);
    return tensor::ExtractSliceOp::create(
               b, op->getLoc(), slice.getType(), slice.getSource(),
               slice.getMixedOffsets(), sizes, slice.getMixedStrides())
        .getOperation();
  }
};

/// insert_slice: dimensions the source fills whole may be sharded.
struct InsertSliceRuleModel
    : public ShardingRuleOpInterface::ExternalModel<InsertSliceRuleModel,
                                                    tensor::InsertSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    RankedTensorType dest = insert.getDestType();
    if (insert.getSourceType().getRank() != dest.getRank())
      return failure();
    ShardingRule rule = partialIdentityRule(op, dest, [&](int64_t d) {
      return takesWhole(insert, d, dest.getDimSize(d));
    });
    rule.linearSets.push_back({0, 1});
    return rule;
  }

  FailureOr<Operation *> localizeSizes(Operation *op, OpBuilder &b,
                                       const ShardingRule &rule) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    SmallVector<OpFoldResult> sizes = localSliceSizes(
        b, op->getLoc(), insert.getSource(), insert.getMixedSizes(), rule);
    return tensor::InsertSliceOp::create(
               b, op->getLoc(), insert.getSource(), insert.getDest(),
               insert.getMixedOffsets(), sizes, insert.getMixedStrides())
        .getOperation();
  }
};

/// concat: every dimension but the concatenated one may be sharded.
struct ConcatRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConcatRuleModel,
                                                    tensor::ConcatOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto concat = cast<tensor::ConcatOp>(op);
    int64_t dim = concat.getDim();
    ShardingRule rule = partialIdentityRule(
        op, concat.getResultType(), [&](int64_t d) { return d != dim; });
    SmallVector<unsigned> all;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      all.push_back(i);
    rule.linearSets.push_back(all);
    return rule;
  }
};

struct ConstantRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConstantRuleModel,
                                                    arith::ConstantOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto dense =
        dyn_cast<SplatElementsAttr>(cast<arith::ConstantOp>(op).getValue());
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!dense || !type)
      return failure();
    return ShardingRule::elementwise(op, type.getShape());
  }
};

//===----------------------------------------------------------------------===//
// spmd foreach and optimizer ops: one group per entry
//===----------------------------------------------------------------------===//

/// A rule where operand/result `i` belongs to entry `entryOf(i)` (or to the
/// factor-less last group when it has none) and every tensor of an entry
/// has the entry's shape.
ShardingRule
perEntryRule(Operation *op, ArrayRef<RankedTensorType> entryTypes,
             function_ref<std::optional<unsigned>(Value)> entryOf) {
  ShardingRule rule;
  unsigned numEntries = entryTypes.size();
  rule.numGroups = numEntries + 1;
  SmallVector<unsigned> firstFactor;
  for (auto [entry, type] : llvm::enumerate(entryTypes)) {
    firstFactor.push_back(rule.factors.size());
    for (int64_t size : type.getShape()) {
      ShardingRule::Factor factor{size};
      factor.group = entry;
      rule.factors.push_back(factor);
    }
  }
  auto place = [&](Value value, SmallVector<SmallVector<int64_t>> &dims,
                   SmallVector<unsigned> &groups) {
    std::optional<unsigned> entry = entryOf(value);
    SmallVector<int64_t> d;
    if (entry && value.getType() == entryTypes[*entry])
      for (int64_t i = 0; i < entryTypes[*entry].getRank(); ++i)
        d.push_back(firstFactor[*entry] + i);
    dims.push_back(d);
    groups.push_back(entry && !d.empty() ? *entry : numEntries);
  };
  for (Value operand : op->getOperands()) {
    place(operand, rule.operandDims, rule.operandGroups);
    rule.operandIsInit.push_back(false);
  }
  for (Value result : op->getResults())
    place(result, rule.resultDims, rule.resultGroups);
  return rule;
}

template <typename OpTy>
struct ForeachRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ForeachRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto foreach = cast<OpTy>(op);
    SmallVector<RankedTensorType> types;
    for (Value v : foreach.getSelf())
      types.push_back(cast<RankedTensorType>(v.getType()));
    DenseMap<Value, unsigned> entry;
    for (OperandRange list : foreach.getTensorLists())
      for (auto [i, v] : llvm::enumerate(list))
        entry.try_emplace(v, i);
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      entry.try_emplace(v, i);
    return perEntryRule(op, types, [&](Value v) -> std::optional<unsigned> {
      auto it = entry.find(v);
      return it == entry.end() ? std::nullopt
                               : std::optional<unsigned>(it->second);
    });
  }
};

/// Optimizers: entry `i` is parameter `i` with everything of its type at
/// position `i` of a list; step counters (0-d) are their own entry only
/// when they are per parameter (Adam), else factor-less.
template <typename OpTy>
struct OptimizerRuleModel
    : public ShardingRuleOpInterface::ExternalModel<OptimizerRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto opt = cast<OpTy>(op);
    SmallVector<RankedTensorType> types;
    for (Value v : opt.getParams())
      types.push_back(cast<RankedTensorType>(v.getType()));
    unsigned n = types.size();
    // Operands and results are lists of n in a row (steps excepted, which
    // carry no factor): position modulo n is the entry.
    DenseMap<Value, unsigned> entry;
    unsigned i = 0;
    for (Value v : op->getOperands())
      entry.try_emplace(v, i++ % n);
    i = 0;
    for (Value v : op->getResults())
      entry.try_emplace(v, i++ % n);
    return perEntryRule(op, types, [&](Value v) -> std::optional<unsigned> {
      auto it = entry.find(v);
      return it == entry.end() ? std::nullopt
                               : std::optional<unsigned>(it->second);
    });
  }
};

//===----------------------------------------------------------------------===//
// spmd.attention / spmd.attention_grad
//===----------------------------------------------------------------------===//

/// Batch and heads shard freely; sequence and head dimensions stay whole
/// (the softmax's row reduction has no combiner, and causal masking reads
/// global positions). A mask dimension of 1 broadcasts and has no factor.
/// The gradients are linear in the output's gradient.
template <typename OpTy>
struct AttentionRuleModel
    : public ShardingRuleOpInterface::ExternalModel<AttentionRuleModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto query = cast<RankedTensorType>(cast<OpTy>(op).getQuery().getType());
    ShardingRule rule;
    for (int64_t d = 0; d < 2; ++d) {
      ShardingRule::Factor factor;
      factor.size = query.getDimSize(d);
      rule.factors.push_back(factor);
    }
    auto dimsOf = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> dims(type.getRank(), ShardingRule::kNoFactor);
      for (int64_t d = 0; d < 2; ++d)
        if (type.getDimSize(d) == query.getDimSize(d))
          dims[d] = d;
      return dims;
    };
    for (Value operand : op->getOperands()) {
      rule.operandDims.push_back(dimsOf(operand));
      rule.operandGroups.push_back(0);
      rule.operandIsInit.push_back(false);
    }
    for (Value result : op->getResults()) {
      rule.resultDims.push_back(dimsOf(result));
      rule.resultGroups.push_back(0);
    }
    if (isa<AttentionGradOp>(op))
      rule.linearSets.push_back({0});
    return rule;
  }
};

//===----------------------------------------------------------------------===//
// spmd.optimization_barrier
//===----------------------------------------------------------------------===//

/// The identity: the result has its input's placement, partial sums
/// included (it is linear).
struct OptimizationBarrierRuleModel
    : public ShardingRuleOpInterface::ExternalModel<
          OptimizationBarrierRuleModel, OptimizationBarrierOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    ShardingRule rule = ShardingRule::elementwise(op, type.getShape());
    rule.linearSets.push_back({0});
    return rule;
  }
};

template <template <typename> class Model, typename... Ops>
void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<Model<Ops>>(*ctx), ...);
}

} // namespace

void mlir::spmd::registerShardingRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attach<LinalgRuleModel,
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
           >(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    attach<ElementwiseRuleModel, arith::AddFOp, arith::SubFOp, arith::MulFOp,
           arith::DivFOp, arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp, arith::ExtFOp, arith::TruncFOp,
           arith::CmpFOp, arith::SelectOp, arith::RemFOp, arith::SIToFPOp,
           arith::UIToFPOp, arith::FPToSIOp, arith::AddIOp, arith::SubIOp,
           arith::MulIOp, arith::CmpIOp>(ctx);
    arith::ConstantOp::attachInterface<ConstantRuleModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *) {
    attach<ElementwiseRuleModel,
#define GET_OP_LIST
#include "mlir/Dialect/Math/IR/MathOps.cpp.inc"
           >(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::EmptyOp::attachInterface<EmptyRuleModel>(*ctx);
    tensor::CastOp::attachInterface<CastRuleModel>(*ctx);
    tensor::PadOp::attachInterface<PadRuleModel>(*ctx);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceRuleModel>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceRuleModel>(*ctx);
    tensor::ConcatOp::attachInterface<ConcatRuleModel>(*ctx);
    tensor::ExpandShapeOp::attachInterface<
        ReshapeRuleModel<tensor::ExpandShapeOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<
        ReshapeRuleModel<tensor::CollapseShapeOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, SpmdDialect *) {
    attach<ForeachRuleModel, ForeachNegOp, ForeachSqrtOp, ForeachAddOp,
           ForeachMulOp, ForeachDivOp, ForeachMaximumOp, ForeachLerpOp,
           ForeachAddScalarOp, ForeachMulScalarOp, ForeachDivScalarOp,
           ForeachAddcmulOp, ForeachAddcdivOp>(ctx);
    attach<OptimizerRuleModel, SGDOp, AdamOp>(ctx);
    attach<AttentionRuleModel, AttentionOp, AttentionGradOp>(ctx);
    OptimizationBarrierOp::attachInterface<OptimizationBarrierRuleModel>(*ctx);
  });
}

//===- ShardEmbeddingGradients.cpp - an embedding's gradient by rows ------===//
//
// spmd-shard-embedding-gradients: on a local program, a reduce-scatter
// (sum, along the rows) of an embedding's gradient — a matmul of a one-hot
// of this rank's token ids (transposed) with this rank's token rows — is
// replaced by all-gathers of the ids and rows and the one-hot matmul of
// every rank's tokens against this rank's chunk of rows only. With a tied
// head the reduce-scattered value is the sum of the head's dense gradient
// and the embedding's: the dense term is reduce-scattered alone, as soon as
// the head's backward made it, and this rank's rows of the embedding term
// are added to its chunk. GPT-2 124M under fully_shard: the whole
// [vocabulary, dim] gradient (154 MB) no longer waits through every block's
// backward for the embedding's to be added to it.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDSHARDEMBEDDINGGRADIENTSPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return -1;
  return tensor.getNumElements() *
         std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
}

/// The one loop among the results of `map`, when the others are the
/// constant 0: `(t, r) -> (t, 0)` reads along loop 0. -1 when it reads no
/// loop; nullopt when it reads more than one or anything else.
std::optional<int64_t> soleLoop(AffineMap map, int64_t *dim = nullptr) {
  std::optional<int64_t> loop = -1;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      if (constant.getValue() != 0)
        return std::nullopt;
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(expr);
    if (!d || *loop != -1)
      return std::nullopt;
    loop = d.getPosition();
    if (dim)
      *dim = static_cast<int64_t>(i);
  }
  return loop;
}

/// Whether `value` is an iota along dimension `dim`: every other dimension
/// of size 1, and its elements `index_cast(linalg.index)` of a generic
/// without inputs along its only non-unit dimension, seen through reshapes
/// (which keep the row-major order).
bool isIotaAlong(Value value, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() ||
      !type.getElementType().isSignlessInteger())
    return false;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (static_cast<int64_t>(i) != dim && size != 1)
      return false;
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      break;
    value = def->getOperand(0);
  }
  auto iota = value.getDefiningOp<linalg::GenericOp>();
  if (!iota || iota.getNumDpsInputs() || iota->getNumResults() != 1 ||
      !iota.getIndexingMapsArray()[0].isIdentity())
    return false;
  std::optional<int64_t> along;
  for (auto [i, size] :
       llvm::enumerate(cast<RankedTensorType>(value.getType()).getShape())) {
    if (size == 1)
      continue;
    if (along)
      return false;
    along = static_cast<int64_t>(i);
  }
  auto yield = cast<linalg::YieldOp>(iota.getBody()->getTerminator());
  auto cast = yield.getOperand(0).getDefiningOp<arith::IndexCastOp>();
  auto index = cast ? cast.getIn().getDefiningOp<linalg::IndexOp>() : nullptr;
  return index && (!along || static_cast<int64_t>(index.getDim()) == *along);
}

/// A one-hot [tokens, rows] of this rank's tokens: its generics (producers
/// first); the token ids, read along the token loop (loop 0) and compared
/// for equality with the row position; the iotas read along the row loop
/// (loop 1), with the dimension they read it by.
struct OneHotChain {
  SmallVector<linalg::GenericOp> generics;
  SetVector<Value> ids;
  llvm::MapVector<Value, int64_t> iotas;
};

/// Whether block argument `arg` (a token id) is used only by `cmpi eq`:
/// then ids shifted by an offset match rows shifted by the same.
bool onlyComparedForEquality(BlockArgument arg) {
  return llvm::all_of(arg.getUsers(), [](Operation *user) {
    auto cmp = dyn_cast<arith::CmpIOp>(user);
    return cmp && cmp.getPredicate() == arith::CmpIPredicate::eq;
  });
}

/// Collects the chain of 2-loop parallel generics that computes `value`
/// ([tokens, rows]) from token ids and iotas; fails on anything else
/// (masks such as nn.Embedding's padding_idx included).
LogicalResult collectChain(Value value, OneHotChain &chain, int depth = 0) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (generic && llvm::is_contained(chain.generics, generic))
    return success();
  if (!generic || depth > 4 || generic->getNumResults() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      generic.getNumLoops() != 2 ||
      !generic.getIndexingMapsArray().back().isIdentity() ||
      generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)) ||
      !generic.hasPureTensorSemantics())
    return failure();
  for (Operation &op : generic.getBody()->without_terminator()) {
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      if (cmp.getPredicate() != arith::CmpIPredicate::eq)
        return failure();
      continue;
    }
    // Row positions are this rank's chunk's; a token position would be
    // this rank's, not every rank's.
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      if (index.getDim() != 1)
        return failure();
      continue;
    }
    if (!isa<arith::UIToFPOp, arith::SelectOp, arith::ConstantOp,
             arith::IndexCastOp>(op))
      return failure();
  }
  auto type = cast<RankedTensorType>(value.getType());
  for (OpOperand *operand : generic.getDpsInputOperands()) {
    Value input = operand->get();
    AffineMap map = generic.getMatchingIndexingMap(operand);
    auto inputType = cast<RankedTensorType>(input.getType());
    if (map.isIdentity() && inputType.getShape() == type.getShape()) {
      if (failed(collectChain(input, chain, depth + 1)))
        return failure();
      continue;
    }
    int64_t dim = -1;
    std::optional<int64_t> loop = soleLoop(map, &dim);
    if (!loop || *loop == -1)
      return failure();
    if (*loop == 1) {
      if (!isIotaAlong(input, dim) ||
          inputType.getDimSize(dim) != type.getDimSize(1))
        return failure();
      chain.iotas.insert({input, dim});
      continue;
    }
    auto element = dyn_cast<IntegerType>(inputType.getElementType());
    if (!element || element.getWidth() < 8 ||
        inputType.getDimSize(dim) != type.getDimSize(0) ||
        !onlyComparedForEquality(generic.getMatchingBlockArgument(operand)))
      return failure();
    chain.ids.insert(input);
  }
  chain.generics.push_back(generic);
  return success();
}

/// Whether the one-hot's value is 0 or 1 (`uitofp` of an i1, or a select of
/// 1 and 0).
bool yieldsZeroOrOne(linalg::GenericOp generic) {
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  Value value = yield.getOperand(0);
  if (auto toFloat = value.getDefiningOp<arith::UIToFPOp>())
    return toFloat.getIn().getType().isInteger(1);
  auto select = value.getDefiningOp<arith::SelectOp>();
  return select && matchPattern(select.getTrueValue(), m_OneFloat()) &&
         matchPattern(select.getFalseValue(), m_PosZeroFloat());
}

/// An embedding's gradient: `matmul(transpose(onehot), rows)` into zeros,
/// the one-hot over this rank's tokens.
struct EmbeddingGradient {
  linalg::MatmulOp matmul;
  linalg::TransposeOp transpose;
  OneHotChain chain;
};

bool isZeros(Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  return matchPattern(value, m_AnyZeroFloat());
}

std::optional<EmbeddingGradient> matchEmbeddingGradient(Value value) {
  auto matmul = value.getDefiningOp<linalg::MatmulOp>();
  if (!matmul || !matmul.hasPureTensorSemantics() ||
      matmul.getIndexingMapsArray() !=
          linalg::MatmulOp::getDefaultIndexingMaps(matmul.getContext()) ||
      !isZeros(matmul.getOutputs()[0]))
    return std::nullopt;
  auto transpose = matmul.getInputs()[0].getDefiningOp<linalg::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  EmbeddingGradient gradient{matmul, transpose, {}};
  Value oneHot = transpose.getInput();
  if (bytesOf(oneHot.getType()) < 0 ||
      bytesOf(matmul.getInputs()[1].getType()) < 0 ||
      bytesOf(matmul.getResultTypes()[0]) < 0 ||
      failed(collectChain(oneHot, gradient.chain)) ||
      gradient.chain.ids.empty() ||
      !yieldsZeroOrOne(gradient.chain.generics.back()))
    return std::nullopt;
  return gradient;
}

/// `type` with dimension `dim` set to `size`.
RankedTensorType resized(Type type, int64_t dim, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] = size;
  return tensor.clone(shape);
}

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

/// An elementwise generic over `inputs` (identity maps) into a new tensor of
/// `type`.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange inputs,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> maps(inputs.size() + 1,
                              b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs,
             ValueRange{emptyLike(b, loc, type)}, maps, iterators,
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(b, loc, body(b, loc, args));
             })
      .getResult(0);
}

/// Erases `op` and then the producers of its operands left without uses
/// and without side effects.
void eraseDead(Operation *op) {
  SmallVector<Operation *> work{op};
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!work.empty()) {
    Operation *next = work.pop_back_val();
    if (erased.contains(next) || !next->use_empty() ||
        !isMemoryEffectFree(next))
      continue;
    for (Value operand : next->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
    erased.insert(next);
    next->erase();
  }
}

/// This rank's `chunk` rows of the embedding term summed over every rank's
/// tokens, built before `scatter`: the one-hot of the gathered ids less
/// this rank's first row, against the chunk's row positions.
Value embeddingChunk(OpBuilder &b, ReduceScatterOp scatter,
                     EmbeddingGradient &gradient, int64_t group,
                     int64_t chunk) {
  Location loc = gradient.matmul.getLoc();
  FlatSymbolRefAttr mesh = scatter.getMeshAttr();
  ArrayRef<int64_t> axes = scatter.getAxes();
  Value first =
      arith::MulIOp::create(b, loc,
                            AxisIndexOp::create(b, loc, b.getIndexType(), mesh,
                                                scatter.getAxesAttr()),
                            arith::ConstantIndexOp::create(b, loc, chunk));
  IRMapping map;
  for (Value ids : gradient.chain.ids) {
    // The dimension the chain reads the ids' token loop by.
    int64_t dim = -1;
    for (linalg::GenericOp generic : gradient.chain.generics)
      for (OpOperand *operand : generic.getDpsInputOperands())
        if (operand->get() == ids)
          soleLoop(generic.getMatchingIndexingMap(operand), &dim);
    auto type = cast<RankedTensorType>(ids.getType());
    auto allType = resized(type, dim, type.getDimSize(dim) * group);
    Value all =
        AllGatherOp::create(b, loc, allType, ids, mesh, axes, dim).getResult(0);
    Value offset =
        arith::IndexCastOp::create(b, loc, type.getElementType(), first);
    map.map(ids, elementwise(b, loc, allType, all,
                             [&](OpBuilder &b, Location loc, ValueRange args) {
                               return arith::SubIOp::create(b, loc, args[0],
                                                            offset);
                             }));
  }
  for (auto [iota, dim] : gradient.chain.iotas) {
    auto type = resized(iota.getType(), dim, chunk);
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    Value rows =
        linalg::GenericOp::create(
            b, loc, TypeRange{type}, ValueRange{},
            ValueRange{emptyLike(b, loc, type)},
            ArrayRef<AffineMap>{b.getMultiDimIdentityMap(type.getRank())},
            iterators,
            [&, dim = dim](OpBuilder &b, Location loc, ValueRange) {
              Value index = linalg::IndexOp::create(b, loc, dim);
              linalg::YieldOp::create(b, loc,
                                      arith::IndexCastOp::create(
                                          b, loc, type.getElementType(), index)
                                          .getResult());
            })
            .getResult(0);
    map.map(iota, rows);
  }
  int64_t tokens =
      cast<RankedTensorType>(gradient.transpose.getInput().getType())
          .getDimSize(0) *
      group;
  for (linalg::GenericOp generic : gradient.chain.generics) {
    auto type = RankedTensorType::get(
        {tokens, chunk}, cast<RankedTensorType>(generic->getResult(0).getType())
                             .getElementType());
    map.map(generic.getDpsInits()[0], emptyLike(b, generic.getLoc(), type));
    Operation *clone = b.clone(*generic, map);
    clone->getResult(0).setType(type);
    map.map(generic->getResult(0), clone->getResult(0));
  }
  Value oneHot = map.lookup(gradient.transpose.getInput());
  auto transposedType = RankedTensorType::get(
      {chunk, tokens},
      cast<RankedTensorType>(oneHot.getType()).getElementType());
  Value transposed =
      linalg::TransposeOp::create(b, gradient.transpose.getLoc(), oneHot,
                                  emptyLike(b, loc, transposedType),
                                  ArrayRef<int64_t>{1, 0})
          .getResult()[0];
  Value rows = gradient.matmul.getInputs()[1];
  Value allRows =
      AllGatherOp::create(
          b, loc,
          resized(rows.getType(), 0,
                  cast<RankedTensorType>(rows.getType()).getDimSize(0) * group),
          rows, mesh, axes, 0)
          .getResult(0);
  auto resultType = resized(gradient.matmul.getResultTypes()[0], 0, chunk);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(resultType.getElementType()));
  Value zeros =
      linalg::FillOp::create(b, loc, zero, emptyLike(b, loc, resultType))
          .getResult(0);
  return linalg::MatmulOp::create(b, loc, TypeRange{resultType},
                                  ValueRange{transposed, allRows},
                                  ValueRange{zeros})
      .getResult(0);
}

/// The two inputs of `value`'s elementwise `addf` generic, else nothing.
std::optional<std::pair<OpOperand *, OpOperand *>> addTerms(Value value) {
  auto add = value.getDefiningOp<linalg::GenericOp>();
  if (!add || add.getNumDpsInputs() != 2 || add->getNumResults() != 1 ||
      add.getNumParallelLoops() != add.getNumLoops() ||
      !llvm::all_of(add.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      !add.hasPureTensorSemantics() ||
      add.payloadUsesValueFromOperand(add.getDpsInitOperand(0)))
    return std::nullopt;
  Block *body = add.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto sum = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!sum || &*body->begin() != sum.getOperation())
    return std::nullopt;
  Value a = body->getArgument(0), c = body->getArgument(1);
  if (!((sum.getLhs() == a && sum.getRhs() == c) ||
        (sum.getLhs() == c && sum.getRhs() == a)))
    return std::nullopt;
  return std::pair(add.getDpsInputOperand(0), add.getDpsInputOperand(1));
}

/// Whether `pad` adds zeros after dimension 0 only.
bool padsRowsWithZeros(tensor::PadOp pad) {
  if (!pad.hasZeroLowPad() || !pad.getLow().empty() || !pad.getHigh().empty())
    return false;
  SmallVector<OpFoldResult> high = pad.getMixedHighPad();
  for (auto [i, value] : llvm::enumerate(high))
    if (i != 0 && !isConstantIntValue(value, 0))
      return false;
  Value padding = pad.getConstantPaddingValue();
  return padding && matchPattern(padding, m_AnyZeroFloat());
}

/// Where the dense term `term` is made, for its reduce-scatter to start
/// after: its producer, or the last op before `scatter` (other than the
/// embedding gradient's, which go away) that reads one of the producer's
/// inputs, or what a transpose or reshape of one reads, when later. The
/// head's backward: `dW = transpose(dY) . X` and `dX = dY . W` read the same
/// `dY`. A collective started between the two would keep the gathered
/// weight `W` alive beside the whole dW, since spmd-schedule-for-memory
/// moves no op above a collective; after both, that pass runs `dX` first
/// and `W` is freed before dW exists. Null for a block argument.
Operation *whereMade(Value term, ReduceScatterOp scatter,
                     EmbeddingGradient &gradient) {
  Operation *def = term.getDefiningOp();
  Block *block = scatter->getBlock();
  if (!def || def->getBlock() != block)
    return def;
  auto dps = dyn_cast<DestinationStyleOpInterface>(def);
  if (!dps)
    return def;
  SetVector<Value> read;
  for (OpOperand *input : dps.getDpsInputOperands()) {
    read.insert(input->get());
    Operation *view = input->get().getDefiningOp();
    if (isa_and_nonnull<linalg::TransposeOp>(view))
      read.insert(cast<linalg::TransposeOp>(view).getInput());
    else if (isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(
                 view))
      read.insert(view->getOperand(0));
  }
  auto goesAway = [&](Operation *op) {
    return op == gradient.matmul.getOperation() ||
           op == gradient.transpose.getOperation() ||
           llvm::is_contained(gradient.chain.generics, op);
  };
  Operation *after = def;
  for (Value value : read)
    for (Operation *user : value.getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (at && !goesAway(at) && after->isBeforeInBlock(at) &&
          at->isBeforeInBlock(scatter))
        after = at;
    }
  return after;
}

/// Rewrites `scatter` when its input is an embedding's gradient, or the sum
/// of a dense gradient and one, padded or not.
bool rewrite(ReduceScatterOp scatter) {
  if (scatter->getNumOperands() != 1 ||
      cast<CollectiveOpInterface>(scatter.getOperation()).isAsync() ||
      scatter.getKind() != ReductionKind::Sum || scatter.getScatterDim() != 0)
    return false;
  auto resultType = dyn_cast<RankedTensorType>(scatter.getResult(0).getType());
  std::optional<int64_t> group =
      getGroupSize(cast<CollectiveOpInterface>(scatter.getOperation()));
  if (!resultType || !resultType.hasStaticShape() ||
      resultType.getRank() != 2 || !group || *group <= 1)
    return false;
  int64_t chunk = resultType.getDimSize(0);
  Value input = scatter->getOperand(0);
  auto pad = input.getDefiningOp<tensor::PadOp>();
  if (pad && (!padsRowsWithZeros(pad) || !input.hasOneUse()))
    return false;
  Value sum = pad ? pad.getSource() : input;
  if (!sum.hasOneUse())
    return false;
  OpOperand *dense = nullptr;
  std::optional<EmbeddingGradient> gradient;
  if (auto terms = addTerms(sum)) {
    for (auto [embedding, other] :
         {*terms, std::pair(terms->second, terms->first)}) {
      if (!embedding->get().hasOneUse())
        continue;
      if ((gradient = matchEmbeddingGradient(embedding->get()))) {
        dense = other;
        break;
      }
    }
  } else {
    gradient = matchEmbeddingGradient(sum);
  }
  if (!gradient)
    return false;
  // Worth it when every rank's rows and ids are small next to the
  // gradient: they are gathered, on top of the dense term's reduction.
  int64_t moved = bytesOf(gradient->matmul.getInputs()[1].getType());
  for (Value ids : gradient->chain.ids)
    moved += bytesOf(ids.getType());
  if (moved * *group * 4 > bytesOf(sum.getType()))
    return false;

  Location loc = scatter.getLoc();
  Value result;
  {
    OpBuilder b(scatter);
    result = embeddingChunk(b, scatter, *gradient, *group, chunk);
  }
  if (dense) {
    // The dense term padded and reduce-scattered where it is made, so that
    // `spmd-overlap-collectives` starts it there.
    Value term = dense->get();
    OpBuilder b(scatter->getContext());
    if (Operation *after = whereMade(term, scatter, *gradient))
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(term).getOwner());
    Value padded = term;
    if (pad) {
      Value zero = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(resultType.getElementType()));
      padded = tensor::PadOp::create(b, loc, pad.getResultType(), term,
                                     pad.getMixedLowPad(),
                                     pad.getMixedHighPad(), zero);
    }
    Value reduced = ReduceScatterOp::create(
                        b, loc, resultType, padded, scatter.getMeshAttr(),
                        scatter.getAxes(), ReductionKind::Sum, 0)
                        .getResult(0);
    OpBuilder after(scatter);
    auto add = cast<linalg::GenericOp>(sum.getDefiningOp());
    IRMapping map;
    map.map(dense->get(), reduced);
    map.map(gradient->matmul.getResult(0), result);
    map.map(add.getDpsInits()[0],
            emptyLike(after, add.getLoc(),
                      resized(add.getDpsInits()[0].getType(), 0, chunk)));
    Operation *clone = after.clone(*add, map);
    clone->getResult(0).setType(resized(add->getResult(0).getType(), 0, chunk));
    result = clone->getResult(0);
  }
  scatter.getResult(0).replaceAllUsesWith(result);
  Operation *old = input.getDefiningOp();
  scatter->erase();
  if (old)
    eraseDead(old);
  return true;
}

struct SpmdShardEmbeddingGradientsPass
    : public spmd::impl::SpmdShardEmbeddingGradientsPassBase<
          SpmdShardEmbeddingGradientsPass> {
  void runOnOperation() override {
    SmallVector<ReduceScatterOp> scatters;
    getOperation().walk([&](ReduceScatterOp op) { scatters.push_back(op); });
    for (ReduceScatterOp scatter : scatters)
      rewrite(scatter);
  }
};

} // namespace

//===- VocabParallel.cpp - a large vocabulary stays sharded by rows -------===//
//
// Under fully_shard a tied embedding / output projection (GPT-2's `wte`,
// 50257 x 768, 154 MB) is stored in chunks of rows, and propagation gathers
// it whole for the head's forward and backward and reduce-scatters its whole
// gradient: three collectives of the largest tensor of the model and a
// gathered copy in the step's peak. The tokens that meet it are few (a
// batch of 512 tokens is 1.5 MB at d = 768). Megatron's vocabulary-parallel
// head and loss turn this around: gather the tokens, keep the rows.
//
// This pass states that plan on the global program with spmd.redistribute
// and spmd.annotate, and propagation and expansion do the rest:
// - the head's input (the final hidden state) is replicated: every rank
//   computes the logits of the whole batch for its rows of the vocabulary
//   (the same FLOPs and logits bytes as the batch's share over the whole
//   vocabulary), and the head's weight gradient is its own rows;
// - the logits are sharded along the vocabulary; log_softmax's row maximum
//   and sum become partial (an all-reduce of one number per token);
// - every one-hot over the vocabulary (the loss's pick of the target, the
//   embedding gradient's rows) is computed for the whole batch's ids in
//   this rank's rows, so the embedding's gradient is this rank's rows too;
// - the hidden state's gradient is a partial sum over the vocabulary,
//   reduce-scattered back to the batch's shards.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDVOCABPARALLELPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// A state loaded as a [rows, columns] tensor whose spec shards its rows
/// along the only axis of its mesh (`sharded`, the load), read directly or
/// through a redistribute to replicated (fully_shard's gather before the
/// first use, `whole`).
struct RowShardedWeight {
  FlatSymbolRefAttr mesh;
  int64_t rows = 0;
  Value sharded, whole;
};

std::optional<RowShardedWeight> rowShardedWeight(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  Value whole;
  if (auto gather = value.getDefiningOp<RedistributeOp>()) {
    if (!llvm::all_of(gather.getSpec().getPlacements(),
                      llvm::IsaPred<ReplicateAttr>))
      return std::nullopt;
    whole = value;
    value = gather.getInput();
  }
  auto load = value.getDefiningOp<LoadOp>();
  if (!load)
    return std::nullopt;
  auto state =
      SymbolTable::lookupNearestSymbolFrom<StateOp>(load, load.getStateAttr());
  if (!state || !state.getSpec())
    return std::nullopt;
  SpecAttr spec = *state.getSpec();
  ArrayRef<PlacementAttr> placements = spec.getPlacements();
  auto shard =
      placements.size() == 1 ? dyn_cast<ShardAttr>(placements[0]) : ShardAttr();
  if (!shard || shard.getDim() != 0)
    return std::nullopt;
  return RowShardedWeight{spec.getMesh(), type.getDimSize(0), value, whole};
}

int64_t byteSize(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return -1;
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Whether `value` holds 0, 1, ..., size-1 along one dimension (1
/// elsewhere): an index generic, possibly reshaped. Returns that dimension.
std::optional<int64_t> iotaDim(Value value, int64_t size) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  std::optional<int64_t> dim;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (type.getDimSize(d) == 1)
      continue;
    if (type.getDimSize(d) != size || dim)
      return std::nullopt;
    dim = d;
  }
  if (!dim)
    return std::nullopt;
  Value source = value;
  if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>())
    source = expand.getSrc();
  auto generic = source.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 0 ||
      generic->getNumResults() != 1 || generic.getNumLoops() != 1)
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  Value yielded = yield.getOperand(0);
  if (auto cast = yielded.getDefiningOp<arith::IndexCastOp>())
    yielded = cast.getIn();
  auto index = yielded.getDefiningOp<linalg::IndexOp>();
  if (!index || index.getDim() != 0)
    return std::nullopt;
  return dim;
}

/// A one-hot over `size` classes: an elementwise generic comparing (eq) an
/// integer operand with an iota over the classes. Its ids operand and the
/// result dimension of the classes.
struct OneHot {
  OpOperand *ids = nullptr;
  int64_t classDim = 0;
};

std::optional<OneHot> matchOneHot(linalg::GenericOp generic, int64_t size) {
  if (generic->getNumResults() != 1 || generic.getNumDpsInputs() != 2 ||
      generic.getNumReductionLoops() != 0 || !generic.hasPureTensorSemantics())
    return std::nullopt;
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto cmp = yield.getOperand(0).getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq ||
      body->getOperations().size() != 2)
    return std::nullopt;
  auto resultMap = generic.getIndexingMapsArray().back();
  if (!resultMap.isIdentity())
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    OpOperand *iota = generic.getDpsInputOperand(i);
    OpOperand *ids = generic.getDpsInputOperand(1 - i);
    std::optional<int64_t> dim = iotaDim(iota->get(), size);
    if (!dim)
      continue;
    // The payload compares the two block arguments.
    Value a = body->getArgument(0), b = body->getArgument(1);
    if (!((cmp.getLhs() == a && cmp.getRhs() == b) ||
          (cmp.getLhs() == b && cmp.getRhs() == a)))
      return std::nullopt;
    auto expr = dyn_cast<AffineDimExpr>(
        generic.getMatchingIndexingMap(iota).getResult(*dim));
    if (!expr)
      return std::nullopt;
    return OneHot{ids, static_cast<int64_t>(expr.getPosition())};
  }
  return std::nullopt;
}

/// Whether `logits` ([tokens, classes]) is reduced over its classes: a
/// linalg.generic reads it, directly or through elementwise generics (a
/// bias, a scale), with the loop of its class dimension a reduction (the
/// row maximum and sum of a log_softmax). What tells an output layer over a
/// vocabulary from a wide layer inside the model (a fused QKV or an MLP's
/// first projection, whose outputs are split or activated, not normalized
/// over their columns).
bool reducedOverClasses(Value logits) {
  SmallVector<Value> work{logits};
  for (int hops = 0; hops < 4 && !work.empty(); ++hops) {
    SmallVector<Value> next;
    for (Value value : work)
      for (OpOperand &use : value.getUses()) {
        auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
        if (!generic || !generic.isDpsInput(&use) ||
            generic->getNumResults() != 1)
          continue;
        AffineMap map = generic.getMatchingIndexingMap(&use);
        if (map.getNumResults() != 2)
          continue;
        auto classes = dyn_cast<AffineDimExpr>(map.getResult(1));
        if (!classes)
          continue;
        if (generic.getIteratorTypesArray()[classes.getPosition()] ==
            utils::IteratorType::reduction)
          return true;
        if (generic.getNumReductionLoops() == 0)
          next.push_back(generic->getResult(0));
      }
    work = std::move(next);
  }
  return false;
}

/// An embedding's lookup of `table`'s rows: a parallel linalg.generic over
/// [ids..., columns] whose payload yields `tensor.extract %table[index_cast
/// (id), linalg.index <last>]` (with the importer's bounds asserts). Its ids.
Value matchLookup(linalg::GenericOp generic, Value table) {
  if (generic.getNumDpsInputs() != 1 || generic->getNumResults() != 1 ||
      generic.getNumReductionLoops() != 0 || !generic.hasPureTensorSemantics())
    return nullptr;
  Value ids = generic.getDpsInputs()[0];
  auto idsType = dyn_cast<RankedTensorType>(ids.getType());
  auto resultType = dyn_cast<RankedTensorType>(generic->getResult(0).getType());
  if (!idsType || !resultType || !idsType.hasStaticShape() ||
      !resultType.hasStaticShape() ||
      !idsType.getElementType().isSignlessInteger() ||
      resultType.getRank() != idsType.getRank() + 1)
    return nullptr;
  unsigned rank = resultType.getRank();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[1].isIdentity() ||
      maps[0] != AffineMap::getMultiDimIdentityMap(rank, generic.getContext())
                     .dropResult(rank - 1))
    return nullptr;
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto extract = yield.getOperand(0).getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract.getTensor() != table ||
      extract.getIndices().size() != 2)
    return nullptr;
  auto row = extract.getIndices()[0].getDefiningOp<arith::IndexCastOp>();
  auto column = extract.getIndices()[1].getDefiningOp<linalg::IndexOp>();
  if (!row || row.getIn() != body->getArgument(0) || !column ||
      column.getDim() != rank - 1)
    return nullptr;
  return ids;
}

/// Rewrites lookup `generic` of `whole`'s rows as a one-hot of its ids
/// (checked against the table's bounds, as the lookup's asserts do)
/// contracted with `rows` (the table as stored): [ids, 1] == [1, classes],
/// to floats, times the table, reshaped back. The same values (one row
/// plus exact zeros per token).
void lookupAsOneHot(OpBuilder &b, linalg::GenericOp generic, Value ids,
                    Value rows) {
  Location loc = generic.getLoc();
  auto idsType = cast<RankedTensorType>(ids.getType());
  auto resultType = cast<RankedTensorType>(generic->getResult(0).getType());
  auto tableType = cast<RankedTensorType>(rows.getType());
  int64_t classes = tableType.getDimSize(0), columns = tableType.getDimSize(1);
  int64_t tokens = idsType.getNumElements();
  Type idType = idsType.getElementType();
  Type element = resultType.getElementType();
  MLIRContext *ctx = b.getContext();
  b.setInsertionPoint(generic);

  // The ids, checked as the lookup checked them.
  SmallVector<AffineMap> same(2, b.getMultiDimIdentityMap(idsType.getRank()));
  SmallVector<utils::IteratorType> parallel(idsType.getRank(),
                                            utils::IteratorType::parallel);
  auto checked = linalg::GenericOp::create(
      b, loc, TypeRange{idsType}, ValueRange{ids},
      ValueRange{tensor::EmptyOp::create(b, loc, idsType.getShape(), idType)
                     .getResult()},
      same, parallel, [&](OpBuilder &b, Location loc, ValueRange args) {
        Value id = args[0];
        Value low = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, id,
            arith::ConstantOp::create(b, loc, IntegerAttr::get(idType, 0)));
        cf::AssertOp::create(b, loc, low, "index must be larger or equal to 0");
        Value high = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, id,
            arith::ConstantOp::create(b, loc,
                                      IntegerAttr::get(idType, classes)));
        cf::AssertOp::create(b, loc, high,
                             "index must be smaller than dim size");
        linalg::YieldOp::create(b, loc, id);
      });
  // [tokens, 1] ids against [1, classes] positions.
  Value flat = checked->getResult(0);
  if (idsType.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < idsType.getRank(); ++d)
      all[0].push_back(d);
    flat = tensor::CollapseShapeOp::create(b, loc, flat, all);
  }
  auto column = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({tokens, 1}, idType), flat,
      ArrayRef<ReassociationIndices>{{0, 1}});
  auto iota = linalg::GenericOp::create(
      b, loc, TypeRange{RankedTensorType::get({classes}, idType)}, ValueRange{},
      ValueRange{
          tensor::EmptyOp::create(b, loc, {classes}, idType).getResult()},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
      [&](OpBuilder &b, Location loc, ValueRange) {
        Value i = linalg::IndexOp::create(b, loc, 0);
        linalg::YieldOp::create(
            b, loc, arith::IndexCastOp::create(b, loc, idType, i).getResult());
      });
  auto positions = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({1, classes}, idType), iota->getResult(0),
      ArrayRef<ReassociationIndices>{{0, 1}});
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
  AffineExpr c0 = getAffineConstantExpr(0, ctx);
  SmallVector<AffineMap> compareMaps{AffineMap::get(2, 0, {d0, c0}, ctx),
                                     AffineMap::get(2, 0, {c0, d1}, ctx),
                                     AffineMap::get(2, 0, {d0, d1}, ctx)};
  SmallVector<utils::IteratorType> both(2, utils::IteratorType::parallel);
  auto hitType = RankedTensorType::get({tokens, classes}, b.getI1Type());
  auto hit = linalg::GenericOp::create(
      b, loc, TypeRange{hitType}, ValueRange{column, positions},
      ValueRange{
          tensor::EmptyOp::create(b, loc, hitType.getShape(), b.getI1Type())
              .getResult()},
      compareMaps, both, [&](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(b, loc,
                                arith::CmpIOp::create(b, loc,
                                                      arith::CmpIPredicate::eq,
                                                      args[0], args[1])
                                    .getResult());
      });
  auto oneHotType = RankedTensorType::get({tokens, classes}, element);
  SmallVector<AffineMap> identity(2, b.getMultiDimIdentityMap(2));
  auto oneHot = linalg::GenericOp::create(
      b, loc, TypeRange{oneHotType}, ValueRange{hit->getResult(0)},
      ValueRange{tensor::EmptyOp::create(b, loc, oneHotType.getShape(), element)
                     .getResult()},
      identity, both, [&](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            b, loc,
            arith::UIToFPOp::create(b, loc, element, args[0]).getResult());
      });
  auto productType = RankedTensorType::get({tokens, columns}, element);
  Value zero =
      linalg::FillOp::create(
          b, loc,
          ValueRange{arith::ConstantOp::create(b, loc, b.getZeroAttr(element))},
          ValueRange{
              tensor::EmptyOp::create(b, loc, productType.getShape(), element)
                  .getResult()})
          .getResult(0);
  Value product = linalg::MatmulOp::create(
                      b, loc, TypeRange{productType},
                      ValueRange{oneHot->getResult(0), rows}, ValueRange{zero})
                      .getResult(0);
  SmallVector<ReassociationIndices> back(1);
  for (int64_t d = 0; d < idsType.getRank(); ++d)
    back[0].push_back(d);
  back.push_back({idsType.getRank()});
  Value result = product;
  if (idsType.getRank() != 1)
    result = tensor::ExpandShapeOp::create(b, loc, resultType, product, back);
  generic->getResult(0).replaceAllUsesWith(result);
  generic->erase();
}

/// `value`'s spec on `mesh`: every axis `placement`.
SpecAttr specOf(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                PlacementAttr placement) {
  return SpecAttr::get(ctx, mesh, {placement});
}

/// Whether `value` is computed elementwise from one of `annotated` within
/// a few generics (the one-hot's conversion to floats, a padding_idx mask).
bool fromOneHot(Value value, const llvm::SetVector<Value> &annotated) {
  for (int hops = 0; hops < 4; ++hops) {
    if (annotated.contains(value))
      return true;
    auto generic = value.getDefiningOp<linalg::GenericOp>();
    if (!generic || generic.getNumReductionLoops() != 0 ||
        generic.getNumDpsInputs() == 0)
      return false;
    Value next;
    for (Value input : generic.getDpsInputs())
      if (isa<RankedTensorType>(input.getType()) &&
          cast<RankedTensorType>(input.getType()).getRank() ==
              cast<RankedTensorType>(value.getType()).getRank()) {
        next = input;
        break;
      }
    if (!next)
      return false;
    value = next;
  }
  return false;
}

struct SpmdVocabParallelPass
    : public spmd::impl::SpmdVocabParallelPassBase<SpmdVocabParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);

    // The heads: matmul(x, transpose(w)) with w a row-sharded weight much
    // larger than x.
    struct Head {
      linalg::MatmulOp matmul;
      RowShardedWeight weight;
    };
    SmallVector<Head> heads;
    func.walk([&](linalg::MatmulOp matmul) {
      if (!matmul.hasPureTensorSemantics() || matmul.getNumDpsInputs() != 2 ||
          matmul.hasUserDefinedMaps())
        return;
      auto transpose =
          matmul.getDpsInputs()[1].getDefiningOp<linalg::TransposeOp>();
      if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
        return;
      std::optional<RowShardedWeight> weight =
          rowShardedWeight(transpose.getInput());
      Value x = matmul.getDpsInputs()[0];
      int64_t xBytes = byteSize(x), wBytes = byteSize(transpose.getInput());
      if (!weight || xBytes < 0 || wBytes < 0 || xBytes * minRatio > wBytes ||
          !reducedOverClasses(matmul->getResult(0)))
        return;
      heads.push_back({matmul, *weight});
    });

    for (Head &head : heads) {
      linalg::MatmulOp matmul = head.matmul;
      RowShardedWeight &weight = head.weight;
      auto replicated = specOf(ctx, weight.mesh, ReplicateAttr::get(ctx));
      // The head and the hidden state's gradient read the rows as stored
      // (the embedding's lookup is rewritten below).
      if (weight.whole)
        weight.whole.replaceUsesWithIf(weight.sharded, [](OpOperand &use) {
          return isa<linalg::MatmulOp, linalg::TransposeOp>(use.getOwner());
        });
      // The tokens, whole on every rank, for every matmul that reads them
      // (the head and its weight gradient).
      Value x = matmul.getDpsInputs()[0];
      b.setInsertionPointAfterValue(x);
      auto whole = RedistributeOp::create(b, x.getLoc(), x, replicated);
      x.replaceUsesWithIf(whole.getResult(), [&](OpOperand &use) {
        return isa<linalg::MatmulOp>(use.getOwner());
      });
      // The logits, by the vocabulary's rows.
      Value logits = matmul->getResult(0);
      b.setInsertionPointAfter(matmul);
      auto byRows =
          AnnotateOp::create(b, matmul.getLoc(), logits,
                             specOf(ctx, weight.mesh, ShardAttr::get(ctx, 1)));
      logits.replaceAllUsesExcept(byRows.getResult(), byRows);

      // The embedding's lookup of the gathered weight: a one-hot of the
      // ids times the stored rows, so the weight is never whole (each rank
      // adds its rows' part; propagation reduce-scatters the sum).
      if (weight.whole) {
        SmallVector<std::pair<linalg::GenericOp, Value>> lookups;
        func.walk([&](linalg::GenericOp generic) {
          if (Value ids = matchLookup(generic, weight.whole))
            lookups.push_back({generic, ids});
        });
        for (auto &[generic, ids] : lookups)
          lookupAsOneHot(b, generic, ids, weight.sharded);
      }

      // One-hots over the vocabulary: the whole batch's ids against this
      // rank's rows.
      llvm::SetVector<Value> oneHots;
      SmallVector<std::pair<linalg::GenericOp, OneHot>> found;
      func.walk([&](linalg::GenericOp generic) {
        // Once per one-hot (another head over the same vocabulary may have
        // annotated it already).
        if (llvm::any_of(generic->getUsers(), llvm::IsaPred<AnnotateOp>))
          return;
        if (std::optional<OneHot> oneHot = matchOneHot(generic, weight.rows))
          found.push_back({generic, *oneHot});
      });
      for (auto &[generic, oneHot] : found) {
        Value ids = oneHot.ids->get();
        b.setInsertionPoint(generic);
        auto idsWhole =
            RedistributeOp::create(b, generic.getLoc(), ids, replicated);
        oneHot.ids->set(idsWhole.getResult());
        Value mask = generic->getResult(0);
        b.setInsertionPointAfter(generic);
        auto maskByRows = AnnotateOp::create(
            b, generic.getLoc(), mask,
            specOf(ctx, weight.mesh, ShardAttr::get(ctx, oneHot.classDim)));
        mask.replaceAllUsesExcept(maskByRows.getResult(), maskByRows);
        oneHots.insert(maskByRows.getResult());
      }

      // The embedding's gradient, onehot^T . rows: the whole batch's rows.
      func.walk([&](linalg::MatmulOp grad) {
        if (!grad.hasPureTensorSemantics() || grad.hasUserDefinedMaps())
          return;
        auto transpose =
            grad.getDpsInputs()[0].getDefiningOp<linalg::TransposeOp>();
        if (!transpose ||
            transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
            !fromOneHot(transpose.getInput(), oneHots))
          return;
        OpOperand &rows = grad->getOpOperand(1);
        if (rows.get().getDefiningOp<RedistributeOp>())
          return;
        b.setInsertionPoint(grad);
        auto rowsWhole =
            RedistributeOp::create(b, grad.getLoc(), rows.get(), replicated);
        rows.set(rowsWhole.getResult());
      });
    }
  }
};

} // namespace

//===- ScatterOneHotContractions.cpp - one-hot matmuls as row scatters ----===//
//
// spmd-scatter-one-hot-contractions: on tensors, before bufferization, a
// matmul that contracts a one-hot matrix (token t, row v) -> (idx[t] == v)
// with a (token, column) matrix G becomes a loop over the tokens that adds
// row t of G to row idx[t] of the result: nn.Embedding's backward without
// the tokens x vocabulary one-hot and its GEMM. The rows may be a rank's
// chunk of the vocabulary (a slice of the iota, spmd-vocab-parallel): each
// token adds to row idx[t] - first when that is one of the chunk's. The
// other direction, a one-hot times a table (an embedding's lookup written
// as a contraction, spmd-vocab-parallel), becomes a loop that adds row
// idx[t] - first of the table into row t of the result.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDSCATTERONEHOTCONTRACTIONSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The only loop of `op` that the result `expr` of an indexing map reads
/// along, when every other result is the constant 0: `(t, 0) -> t`.
std::optional<unsigned> soleLoop(AffineMap map) {
  std::optional<unsigned> loop;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (loop)
        return std::nullopt;
      loop = dim.getPosition();
    } else if (auto cst = dyn_cast<AffineConstantExpr>(expr)) {
      if (cst.getValue() != 0)
        return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return loop;
}

/// The result of `apply`, an affine.apply of loop indices (`linalg.index`)
/// and integer constants, with loop index `d` as `index(d)` (unsimplified);
/// null when another value is an operand.
AffineExpr applyOfLoopIndices(affine::AffineApplyOp apply,
                              llvm::function_ref<AffineExpr(unsigned)> index) {
  MLIRContext *ctx = apply.getContext();
  SmallVector<AffineExpr> replacements;
  for (Value operand : apply.getMapOperands()) {
    APInt c;
    if (matchPattern(operand, m_ConstantInt(&c))) {
      replacements.push_back(getAffineConstantExpr(c.getSExtValue(), ctx));
      continue;
    }
    auto loop = operand.getDefiningOp<linalg::IndexOp>();
    if (!loop)
      return nullptr;
    replacements.push_back(index(loop.getDim()));
  }
  AffineMap map = apply.getAffineMap();
  ArrayRef<AffineExpr> all(replacements);
  return map.getResult(0).replaceDimsAndSymbols(
      all.take_front(map.getNumDims()), all.drop_front(map.getNumDims()));
}

/// Whether every element of `value` equals its position along its only
/// non-unit dimension: an iota generic (`index_cast(linalg.index)`), seen
/// through reshapes, which keep the row-major order.
bool isIota(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      break;
    value = def->getOperand(0);
  }
  auto type = dyn_cast<RankedTensorType>(value.getType());
  auto iota = value.getDefiningOp<linalg::GenericOp>();
  if (!type || !type.hasStaticShape() || !iota || iota.getNumDpsInputs() ||
      iota->getNumResults() != 1 ||
      !iota.getIndexingMapsArray()[0].isIdentity())
    return false;
  std::optional<unsigned> along;
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    if (size == 1)
      continue;
    if (along)
      return false;
    along = i;
  }
  auto yield = cast<linalg::YieldOp>(iota.getBody()->getTerminator());
  auto cast = yield.getOperand(0).getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return false;
  if (auto index = cast.getIn().getDefiningOp<linalg::IndexOp>())
    return !along || index.getDim() == *along;
  // A reshape fused into the iota linearizes its indices: an affine.apply
  // of the loop indices (and constants) that is the index along the
  // non-unit dimension once the unit ones are 0.
  auto apply = cast.getIn().getDefiningOp<affine::AffineApplyOp>();
  if (!apply || !along)
    return false;
  MLIRContext *ctx = apply.getContext();
  AffineExpr expr = applyOfLoopIndices(apply, [&](unsigned loop) {
    return loop == *along ? getAffineDimExpr(0, ctx)
                          : getAffineConstantExpr(0, ctx);
  });
  return expr && simplifyAffineExpr(expr, 1, 0) == getAffineDimExpr(0, ctx);
}

/// The loop whose index `value` is, in the body of a linalg op:
/// `linalg.index d`, or an affine.apply of loop indices and constants that
/// is one of them (an iota fused into the body keeps its reshape's
/// linearization, `s0 + s1 * 50257` of `(index 1, 0)`).
std::optional<unsigned> loopIndex(Value value) {
  if (auto index = value.getDefiningOp<linalg::IndexOp>())
    return static_cast<unsigned>(index.getDim());
  auto apply = value.getDefiningOp<affine::AffineApplyOp>();
  if (!apply)
    return std::nullopt;
  MLIRContext *ctx = apply.getContext();
  unsigned loops = 0;
  AffineExpr expr = applyOfLoopIndices(apply, [&](unsigned loop) {
    loops = std::max(loops, loop + 1);
    return getAffineDimExpr(loop, ctx);
  });
  if (!expr)
    return std::nullopt;
  if (auto dim = dyn_cast<AffineDimExpr>(simplifyAffineExpr(expr, loops, 0)))
    return dim.getPosition();
  return std::nullopt;
}

/// The first element of `value` when every element equals it plus its
/// position along the only non-unit dimension: an iota (0), or a unit-stride
/// slice of one along that dimension (its offset there: a rank's chunk of
/// rows, spmd-vocab-parallel). None otherwise.
std::optional<OpFoldResult> iotaStart(Value value) {
  MLIRContext *ctx = value.getContext();
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return isIota(value) ? std::optional<OpFoldResult>(
                               IntegerAttr::get(IndexType::get(ctx), 0))
                         : std::nullopt;
  RankedTensorType source = slice.getSourceType();
  if (!source.hasStaticShape() || !slice.hasUnitStride() ||
      slice.getSourceType().getRank() != slice.getType().getRank() ||
      !isIota(slice.getSource()))
    return std::nullopt;
  std::optional<OpFoldResult> start;
  for (auto [d, size] : llvm::enumerate(source.getShape())) {
    OpFoldResult offset = slice.getMixedOffsets()[d];
    if (size != 1) {
      start = offset;
      continue;
    }
    if (!isConstantIntValue(offset, 0))
      return std::nullopt;
  }
  if (!start)
    return std::nullopt;
  return start;
}

/// What a one-hot generic compares: integer tensor `indices`, read along
/// loop `tokenLoop` of the generic, against loop `rowLoop`'s index (plus
/// `start`); `skip` is a value never matched (nn.Embedding's padding_idx).
struct OneHot {
  Value indices;
  AffineMap indicesMap;
  unsigned tokenLoop = 0, rowLoop = 0;
  std::optional<APInt> skip;
  /// The row the one-hot's first column stands for (an index; 0 unless
  /// the rows are a chunk of a larger iota).
  OpFoldResult start;
};

/// The input operand `value` reads when it is a block argument of `op`'s
/// body bound to an input (not an `outs`); null otherwise.
OpOperand *inputOf(linalg::GenericOp op, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != op.getBody() ||
      arg.getArgNumber() >= op.getNumDpsInputs())
    return nullptr;
  return op.getDpsInputOperand(arg.getArgNumber());
}

/// `cmpi ne(x, c)` with a constant `c`: `x` and `c`.
std::optional<std::pair<Value, APInt>> matchNotEqual(Value value) {
  auto cmp = value.getDefiningOp<arith::CmpIOp>();
  APInt c;
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::ne)
    return std::nullopt;
  if (matchPattern(cmp.getRhs(), m_ConstantInt(&c)))
    return std::pair(cmp.getLhs(), c);
  if (matchPattern(cmp.getLhs(), m_ConstantInt(&c)))
    return std::pair(cmp.getRhs(), c);
  return std::nullopt;
}

/// The constant `c` of a padding mask `mask` (an i1 in the body of `op`)
/// that is `idx != c` for the integer `idx` of the body: computed in the
/// body, or an input read like `idx` from a generic that computes it
/// elementwise from the tensor `idx` is read from.
std::optional<APInt> matchSkip(linalg::GenericOp op, Value mask, Value idx) {
  if (auto ne = matchNotEqual(mask))
    return ne->first == idx ? std::optional(ne->second) : std::nullopt;
  OpOperand *maskOperand = inputOf(op, mask);
  OpOperand *idxOperand = inputOf(op, idx);
  if (!maskOperand || !idxOperand)
    return std::nullopt;
  auto producer = maskOperand->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer.getNumDpsInputs() != 1 ||
      producer->getNumResults() != 1 ||
      producer.getDpsInputs()[0] != idxOperand->get() ||
      op.getMatchingIndexingMap(maskOperand) !=
          op.getMatchingIndexingMap(idxOperand) ||
      !llvm::all_of(producer.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(producer.getBody()->getTerminator());
  auto ne = matchNotEqual(yield.getOperand(0));
  if (!ne || ne->first != producer.getBody()->getArgument(0))
    return std::nullopt;
  return ne->second;
}

/// Matches `cmpi eq(idx, row)` or `andi(cmpi eq(idx, row), idx != c)` in
/// the body of `op` (either operand order).
std::optional<OneHot> matchCondition(linalg::GenericOp op, Value cond) {
  std::optional<APInt> skip;
  if (auto andOp = cond.getDefiningOp<arith::AndIOp>()) {
    for (auto [eq, mask] : {std::pair(andOp.getLhs(), andOp.getRhs()),
                            std::pair(andOp.getRhs(), andOp.getLhs())}) {
      auto eqCmp = eq.getDefiningOp<arith::CmpIOp>();
      if (!eqCmp)
        continue;
      for (Value idx : {eqCmp.getLhs(), eqCmp.getRhs()})
        if (!skip)
          skip = matchSkip(op, mask, idx);
      if (skip) {
        cond = eq;
        break;
      }
    }
    if (!skip)
      return std::nullopt;
  }
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return std::nullopt;

  // One side is the row loop's index, the other an input read along a
  // single other loop.
  OpFoldResult zero = IntegerAttr::get(IndexType::get(op.getContext()), 0);
  auto rowIndexLoop =
      [&](Value v) -> std::optional<std::pair<unsigned, OpFoldResult>> {
    if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
      if (std::optional<unsigned> loop = loopIndex(cast.getIn()))
        return std::pair(*loop, zero);
    OpOperand *operand = inputOf(op, v);
    if (!operand)
      return std::nullopt;
    std::optional<unsigned> loop = soleLoop(op.getMatchingIndexingMap(operand));
    std::optional<OpFoldResult> start = iotaStart(operand->get());
    if (!loop || !start)
      return std::nullopt;
    return std::pair(*loop, *start);
  };
  for (auto [idx, row] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                          std::pair(cmp.getRhs(), cmp.getLhs())}) {
    auto rowLoop = rowIndexLoop(row);
    OpOperand *operand = inputOf(op, idx);
    if (!rowLoop || !operand)
      continue;
    AffineMap map = op.getMatchingIndexingMap(operand);
    std::optional<unsigned> tokenLoop = soleLoop(map);
    if (!tokenLoop || *tokenLoop == rowLoop->first)
      continue;
    return OneHot{operand->get(), map,  *tokenLoop,
                  rowLoop->first, skip, rowLoop->second};
  }
  return std::nullopt;
}

/// The one-hot that result `result` of a 2-loop parallel generic computes:
/// `uitofp(cond)` or `select(cond, 1.0, 0.0)`.
std::optional<OneHot> matchOneHot(OpResult result) {
  auto op = dyn_cast<linalg::GenericOp>(result.getOwner());
  if (!op || op.getNumLoops() != 2 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getIndexingMapMatchingResult(result).isIdentity() ||
      !op.hasPureTensorSemantics())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  Value value = yield.getOperand(result.getResultNumber());
  Value cond;
  if (auto toFloat = value.getDefiningOp<arith::UIToFPOp>()) {
    cond = toFloat.getIn();
  } else if (auto select = value.getDefiningOp<arith::SelectOp>()) {
    if (matchPattern(select.getTrueValue(), m_OneFloat()) &&
        matchPattern(select.getFalseValue(), m_PosZeroFloat()))
      cond = select.getCondition();
  }
  if (!cond || !cond.getType().isInteger(1))
    return std::nullopt;
  return matchCondition(op, cond);
}

/// The one-hot's first row as an integer of the ids' type.
Value firstRow(OpBuilder &b, Location loc, const OneHot &oneHot,
               IntegerType type) {
  return arith::IndexCastOp::create(
      b, loc, type, getValueOrCreateConstantIndexOp(b, loc, oneHot.start));
}

/// Token `t`'s id, and its row (the id less `first`, when given).
std::pair<Value, Value> tokenRow(OpBuilder &b, Location loc,
                                 const OneHot &oneHot, Value t, Value first) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> at;
  for (AffineExpr expr : oneHot.indicesMap.getResults())
    at.push_back(isa<AffineDimExpr>(expr) ? t : zero);
  Value raw = tensor::ExtractOp::create(b, loc, oneHot.indices, at);
  Value idx =
      first ? arith::SubIOp::create(b, loc, raw, first).getResult() : raw;
  return {raw, idx};
}

/// `acc` ([rows, columns]) with a row of `from` added into one of its rows
/// when `ok`, as a matmul adds it (C + 1 * x); `acc` unchanged otherwise.
/// The integer `idx` is the row of `acc` (a scatter, `idxRowOfAcc`) or of
/// `from` (a gather); `t` (an index) is the other one.
Value addRowIf(OpBuilder &b, Location loc, Value ok, Value acc, Value idx,
               Value from, Value t, bool idxRowOfAcc) {
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t columns = accType.getDimSize(1);
  auto rowType = RankedTensorType::get({columns}, accType.getElementType());
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{accType}, ok,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value row = arith::IndexCastOp::create(b, loc, b.getIndexType(), idx);
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  SmallVector<OpFoldResult> dstAt{idxRowOfAcc ? row : t, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> srcAt{idxRowOfAcc ? t : row, b.getIndexAttr(0)};
  Value dst = tensor::ExtractSliceOp::create(b, loc, rowType, acc, dstAt, sizes,
                                             strides);
  Value src = tensor::ExtractSliceOp::create(b, loc, rowType, from, srcAt,
                                             sizes, strides);
  AffineMap id = b.getMultiDimIdentityMap(1);
  auto add = linalg::GenericOp::create(
      b, loc, TypeRange{rowType}, ValueRange{src}, ValueRange{dst},
      ArrayRef<AffineMap>{id, id},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
      [](OpBuilder &b, Location loc, ValueRange args) {
        Value sum = arith::AddFOp::create(b, loc, args[1], args[0]);
        linalg::YieldOp::create(b, loc, sum);
      });
  Value updated = tensor::InsertSliceOp::create(b, loc, add.getResult(0), acc,
                                                dstAt, sizes, strides);
  scf::YieldOp::create(b, loc, updated);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, acc);
  return ifOp.getResult(0);
}

/// The one-hot (`oneHotValue`, its generic's result) that `matmul` reads as
/// A when it reads B as `(k, n)` and writes C as `(m, n)`; A's orientation
/// is the caller's to check.
std::optional<OneHot> matchOneHotMatmul(linalg::MatmulOp matmul,
                                        OpResult &oneHotValue) {
  if (!matmul.hasPureTensorSemantics())
    return std::nullopt;
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  if (maps[1] != AffineMap::get(3, 0, {k, n}, ctx) ||
      maps[2] != AffineMap::get(3, 0, {m, n}, ctx))
    return std::nullopt;
  oneHotValue = dyn_cast<OpResult>(matmul.getInputs()[0]);
  if (!oneHotValue)
    return std::nullopt;
  return matchOneHot(oneHotValue);
}

/// Rewrites `matmul` (C[v, d] += A[.., ..] * G[t, d], A one-hot) into a
/// loop over the tokens; fails (leaving it) when it is not of that form.
LogicalResult scatterRows(linalg::MatmulOp matmul) {
  // G read as [token, column], the result written as [row, column].
  OpResult oneHotValue;
  std::optional<OneHot> oneHot = matchOneHotMatmul(matmul, oneHotValue);
  if (!oneHot)
    return failure();
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), k = getAffineDimExpr(2, ctx);
  // A's dimension j is the one-hot generic's loop j (identity output map):
  // the token loop must be the contraction, the row loop the result rows.
  AffineExpr tokenDim = maps[0].getResult(oneHot->tokenLoop);
  AffineExpr rowDim = maps[0].getResult(oneHot->rowLoop);
  if (tokenDim != k || rowDim != m)
    return failure();

  Value grad = matmul.getInputs()[1], init = matmul.getOutputs()[0];
  auto gradType = cast<RankedTensorType>(grad.getType());
  auto resultType = cast<RankedTensorType>(init.getType());
  auto oneHotType = cast<RankedTensorType>(oneHotValue.getType());
  auto indicesType = dyn_cast<RankedTensorType>(oneHot->indices.getType());
  Type element = resultType.getElementType();
  // The rows (a rank's chunk of a vocabulary) may be dynamic.
  if (!gradType.hasStaticShape() || resultType.isDynamicDim(1) ||
      oneHotType.getNumDynamicDims() > 1 ||
      oneHotType.isDynamicDim(oneHot->tokenLoop) || !indicesType ||
      !indicesType.hasStaticShape() || !isa<FloatType>(element) ||
      gradType.getElementType() != element ||
      oneHotType.getElementType() != element ||
      !indicesType.getElementType().isSignlessInteger() ||
      (resultType.hasStaticShape() && resultType.getNumElements() == 0) ||
      gradType.getNumElements() == 0)
    return failure();
  int64_t tokens = gradType.getDimSize(0), rows = resultType.getDimSize(0);
  auto indexType = cast<IntegerType>(indicesType.getElementType());
  unsigned width = indexType.getWidth();
  bool offset = !isConstantIntValue(oneHot->start, 0);
  // Past the index type's range every non-negative index is a row.
  bool checkUpper = offset || ShapedType::isDynamic(rows) || width >= 64 ||
                    rows < (int64_t(1) << (width - 1));

  Location loc = matmul.getLoc();
  OpBuilder b(matmul);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, tokens);
  // The row count and the first row, as integers of the indices' type.
  Value rowCount =
      ShapedType::isDynamic(rows)
          ? arith::IndexCastOp::create(b, loc, indexType,
                                       tensor::DimOp::create(b, loc, init, 0))
                .getResult()
          : Value();
  Value first = offset ? firstRow(b, loc, *oneHot, indexType) : Value();
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init},
      [&](OpBuilder &b, Location loc, Value t, ValueRange acc) {
        auto [raw, idx] = tokenRow(b, loc, *oneHot, t, first);
        auto intConst = [&](const APInt &value) {
          return arith::ConstantOp::create(
              b, loc,
              IntegerAttr::get(indexType,
                               value.sextOrTrunc(indexType.getWidth())));
        };
        Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, idx,
                                         intConst(APInt(width, 0)));
        if (checkUpper)
          ok = arith::AndIOp::create(
              b, loc, ok,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, idx,
                                    rowCount ? rowCount
                                             : intConst(APInt(width, rows))));
        if (oneHot->skip)
          ok = arith::AndIOp::create(
              b, loc, ok,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, raw,
                                    intConst(*oneHot->skip)));
        scf::YieldOp::create(
            b, loc,
            addRowIf(b, loc, ok, acc[0], idx, grad, t, /*idxRowOfAcc=*/true));
      });
  matmul->getResult(0).replaceAllUsesWith(loop.getResult(0));
  matmul->erase();
  return success();
}

/// Rewrites `matmul` (C[t, d] += A[t, v] * W[v, d], A one-hot: an
/// embedding's lookup written as a contraction, spmd-vocab-parallel) into a
/// loop over the tokens adding row idx[t] - start of W into row t of C,
/// tokens whose id is not one of W's rows skipped; fails (leaving it) when
/// it is not of that form.
LogicalResult gatherRows(linalg::MatmulOp matmul) {
  // W read as [row, column], the result written as [token, column].
  OpResult oneHotValue;
  std::optional<OneHot> oneHot = matchOneHotMatmul(matmul, oneHotValue);
  if (!oneHot || oneHot->skip)
    return failure();
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), k = getAffineDimExpr(2, ctx);
  // The token loop must be the result's rows, the row loop the contraction.
  if (maps[0].getResult(oneHot->tokenLoop) != m ||
      maps[0].getResult(oneHot->rowLoop) != k)
    return failure();

  Value table = matmul.getInputs()[1], init = matmul.getOutputs()[0];
  auto tableType = cast<RankedTensorType>(table.getType());
  auto resultType = cast<RankedTensorType>(init.getType());
  auto indicesType = dyn_cast<RankedTensorType>(oneHot->indices.getType());
  Type element = resultType.getElementType();
  // The table's rows (a rank's chunk of a vocabulary) may be dynamic.
  if (!resultType.hasStaticShape() || tableType.isDynamicDim(1) ||
      !indicesType || !indicesType.hasStaticShape() ||
      !isa<FloatType>(element) || tableType.getElementType() != element ||
      cast<RankedTensorType>(oneHotValue.getType()).getElementType() !=
          element ||
      !indicesType.getElementType().isSignlessInteger() ||
      resultType.getNumElements() == 0)
    return failure();
  int64_t tokens = resultType.getDimSize(0);
  auto indexType = cast<IntegerType>(indicesType.getElementType());
  bool offset = !isConstantIntValue(oneHot->start, 0);

  Location loc = matmul.getLoc();
  OpBuilder b(matmul);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, tokens);
  Value rows = arith::IndexCastOp::create(
      b, loc, indexType, tensor::DimOp::create(b, loc, table, 0));
  Value first = offset ? firstRow(b, loc, *oneHot, indexType) : Value();
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init},
      [&](OpBuilder &b, Location loc, Value t, ValueRange acc) {
        auto [raw, idx] = tokenRow(b, loc, *oneHot, t, first);
        Value low = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, idx,
            arith::ConstantOp::create(b, loc, IntegerAttr::get(indexType, 0)));
        Value high =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, idx, rows);
        Value ok = arith::AndIOp::create(b, loc, low, high);
        scf::YieldOp::create(b, loc,
                             addRowIf(b, loc, ok, acc[0], idx, table, t,
                                      /*idxRowOfAcc=*/false));
      });
  matmul->getResult(0).replaceAllUsesWith(loop.getResult(0));
  matmul->erase();
  return success();
}

/// Erases `op` and then its operands' producers that are left without uses
/// and have no side effects (the one-hot, its iota).
void eraseDeadProducers(Operation *op) {
  SmallVector<Operation *> work{op};
  llvm::SmallPtrSet<Operation *, 8> erased;
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

struct ScatterOneHotContractions
    : spmd::impl::SpmdScatterOneHotContractionsPassBase<
          ScatterOneHotContractions> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation()->walk(
        [&](linalg::MatmulOp matmul) { matmuls.push_back(matmul); });
    for (linalg::MatmulOp matmul : matmuls) {
      Operation *oneHot = matmul.getInputs()[0].getDefiningOp();
      if ((succeeded(scatterRows(matmul)) || succeeded(gatherRows(matmul))) &&
          oneHot)
        eraseDeadProducers(oneHot);
    }
  }
};

} // namespace

//===- DecomposeAttention.cpp - spmd.attention as materialized linalg -----===//
//
// spmd-decompose-attention: spmd.attention and spmd.attention_grad become
// linalg.generic ops on tensors that compute the scores, probabilities and
// their gradients whole (B x H x L x S), as eager's math path does. The GPU
// pipeline uses it (its kernels come from linalg); the CPU pipeline lowers
// the ops to flash kernels instead (spmd-lower-attention).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDDECOMPOSEATTENTIONPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

using Body = function_ref<Value(OpBuilder &, Location, ValueRange)>;
constexpr auto kPar = utils::IteratorType::parallel;
constexpr auto kRed = utils::IteratorType::reduction;

class AttentionDecomposer {
public:
  AttentionDecomposer(Operation *op, Value query, Value key, Value value,
                      Value mask, double scale, bool causal)
      : b(op), loc(op->getLoc()), query(query), key(key), value(value),
        mask(mask), scale(scale), causal(causal) {}

  /// out, lse.
  std::pair<Value, Value> forward();
  /// dq, dk, dv.
  SmallVector<Value> backward(Value grad, Value out, Value lse);

private:
  OpFoldResult size(Value tensor, int64_t dim) {
    return tensor::getMixedSize(b, loc, tensor, dim);
  }
  /// An f32 tensor of the sizes of (tensor, dim) pairs, filled with `fill`
  /// when given.
  Value init(ArrayRef<std::pair<Value, int64_t>> dims,
             std::optional<float> fill = std::nullopt);
  AffineMap map(unsigned numDims, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators, Body body);
  Value f32(OpBuilder &nb, Location nl, float v) {
    return arith::ConstantFloatOp::create(nb, nl, nb.getF32Type(), APFloat(v));
  }
  /// Scaled scores plus the mask, -inf where causal masking hides a key:
  /// B x H x L x S.
  Value maskedScores();
  /// exp(scores - rowValue) (0 where rowValue is -inf), B x H x L x S.
  Value expMinusRow(Value scores, Value rowValue);
  /// a * b2 summed over the last of five loops (a read along `aDims`, b2
  /// along `bDims`) into a zero tensor of `outSizes` along `outDims`, times
  /// `factor`.
  Value contract(Value a, Value b2, ArrayRef<unsigned> aDims,
                 ArrayRef<unsigned> bDims, ArrayRef<unsigned> outDims,
                 ArrayRef<std::pair<Value, int64_t>> outSizes, float scale);

  OpBuilder b;
  Location loc;
  Value query, key, value, mask;
  double scale;
  bool causal;
};

Value AttentionDecomposer::init(ArrayRef<std::pair<Value, int64_t>> dims,
                                std::optional<float> fill) {
  SmallVector<OpFoldResult> sizes;
  for (auto [tensor, dim] : dims)
    sizes.push_back(size(tensor, dim));
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  if (!fill)
    return empty;
  Value v = f32(b, loc, *fill);
  return linalg::FillOp::create(b, loc, v, empty).getResult(0);
}

Value AttentionDecomposer::generic(ValueRange ins, Value init,
                                   ArrayRef<AffineMap> maps,
                                   ArrayRef<utils::IteratorType> iterators,
                                   Body body) {
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args));
      });
  return op.getResult(0);
}

Value AttentionDecomposer::contract(
    Value a, Value b2, ArrayRef<unsigned> aDims, ArrayRef<unsigned> bDims,
    ArrayRef<unsigned> outDims, ArrayRef<std::pair<Value, int64_t>> outSizes,
    float factor) {
  Value acc = init(outSizes, 0.0f);
  SmallVector<utils::IteratorType> its(4, kPar);
  its.push_back(kRed);
  return generic({a, b2}, acc, {map(5, aDims), map(5, bDims), map(5, outDims)},
                 its, [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value prod = arith::MulFOp::create(nb, nl, args[0], args[1]);
                   if (factor != 1.0f)
                     prod = arith::MulFOp::create(nb, nl, prod,
                                                  f32(nb, nl, factor));
                   return arith::AddFOp::create(nb, nl, args[2], prod);
                 });
}

Value AttentionDecomposer::maskedScores() {
  // Loops (b, h, l, s, e).
  Value raw = contract(query, key, {0, 1, 2, 4}, {0, 1, 3, 4}, {0, 1, 2, 3},
                       {{query, 0}, {query, 1}, {query, 2}, {key, 2}}, 1.0f);
  SmallVector<Value> ins = {raw};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4)};
  if (mask) {
    auto type = cast<RankedTensorType>(mask.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < 4; ++d)
      exprs.push_back(d < 3 && type.getDimSize(d) == 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(d));
    ins.push_back(mask);
    maps.push_back(AffineMap::get(4, 0, exprs, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(4));
  Value out = init({{query, 0}, {query, 1}, {query, 2}, {key, 2}});
  bool hasMask = bool(mask);
  return generic(
      ins, out, maps, SmallVector<utils::IteratorType>(4, kPar),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value s =
            arith::MulFOp::create(nb, nl, args[0], f32(nb, nl, float(scale)));
        if (hasMask)
          s = arith::AddFOp::create(nb, nl, s, args[1]);
        if (!causal)
          return s;
        Value row = linalg::IndexOp::create(nb, nl, 2);
        Value col = linalg::IndexOp::create(nb, nl, 3);
        Value hidden =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, col, row);
        return arith::SelectOp::create(
                   nb, nl, hidden,
                   f32(nb, nl, -std::numeric_limits<float>::infinity()), s)
            .getResult();
      });
}

Value AttentionDecomposer::expMinusRow(Value scores, Value rowValue) {
  Value out = init({{query, 0}, {query, 1}, {query, 2}, {key, 2}});
  return generic(
      {scores, rowValue}, out,
      {b.getMultiDimIdentityMap(4), map(4, {0, 1, 2}),
       b.getMultiDimIdentityMap(4)},
      SmallVector<utils::IteratorType>(4, kPar),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value ninf = f32(nb, nl, -std::numeric_limits<float>::infinity());
        Value none = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                           args[1], ninf);
        Value diff = arith::SubFOp::create(nb, nl, args[0], args[1]);
        Value e = math::ExpOp::create(nb, nl, diff);
        return arith::SelectOp::create(nb, nl, none, f32(nb, nl, 0.0f), e)
            .getResult();
      });
}

std::pair<Value, Value> AttentionDecomposer::forward() {
  Value scores = maskedScores();
  SmallVector<utils::IteratorType> rowReduce = {kPar, kPar, kPar, kRed};
  SmallVector<AffineMap> rowMaps = {b.getMultiDimIdentityMap(4),
                                    map(4, {0, 1, 2})};
  SmallVector<std::pair<Value, int64_t>> rows = {
      {query, 0}, {query, 1}, {query, 2}};
  Value rowMax = generic(
      {scores}, init(rows, -std::numeric_limits<float>::infinity()), rowMaps,
      rowReduce, [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::MaximumFOp::create(nb, nl, args[0], args[1]).getResult();
      });
  Value probs = expMinusRow(scores, rowMax);
  Value rowSum = generic(
      {probs}, init(rows, 0.0f), rowMaps, rowReduce,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::AddFOp::create(nb, nl, args[0], args[1]).getResult();
      });
  // lse = max + log(sum), -inf for a row with nothing to attend to.
  Value lse =
      generic({rowMax, rowSum}, init(rows),
              SmallVector<AffineMap>(3, b.getMultiDimIdentityMap(3)),
              SmallVector<utils::IteratorType>(3, kPar),
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value positive =
                    arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                          args[1], f32(nb, nl, 0.0f));
                Value log = math::LogOp::create(nb, nl, args[1]);
                Value sum = arith::AddFOp::create(nb, nl, args[0], log);
                return arith::SelectOp::create(
                           nb, nl, positive, sum,
                           f32(nb, nl, -std::numeric_limits<float>::infinity()))
                    .getResult();
              });
  // Loops (b, h, l, ev, s).
  Value weighted =
      contract(probs, value, {0, 1, 2, 4}, {0, 1, 4, 3}, {0, 1, 2, 3},
               {{query, 0}, {query, 1}, {query, 2}, {value, 3}}, 1.0f);
  Value out = generic(
      {weighted, rowSum},
      init({{query, 0}, {query, 1}, {query, 2}, {value, 3}}),
      {b.getMultiDimIdentityMap(4), map(4, {0, 1, 2}),
       b.getMultiDimIdentityMap(4)},
      SmallVector<utils::IteratorType>(4, kPar),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value positive = arith::CmpFOp::create(
            nb, nl, arith::CmpFPredicate::OGT, args[1], f32(nb, nl, 0.0f));
        Value q = arith::DivFOp::create(nb, nl, args[0], args[1]);
        return arith::SelectOp::create(nb, nl, positive, q, f32(nb, nl, 0.0f))
            .getResult();
      });
  return {out, lse};
}

SmallVector<Value> AttentionDecomposer::backward(Value grad, Value out,
                                                 Value lse) {
  Value probs = expMinusRow(maskedScores(), lse);
  // dV: loops (b, h, s, ev, l).
  Value dv = contract(probs, grad, {0, 1, 4, 2}, {0, 1, 4, 3}, {0, 1, 2, 3},
                      {{value, 0}, {value, 1}, {value, 2}, {value, 3}}, 1.0f);
  // dP: loops (b, h, l, s, ev).
  Value dp = contract(grad, value, {0, 1, 2, 4}, {0, 1, 3, 4}, {0, 1, 2, 3},
                      {{query, 0}, {query, 1}, {query, 2}, {key, 2}}, 1.0f);
  // D = rowsum(grad * out).
  Value delta =
      generic({grad, out}, init({{query, 0}, {query, 1}, {query, 2}}, 0.0f),
              {b.getMultiDimIdentityMap(4), b.getMultiDimIdentityMap(4),
               map(4, {0, 1, 2})},
              {kPar, kPar, kPar, kRed},
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value prod = arith::MulFOp::create(nb, nl, args[0], args[1]);
                return arith::AddFOp::create(nb, nl, args[2], prod).getResult();
              });
  // dS = P * (dP - D).
  Value ds = generic(
      {probs, dp, delta}, init({{query, 0}, {query, 1}, {query, 2}, {key, 2}}),
      {b.getMultiDimIdentityMap(4), b.getMultiDimIdentityMap(4),
       map(4, {0, 1, 2}), b.getMultiDimIdentityMap(4)},
      SmallVector<utils::IteratorType>(4, kPar),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value diff = arith::SubFOp::create(nb, nl, args[1], args[2]);
        return arith::MulFOp::create(nb, nl, args[0], diff).getResult();
      });
  // dQ = scale dS K: loops (b, h, l, e, s); dK = scale dS^T Q: (b, h, s, e,
  // l).
  Value dq =
      contract(ds, key, {0, 1, 2, 4}, {0, 1, 4, 3}, {0, 1, 2, 3},
               {{query, 0}, {query, 1}, {query, 2}, {query, 3}}, float(scale));
  Value dk = contract(ds, query, {0, 1, 4, 2}, {0, 1, 4, 3}, {0, 1, 2, 3},
                      {{key, 0}, {key, 1}, {key, 2}, {key, 3}}, float(scale));
  return {dq, dk, dv};
}

struct SpmdDecomposeAttentionPass
    : public spmd::impl::SpmdDecomposeAttentionPassBase<
          SpmdDecomposeAttentionPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto fwd = dyn_cast<AttentionOp>(op)) {
        AttentionDecomposer d(op, fwd.getQuery(), fwd.getKey(), fwd.getValue(),
                              fwd.getMask(), fwd.getScale().convertToDouble(),
                              fwd.getCausal());
        auto [out, lse] = d.forward();
        op->replaceAllUsesWith(ValueRange{out, lse});
      } else {
        auto bwd = cast<AttentionGradOp>(op);
        AttentionDecomposer d(op, bwd.getQuery(), bwd.getKey(), bwd.getValue(),
                              bwd.getMask(), bwd.getScale().convertToDouble(),
                              bwd.getCausal());
        op->replaceAllUsesWith(
            d.backward(bwd.getGrad(), bwd.getOut(), bwd.getLse()));
      }
      op->erase();
    }
  }
};

} // namespace

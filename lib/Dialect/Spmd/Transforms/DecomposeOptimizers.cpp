//===- DecomposeOptimizers.cpp - spmd.sgd / spmd.adam to foreach ----------===//
//
// Mirrors torch.optim's foreach implementations op for op, so that float32
// results agree with torch to rounding. The references are
// torch/optim/sgd.py `_multi_tensor_sgd` and torch/optim/adam.py
// `_multi_tensor_adam` (capturable=False, differentiable=False).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDDECOMPOSEOPTIMIZERSPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

using Values = SmallVector<Value>;

/// Builds foreach ops and the f64 scalars torch computes in Python.
class ForeachBuilder {
public:
  ForeachBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A Python float.
  Value f64(double v) {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  }

  Values neg(ValueRange x) { return results(ForeachNegOp::create(b, loc, x)); }
  Values sqrt(ValueRange x) {
    return results(ForeachSqrtOp::create(b, loc, x));
  }
  Values add(ValueRange x, ValueRange y, ValueRange alpha) {
    return results(ForeachAddOp::create(b, loc, x, y, alpha));
  }
  Values maximum(ValueRange x, ValueRange y) {
    return results(ForeachMaximumOp::create(b, loc, x, y));
  }
  Values lerp(ValueRange x, ValueRange y, ValueRange weight) {
    return results(ForeachLerpOp::create(b, loc, x, y, weight));
  }
  Values addScalar(ValueRange x, ValueRange s) {
    return results(ForeachAddScalarOp::create(b, loc, x, s));
  }
  Values mulScalar(ValueRange x, ValueRange s) {
    return results(ForeachMulScalarOp::create(b, loc, x, s));
  }
  Values divScalar(ValueRange x, ValueRange s) {
    return results(ForeachDivScalarOp::create(b, loc, x, s));
  }
  Values addcmul(ValueRange x, ValueRange y, ValueRange z, ValueRange s) {
    return results(ForeachAddcmulOp::create(b, loc, x, y, z, s));
  }
  Values addcdiv(ValueRange x, ValueRange y, ValueRange z, ValueRange s) {
    return results(ForeachAddcdivOp::create(b, loc, x, y, z, s));
  }

  /// The value of a 0-d float tensor as an f64 (torch: `step.item()`).
  Value itemF64(Value tensor) {
    Value item = tensor::ExtractOp::create(b, loc, tensor, ValueRange{});
    if (item.getType().isF64())
      return item;
    return arith::ExtFOp::create(b, loc, b.getF64Type(), item);
  }

  /// A float option: an attribute's value, or (`hyperparams(...)`) a
  /// `tensor<f64>` read on every call.
  struct Option {
    Value runtime;
    double value;
  };
  /// The option as a Python float where it is used (a constant, or the
  /// run-time value).
  Value get(Option o) { return o.runtime ? itemF64(o.runtime) : f64(o.value); }
  /// 1 - o.
  Value oneMinus(Option o) {
    if (!o.runtime)
      return f64(1.0 - o.value);
    // One op per statement: argument evaluation order is the compiler's.
    Value one = f64(1.0);
    Value value = itemF64(o.runtime);
    return arith::SubFOp::create(b, loc, one, value);
  }
  /// -o.
  Value negated(Option o) {
    if (!o.runtime)
      return f64(-o.value);
    return arith::NegFOp::create(b, loc, itemF64(o.runtime));
  }
  /// 1 - x * y.
  Value oneMinusProduct(Option x, Option y) {
    if (!x.runtime && !y.runtime)
      return f64(1.0 - x.value * y.value);
    Value one = f64(1.0);
    Value xValue = get(x);
    Value yValue = get(y);
    Value product = arith::MulFOp::create(b, loc, xValue, yValue);
    return arith::SubFOp::create(b, loc, one, product);
  }

  OpBuilder &b;
  Location loc;

private:
  static Values results(Operation *op) {
    return Values(op->getResults().begin(), op->getResults().end());
  }
};

/// torch.optim.sgd._multi_tensor_sgd.
/// Each result in `results` is replaced by the value at its position.
void replaceAll(ResultRange results, ArrayRef<Value> values) {
  assert(results.size() == values.size() && "one value per result");
  for (auto [result, value] : llvm::zip_equal(results, values))
    result.replaceAllUsesWith(value);
}

void decompose(SGDOp op) {
  OpBuilder b(op);
  ForeachBuilder fe(b, op.getLoc());
  using Option = ForeachBuilder::Option;
  Option lr{op.getHyperparam("lr"),
            op.getLr() ? op.getLr()->convertToDouble() : 0.0};
  Option momentum{op.getHyperparam("momentum"),
                  op.getMomentum().convertToDouble()};
  Option dampening{op.getHyperparam("dampening"),
                   op.getDampening().convertToDouble()};
  Option weightDecay{op.getHyperparam("weight_decay"),
                     op.getWeightDecay().convertToDouble()};

  Values params(op.getParams()), grads(op.getGrads());
  Values bufs(op.getMomentumBuffers());
  if (op.getMaximize())
    grads = fe.neg(grads);
  // Whether weight decay and momentum are on is structural; a run-time
  // value means on (sgd_c4, sgd_c5).
  if (weightDecay.runtime || weightDecay.value != 0.0)
    grads = fe.add(grads, params, fe.get(weightDecay));

  Value newStep;
  if (momentum.runtime || momentum.value != 0.0) {
    // torch: a missing buffer becomes clone(grad); otherwise
    // buf = momentum * buf + (1 - dampening) * grad. With (0, 1) as the
    // coefficients on step 0 both are the same foreach ops. Without
    // dampening (known when compiling) the coefficients are the same on
    // every step: a missing buffer is zeros (the bridge's and the step
    // counter's convention), momentum * 0 + grad is grad, and the update
    // does not read the step counter (which it increments): on the GPU the
    // optimizer is then one kernel, not two around the counter.
    Value step = op.getStep();
    Value one = fe.f64(1.0);
    Value bufScale = fe.get(momentum), gradScale = one;
    if (dampening.runtime || dampening.value != 0.0) {
      Value first = arith::CmpFOp::create(b, fe.loc, arith::CmpFPredicate::OEQ,
                                          fe.itemF64(step), fe.f64(0.0));
      Value zero = fe.f64(0.0);
      bufScale = arith::SelectOp::create(b, fe.loc, first, zero, bufScale);
      gradScale = arith::SelectOp::create(b, fe.loc, first, one,
                                          fe.oneMinus(dampening));
    }
    bufs = fe.mulScalar(bufs, bufScale);
    bufs = fe.add(bufs, grads, gradScale);
    grads = op.getNesterov() ? fe.add(grads, bufs, fe.get(momentum)) : bufs;
    newStep = fe.addScalar(step, fe.f64(1.0)).front();
  }
  params = fe.add(params, grads, fe.negated(lr));

  replaceAll(op.getNewParams(), params);
  replaceAll(op.getNewMomentumBuffers(), bufs);
  if (Value oldStep = op.getNewStep())
    oldStep.replaceAllUsesWith(newStep);
  op->erase();
}

/// torch.optim.adam._multi_tensor_adam (Adam, and AdamW through
/// decoupled_weight_decay).
void decompose(AdamOp op) {
  OpBuilder b(op);
  ForeachBuilder fe(b, op.getLoc());
  using Option = ForeachBuilder::Option;
  Option lr{op.getHyperparam("lr"),
            op.getLr() ? op.getLr()->convertToDouble() : 0.0};
  Option beta1{op.getHyperparam("beta1"), op.getBeta1().convertToDouble()};
  Option beta2{op.getHyperparam("beta2"), op.getBeta2().convertToDouble()};
  Option eps{op.getHyperparam("eps"), op.getEps().convertToDouble()};
  Option weightDecay{op.getHyperparam("weight_decay"),
                     op.getWeightDecay().convertToDouble()};

  Values params(op.getParams()), grads(op.getGrads());
  Values expAvgs(op.getExpAvgs()), expAvgSqs(op.getExpAvgSqs());
  Values maxExpAvgSqs(op.getMaxExpAvgSqs()), steps(op.getSteps());

  if (op.getMaximize())
    grads = fe.neg(grads);
  steps = fe.addScalar(steps, fe.f64(1.0));
  if (weightDecay.runtime || weightDecay.value != 0.0) {
    if (op.getDecoupledWeightDecay())
      params = fe.mulScalar(params, fe.oneMinusProduct(lr, weightDecay));
    else
      grads = fe.add(grads, params, fe.get(weightDecay));
  }
  expAvgs = fe.lerp(expAvgs, grads, fe.oneMinus(beta1));
  expAvgSqs = fe.mulScalar(expAvgSqs, fe.get(beta2));
  expAvgSqs = fe.addcmul(expAvgSqs, grads, grads, fe.oneMinus(beta2));

  // Per-parameter Python floats from the (incremented) step counters.
  Values stepSizes, biasCorrection2Sqrts;
  Value one = fe.f64(1.0), half = fe.f64(0.5), minusOne = fe.f64(-1.0);
  Value beta1Value = fe.get(beta1), beta2Value = fe.get(beta2);
  Value lrValue = fe.get(lr);
  for (Value step : steps) {
    Value t = fe.itemF64(step);
    Value bc1 = arith::SubFOp::create(
        b, fe.loc, one, math::PowFOp::create(b, fe.loc, beta1Value, t));
    Value bc2 = arith::SubFOp::create(
        b, fe.loc, one, math::PowFOp::create(b, fe.loc, beta2Value, t));
    Value stepSize = arith::MulFOp::create(
        b, fe.loc, arith::DivFOp::create(b, fe.loc, lrValue, bc1), minusOne);
    stepSizes.push_back(stepSize);
    biasCorrection2Sqrts.push_back(math::PowFOp::create(b, fe.loc, bc2, half));
  }

  Values denom;
  if (op.getAmsgrad()) {
    maxExpAvgSqs = fe.maximum(maxExpAvgSqs, expAvgSqs);
    denom = fe.sqrt(maxExpAvgSqs);
  } else {
    denom = fe.sqrt(expAvgSqs);
  }
  denom = fe.divScalar(denom, biasCorrection2Sqrts);
  denom = fe.addScalar(denom, fe.get(eps));
  params = fe.addcdiv(params, expAvgs, denom, stepSizes);

  replaceAll(op.getNewParams(), params);
  replaceAll(op.getNewExpAvgs(), expAvgs);
  replaceAll(op.getNewExpAvgSqs(), expAvgSqs);
  replaceAll(op.getNewMaxExpAvgSqs(), maxExpAvgSqs);
  replaceAll(op.getNewSteps(), steps);
  op->erase();
}

struct SpmdDecomposeOptimizersPass
    : public spmd::impl::SpmdDecomposeOptimizersPassBase<
          SpmdDecomposeOptimizersPass> {
  void runOnOperation() override {
    SmallVector<Operation *> optimizers;
    getOperation().walk([&](Operation *op) {
      if (isa<SGDOp, AdamOp>(op))
        optimizers.push_back(op);
    });
    for (Operation *op : optimizers) {
      if (auto sgd = dyn_cast<SGDOp>(op)) {
        decompose(sgd);
        ++numSGD;
      } else {
        decompose(cast<AdamOp>(op));
        ++numAdam;
      }
    }
  }
};

} // namespace

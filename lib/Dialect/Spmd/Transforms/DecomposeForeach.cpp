//===- DecomposeForeach.cpp - foreach ops to fused linalg.generic ---------===//
//
// Each foreach result used outside the foreach ops of its block becomes one
// elementwise linalg.generic whose body evaluates the whole chain of foreach
// formulas that produce it. Results used only by other foreach ops are never
// materialized: their formulas are inlined into their consumers' bodies.
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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDDECOMPOSEFOREACHPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

bool isForeachOp(Operation *op) {
  return isa<ForeachNegOp, ForeachSqrtOp, ForeachAddOp, ForeachMulOp,
             ForeachDivOp, ForeachMaximumOp, ForeachLerpOp, ForeachAddScalarOp,
             ForeachMulScalarOp, ForeachDivScalarOp, ForeachAddcmulOp,
             ForeachAddcdivOp>(op);
}

/// The tensor lists and scalars of any foreach op.
std::pair<SmallVector<OperandRange>, OperandRange>
getForeachOperands(Operation *op) {
  return TypeSwitch<Operation *,
                    std::pair<SmallVector<OperandRange>, OperandRange>>(op)
      .Case<ForeachNegOp, ForeachSqrtOp, ForeachAddOp, ForeachMulOp,
            ForeachDivOp, ForeachMaximumOp, ForeachLerpOp, ForeachAddScalarOp,
            ForeachMulScalarOp, ForeachDivScalarOp, ForeachAddcmulOp,
            ForeachAddcdivOp>([](auto foreach) {
        return std::make_pair(foreach.getTensorLists(),
                              foreach.getScalarOperands());
      });
}

/// A foreach value that the generic being built computes in its body rather
/// than reading: a result of a foreach op of the same block that is not
/// materialized (not used outside the foreach ops).
class FusedGenericBuilder {
public:
  explicit FusedGenericBuilder(OpBuilder &b) : b(b) {}

  /// Builds the generic that computes `result` (of a foreach op) at the
  /// builder's insertion point.
  Value build(OpResult result) {
    block = result.getOwner()->getBlock();
    leaves.clear();
    collectLeaves(result);
    auto type = cast<RankedTensorType>(result.getType());
    Location loc = result.getLoc();
    Value init = tensor::EmptyOp::create(
        b, loc, tensor::getMixedSizes(b, loc, leaves.front()),
        type.getElementType());
    SmallVector<AffineMap> maps(leaves.size() + 1,
                                b.getMultiDimIdentityMap(type.getRank()));
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, leaves.getArrayRef(), ValueRange{init}, maps,
        iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          DenseMap<Value, Value> scalarOf;
          for (auto [leaf, arg] : llvm::zip(leaves, args))
            scalarOf[leaf] = arg;
          Value value = emit(nested, nestedLoc, result, scalarOf);
          linalg::YieldOp::create(nested, nestedLoc, value);
        });
    return generic.getResult(0);
  }

private:
  /// True when `value` is computed inside the body instead of read.
  bool isInlined(Value value) {
    auto result = dyn_cast<OpResult>(value);
    return result && result.getOwner()->getBlock() == block &&
           isForeachOp(result.getOwner());
  }

  void collectLeaves(OpResult result) {
    auto [lists, scalars] = getForeachOperands(result.getOwner());
    for (OperandRange list : lists) {
      Value operand = list[result.getResultNumber()];
      if (isInlined(operand))
        collectLeaves(cast<OpResult>(operand));
      else
        leaves.insert(operand);
    }
  }

  /// The scalar operand of entry `entry`, converted to `type` (outside the
  /// generic, so the conversion runs once).
  Value getScalar(OperandRange scalars, unsigned entry, Type type) {
    if (scalars.empty())
      return {};
    Value scalar = scalars.size() == 1 ? scalars[0] : scalars[entry];
    auto key = std::make_pair(scalar, type);
    auto it = converted.find(key);
    if (it != converted.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(scalar);
    Value value = scalar;
    auto from = cast<FloatType>(scalar.getType());
    auto to = cast<FloatType>(type);
    if (from.getWidth() > to.getWidth())
      value = arith::TruncFOp::create(b, scalar.getLoc(), to, scalar);
    else if (from.getWidth() < to.getWidth())
      value = arith::ExtFOp::create(b, scalar.getLoc(), to, scalar);
    converted[key] = value;
    return value;
  }

  /// Emits the scalar formula of `result` (torch's ATen CPU kernel order).
  Value emit(OpBuilder &nb, Location loc, OpResult result,
             DenseMap<Value, Value> &scalarOf) {
    unsigned entry = result.getResultNumber();
    Operation *op = result.getOwner();
    auto [lists, scalars] = getForeachOperands(op);
    SmallVector<Value> x;
    for (OperandRange list : lists) {
      Value operand = list[entry];
      auto it = scalarOf.find(operand);
      if (it == scalarOf.end())
        it = scalarOf
                 .try_emplace(operand,
                              emit(nb, loc, cast<OpResult>(operand), scalarOf))
                 .first;
      x.push_back(it->second);
    }
    Type elementType = x[0].getType();
    Value s = getScalar(scalars, entry, elementType);
    auto add = [&](Value a, Value c) {
      return arith::AddFOp::create(nb, loc, a, c).getResult();
    };
    auto sub = [&](Value a, Value c) {
      return arith::SubFOp::create(nb, loc, a, c).getResult();
    };
    auto mul = [&](Value a, Value c) {
      return arith::MulFOp::create(nb, loc, a, c).getResult();
    };
    auto div = [&](Value a, Value c) {
      return arith::DivFOp::create(nb, loc, a, c).getResult();
    };
    auto constant = [&](double v) {
      return arith::ConstantOp::create(nb, loc, nb.getFloatAttr(elementType, v))
          .getResult();
    };
    return TypeSwitch<Operation *, Value>(op)
        .Case([&](ForeachNegOp) {
          return arith::NegFOp::create(nb, loc, x[0]).getResult();
        })
        .Case([&](ForeachSqrtOp) {
          return math::SqrtOp::create(nb, loc, x[0]).getResult();
        })
        // a + alpha * b
        .Case([&](ForeachAddOp) { return add(x[0], s ? mul(s, x[1]) : x[1]); })
        .Case([&](ForeachMulOp) { return mul(x[0], x[1]); })
        .Case([&](ForeachDivOp) { return div(x[0], x[1]); })
        // torch.maximum propagates NaN.
        .Case([&](ForeachMaximumOp) {
          return arith::MaximumFOp::create(nb, loc, x[0], x[1]).getResult();
        })
        // at::native lerp: |w| < 0.5 ? self + w * (end - self)
        //                            : end - (end - self) * (1 - w)
        .Case([&](ForeachLerpOp) {
          Value diff = sub(x[1], x[0]);
          // One op per statement: argument evaluation order differs between
          // compilers, and the IR must not.
          Value half = constant(0.5);
          Value magnitude = math::AbsFOp::create(nb, loc, s);
          Value small = arith::CmpFOp::create(
              nb, loc, arith::CmpFPredicate::OLT, magnitude, half);
          Value low = add(x[0], mul(s, diff));
          Value high = sub(x[1], mul(diff, sub(constant(1.0), s)));
          return arith::SelectOp::create(nb, loc, small, low, high).getResult();
        })
        .Case([&](ForeachAddScalarOp) { return add(x[0], s); })
        .Case([&](ForeachMulScalarOp) { return mul(x[0], s); })
        .Case([&](ForeachDivScalarOp) { return div(x[0], s); })
        // self + value * t1 * t2, evaluated left to right
        .Case([&](ForeachAddcmulOp) {
          return add(x[0], mul(s ? mul(s, x[1]) : x[1], x[2]));
        })
        // self + value * t1 / t2, evaluated left to right
        .Case([&](ForeachAddcdivOp) {
          return add(x[0], div(s ? mul(s, x[1]) : x[1], x[2]));
        });
  }

  OpBuilder &b;
  Block *block = nullptr;
  llvm::SetVector<Value> leaves;
  DenseMap<std::pair<Value, Type>, Value> converted;
};

/// True when `result` has a user that is not a foreach op of its block.
bool isMaterialized(OpResult result) {
  Block *block = result.getOwner()->getBlock();
  return llvm::any_of(result.getUsers(), [&](Operation *user) {
    return user->getBlock() != block || !isForeachOp(user);
  });
}

struct SpmdDecomposeForeachPass
    : public spmd::impl::SpmdDecomposeForeachPassBase<
          SpmdDecomposeForeachPass> {
  void runOnOperation() override {
    SmallVector<Operation *> foreachOps;
    getOperation().walk([&](Operation *op) {
      if (isForeachOp(op))
        foreachOps.push_back(op);
    });

    // Decide what to materialize before rewriting anything. In program
    // order, a materialized producer is replaced before its consumers are
    // built, so they read it instead of recomputing it.
    SmallVector<OpResult> materialized;
    for (Operation *op : foreachOps)
      for (OpResult result : op->getResults())
        if (isMaterialized(result))
          materialized.push_back(result);

    OpBuilder b(&getContext());
    FusedGenericBuilder builder(b);
    for (OpResult result : materialized) {
      b.setInsertionPoint(result.getOwner());
      Value value = builder.build(result);
      result.replaceAllUsesWith(value);
      ++numGenerics;
    }
    for (Operation *op : llvm::reverse(foreachOps)) {
      op->erase();
      ++numForeach;
    }
  }
};

} // namespace

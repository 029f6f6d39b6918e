//===- MatmulAccumulation.h - an add folded into a matmul -------*- C++ -*-===//
//
// What spmd-fuse-elementwise (a tied weight's two gradients) and
// spmd-gpu-bias-into-gemms (a lone bias add) share when they make a matmul
// accumulate into what its product was added to: recognizing the add, the
// matmul that starts from zeros, and where the addend exists.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_MATMULACCUMULATION_H
#define SPMD_CODEGEN_MATMULACCUMULATION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

namespace mlir::spmd {

/// Whether `generic` (on tensors, all loops parallel, two inputs, one init)
/// only adds its two inputs with one float add and yields the sum: its maps
/// are for the caller to judge.
inline bool addsItsInputs(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  Block *body = generic.getBody();
  if (body->getOperations().size() != 2)
    return false;
  auto add = dyn_cast<arith::AddFOp>(body->front());
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (!add || yield.getValues().size() != 1 ||
      yield.getValues()[0] != add.getResult())
    return false;
  Value x = body->getArgument(0), y = body->getArgument(1);
  return (add.getLhs() == x && add.getRhs() == y) ||
         (add.getLhs() == y && add.getRhs() == x);
}

/// The matmul on tensors that computes `product` into a zero fill, when
/// nothing else reads `product` (it may then accumulate into another
/// tensor instead of zeros); null otherwise.
inline linalg::MatmulOp zeroStartedMatmul(Value product) {
  auto matmul = product.getDefiningOp<linalg::MatmulOp>();
  if (!matmul || !matmul.hasPureTensorSemantics() || !product.hasOneUse() ||
      matmul.getCast() != linalg::TypeFn::cast_signed)
    return nullptr;
  auto fill = matmul.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return nullptr;
  return matmul;
}

/// Whether `value` exists where `op` runs: defined before it in its block,
/// or an argument of that block.
inline bool availableAt(Value value, Operation *op) {
  if (Operation *def = value.getDefiningOp())
    return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
  return cast<BlockArgument>(value).getOwner() == op->getBlock();
}

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_MATMULACCUMULATION_H

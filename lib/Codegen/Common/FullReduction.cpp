//===- FullReduction.cpp - full reductions with a simple combiner ---------===//

#include "Spmd/Codegen/FullReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

TypedAttr spmd::combinerIdentity(Operation *op, Type type) {
  auto ft = dyn_cast<FloatType>(type);
  if (!ft)
    return {};
  const llvm::fltSemantics &sem = ft.getFloatSemantics();
  if (isa<arith::AddFOp>(op))
    return FloatAttr::get(ft, 0.0);
  if (isa<arith::MulFOp>(op))
    return FloatAttr::get(ft, 1.0);
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    return FloatAttr::get(ft, APFloat::getInf(sem, /*Negative=*/true));
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op))
    return FloatAttr::get(ft, APFloat::getInf(sem, /*Negative=*/false));
  return {};
}

Value spmd::FullReduction::combine(OpBuilder &b, Value element,
                                   Value accumulator) const {
  linalg::ReduceOp reduce = op; // op classes are handles
  Block &body = reduce.getCombiner().front();
  IRMapping map;
  map.map(body.getArgument(0), element);
  map.map(body.getArgument(1), accumulator);
  return b.clone(*combiner, map)->getResult(0);
}

Value spmd::FullReduction::flatInput(OpBuilder &b) const {
  auto type = cast<MemRefType>(input.getType());
  if (type.getRank() == 1)
    return input;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, input.getLoc(), input,
                                         ArrayRef<ReassociationIndices>{all});
}

std::optional<spmd::FullReduction>
spmd::matchFullReduction(linalg::ReduceOp op) {
  if (op.getInputs().size() != 1 || op.getInits().size() != 1)
    return std::nullopt;
  auto input = dyn_cast<MemRefType>(op.getInputs()[0].getType());
  auto init = dyn_cast<MemRefType>(op.getInits()[0].getType());
  if (!input || !init || init.getRank() != 0 || !input.hasStaticShape() ||
      !input.getLayout().isIdentity() ||
      input.getElementType() != init.getElementType() ||
      static_cast<int64_t>(op.getDimensions().size()) != input.getRank())
    return std::nullopt;
  Block &body = op.getCombiner().front();
  if (body.getOperations().size() != 2)
    return std::nullopt;
  Operation *combiner = &body.front();
  if (combiner->getNumOperands() != 2 || combiner->getNumResults() != 1 ||
      !llvm::is_contained(combiner->getOperands(), body.getArgument(0)) ||
      !llvm::is_contained(combiner->getOperands(), body.getArgument(1)) ||
      body.getTerminator()->getOperand(0) != combiner->getResult(0))
    return std::nullopt;
  TypedAttr identity = combinerIdentity(combiner, init.getElementType());
  if (!identity)
    return std::nullopt;
  return FullReduction{
      op,       op.getInputs()[0], op.getInits()[0], input.getNumElements(),
      combiner, identity};
}

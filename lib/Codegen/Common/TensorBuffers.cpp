//===- TensorBuffers.cpp - which tensors will own a buffer ----------------===//

#include "Spmd/Codegen/TensorBuffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

int64_t spmd::staticTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
}

bool spmd::isTensorView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp, tensor::CastOp>(op);
}

Value spmd::viewedTensor(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isTensorView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

bool spmd::ownsBuffer(Value root) {
  Operation *def = root.getDefiningOp();
  if (!def || isa<tensor::EmptyOp, arith::ConstantOp>(def))
    return false;
  if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(def)) {
    // A buffer of its own that nothing reads as a buffer after it became
    // this tensor (a collective's received values).
    auto alloc = toTensor.getBuffer().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != def->getBlock() ||
        llvm::any_of(alloc->getUsers(), [&](Operation *user) {
          Operation *at = def->getBlock()->findAncestorOpInBlock(*user);
          return user != def && (!at || def->isBeforeInBlock(at));
        }))
      return false;
  }
  // Nor is it read as a buffer (a collective's input, read until its wait,
  // past its last use as a tensor).
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<bufferization::ToBufferOp>(user))
        return false;
      if (isTensorView(user))
        llvm::append_range(work, user->getResults());
    }
  }
  return true;
}

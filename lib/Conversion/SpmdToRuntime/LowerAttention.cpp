//===- LowerAttention.cpp - spmd.attention to the runtime's flash kernels -===//
//
// spmd-lower-attention: on tensors, before bufferization, spmd.attention and
// spmd.attention_grad become calls of libSpmdRuntime's spmdAttentionForward
// and spmdAttentionBackward (lib/Runtime/Attention.cpp) on buffers.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDLOWERATTENTIONPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

class AttentionLowering {
public:
  AttentionLowering(ModuleOp module, bool gpu)
      : module(module), b(module.getContext()), gpu(gpu) {}

  LogicalResult lower(AttentionOp op);
  LogicalResult lower(AttentionGradOp op);

private:
  /// A read-only identity-layout buffer of `tensor` and its address.
  Value input(Value tensor, Location loc);
  /// A fresh buffer of `type`, its address appended to `addresses`; a
  /// dynamic dimension `d` has the size of dimension `d` of `like`.
  Value output(RankedTensorType type, Value like,
               SmallVectorImpl<Value> &addresses, Location loc);
  Value i64(int64_t v, Location loc) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  }
  Value address(Value memref, Location loc) {
    return bufferAddress(b, loc, memref);
  }
  Value dim(Value memref, int64_t d, Location loc);
  /// B, H, L, S, E, Ev from the buffers of query, key and value, then the
  /// mask's element strides along B, H and L (0 where it broadcasts).
  FailureOr<SmallVector<Value>> sizes(Operation *op, Value q, Value k, Value v,
                                      Value mask, Location loc);
  void call(StringRef name, ValueRange args, Location loc) {
    callRuntime(b, module, loc, name, args);
  }
  Value result(Value buffer, Type type, Location loc) {
    return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  ModuleOp module;
  OpBuilder b;
  bool gpu;
};

Value AttentionLowering::input(Value tensor, Location loc) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

Value AttentionLowering::output(RankedTensorType type, Value like,
                                SmallVectorImpl<Value> &addresses,
                                Location loc) {
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamic.push_back(memref::DimOp::create(b, loc, like, d));
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = memref::AllocOp::create(b, loc, memrefType, dynamic);
  addresses.push_back(address(buffer, loc));
  return buffer;
}

Value AttentionLowering::dim(Value memref, int64_t d, Location loc) {
  Value index = memref::DimOp::create(b, loc, memref, d);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

FailureOr<SmallVector<Value>> AttentionLowering::sizes(Operation *op, Value q,
                                                       Value k, Value v,
                                                       Value mask,
                                                       Location loc) {
  SmallVector<Value> sizes = {dim(q, 0, loc), dim(q, 1, loc), dim(q, 2, loc),
                              dim(k, 2, loc), dim(q, 3, loc), dim(v, 3, loc)};
  if (!mask) {
    sizes.append(3, i64(0, loc));
    return sizes;
  }
  ArrayRef<int64_t> shape = cast<MemRefType>(mask.getType()).getShape();
  if (ShapedType::isDynamicShape(shape.take_front(3)))
    return op->emitOpError("the CPU lowering needs the mask's first three "
                           "dimensions static (1 or the full size)");
  // Row-major strides of the mask, 0 along a broadcast dimension.
  Value stride = dim(mask, 3, loc);
  SmallVector<Value> strides(3);
  for (int d = 2; d >= 0; --d) {
    strides[d] = shape[d] == 1 ? i64(0, loc) : stride;
    stride = arith::MulIOp::create(b, loc, stride, i64(shape[d], loc));
  }
  sizes.append(strides);
  return sizes;
}

LogicalResult AttentionLowering::lower(AttentionOp op) {
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value q = input(op.getQuery(), loc), k = input(op.getKey(), loc),
        v = input(op.getValue(), loc);
  Value mask = op.getMask() ? input(op.getMask(), loc) : Value();
  FailureOr<SmallVector<Value>> shape = sizes(op, q, k, v, mask, loc);
  if (failed(shape))
    return failure();
  SmallVector<Value> args = {address(q, loc), address(k, loc), address(v, loc),
                             mask ? address(mask, loc) : i64(0, loc)};
  // out is B x H x L x Ev: B, H, L from the query.
  if (op.getOut().getType().isDynamicDim(3))
    return op.emitOpError("the CPU lowering needs a static value head size");
  Value out = output(op.getOut().getType(), q, args, loc);
  Value lse = output(op.getLse().getType(), q, args, loc);
  args.append(*shape);
  args.push_back(
      arith::ConstantFloatOp::create(b, loc, b.getF64Type(), op.getScale()));
  args.push_back(i64(op.getCausal(), loc));
  call(gpu ? "spmdGpuAttentionForward" : "spmdAttentionForward", args, loc);
  op.getOut().replaceAllUsesWith(result(out, op.getOut().getType(), loc));
  op.getLse().replaceAllUsesWith(result(lse, op.getLse().getType(), loc));
  op.erase();
  return success();
}

LogicalResult AttentionLowering::lower(AttentionGradOp op) {
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value grad = input(op.getGrad(), loc), q = input(op.getQuery(), loc),
        k = input(op.getKey(), loc), v = input(op.getValue(), loc),
        out = input(op.getOut(), loc), lse = input(op.getLse(), loc);
  Value mask = op.getMask() ? input(op.getMask(), loc) : Value();
  FailureOr<SmallVector<Value>> shape = sizes(op, q, k, v, mask, loc);
  if (failed(shape))
    return failure();
  SmallVector<Value> args = {address(grad, loc),
                             address(q, loc),
                             address(k, loc),
                             address(v, loc),
                             address(out, loc),
                             address(lse, loc),
                             mask ? address(mask, loc) : i64(0, loc)};
  SmallVector<Value> grads;
  for (auto [r, like] : llvm::zip(op->getResults(), ValueRange{q, k, v}))
    grads.push_back(
        output(cast<RankedTensorType>(r.getType()), like, args, loc));
  args.append(*shape);
  args.push_back(
      arith::ConstantFloatOp::create(b, loc, b.getF64Type(), op.getScale()));
  args.push_back(i64(op.getCausal(), loc));
  call(gpu ? "spmdGpuAttentionBackward" : "spmdAttentionBackward", args, loc);
  for (auto [r, buffer] : llvm::zip(op->getResults(), grads))
    r.replaceAllUsesWith(result(buffer, r.getType(), loc));
  op.erase();
  return success();
}

/// Whether the GPU kernels take the op's head dimensions (static, at most
/// kMaxHead of lib/Runtime/Gpu/AttentionShape.h).
bool fitsGpu(Operation *op) {
  constexpr int64_t kMaxHead = 128;
  Value q = op->getOperand(isa<AttentionGradOp>(op) ? 1 : 0);
  Value v = op->getOperand(isa<AttentionGradOp>(op) ? 3 : 2);
  auto head = [](Value t) {
    auto type = cast<RankedTensorType>(t.getType());
    return type.isDynamicDim(type.getRank() - 1)
               ? ShapedType::kDynamic
               : type.getDimSize(type.getRank() - 1);
  };
  int64_t e = head(q), ev = head(v);
  return e != ShapedType::kDynamic && ev != ShapedType::kDynamic &&
         e <= kMaxHead && ev <= kMaxHead;
}

struct SpmdLowerAttentionPass
    : public spmd::impl::SpmdLowerAttentionPassBase<SpmdLowerAttentionPass> {
  using SpmdLowerAttentionPassBase::SpmdLowerAttentionPassBase;

  void runOnOperation() override {
    AttentionLowering lowering(getOperation(), gpu);
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op) && (!gpu || fitsGpu(op)))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      LogicalResult status = isa<AttentionOp>(op)
                                 ? lowering.lower(cast<AttentionOp>(op))
                                 : lowering.lower(cast<AttentionGradOp>(op));
      if (failed(status))
        return signalPassFailure();
    }
  }
};

} // namespace

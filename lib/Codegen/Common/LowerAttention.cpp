//===- LowerAttention.cpp - spmd.attention to the runtime's flash kernels -===//
//
// spmd-lower-attention: on tensors, before bufferization, spmd.attention and
// spmd.attention_grad become calls of libSpmdRuntime's spmdAttentionForward
// and spmdAttentionBackward (lib/Runtime/Attention.cpp) on buffers. The
// kernels address every (batch, head, row, element) operand by strides, so
// the head transposes around attention (a (B, L, H, E) projection seen as
// (B, H, L, E), and back) become views of the buffers instead of copies.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDLOWERATTENTIONPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// A result of the kernels, the buffer it is written to and, when that
/// buffer holds it with heads and rows swapped, the transpose that read it.
struct Output {
  OpResult result;
  Value buffer;
  linalg::TransposeOp merged;
};

class AttentionLowering {
public:
  AttentionLowering(ModuleOp module, bool gpu)
      : module(module), b(module.getContext()), gpu(gpu) {}

  LogicalResult lower(AttentionOp op);
  LogicalResult lower(AttentionGradOp op);

private:
  /// A read-only identity-layout buffer of `tensor` and its address.
  Value input(Value tensor, Location loc);
  /// A read-only buffer of a B x H x rows x n operand as the kernels read
  /// it: a head transpose of a tensor with contiguous rows is a transposed
  /// view of that tensor's buffer (no copy), another tensor with contiguous
  /// rows is its own buffer in whatever layout it has; anything else is
  /// input()'s identity-layout buffer.
  Value view(Value tensor, Location loc);
  /// A fresh buffer for result `r` (B x H x rows x n), and the view the
  /// kernels write it through (appended to `views`). When a head transpose
  /// reads `r` (B x rows x H x n, the layout heads are merged from), the
  /// buffer has that layout: the transpose becomes the buffer itself.
  void output(OpResult r, Value like, SmallVectorImpl<Value> &views,
              SmallVectorImpl<Output> &buffers, Location loc);
  /// `op`'s gradients merged from their heads and concatenated by `concat`
  /// (packedConcat: a packed QKV projection's gradient): one buffer of the
  /// concatenation and the views the kernels write each gradient through
  /// (appended to `views`); the transposes, reshapes and the concatenation
  /// become that buffer.
  Value packedOutputs(AttentionGradOp op, tensor::ConcatOp concat,
                      ArrayRef<int64_t> offsets, SmallVectorImpl<Value> &views,
                      Location loc);
  /// Replaces the uses of each result by its buffer, as output() chose it.
  void replaceOutputs(ArrayRef<Output> buffers, Location loc);
  /// The address of `view`'s first element and its element strides along
  /// batch, head and row (appended to `strides`).
  Value address(Value view, SmallVectorImpl<Value> &strides, Location loc);
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
  void call(RuntimeFunction fn, ValueRange args, Location loc) {
    callRuntime(b, module, loc, fn, args);
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

/// Whether `perm` swaps heads and rows: (B, L, H, n) <-> (B, H, L, n).
bool isHeadTranspose(ArrayRef<int64_t> perm) {
  return perm == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// Whether the buffer bufferization gives `tensor` has contiguous rows (unit
/// stride in its last dimension), known from how the tensor is made: fresh
/// and function-argument buffers are identity-layout (the function
/// boundaries bufferize so), reshapes and unit-stride slices keep the last
/// stride, and a destination-passing op writes into its init's buffer (or a
/// fresh copy of it).
bool rowsContiguous(Value tensor, int depth = 0) {
  if (depth > 32)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(tensor))
    return arg.getOwner()->isEntryBlock() &&
           isa<func::FuncOp>(arg.getOwner()->getParentOp());
  Operation *def = tensor.getDefiningOp();
  if (isa<tensor::EmptyOp>(def))
    return true;
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
    return rowsContiguous(expand.getSrc(), depth + 1);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
    return rowsContiguous(collapse.getSrc(), depth + 1);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
    return llvm::all_of(slice.getStaticStrides(),
                        [](int64_t s) { return s == 1; }) &&
           rowsContiguous(slice.getSource(), depth + 1);
  if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(def)) {
    auto type = cast<MemRefType>(toTensor.getBuffer().getType());
    if (type.getLayout().isIdentity())
      return true;
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(type.getStridesAndOffset(strides, offset)) &&
           !strides.empty() && strides.back() == 1;
  }
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
    return rowsContiguous(dps.getTiedOpOperand(cast<OpResult>(tensor))->get(),
                          depth + 1);
  return false;
}

/// The linalg.transpose that reads `r` with heads and rows swapped, if one
/// does and its result has a static shape.
linalg::TransposeOp headTransposeOf(Value r) {
  for (Operation *user : r.getUsers())
    if (auto t = dyn_cast<linalg::TransposeOp>(user))
      if (t.getInput() == r && isHeadTranspose(t.getPermutation()) &&
          cast<ShapedType>(t.getResult()[0].getType()).hasStaticShape())
        return t;
  return {};
}

AffineMapAttr headPermutation(MLIRContext *context) {
  return AffineMapAttr::get(
      AffineMap::getPermutationMap(ArrayRef<unsigned>{0, 2, 1, 3}, context));
}

Value AttentionLowering::view(Value tensor, Location loc) {
  Value source = tensor;
  bool transposed = false;
  if (auto t = tensor.getDefiningOp<linalg::TransposeOp>();
      t && isHeadTranspose(t.getPermutation()) &&
      rowsContiguous(t.getInput())) {
    source = t.getInput();
    transposed = true;
  } else if (!rowsContiguous(tensor)) {
    return input(tensor, loc);
  }
  auto type = cast<RankedTensorType>(source.getType());
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
  Value buffer = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType(), layout),
      source, /*read_only=*/true);
  if (!transposed)
    return buffer;
  return memref::TransposeOp::create(b, loc, buffer,
                                     headPermutation(b.getContext()));
}

Value AttentionLowering::address(Value view, SmallVectorImpl<Value> &strides,
                                 Location loc) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, view);
  for (int d = 0; d < 3; ++d)
    strides.push_back(arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                                 meta.getStrides()[d]));
  auto type = cast<MemRefType>(view.getType());
  Value offset =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), meta.getOffset());
  Value bytes = arith::MulIOp::create(
      b, loc, offset, i64(type.getElementTypeBitWidth() / 8, loc));
  return arith::AddIOp::create(b, loc, address(view, loc), bytes);
}

void AttentionLowering::output(OpResult r, Value like,
                               SmallVectorImpl<Value> &views,
                               SmallVectorImpl<Output> &buffers, Location loc) {
  auto type = cast<RankedTensorType>(r.getType());
  if (linalg::TransposeOp t = headTransposeOf(r)) {
    auto merged = cast<RankedTensorType>(t.getResult()[0].getType());
    Value buffer = memref::AllocOp::create(
        b, loc, MemRefType::get(merged.getShape(), merged.getElementType()));
    views.push_back(memref::TransposeOp::create(
        b, loc, buffer, headPermutation(b.getContext())));
    buffers.push_back({r, buffer, t});
    return;
  }
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamic.push_back(memref::DimOp::create(b, loc, like, d));
  Value buffer = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), dynamic);
  views.push_back(buffer);
  buffers.push_back({r, buffer, {}});
}

void AttentionLowering::replaceOutputs(ArrayRef<Output> buffers, Location loc) {
  for (auto [r, buffer, t] : buffers) {
    auto bufferType = cast<MemRefType>(buffer.getType());
    Value tensor = result(buffer,
                          RankedTensorType::get(bufferType.getShape(),
                                                bufferType.getElementType()),
                          loc);
    if (!t) {
      r.replaceAllUsesWith(tensor);
      continue;
    }
    // The buffer holds the head transpose of `r` (of r's very type when
    // there are as many heads as rows): that transpose is the buffer; any
    // other reader gets `r` back as a transpose of it (a view again where
    // it is attention_grad's operand).
    t.getResult()[0].replaceAllUsesWith(tensor);
    t.erase();
    if (r.use_empty())
      continue;
    auto type = cast<RankedTensorType>(r.getType());
    Value init =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    r.replaceAllUsesWith(
        linalg::TransposeOp::create(b, loc, tensor, init,
                                    ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0]);
  }
}

/// The concatenation `op`'s three gradients are assembled by, each through
/// a head transpose and a collapse of its heads (and nothing else), with
/// each gradient's column offset in it; null when there is none.
tensor::ConcatOp packedConcat(AttentionGradOp op,
                              SmallVectorImpl<int64_t> &offsets) {
  tensor::ConcatOp concat;
  SmallVector<Operation *> collapses;
  for (OpResult r : op->getResults()) {
    linalg::TransposeOp t = headTransposeOf(r);
    if (!t || !r.hasOneUse() || !t.getResult()[0].hasOneUse())
      return {};
    auto collapse =
        dyn_cast<tensor::CollapseShapeOp>(*t.getResult()[0].getUsers().begin());
    if (!collapse || !collapse.getResult().hasOneUse() ||
        collapse.getReassociationIndices() !=
            SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}})
      return {};
    auto user =
        dyn_cast<tensor::ConcatOp>(*collapse.getResult().getUsers().begin());
    if (!user || (concat && user != concat))
      return {};
    concat = user;
    collapses.push_back(collapse);
  }
  if (concat.getDim() != 2 || concat.getInputs().size() != collapses.size() ||
      !concat.getResultType().hasStaticShape())
    return {};
  for (Operation *collapse : collapses) {
    int64_t offset = 0;
    for (Value input : concat.getInputs()) {
      if (input.getDefiningOp() == collapse)
        break;
      offset += cast<ShapedType>(input.getType()).getDimSize(2);
    }
    offsets.push_back(offset);
  }
  return concat;
}

Value AttentionLowering::packedOutputs(AttentionGradOp op,
                                       tensor::ConcatOp concat,
                                       ArrayRef<int64_t> offsets,
                                       SmallVectorImpl<Value> &views,
                                       Location loc) {
  RankedTensorType type = concat.getResultType();
  Value packed = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  for (auto [r, offset] : llvm::zip(op->getResults(), offsets)) {
    auto merged =
        cast<RankedTensorType>(headTransposeOf(r).getResult()[0].getType());
    ArrayRef<int64_t> shape = merged.getShape();
    Value block = memref::SubViewOp::create(
        b, loc, packed,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0),
                               b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(shape[0]),
                               b.getIndexAttr(shape[1]),
                               b.getIndexAttr(shape[2] * shape[3])},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                               b.getIndexAttr(1)});
    Value heads = memref::ExpandShapeOp::create(
        b, loc, shape, block, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    views.push_back(memref::TransposeOp::create(
        b, loc, heads, headPermutation(b.getContext())));
  }
  return packed;
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
  Value q = view(op.getQuery(), loc), k = view(op.getKey(), loc),
        v = view(op.getValue(), loc);
  Value mask = op.getMask() ? input(op.getMask(), loc) : Value();
  FailureOr<SmallVector<Value>> shape = sizes(op, q, k, v, mask, loc);
  if (failed(shape))
    return failure();
  // out is B x H x L x Ev: B, H, L from the query.
  if (op.getOut().getType().isDynamicDim(3))
    return op.emitOpError("the CPU lowering needs a static value head size");
  SmallVector<Value> outViews;
  SmallVector<Output> buffers;
  output(cast<OpResult>(op.getOut()), q, outViews, buffers, loc);
  SmallVector<Value> strides;
  SmallVector<Value> args = {address(q, strides, loc), address(k, strides, loc),
                             address(v, strides, loc),
                             mask ? address(mask, loc) : i64(0, loc),
                             address(outViews[0], strides, loc)};
  Value lse = output(op.getLse().getType(), q, args, loc);
  args.append(*shape);
  args.push_back(
      arith::ConstantFloatOp::create(b, loc, b.getF64Type(), op.getScale()));
  args.push_back(i64(op.getCausal(), loc));
  args.append(strides);
  call(gpu ? RuntimeFunction::spmdGpuAttentionForward
           : RuntimeFunction::spmdAttentionForward,
       args, loc);
  op.getLse().replaceAllUsesWith(result(lse, op.getLse().getType(), loc));
  replaceOutputs(buffers, loc);
  op.erase();
  return success();
}

LogicalResult AttentionLowering::lower(AttentionGradOp op) {
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value grad = view(op.getGrad(), loc), q = view(op.getQuery(), loc),
        k = view(op.getKey(), loc), v = view(op.getValue(), loc),
        out = view(op.getOut(), loc), lse = input(op.getLse(), loc);
  Value mask = op.getMask() ? input(op.getMask(), loc) : Value();
  FailureOr<SmallVector<Value>> shape = sizes(op, q, k, v, mask, loc);
  if (failed(shape))
    return failure();
  SmallVector<Value> gradViews;
  SmallVector<Output> buffers;
  SmallVector<int64_t> offsets;
  tensor::ConcatOp concat = packedConcat(op, offsets);
  Value packed =
      concat ? packedOutputs(op, concat, offsets, gradViews, loc) : Value();
  if (!packed)
    for (auto [r, like] : llvm::zip(op->getResults(), ValueRange{q, k, v}))
      output(cast<OpResult>(r), like, gradViews, buffers, loc);
  SmallVector<Value> strides;
  SmallVector<Value> args = {address(grad, strides, loc),
                             address(q, strides, loc),
                             address(k, strides, loc),
                             address(v, strides, loc),
                             address(out, strides, loc),
                             address(lse, loc),
                             mask ? address(mask, loc) : i64(0, loc)};
  for (Value g : gradViews)
    args.push_back(address(g, strides, loc));
  args.append(*shape);
  args.push_back(
      arith::ConstantFloatOp::create(b, loc, b.getF64Type(), op.getScale()));
  args.push_back(i64(op.getCausal(), loc));
  args.append(strides);
  call(gpu ? RuntimeFunction::spmdGpuAttentionBackward
           : RuntimeFunction::spmdAttentionBackward,
       args, loc);
  replaceOutputs(buffers, loc);
  if (packed) {
    // The concatenation is the packed buffer; its inputs' chains go.
    concat.getResult().replaceAllUsesWith(
        result(packed, concat.getResultType(), loc));
    SmallVector<Operation *> chain;
    for (Value input : concat.getInputs()) {
      Operation *collapse = input.getDefiningOp();
      chain.push_back(collapse);
      chain.push_back(collapse->getOperand(0).getDefiningOp());
    }
    concat.erase();
    for (Operation *dead : chain)
      dead->erase();
  }
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

//===- ElideBufferCopies.cpp - compute into the copy's destination --------===//
//
// spmd-elide-buffer-copies: right after bufferization, a `memref.copy` of a
// fresh buffer into a contiguous slice of another fresh buffer (a gradient
// into its collective's bucket) is removed: the ops that computed the first
// buffer compute into the slice instead. On the GPU such copies were
// kernels of their own (or parts of others), and bytes moved on both paths.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Codegen/StaticExtent.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDELIDEBUFFERCOPIESPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// A reshape (no element moves) whose result is a view of its source.
bool isReshape(Operation *op) {
  return isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(op);
}

/// A fresh buffer of a static shape and identity layout.
memref::AllocOp staticAlloc(Value value) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity() || alloc->getNumOperands() != 0)
    return {};
  return alloc;
}

/// The op of `block` that is or holds `op`.
Operation *inBlock(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

/// Whether an op of `block` in [from, to) touches an element of `buffer`
/// in [first, last], through `buffer` or any view of it.
bool touchedBetween(Value buffer, std::pair<int64_t, int64_t> range,
                    Operation *from, Operation *to,
                    Operation *ignore = nullptr) {
  SmallVector<Value> views = {buffer};
  Block *block = to->getBlock();
  while (!views.empty()) {
    Value view = views.pop_back_val();
    for (OpOperand &use : view.getUses()) {
      Operation *user = use.getOwner();
      auto viewLike = dyn_cast<ViewLikeOpInterface>(user);
      if (viewLike && viewLike.getViewSource() == view) {
        views.push_back(user->getResult(0));
        continue;
      }
      Operation *at = inBlock(block, user);
      if (!at)
        return true;
      if (at == ignore || at->isBeforeInBlock(from) || at == to ||
          to->isBeforeInBlock(at))
        continue;
      std::optional<std::pair<int64_t, int64_t>> touched =
          spmd::staticExtent(view);
      if (!touched ||
          !(touched->second < range.first || range.second < touched->first))
        return true;
    }
  }
  return false;
}

/// Whether `user` reads or writes its `operand` by element, whatever the
/// operand's layout: it then takes a view of another buffer as well.
bool takesAnyLayout(Operation *user) {
  return isa<linalg::LinalgOp, memref::LoadOp, memref::StoreOp, memref::CopyOp>(
      user);
}

/// An op that writes the same value to every element of `buffer` and reads
/// nothing else but values defined before `before` (a pad's fill: a
/// `linalg.map` or `linalg.fill` of a constant): it may run earlier.
bool isEarlierFill(Operation *op, Value buffer, Operation *before) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isa<linalg::MapOp, linalg::FillOp>(op) ||
      linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getDpsInitOperand(0)->get() != buffer ||
      linalgOp.payloadUsesValueFromOperand(linalgOp.getDpsInitOperand(0)))
    return false;
  auto available = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || (def->getBlock() == before->getBlock() &&
                    def->isBeforeInBlock(before));
  };
  for (Value input : linalgOp.getDpsInputs())
    if (!available(input) || isa<ShapedType>(input.getType()))
      return false;
  bool ok = true;
  visitUsedValuesDefinedAbove(
      op->getRegions(), [&](OpOperand *use) { ok &= available(use->get()); });
  return ok;
}

/// Removes `copy` when its source is a reshape chain of a fresh buffer that
/// nothing uses after the copy, and its target a contiguous static slice of
/// another fresh buffer that nothing touches while the first buffer is in
/// use: the first buffer's users get a view of the slice instead.
LogicalResult elide(memref::CopyOp copy) {
  Block *block = copy->getBlock();
  // The source: an allocation, through reshapes used only on the way.
  SmallVector<Operation *> chain;
  Value source = copy.getSource();
  while (Operation *def = source.getDefiningOp()) {
    if (!isReshape(def) || !source.hasOneUse())
      break;
    chain.push_back(def);
    source = def->getOperand(0);
  }
  memref::AllocOp alloc = staticAlloc(source);
  if (!alloc || alloc->getBlock() != block)
    return failure();

  // The target: a contiguous slice of an allocation (a bucket's piece, the
  // rows a pad leaves of a padded buffer).
  auto slice = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  if (!slice)
    return failure();
  memref::AllocOp bucket = staticAlloc(slice.getSource());
  std::optional<std::pair<int64_t, int64_t>> range = spmd::staticExtent(slice);
  int64_t elements = alloc.getType().getNumElements();
  if (!bucket || bucket->getBlock() != block || bucket == alloc || !range ||
      range->second - range->first + 1 != elements ||
      slice.getType().getNumElements() != elements ||
      slice.getType().getElementType() != alloc.getType().getElementType())
    return failure();

  // Every use of the allocation comes before the copy and takes any
  // layout; the first of them starts the allocation's live range.
  Operation *first = copy;
  Operation *head = chain.empty() ? copy.getOperation() : chain.back();
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    if (user == head)
      continue;
    Operation *at = inBlock(block, user);
    if (!at || !takesAnyLayout(user) || !at->isBeforeInBlock(copy))
      return failure();
    if (at->isBeforeInBlock(first))
      first = at;
  }
  // Only a GEMM's output: it is written in place through the GEMM's
  // leading dimension. A loop nest's output stays apart: on the GPU, its
  // copy is what gathers the small reductions (bias and norm gradients)
  // into one kernel before the collective (spmd-gpu-fuse-kernels pulls
  // them into the copy), which writing them in place would scatter.
  bool gemmOutput = llvm::any_of(alloc->getUses(), [](OpOperand &use) {
    auto gemm = dyn_cast<linalg::LinalgOp>(use.getOwner());
    return gemm &&
           isa<linalg::MatmulOp, linalg::BatchMatmulOp>(use.getOwner()) &&
           gemm.isDpsInit(&use);
  });
  if ((!gemmOutput && alloc.getType().getNumElements() != 1) || first == copy)
    return failure();
  // A fill of the whole target between (a pad's value, written before the
  // copy) moves before the first use, with the target.
  Operation *fill = nullptr;
  for (Operation *user : bucket->getUsers())
    if (user->getBlock() == block && first->isBeforeInBlock(user) &&
        user->isBeforeInBlock(copy) &&
        isEarlierFill(user, bucket.getResult(), first))
      fill = user;
  if (touchedBetween(bucket, *range, first, copy.getOperation(), fill))
    return failure();

  // The bucket (no operands: it may move) is made before the first use;
  // the slice, reshaped to the allocation's shape, replaces it.
  if (first->isBeforeInBlock(bucket))
    bucket->moveBefore(first);
  if (fill)
    fill->moveBefore(first);
  OpBuilder b(first);
  Location loc = alloc.getLoc();
  Value view =
      memref::SubViewOp::create(b, loc, bucket, slice.getMixedOffsets(),
                                slice.getMixedSizes(), slice.getMixedStrides());
  MemRefType type = alloc.getType();
  // Users take any layout: a slice of the allocation's shape replaces it
  // as it is. Another (contiguous: its extent is its size) is flattened,
  // then shaped as the allocation.
  auto dims = [](int64_t rank) {
    ReassociationIndices all;
    for (int64_t d = 0; d < rank; ++d)
      all.push_back(d);
    return SmallVector<ReassociationIndices>(rank ? 1 : 0, all);
  };
  if (cast<MemRefType>(view.getType()).getShape() != type.getShape()) {
    int64_t rank = cast<MemRefType>(view.getType()).getRank();
    if (rank != 1)
      view = memref::CollapseShapeOp::create(b, loc, view, dims(rank));
    if (type.getRank() == 0)
      view = memref::CollapseShapeOp::create(b, loc, view, dims(0));
    else if (type.getRank() > 1)
      view = memref::ExpandShapeOp::create(b, loc, type.getShape(), view,
                                           dims(type.getRank()));
  }
  copy->erase();
  for (Operation *op : chain)
    op->erase();
  alloc->replaceAllUsesWith(ValueRange{view});
  alloc->erase();
  if (slice->use_empty())
    slice->erase();
  return success();
}

struct SpmdElideBufferCopiesPass
    : public spmd::impl::SpmdElideBufferCopiesPassBase<
          SpmdElideBufferCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      (void)elide(copy);
  }
};

} // namespace

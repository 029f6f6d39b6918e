//===- UpdateStateInPlace.cpp - state computed straight into its global ---===//
//
// spmd-update-state-in-place: on tensors, before bufferization, a state
// store (`memref.copy` of a value into the state's global, as
// convert-spmd-to-runtime lowers `spmd.store`) whose value is a result of
// an elementwise linalg.generic becomes that generic writing into the
// global itself: the optimizer updates parameters and moments in place,
// with no copy of each per step.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDUPDATESTATEINPLACEPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// A store of `value` into state `symbol` by `copy`.
struct Store {
  memref::CopyOp copy;
  Value value;
  StringRef symbol;
};

/// `copy` as a state store: its source the buffer of a tensor, its target
/// a `memref.get_global`.
std::optional<Store> asStore(memref::CopyOp copy) {
  auto global = copy.getTarget().getDefiningOp<memref::GetGlobalOp>();
  auto toBuffer = copy.getSource().getDefiningOp<bufferization::ToBufferOp>();
  if (!global || !toBuffer)
    return std::nullopt;
  return Store{copy, toBuffer.getTensor(), global.getName()};
}

/// Whether every read of the state's old value happens before `writer`
/// (the generic about to write the new value into the global), or in
/// `writer` itself at the position it writes (an identity indexing map):
/// the loads of `symbol` in `block`'s function are copies made before
/// `writer`, or tensors of the global whose every reader (through views)
/// is. Conservative: any other use of the global fails.
bool oldValueDeadAt(linalg::GenericOp writer, StringRef symbol,
                    memref::CopyOp store,
                    ArrayRef<memref::GetGlobalOp> globalsOfSymbol) {
  Block *block = writer->getBlock();
  auto fn = writer->getParentOfType<FunctionOpInterface>();
  bool ok = true;
  auto before = [&](Operation *op) {
    Operation *ancestor = block->findAncestorOpInBlock(*op);
    return ancestor && ancestor->isBeforeInBlock(writer);
  };
  for (memref::GetGlobalOp global : globalsOfSymbol) {
    if (!ok)
      break;
    if (global->getParentOfType<FunctionOpInterface>() != fn)
      continue;
    for (OpOperand &use : global->getUses()) {
      Operation *user = use.getOwner();
      if (user == store)
        continue;
      if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        // A load by copy: taken before the new value is written.
        ok &= copy.getSource() == global && before(copy);
        continue;
      }
      auto toTensor = dyn_cast<bufferization::ToTensorOp>(user);
      if (!toTensor || toTensor.getWritable()) {
        ok = false;
        continue;
      }
      SmallVector<Value> work{toTensor.getResult()};
      while (ok && !work.empty()) {
        Value v = work.pop_back_val();
        for (OpOperand &read : v.getUses()) {
          Operation *reader = read.getOwner();
          if (reader == writer.getOperation()) {
            ok &= writer.isDpsInput(&read) &&
                  writer.getMatchingIndexingMap(&read).isIdentity();
            continue;
          }
          if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
                  tensor::ExpandShapeOp, tensor::CastOp>(reader)) {
            llvm::append_range(work, reader->getResults());
            continue;
          }
          // A buffer handed to the runtime may be read later (an
          // asynchronous collective): not in place.
          ok &= !isa<bufferization::ToBufferOp>(reader) && before(reader);
        }
      }
    }
  }
  return ok;
}

/// A stored value padded at the end of dimension 0 only, with a constant
/// (fully_shard's uneven chunk: this rank's rows, then zero rows up to the
/// storage's chunk size): the pad, or null.
tensor::PadOp trailingRowPad(Value value) {
  auto pad = value.getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue() ||
      pad.getSourceType().getRank() == 0)
    return {};
  for (OpFoldResult low : pad.getMixedLowPad())
    if (!isConstantIntValue(low, 0))
      return {};
  SmallVector<OpFoldResult> highs = pad.getMixedHighPad();
  for (OpFoldResult high : llvm::drop_begin(highs))
    if (!isConstantIntValue(high, 0))
      return {};
  return pad;
}

/// Makes `store`'s generic write the global; false when it is not safe.
/// A value padded with trailing rows (`trailingRowPad`) is computed into
/// the global's leading rows, and the padding rows are filled there.
bool updateInPlace(Store store, int storesOfSymbol,
                   ArrayRef<memref::GetGlobalOp> globalsOfSymbol) {
  tensor::PadOp pad = trailingRowPad(store.value);
  if (pad && !pad->hasOneUse())
    return false;
  auto result = dyn_cast<OpResult>(pad ? pad.getSource() : store.value);
  auto generic =
      result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
  if (!generic || storesOfSymbol != 1 || !generic.hasPureTensorSemantics() ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      generic->getBlock() != store.copy->getBlock())
    return false;
  unsigned index = result.getResultNumber();
  OpOperand *init = generic.getDpsInitOperand(index);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  auto globalType = dyn_cast<MemRefType>(store.copy.getTarget().getType());
  // The whole value, in the global's order; the old value of `outs` is
  // never read (it will be the global).
  auto paddedType = cast<RankedTensorType>(store.value.getType());
  if (!type || !globalType || !globalType.getLayout().isIdentity() ||
      paddedType.getShape() != globalType.getShape() ||
      type.getElementType() != globalType.getElementType() ||
      !generic.getMatchingIndexingMap(init).isIdentity() ||
      generic.payloadUsesValueFromOperand(init) ||
      !oldValueDeadAt(generic, store.symbol, store.copy, globalsOfSymbol))
    return false;
  OpBuilder b(generic);
  Location loc = store.copy.getLoc();
  Value global = memref::GetGlobalOp::create(b, loc, globalType, store.symbol);
  Value target = bufferization::ToTensorOp::create(
      b, loc, paddedType, global, /*restrict=*/true, /*writable=*/true);
  if (!pad) {
    init->set(target);
  } else {
    // The leading rows (the init's sizes), written by the generic, then
    // the padding rows filled, all in the global's buffer.
    auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
    SmallVector<OpFoldResult> sizes =
        empty ? empty.getMixedSizes()
              : tensor::getMixedSizes(b, loc, init->get());
    SmallVector<OpFoldResult> zeros(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(type.getRank(), b.getIndexAttr(1));
    Value rows = tensor::ExtractSliceOp::create(b, loc, type, target, zeros,
                                                sizes, ones);
    init->set(rows);
    b.setInsertionPoint(pad);
    Value written = tensor::InsertSliceOp::create(b, loc, result, target, zeros,
                                                  sizes, ones);
    SmallVector<OpFoldResult> tailOffsets = zeros, tailSizes = sizes;
    tailOffsets[0] = sizes[0];
    tailSizes[0] = pad.getMixedHighPad()[0];
    Value tail = tensor::ExtractSliceOp::create(b, loc, written, tailOffsets,
                                                tailSizes, ones);
    Value filled =
        linalg::FillOp::create(b, loc, pad.getConstantPaddingValue(), tail)
            .getResult(0);
    tensor::InsertSliceOp::create(b, loc, filled, written, tailOffsets,
                                  tailSizes, ones);
  }
  auto toBuffer =
      store.copy.getSource().getDefiningOp<bufferization::ToBufferOp>();
  Operation *oldGlobal = store.copy.getTarget().getDefiningOp();
  store.copy->erase();
  if (toBuffer->use_empty())
    toBuffer->erase();
  if (pad && pad->use_empty())
    pad->erase();
  if (oldGlobal->use_empty())
    oldGlobal->erase();
  return true;
}

struct UpdateStateInPlace
    : spmd::impl::SpmdUpdateStateInPlacePassBase<UpdateStateInPlace> {
  void runOnOperation() override {
    SmallVector<Store> stores;
    llvm::StringMap<int> count;
    // Each symbol's get_globals, found once (not one walk per store). A
    // symbol's entry stays valid: only the symbol whose single store is
    // rewritten loses (or gains) get_globals, and it is not asked again.
    llvm::StringMap<SmallVector<memref::GetGlobalOp>> globals;
    getOperation()->walk([&](Operation *op) {
      if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        globals[global.getName()].push_back(global);
        return;
      }
      auto copy = dyn_cast<memref::CopyOp>(op);
      if (!copy)
        return;
      if (auto global = copy.getTarget().getDefiningOp<memref::GetGlobalOp>())
        ++count[global.getName()];
      if (std::optional<Store> store = asStore(copy))
        stores.push_back(*store);
    });
    // A value stored into two states stays copied (its generic can write
    // only one of them).
    llvm::DenseMap<Value, int> storesOfValue;
    for (const Store &store : stores)
      ++storesOfValue[store.value];
    for (Store store : stores)
      if (storesOfValue[store.value] == 1)
        (void)updateInPlace(store, count[store.symbol], globals[store.symbol]);
  }
};

} // namespace

//===- ScalarsIntoKernels.cpp - scalars from 0-d buffers computed on device
//===//
//
// A linalg op that uses a scalar the host computes from a 0-d buffer (an
// optimizer's bias correction from its step counter) would make the host
// copy the buffer from the device and wait for it. The buffer becomes an
// input of the op instead, indexed by no loop, and the scalar arithmetic is
// cloned into the op's body, so the kernel reads it on the device.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUSCALARSINTOKERNELSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// `buffer` and every view of it, up to and down from the allocation.
llvm::SmallPtrSet<Value, 8> aliasesOf(Value buffer) {
  Value root = buffer;
  while (auto view = root.getDefiningOp<ViewLikeOpInterface>())
    root = view.getViewSource();
  llvm::SmallPtrSet<Value, 8> aliases;
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!aliases.insert(v).second)
      continue;
    for (Operation *user : v.getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          work.push_back(view->getResult(0));
  }
  return aliases;
}

/// Whether `op` (or an op nested in it) may write one of `aliases`: only
/// loads and linalg inputs are known to read.
bool mayWrite(Operation *op, const llvm::SmallPtrSet<Value, 8> &aliases) {
  WalkResult result = op->walk([&](Operation *nested) {
    for (OpOperand &use : nested->getOpOperands()) {
      if (!aliases.contains(use.get()))
        continue;
      if (isa<memref::LoadOp, ViewLikeOpInterface>(nested))
        continue;
      if (auto linalg = dyn_cast<linalg::LinalgOp>(nested))
        if (linalg.isDpsInput(&use))
          continue;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Whether `load` may be done where `consumer` runs instead: nothing
/// between them writes its buffer.
bool canMoveTo(memref::LoadOp load, Operation *consumer) {
  llvm::SmallPtrSet<Value, 8> aliases = aliasesOf(load.getMemRef());
  for (Operation *op = load->getNextNode(); op && op != consumer;
       op = op->getNextNode())
    if (mayWrite(op, aliases))
      return false;
  return true;
}

/// The host scalars of one linalg op that depend on a movable 0-d load.
struct Slice {
  linalg::GenericOp consumer;
  llvm::DenseMap<Value, bool> depends;

  bool dependsOnLoad(Value v) {
    auto it = depends.find(v);
    if (it != depends.end())
      return it->second;
    bool result = false;
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() == consumer->getBlock()) {
      if (auto load = dyn_cast<memref::LoadOp>(def)) {
        result =
            load.getMemRefType().getRank() == 0 && canMoveTo(load, consumer);
      } else if (def->getNumRegions() == 0 && def->getNumResults() == 1 &&
                 isMemoryEffectFree(def) &&
                 def->getResult(0).getType().isIntOrIndexOrFloat()) {
        for (Value operand : def->getOperands())
          result |= dependsOnLoad(operand);
      }
    }
    depends[v] = result;
    return result;
  }
};

void moveScalarsInto(linalg::GenericOp op) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op.getRegion(), captured);
  Slice slice;
  slice.consumer = op;
  SmallVector<Value> moved;
  for (Value v : captured)
    if (slice.dependsOnLoad(v))
      moved.push_back(v);
  if (moved.empty())
    return;
  // The ops to clone (those that depend on a load), in program order.
  llvm::SetVector<Operation *> ops;
  SmallVector<Value> work(moved);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!slice.dependsOnLoad(v) || !ops.insert(def))
      continue;
    if (!isa<memref::LoadOp>(def))
      llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered(ops.begin(), ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  SmallVector<Value> buffers;
  for (Operation *def : ordered)
    if (auto load = dyn_cast<memref::LoadOp>(def))
      if (!llvm::is_contained(buffers, load.getMemRef()))
        buffers.push_back(load.getMemRef());

  OpBuilder b(op);
  MLIRContext *ctx = op.getContext();
  SmallVector<Value> inputs(op.getDpsInputs());
  llvm::append_range(inputs, buffers);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numInputs = op.getNumDpsInputs();
  maps.insert(maps.begin() + numInputs, buffers.size(),
              AffineMap::get(op.getNumLoops(), 0, {}, ctx));
  auto generic = linalg::GenericOp::create(b, op.getLoc(), op->getResultTypes(),
                                           inputs, op.getDpsInits(), maps,
                                           op.getIteratorTypesArray());
  for (NamedAttribute attr : op->getDiscardableAttrs())
    generic->setAttr(attr.getName(), attr.getValue());
  generic.getRegion().takeBody(op.getRegion());
  Block &body = generic.getRegion().front();
  IRMapping mapping;
  for (auto [i, buffer] : llvm::enumerate(buffers))
    mapping.map(buffer, body.insertArgument(
                            numInputs + i,
                            cast<MemRefType>(buffer.getType()).getElementType(),
                            op.getLoc()));
  OpBuilder inside = OpBuilder::atBlockBegin(&body);
  for (Operation *def : ordered) {
    if (auto load = dyn_cast<memref::LoadOp>(def)) {
      mapping.map(load.getResult(), mapping.lookup(load.getMemRef()));
      continue;
    }
    inside.clone(*def, mapping);
  }
  for (Value v : moved)
    replaceAllUsesInRegionWith(v, mapping.lookup(v), generic.getRegion());
  op->replaceAllUsesWith(generic->getResults());
  op->erase();
  // What only the op used is dead on the host now.
  for (Operation *def : llvm::reverse(ordered))
    if (def->use_empty())
      def->erase();
}

struct SpmdGpuScalarsIntoKernelsPass
    : public spmd::impl::SpmdGpuScalarsIntoKernelsPassBase<
          SpmdGpuScalarsIntoKernelsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops)
      moveScalarsInto(op);
  }
};

} // namespace

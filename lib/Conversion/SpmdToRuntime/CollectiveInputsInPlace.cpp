//===- CollectiveInputsInPlace.cpp - collective inputs read where they are ===//
//
// spmd-collective-inputs-in-place: a non-blocking collective's start copies
// its input unless the call's element-type code carries SPMD_INPUT_STAYS
// (SpmdRuntime.h), the program's promise that the input buffer stays
// allocated and unwritten until the handle's wait. This pass makes that
// promise where it can prove it, on buffers after spmd-free-after-last-use
// (which already keeps a collective's buffers alive until its wait).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDCOLLECTIVEINPUTSINPLACEPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct CollectiveInputsInPlace
    : spmd::impl::SpmdCollectiveInputsInPlacePassBase<CollectiveInputsInPlace> {
  void runOnOperation() override;
};

/// The starts whose input the runtime can read in place, and the position
/// of their element-type code among the call's operands.
std::optional<unsigned> dtypeOperand(func::CallOp call) {
  std::optional<spmd::RuntimeFunction> fn =
      spmd::lookupRuntimeFunction(call.getCallee());
  if (!fn)
    return std::nullopt;
  switch (*fn) {
  case spmd::RuntimeFunction::spmdAllReduceStart:
    return 3;
  case spmd::RuntimeFunction::spmdAllGatherStart:
  case spmd::RuntimeFunction::spmdReduceScatterStart:
    return 5;
  default:
    return std::nullopt;
  }
}

/// The buffer whose address `address` is (`index_cast` of
/// `extract_aligned_pointer_as_index`), or null.
Value addressedBuffer(Value address) {
  if (auto cast = address.getDefiningOp<arith::IndexCastOp>())
    address = cast.getIn();
  if (auto extract =
          address.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>())
    return extract.getSource();
  return nullptr;
}

/// The `memref.alloc` under `buffer`'s views, or null.
memref::AllocOp rootAlloc(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return alloc;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return nullptr;
    buffer = view.getViewSource();
  }
  return nullptr;
}

/// Every value that holds `alloc`'s buffer or its address: views, the
/// address and what is computed from it (a loaded element or a size does
/// not count).
llvm::SmallPtrSet<Value, 16> aliasesOf(memref::AllocOp alloc) {
  llvm::SmallPtrSet<Value, 16> seen{alloc.getResult()};
  SmallVector<Value> work{alloc.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<memref::LoadOp, memref::DimOp, memref::RankOp>(user))
        continue;
      for (Value r : user->getResults())
        if (seen.insert(r).second)
          work.push_back(r);
    }
  }
  return seen;
}

/// Whether `op` (or an op nested in it) may write or free the buffer any
/// of `aliases` holds. Reads are fine: the runtime only reads the input.
bool mayWrite(Operation *op, const llvm::SmallPtrSet<Value, 16> &aliases) {
  WalkResult result = op->walk([&](Operation *nested) {
    bool touches = llvm::any_of(nested->getOperands(),
                                [&](Value v) { return aliases.contains(v); });
    if (!touches)
      return WalkResult::advance();
    // Another collective start reading the same buffer as its input.
    if (auto call = dyn_cast<func::CallOp>(nested)) {
      bool onlyAsInput =
          dtypeOperand(call).has_value() &&
          llvm::all_of(llvm::drop_begin(call.getOperands()),
                       [&](Value v) { return !aliases.contains(v); });
      return onlyAsInput ? WalkResult::advance() : WalkResult::interrupt();
    }
    if (isPure(nested))
      return WalkResult::advance(); // a view, an address computation
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
        continue;
      Value on = e.getValue();
      if (!on || aliases.contains(on))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// The first `spmdWait` of `handle` after `start` in its block, or null
/// when the handle goes anywhere else.
Operation *firstWait(func::CallOp start, Value handle) {
  Operation *first = nullptr;
  for (Operation *user : handle.getUsers()) {
    auto wait = dyn_cast<func::CallOp>(user);
    if (!spmd::isRuntimeCall(wait, spmd::RuntimeFunction::spmdWait) ||
        wait->getBlock() != start->getBlock() || !start->isBeforeInBlock(wait))
      return nullptr;
    if (!first || wait->isBeforeInBlock(first))
      first = wait;
  }
  return first;
}

bool inputStays(func::CallOp start) {
  if (start.getNumOperands() == 0 || start.getNumResults() != 1)
    return false;
  Value buffer = addressedBuffer(start.getOperand(0));
  memref::AllocOp alloc = buffer ? rootAlloc(buffer) : nullptr;
  if (!alloc || alloc->getBlock() != start->getBlock())
    return false;
  Operation *wait = firstWait(start, start.getResult(0));
  if (!wait)
    return false;
  llvm::SmallPtrSet<Value, 16> aliases = aliasesOf(alloc);
  // The runtime writes the output: the same buffer cannot stay unwritten.
  if (start.getNumOperands() < 2 || aliases.contains(start.getOperand(1)))
    return false;
  for (Operation *op = start->getNextNode(); op != wait; op = op->getNextNode())
    if (mayWrite(op, aliases))
      return false;
  return true;
}

void CollectiveInputsInPlace::runOnOperation() {
  SmallVector<func::CallOp> starts;
  getOperation().walk([&](func::CallOp call) {
    if (dtypeOperand(call))
      starts.push_back(call);
  });
  for (func::CallOp start : starts) {
    unsigned index = *dtypeOperand(start);
    IntegerAttr code;
    if (index >= start.getNumOperands() ||
        !matchPattern(start.getOperand(index), m_Constant(&code)) ||
        (code.getInt() & SPMD_INPUT_STAYS) || !inputStays(start))
      continue;
    OpBuilder b(start);
    Value flagged = arith::ConstantIntOp::create(
        b, start.getLoc(), code.getInt() | SPMD_INPUT_STAYS, 32);
    start->setOperand(index, flagged);
  }
}

} // namespace

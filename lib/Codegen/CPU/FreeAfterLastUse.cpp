//===- FreeAfterLastUse.cpp - each buffer freed right after its last use --===//
//
// spmd-free-after-last-use: upstream's ownership-based deallocation frees
// every buffer at the end of its block, so a straight-line training step
// holds all its intermediate buffers (activations, gathered parameters,
// whole gradients, collective outputs) until it returns: its transient peak
// is the sum of all of them. This pass moves each unconditional
// `memref.dealloc` of a `memref.alloc` of the same block to just after the
// last op that uses the buffer, directly, through a view, through its
// address (`memref.extract_aligned_pointer_as_index` and what is computed
// from it), or through what a call given that address returns (the handle
// of a non-blocking collective: the buffer lives until `spmdWait`).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDFREEAFTERLASTUSEPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct FreeAfterLastUse
    : spmd::impl::SpmdFreeAfterLastUsePassBase<FreeAfterLastUse> {
  void runOnOperation() override;
};

/// Ops whose results hold none of an operand buffer's contents or address:
/// a loaded element, a size.
bool resultsDoNotAlias(Operation *op) {
  return isa<memref::LoadOp, memref::DimOp, memref::RankOp>(op);
}

/// The last op of `block` that uses `alloc`'s buffer (through views,
/// addresses and call results), except `dealloc`; null when some use is
/// the block's terminator (the buffer escapes) or outside `block`.
Operation *lastUse(memref::AllocOp alloc, memref::DeallocOp dealloc,
                   bool &escapes) {
  Block *block = alloc->getBlock();
  Operation *last = alloc;
  SmallVector<Value> work{alloc.getResult()};
  llvm::SmallPtrSet<Value, 8> seen{alloc.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      Operation *anchor = block->findAncestorOpInBlock(*user);
      if (!anchor || anchor->hasTrait<OpTrait::IsTerminator>()) {
        escapes = true;
        return nullptr;
      }
      // A value yielded out of a region aliases the op's results.
      if (user != anchor && user->hasTrait<OpTrait::IsTerminator>())
        for (Value r : anchor->getResults())
          if (seen.insert(r).second)
            work.push_back(r);
      if (last->isBeforeInBlock(anchor))
        last = anchor;
      if (resultsDoNotAlias(user))
        continue;
      for (Value r : user->getResults())
        if (seen.insert(r).second)
          work.push_back(r);
    }
  }
  return last;
}

void FreeAfterLastUse::runOnOperation() {
  SmallVector<memref::DeallocOp> deallocs;
  getOperation().walk([&](memref::DeallocOp d) { deallocs.push_back(d); });
  // Every move is decided first and made after: moving an op invalidates
  // its block's op order, which isBeforeInBlock would recompute (the whole
  // block) once per dealloc. Moving deallocs does not change where the
  // other buffers' uses are.
  SmallVector<std::pair<memref::DeallocOp, Operation *>> moves;
  for (memref::DeallocOp dealloc : deallocs) {
    auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != dealloc->getBlock() ||
        !alloc->isBeforeInBlock(dealloc))
      continue;
    bool escapes = false;
    Operation *last = lastUse(alloc, dealloc, escapes);
    if (escapes || !last || !last->isBeforeInBlock(dealloc))
      continue;
    moves.emplace_back(dealloc, last);
  }
  for (auto [dealloc, last] : moves)
    dealloc->moveAfter(last);
}

} // namespace

//===- EraseDeadResults.cpp - drop linalg results nothing reads -----------===//
//
// torch-mlir takes a row maximum (amax, hence log_softmax and the
// cross-entropy) with aten.max.dim, whose argmax result nobody reads. Its
// payload still reads the reduced position (`linalg.index`), which keeps the
// class dimension from being sharded (a vocabulary-parallel loss needs it
// split) and costs the lowered loop a compare and a select per element.
// A result of a `linalg.generic` that has no use is dropped with its init
// and the payload ops that only it needed, when no other result's payload
// reads its accumulator.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDERASEDEADRESULTSPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The payload ops `generic`'s yield of results `kept` needs (transitively),
/// plus every op that may have an effect (an assert).
llvm::SmallPtrSet<Operation *, 16> neededOps(linalg::GenericOp generic,
                                             const llvm::BitVector &kept) {
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  llvm::SmallPtrSet<Operation *, 16> needed;
  SmallVector<Value> work;
  for (unsigned r = 0; r < yield.getNumOperands(); ++r)
    if (kept[r])
      work.push_back(yield.getOperand(r));
  for (Operation &op : body.without_terminator())
    if (!isMemoryEffectFree(&op)) {
      needed.insert(&op);
      llvm::append_range(work, op.getOperands());
    }
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return needed;
}

/// Rebuilds `generic` without its unused results when their accumulators
/// are read only by payload ops no other result needs. Returns whether it
/// changed anything.
bool eraseGenericDeadResults(linalg::GenericOp generic,
                             RewriterBase &rewriter) {
  if (!generic.hasPureTensorSemantics())
    return false;
  unsigned numResults = generic->getNumResults();
  llvm::BitVector kept(numResults, true);
  for (unsigned r = 0; r < numResults; ++r)
    kept[r] = !generic->getResult(r).use_empty();
  if (kept.all() || kept.none())
    return false; // nothing to drop, or the whole op is dead (DCE's job)
  llvm::SmallPtrSet<Operation *, 16> needed = neededOps(generic, kept);
  Block &body = generic.getRegion().front();
  unsigned numInputs = generic.getNumDpsInputs();
  for (unsigned r = 0; r < numResults; ++r) {
    if (kept[r])
      continue;
    BlockArgument acc = body.getArgument(numInputs + r);
    // An accumulator a kept result's payload reads stays (with its result).
    if (llvm::any_of(acc.getUsers(),
                     [&](Operation *user) { return needed.contains(user); }))
      kept[r] = true;
  }
  if (kept.all())
    return false;

  SmallVector<Value> inits;
  SmallVector<Type> types;
  SmallVector<AffineMap> all = generic.getIndexingMapsArray();
  SmallVector<AffineMap> maps(all.begin(), all.begin() + numInputs);
  for (unsigned r = 0; r < numResults; ++r) {
    if (!kept[r])
      continue;
    inits.push_back(generic.getDpsInits()[r]);
    types.push_back(generic->getResult(r).getType());
    maps.push_back(all[numInputs + r]);
  }
  rewriter.setInsertionPoint(generic);
  auto rebuilt = linalg::GenericOp::create(rewriter, generic.getLoc(), types,
                                           generic.getDpsInputs(), inits, maps,
                                           generic.getIteratorTypesArray());
  // Other attributes (doc, library call, spmd's) carry over.
  for (NamedAttribute attr : generic->getDiscardableAttrs())
    rebuilt->setAttr(attr.getName(), attr.getValue());
  rewriter.inlineRegionBefore(generic.getRegion(), rebuilt.getRegion(),
                              rebuilt.getRegion().end());
  Block &moved = rebuilt.getRegion().front();
  auto yield = cast<linalg::YieldOp>(moved.getTerminator());
  SmallVector<Value> yielded;
  for (unsigned r = 0; r < numResults; ++r)
    if (kept[r])
      yielded.push_back(yield.getOperand(r));
  rewriter.setInsertionPoint(yield);
  linalg::YieldOp::create(rewriter, yield.getLoc(), yielded);
  rewriter.eraseOp(yield);
  // What only the dropped results needed, last first.
  SmallVector<Operation *> payload;
  for (Operation &op : moved.without_terminator())
    payload.push_back(&op);
  for (Operation *op : llvm::reverse(payload))
    if (op->use_empty() && isMemoryEffectFree(op))
      rewriter.eraseOp(op);
  for (int r = numResults - 1; r >= 0; --r)
    if (!kept[r])
      moved.eraseArgument(numInputs + r);

  unsigned next = 0;
  SmallVector<Operation *> inits0;
  for (unsigned r = 0; r < numResults; ++r) {
    if (!kept[r]) {
      if (Operation *init = generic.getDpsInits()[r].getDefiningOp())
        inits0.push_back(init);
      continue;
    }
    rewriter.replaceAllUsesWith(generic->getResult(r),
                                rebuilt->getResult(next++));
  }
  rewriter.eraseOp(generic);
  // The dropped results' inits when they are fills nothing else reads (a
  // reduction's start); other dead producers are left to DCE.
  for (Operation *init : inits0)
    if (isa<linalg::FillOp>(init) && init->use_empty())
      rewriter.eraseOp(init);
  return true;
}

struct SpmdEraseDeadResultsPass
    : public spmd::impl::SpmdEraseDeadResultsPassBase<
          SpmdEraseDeadResultsPass> {
  void runOnOperation() override { spmd::eraseDeadResults(getOperation()); }
};

} // namespace

void mlir::spmd::eraseDeadResults(Operation *root) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp generic) { generics.push_back(generic); });
  IRRewriter rewriter(root->getContext());
  for (linalg::GenericOp generic : generics)
    (void)eraseGenericDeadResults(generic, rewriter);
}

//===- DedupCollectives.cpp - one collective where several are equal -----===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDDEDUPCOLLECTIVESPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// Ops whose duplicates (same name, operands, attributes, result types) in
/// one block compute the same value on every rank.
bool isDedupCandidate(Operation *op) {
  return isa<CollectiveOpInterface, WaitOp, AxisIndexOp, LocalSliceOp>(op);
}

struct OpKey {
  Operation *op;
};

struct OpKeyInfo : public llvm::DenseMapInfo<OpKey> {
  static OpKey getEmptyKey() {
    return {llvm::DenseMapInfo<Operation *>::getEmptyKey()};
  }
  static OpKey getTombstoneKey() {
    return {llvm::DenseMapInfo<Operation *>::getTombstoneKey()};
  }
  static unsigned getHashValue(OpKey key) {
    return OperationEquivalence::computeHash(
        key.op, OperationEquivalence::directHashValue,
        OperationEquivalence::ignoreHashValue,
        OperationEquivalence::IgnoreLocations);
  }
  static bool isEqual(OpKey lhs, OpKey rhs) {
    if (lhs.op == rhs.op)
      return true;
    if (lhs.op == getEmptyKey().op || lhs.op == getTombstoneKey().op ||
        rhs.op == getEmptyKey().op || rhs.op == getTombstoneKey().op)
      return false;
    return OperationEquivalence::isEquivalentTo(
        lhs.op, rhs.op, OperationEquivalence::exactValueMatch, nullptr,
        OperationEquivalence::IgnoreLocations);
  }
};

/// local_slice(all_gather(x)) taking back the chunk x held, or
/// all_gather(local_slice(x)) restoring the replicated x.
Value foldRoundTrip(Operation *op) {
  if (auto slice = dyn_cast<LocalSliceOp>(op)) {
    auto gather = slice.getInput().getDefiningOp<AllGatherOp>();
    if (gather && gather.getInputs().size() == 1 &&
        gather.getMeshAttr() == slice.getMeshAttr() &&
        gather.getAxes() == slice.getAxes() &&
        gather.getGatherDimAttr().getInt() == slice.getDimAttr().getInt() &&
        gather.getInputs()[0].getType() == slice.getType())
      return gather.getInputs()[0];
  }
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    if (gather.getInputs().size() != 1 || gather.isAsync())
      return {};
    auto slice = gather.getInputs()[0].getDefiningOp<LocalSliceOp>();
    if (slice && gather.getMeshAttr() == slice.getMeshAttr() &&
        gather.getAxes() == slice.getAxes() &&
        gather.getGatherDimAttr().getInt() == slice.getDimAttr().getInt() &&
        slice.getInput().getType() == gather.getResult(0).getType())
      return slice.getInput();
  }
  return {};
}

struct SpmdDedupCollectivesPass
    : public spmd::impl::SpmdDedupCollectivesPassBase<
          SpmdDedupCollectivesPass> {
  void runOnOperation() override { dedupCollectives(getOperation()); }
};

} // namespace

void mlir::spmd::dedupCollectives(Operation *root) {
  root->walk([&](Block *block) {
    // Scalar payloads (linalg bodies, ...) hold no collectives.
    if (isa_and_nonnull<linalg::LinalgOp>(block->getParentOp()))
      return;
    DenseMap<OpKey, Operation *, OpKeyInfo> seen;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (Value original = foldRoundTrip(&op)) {
        op.getResult(0).replaceAllUsesWith(original);
        op.erase();
        continue;
      }
      if (!isDedupCandidate(&op))
        continue;
      auto [it, inserted] = seen.try_emplace(OpKey{&op}, &op);
      if (inserted)
        continue;
      op.replaceAllUsesWith(it->second);
      op.erase();
    }
    // Collectives a round trip bypassed are dead now.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block)))
      if (isDedupCandidate(&op) && isOpTriviallyDead(&op))
        op.erase();
  });
}

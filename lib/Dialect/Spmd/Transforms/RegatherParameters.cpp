//===- RegatherParameters.cpp - gather parameters again for backward ------===//
//
// FSDP's reshard_after_forward. After spmd-distribute a parameter stored
// sharded is all-gathered once and its whole copy lives from the forward's
// use to the backward's. Here the gather is repeated before each later group
// of uses that lies far from the previous one, so the forward's copy dies
// after the forward and only a shard of each parameter lives in between.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDREGATHERPARAMETERSPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

bool mlir::spmd::isParameterGather(Operation *op) {
  auto gather = dyn_cast_or_null<AllGatherOp>(op);
  if (!gather || gather->getNumOperands() != 1)
    return false;
  Value v = gather->getOperand(0);
  // An uneven chunk is cut out of its padded storage and padded again.
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::PadOp, tensor::ExtractSliceOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto load = dyn_cast<LoadOp>(def);
    if (!load)
      return false;
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
        load, load.getStateAttr());
    return state && state.getRole() == StateRole::Param;
  }
  return false;
}

namespace {

struct SpmdRegatherParametersPass
    : public spmd::impl::SpmdRegatherParametersPassBase<
          SpmdRegatherParametersPass> {
  using SpmdRegatherParametersPassBase::SpmdRegatherParametersPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    SmallVector<Operation *> gathers;
    for (Operation &op : body) {
      position[&op] = position.size();
      // Synchronous ones: the overlap pass has not run yet.
      if (isParameterGather(&op) &&
          isa<RankedTensorType>(op.getResult(0).getType()))
        gathers.push_back(&op);
    }
    int64_t gap = std::max<int64_t>(
        1, static_cast<int64_t>(minGap * static_cast<double>(position.size())));
    for (Operation *gather : gathers)
      regather(gather, body, position, gap);
  }

  /// Gathers again before every group of uses of `gather`'s value (its
  /// result, or the slice that cuts an uneven gather's padding) that starts
  /// more than `gap` ops after the previous use.
  void regather(Operation *gather, Block &body,
                DenseMap<Operation *, int64_t> &position, int64_t gap) {
    SmallVector<Operation *> chain{gather};
    Value value = gather->getResult(0);
    if (value.hasOneUse())
      if (auto cut = dyn_cast<tensor::ExtractSliceOp>(*value.user_begin());
          cut && cut->getBlock() == &body) {
        chain.push_back(cut);
        value = cut.getResult();
      }
    // The top-level ops that use the value, in program order.
    SmallVector<Operation *> users;
    for (Operation *user : value.getUsers())
      if (Operation *top = body.findAncestorOpInBlock(*user))
        users.push_back(top);
    llvm::sort(users, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    users.erase(llvm::unique(users), users.end());
    Operation *previous = nullptr;
    SmallVector<SmallVector<Operation *>> groups;
    for (Operation *user : users) {
      if (!previous || position.lookup(user) - position.lookup(previous) > gap)
        groups.emplace_back();
      groups.back().push_back(user);
      previous = user;
    }
    for (ArrayRef<Operation *> group : llvm::drop_begin(groups)) {
      OpBuilder b(group.front());
      IRMapping map;
      Operation *last = nullptr;
      for (Operation *op : chain)
        last = b.clone(*op, map);
      Value again = last->getResult(0);
      value.replaceUsesWithIf(again, [&](OpOperand &use) {
        Operation *top = body.findAncestorOpInBlock(*use.getOwner());
        return top && llvm::is_contained(group, top);
      });
    }
  }
};

} // namespace

//===- OverlapCollectives.cpp - start collectives early, wait late --------===//
//
// Expansion puts each collective right before the op that needs its result;
// a gradient's all-reduce then sits at the end of the backward pass and
// blocks while nothing else runs. Here each one becomes asynchronous, is
// issued as soon as its inputs exist, and is waited for at its first use.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDOVERLAPCOLLECTIVESPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

struct SpmdOverlapCollectivesPass
    : public spmd::impl::SpmdOverlapCollectivesPassBase<
          SpmdOverlapCollectivesPass> {
  using SpmdOverlapCollectivesPassBase::SpmdOverlapCollectivesPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    SmallVector<Operation *> collectives;
    for (Operation &op : body)
      if (auto c = dyn_cast<CollectiveOpInterface>(op); c && !c.isAsync())
        collectives.push_back(&op);
    OpBuilder b(&getContext());
    // With prefetch-parameters: the wait of the last parameter gather.
    Operation *parameterWait = nullptr;
    for (Operation *op : collectives) {
      bool parameter = prefetchParameters && isParameterGather(op);
      // Issue point: right after the last input's definition in this block.
      Operation *after = nullptr;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def)
          continue;
        def = body.findAncestorOpInBlock(*def);
        if (def && (!after || after->isBeforeInBlock(def)))
          after = def;
      }
      // Wait point: right before the first op that uses a result.
      Operation *first = nullptr;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers()) {
          Operation *anc = body.findAncestorOpInBlock(*user);
          if (anc && (!first || anc->isBeforeInBlock(first)))
            first = anc;
        }
      if (!first)
        continue; // unused: left for DCE
      // One parameter gather in flight ahead of its use, as FSDP's
      // prefetch: not before the previous one was waited for.
      if (parameter && parameterWait &&
          (!after || after->isBeforeInBlock(parameterWait)) &&
          parameterWait->isBeforeInBlock(first))
        after = parameterWait;
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Type> futures;
      for (Type t : op->getResultTypes())
        futures.push_back(
            FutureType::get(&getContext(), cast<RankedTensorType>(t)));
      OperationState state(op->getLoc(), op->getName());
      state.addOperands(op->getOperands());
      state.addAttributes(op->getAttrs());
      state.addTypes(futures);
      Operation *start = b.create(state);
      b.setInsertionPoint(first);
      auto wait = WaitOp::create(b, op->getLoc(), op->getResultTypes(),
                                 start->getResults());
      op->replaceAllUsesWith(wait.getResults());
      op->erase();
      if (parameter)
        parameterWait = wait;
    }
  }
};

} // namespace

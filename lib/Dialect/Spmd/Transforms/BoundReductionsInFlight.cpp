//===- BoundReductionsInFlight.cpp - few whole gradients alive at once ----===//
//
// spmd-overlap-collectives waits for a collective right before the first
// use of its result. A gradient's reduction is first used by the optimizer
// at the end of the step, so every gradient bucket's reduction stayed in
// flight until then, and with it its input: the step held every whole
// gradient at once (GPT-2 124M under fully_shard: 475 MiB of whole
// gradients for 237 MiB of gradient chunks). Here the reduction started
// k-th is waited for no later than right before the (k + max)-th starts.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDBOUNDREDUCTIONSINFLIGHTPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

struct BoundReductionsInFlight
    : spmd::impl::SpmdBoundReductionsInFlightPassBase<BoundReductionsInFlight> {
  using SpmdBoundReductionsInFlightPassBase::
      SpmdBoundReductionsInFlightPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || maxInFlight <= 0)
      return;
    Block &body = func.getBody().front();
    // Asynchronous reductions in the order they start, with the waits of
    // their futures in this block.
    struct Reduction {
      Operation *start;
      SmallVector<WaitOp> waits;
    };
    SmallVector<Reduction> reductions;
    for (Operation &op : body) {
      auto c = dyn_cast<CollectiveOpInterface>(op);
      if (!c || !c.isAsync() || !isa<AllReduceOp, ReduceScatterOp>(op))
        continue;
      Reduction r{&op, {}};
      bool ok = true;
      for (Value future : op.getResults())
        for (Operation *user : future.getUsers()) {
          auto wait = dyn_cast<WaitOp>(user);
          ok &= wait && wait->getBlock() == &body;
          if (wait)
            r.waits.push_back(wait);
        }
      if (ok)
        reductions.push_back(std::move(r));
    }
    for (size_t i = 0; i + maxInFlight < reductions.size(); ++i) {
      Operation *limit = reductions[i + maxInFlight].start;
      for (WaitOp wait : reductions[i].waits)
        if (limit->isBeforeInBlock(wait))
          wait->moveBefore(limit);
    }
  }
};

} // namespace

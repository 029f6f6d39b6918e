//===- TraceRegions.cpp - named regions of the user's code in traces ------===//
//
// spmd-trace-regions: in each public function, runs of consecutive ops
// that compute something (calls, linalg ops, loops, copies) and come from
// the same line of the user's code become one region, bracketed by
// `spmdTraceBegin(name)` / `spmdTraceEnd(start, name)`: with tracing on, the
// runtime records it as an event named after that line (and the torch.nn
// module line it runs in), so a step trace shows where the time goes in
// the user's terms. With tracing off each costs two calls and an atomic
// load.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDTRACEREGIONSPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// Ops that take time: calls, linalg ops, loops, copies.
bool isWork(Operation *op) {
  return isa<func::CallOp, linalg::LinalgOp, scf::ForOp, scf::WhileOp,
             scf::ParallelOp, memref::CopyOp>(op);
}

struct SpmdTraceRegionsPass
    : public spmd::impl::SpmdTraceRegionsPassBase<SpmdTraceRegionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        for (Block &block : fn.getBody())
          bracket(b, module, block);
  }

  void bracket(OpBuilder &b, ModuleOp module, Block &block) {
    Operation *first = nullptr, *last = nullptr;
    std::string current;
    auto close = [&] {
      if (!first)
        return;
      b.setInsertionPoint(first);
      Value text = names.get(b, module, first->getLoc(), current);
      Value start = callRuntime(b, module, first->getLoc(),
                                RuntimeFunction::spmdTraceBegin, {text})
                        .getResult(0);
      b.setInsertionPointAfter(last);
      callRuntime(b, module, last->getLoc(), RuntimeFunction::spmdTraceEnd,
                  {start, text});
      first = last = nullptr;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (!isWork(&op))
        continue;
      if (isRuntimeCall(&op, RuntimeFunction::spmdTraceBegin) ||
          isRuntimeCall(&op, RuntimeFunction::spmdTraceEnd))
        continue;
      std::string region = traceRegionName(op.getLoc());
      if (region.empty() || region != current)
        close();
      if (region.empty())
        continue;
      if (!first)
        first = &op;
      last = &op;
      current = region;
    }
    close();
  }

  StringConstants names{"__spmd_region_"};
};

} // namespace

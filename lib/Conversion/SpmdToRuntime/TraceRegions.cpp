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

/// Frames of PyTorch's own code, the bridge's and the compiler's files.
bool isLibraryFrame(StringRef file) {
  return file.contains("/torch/") || file.contains("/torch_mlir/") ||
         file.contains("/spmd/") || file.starts_with("<") ||
         file.ends_with(".mlir");
}

/// "user.py:LINE|module.py:LINE" for the innermost frame of the user's code
/// and the innermost torch.nn module frame of `loc` (callsite locations list
/// the innermost frame first); empty when there is no user frame.
std::string regionName(Location loc) {
  std::string user, module;
  loc->walk([&](Location inner) {
    auto file = dyn_cast<FileLineColLoc>(inner);
    if (!file)
      return WalkResult::advance();
    StringRef name = file.getFilename().getValue();
    std::string at = (name + ":" + Twine(file.getLine())).str();
    if (module.empty() && user.empty() && name.contains("/torch/nn/modules/"))
      module = at;
    if (user.empty() && !isLibraryFrame(name))
      user = at;
    return WalkResult::advance();
  });
  if (user.empty())
    return {};
  return module.empty() ? user : user + "|" + module;
}

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

  /// The address of a constant C string `text`, one global per text.
  Value name(OpBuilder &b, ModuleOp module, StringRef text, Location loc) {
    auto it =
        symbols
            .try_emplace(text, ("__spmd_region_" + Twine(symbols.size())).str())
            .first;
    return stringConstant(b, module, loc, text, it->second);
  }

  void bracket(OpBuilder &b, ModuleOp module, Block &block) {
    Operation *first = nullptr, *last = nullptr;
    std::string current;
    auto close = [&] {
      if (!first)
        return;
      b.setInsertionPoint(first);
      Value text = name(b, module, current, first->getLoc());
      Value start = callRuntime(b, module, first->getLoc(), "spmdTraceBegin",
                                {text}, {b.getI64Type()})
                        .getResult(0);
      b.setInsertionPointAfter(last);
      callRuntime(b, module, last->getLoc(), "spmdTraceEnd", {start, text});
      first = last = nullptr;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (!isWork(&op))
        continue;
      if (auto call = dyn_cast<func::CallOp>(op);
          call && call.getCallee().starts_with("spmdTrace"))
        continue;
      std::string region = regionName(op.getLoc());
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

  llvm::StringMap<std::string> symbols;
};

} // namespace

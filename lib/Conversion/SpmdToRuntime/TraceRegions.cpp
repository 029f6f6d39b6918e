//===- TraceRegions.cpp - named regions of the user's code in traces ------===//
//
// spmd-trace-regions: in each public function, runs of consecutive ops
// that compute something (calls, linalg ops, loops, copies) and come from
// the same line of the user's code become one region, bracketed by
// `spmdTraceBegin()` / `spmdTraceEnd(start, name)`: with tracing on, the
// runtime records it as an event named after that line (and the torch.nn
// module line it runs in), so a step trace shows where the time goes in
// the user's terms. With tracing off each costs two calls and an atomic
// load.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"

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
    declare(b, module, "spmdTraceBegin", {}, {b.getI64Type()});
    declare(b, module, "spmdTraceEnd",
            {b.getI64Type(), LLVM::LLVMPointerType::get(module.getContext())},
            {});
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        for (Block &block : fn.getBody())
          bracket(b, module, block);
  }

  void declare(OpBuilder &b, ModuleOp module, StringRef name, TypeRange args,
               TypeRange results) {
    if (module.lookupSymbol(name))
      return;
    b.setInsertionPointToEnd(module.getBody());
    auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(args, results));
    fn.setPrivate();
  }

  /// The address of a constant C string `text`, one global per text.
  Value name(OpBuilder &b, ModuleOp module, StringRef text, Location loc) {
    auto [it, fresh] = symbols.try_emplace(
        text, ("__spmd_region_" + Twine(symbols.size())).str());
    if (fresh) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      std::string bytes = text.str();
      bytes.push_back('\0');
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
          /*isConstant=*/true, LLVM::Linkage::Internal, it->second,
          b.getStringAttr(bytes));
    }
    return LLVM::AddressOfOp::create(
        b, loc, LLVM::LLVMPointerType::get(module.getContext()), it->second);
  }

  void bracket(OpBuilder &b, ModuleOp module, Block &block) {
    Operation *first = nullptr, *last = nullptr;
    std::string current;
    auto close = [&] {
      if (!first)
        return;
      b.setInsertionPoint(first);
      Value start =
          func::CallOp::create(b, first->getLoc(), "spmdTraceBegin",
                               TypeRange{b.getI64Type()}, ValueRange{})
              .getResult(0);
      b.setInsertionPointAfter(last);
      Value text = name(b, module, current, last->getLoc());
      func::CallOp::create(b, last->getLoc(), "spmdTraceEnd", TypeRange{},
                           ValueRange{start, text});
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

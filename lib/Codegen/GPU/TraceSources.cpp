//===- TraceSources.cpp - user lines of kernels for step traces -----------===//
//
// spmd-gpu-trace-sources: each kernel launch and GPU runtime compute call
// of the host code is preceded by `spmdGpuTraceSource(name)`, the name of
// the user's code it runs (RuntimeCalls.h's traceRegionName), so that a GPU
// step trace says "model.py:30 > linear.py:134" instead of
// "train_step_kernel_7".
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUTRACESOURCESPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// Device work the runtime traces: kernel launches, GEMMs, attention.
bool isDeviceWork(Operation *op) {
  if (isa<gpu::LaunchFuncOp>(op))
    return true;
  auto call = dyn_cast<func::CallOp>(op);
  std::optional<spmd::RuntimeFunction> fn =
      call ? spmd::lookupRuntimeFunction(call.getCallee()) : std::nullopt;
  if (!fn)
    return false;
  using RF = spmd::RuntimeFunction;
  switch (*fn) {
  case RF::spmdGpuSgemm:
  case RF::spmdGpuSgemmPair:
  case RF::spmdGpuSgemmStridedBatched:
  case RF::spmdGpuSgemmStridedBatchedPair:
  case RF::spmdGpuGemmBf16:
  case RF::spmdGpuGemmBf16StridedBatched:
  case RF::spmdGpuAttentionForward:
  case RF::spmdGpuAttentionBackward:
    return true;
  default:
    return false;
  }
}

struct SpmdGpuTraceSourcesPass
    : public spmd::impl::SpmdGpuTraceSourcesPassBase<SpmdGpuTraceSourcesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    SmallVector<Operation *> work;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        fn.walk([&](Operation *op) {
          if (isDeviceWork(op))
            work.push_back(op);
        });
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      std::string name = spmd::traceRegionName(op->getLoc());
      Value text;
      if (name.empty()) {
        text = LLVM::ZeroOp::create(b, op->getLoc(),
                                    LLVM::LLVMPointerType::get(&getContext()));
      } else {
        text = names.get(b, module, op->getLoc(), name);
      }
      spmd::callRuntime(b, module, op->getLoc(),
                        spmd::RuntimeFunction::spmdGpuTraceSource, {text});
    }
  }

  spmd::StringConstants names{"__spmd_source_"};
};

} // namespace

//===- KernelsToHost.cpp - outlined GPU kernels as host functions ---------===//
//
// The first half of the GPU emulator's compilation (spmd-lower-to-nvvm
// {emulate=1}): each outlined kernel is copied into a host function that
// loops over the grid and the block and runs the kernel body once per
// thread. Without barriers or shared memory the threads of a kernel are
// independent, so any order of them computes what the GPU computes; kernels
// that need more are rejected. The host code (launches, copies, collectives)
// is the one the real lowering produces: only the kernels' compilation
// differs. Each gpu.module then becomes a gpu.binary whose "image" is the
// text `spmd-emulated-kernels:<module>`, which the emulated driver reads.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUKERNELSTOHOSTPASS
#include "Spmd/Conversion/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// Loop indices and sizes standing for the GPU's ids, by dimension x, y, z.
struct ThreadIds {
  Value block[3], thread[3], gridDim[3], blockDim[3];
};

/// Replaces the GPU id ops and gpu.return in the cloned body; fails on what
/// the emulator cannot run.
LogicalResult rewriteBody(Region &body, const ThreadIds &ids, StringRef name) {
  auto dimIndex = [](gpu::Dimension d) { return static_cast<unsigned>(d); };
  SmallVector<Operation *> ops;
  body.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Value replacement;
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      replacement = ids.thread[dimIndex(id.getDimension())];
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      replacement = ids.block[dimIndex(id.getDimension())];
    } else if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      replacement = ids.blockDim[dimIndex(dim.getDimension())];
    } else if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      replacement = ids.gridDim[dimIndex(dim.getDimension())];
    } else if (auto id = dyn_cast<gpu::GlobalIdOp>(op)) {
      unsigned d = dimIndex(id.getDimension());
      Value scaled =
          arith::MulIOp::create(b, op->getLoc(), ids.block[d], ids.blockDim[d]);
      replacement =
          arith::AddIOp::create(b, op->getLoc(), scaled, ids.thread[d]);
    } else if (isa<gpu::ReturnOp>(op)) {
      scf::YieldOp::create(b, op->getLoc());
      op->erase();
      continue;
    } else if (op->getDialect() && op->getDialect()->getNamespace() ==
                                       gpu::GPUDialect::getDialectNamespace()) {
      return op->emitError("spmd-gpu-kernels-to-host: '")
             << op->getName() << "' in kernel " << name
             << " is not supported by the GPU emulator (kernels must not "
                "synchronize or communicate between threads)";
    } else if (isa<CallOpInterface>(op)) {
      return op->emitError("spmd-gpu-kernels-to-host: kernel ")
             << name << " calls a function; not supported by the emulator";
    } else {
      continue;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
  return success();
}

/// Makes `__spmd_emu_impl_M__F` at the end of the top module.
LogicalResult emulateKernel(ModuleOp top, gpu::GPUModuleOp module,
                            gpu::GPUFuncOp kernel) {
  std::string name =
      ("__spmd_emu_impl_" + module.getName() + "__" + kernel.getName()).str();
  std::string shown = ("@" + module.getName() + "::@" + kernel.getName()).str();
  if (!kernel.getWorkgroupAttributions().empty() ||
      !kernel.getPrivateAttributions().empty())
    return kernel.emitError("spmd-gpu-kernels-to-host: kernel ")
           << shown << " uses workgroup or private memory; not supported by "
           << "the GPU emulator";
  Location loc = kernel.getLoc();
  MLIRContext *ctx = top.getContext();
  // 16-bit float scalars travel as their bits (i16): passing bf16 by value
  // makes LLVM's x86 ABI code call __truncsfbf2, which libgcc before GCC 13
  // lacks. The kernel body sees them bitcast back.
  SmallVector<Type> inputs;
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(type.isBF16() || type.isF16() ? IntegerType::get(ctx, 16)
                                                   : type);
  IndexType index = IndexType::get(ctx);
  inputs.append(6, index);
  OpBuilder b = OpBuilder::atBlockEnd(top.getBody());
  auto func =
      func::FuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned numKernelArgs = kernel.getNumArguments();
  ThreadIds ids;
  for (unsigned d = 0; d < 3; ++d) {
    ids.gridDim[d] = entry->getArgument(numKernelArgs + d);
    ids.blockDim[d] = entry->getArgument(numKernelArgs + 3 + d);
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // Blocks z, y, x, then threads z, y, x.
  auto loop = [&](Value upper) {
    auto forOp = scf::ForOp::create(b, loc, zero, upper, one);
    b.setInsertionPointToStart(forOp.getBody());
    return forOp.getInductionVar();
  };
  for (int d = 2; d >= 0; --d)
    ids.block[d] = loop(ids.gridDim[d]);
  for (int d = 2; d >= 0; --d)
    ids.thread[d] = loop(ids.blockDim[d]);
  auto region = scf::ExecuteRegionOp::create(b, loc, TypeRange{});
  IRMapping mapping;
  OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
  for (unsigned i = 0; i < numKernelArgs; ++i) {
    Value arg = entry->getArgument(i);
    Type type = kernel.getArgument(i).getType();
    if (arg.getType() != type)
      arg = arith::BitcastOp::create(atEntry, loc, type, arg);
    mapping.map(kernel.getArgument(i), arg);
  }
  kernel.getBody().cloneInto(&region.getRegion(), mapping);
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, loc);
  return rewriteBody(region.getRegion(), ids, shown);
}

struct SpmdGpuKernelsToHostPass
    : public spmd::impl::SpmdGpuKernelsToHostPassBase<
          SpmdGpuKernelsToHostPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<std::pair<gpu::GPUModuleOp, gpu::GPUFuncOp>> kernels;
    for (auto module : top.getOps<gpu::GPUModuleOp>())
      for (auto func : module.getOps<gpu::GPUFuncOp>())
        if (func.isKernel())
          kernels.push_back({module, func});
    for (auto [module, kernel] : kernels)
      if (failed(emulateKernel(top, module, kernel)))
        return signalPassFailure();
    // The launches refer to the module by name: a binary of that name whose
    // "image" the emulated driver reads.
    SmallVector<gpu::GPUModuleOp> modules(top.getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp module : modules) {
      MLIRContext *ctx = module.getContext();
      Attribute target = NVVM::NVVMTargetAttr::get(ctx);
      if (ArrayAttr targets = module.getTargetsAttr();
          targets && !targets.empty())
        target = targets[0];
      // NUL-terminated: the driver's cuModuleLoadData gets no size.
      std::string image = ("spmd-emulated-kernels:" + module.getName()).str();
      image.push_back('\0');
      auto object =
          gpu::ObjectAttr::get(ctx, target, gpu::CompilationTarget::Binary,
                               StringAttr::get(ctx, image), nullptr, nullptr);
      OpBuilder b(module);
      gpu::BinaryOp::create(b, module.getLoc(), module.getName(),
                            module.getOffloadingHandlerAttr(),
                            ArrayRef<Attribute>{object});
      module.erase();
    }
  }
};

} // namespace

//===- EmulatorEntries.cpp - launch entries for host-compiled kernels -----===//
//
// The second half of the GPU emulator's compilation: on the LLVM dialect,
// each host-compiled kernel (spmd-gpu-kernels-to-host) gets the entry the
// emulated driver's cuLaunchKernel calls: cuModuleLoadData reads the module
// name from the gpu.binary's "image", cuModuleGetFunction looks up
// `__spmd_emu_<module>__<kernel>` (and its parameter sizes) in the process.
//
//===----------------------------------------------------------------------===//

#include "Passes.h"

#include "mlir/Interfaces/DataLayoutInterfaces.h"

namespace mlir::spmd::test {
#define GEN_PASS_DEF_SPMDGPUEMULATORENTRIESPASS
#include "GpuEmulator/Passes.h.inc"
} // namespace mlir::spmd::test

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kImplPrefix = "__spmd_emu_impl_";

/// Adds `__spmd_emu_M__F(params, gx, gy, gz, bx, by, bz, check)` calling
/// `impl` and the constant `__spmd_emu_M__F_params`.
void addLaunchEntry(ModuleOp top, LLVM::LLVMFuncOp impl,
                    const DataLayout &layout) {
  MLIRContext *ctx = top.getContext();
  Location loc = impl.getLoc();
  std::string entryName =
      ("__spmd_emu_" + impl.getName().drop_front(kImplPrefix.size())).str();
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  auto voidTy = LLVM::LLVMVoidType::get(ctx);
  ArrayRef<Type> implParams = impl.getFunctionType().getParams();
  unsigned numParams = implParams.size() - 6;

  OpBuilder b = OpBuilder::atBlockEnd(top.getBody());
  SmallVector<Type> entryParams = {ptrTy};
  entryParams.append(6, i64);
  entryParams.push_back(ptrTy);
  auto entry = LLVM::LLVMFuncOp::create(
      b, loc, entryName, LLVM::LLVMFunctionType::get(voidTy, entryParams));
  Block *body = entry.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  Value params = body->getArgument(0);
  Value check = body->getArgument(7);
  auto checkTy = LLVM::LLVMFunctionType::get(voidTy, {ptrTy});
  SmallVector<Value> args;
  SmallVector<int64_t> sizes = {numParams};
  for (unsigned i = 0; i < numParams; ++i) {
    Type type = implParams[i];
    Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, params,
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    Value address = LLVM::LoadOp::create(b, loc, ptrTy, slot);
    Value value = LLVM::LoadOp::create(b, loc, type, address);
    if (isa<LLVM::LLVMPointerType>(type))
      LLVM::CallOp::create(b, loc, checkTy, ValueRange{check, value});
    args.push_back(value);
    sizes.push_back(static_cast<int64_t>(layout.getTypeSize(type)));
  }
  for (unsigned d = 1; d <= 6; ++d)
    args.push_back(body->getArgument(d));
  LLVM::CallOp::create(b, loc, impl, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  b.setInsertionPoint(entry);
  auto arrayTy = LLVM::LLVMArrayType::get(i64, sizes.size());
  LLVM::GlobalOp::create(b, loc, arrayTy, /*isConstant=*/true,
                         LLVM::Linkage::External, entryName + "_params",
                         b.getI64TensorAttr(sizes));
}

struct SpmdGpuEmulatorEntriesPass
    : public spmd::test::impl::SpmdGpuEmulatorEntriesPassBase<
          SpmdGpuEmulatorEntriesPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    DataLayout layout(top);
    SmallVector<LLVM::LLVMFuncOp> impls;
    for (auto func : top.getOps<LLVM::LLVMFuncOp>())
      if (func.getName().starts_with(kImplPrefix) && !func.isExternal())
        impls.push_back(func);
    for (LLVM::LLVMFuncOp impl : impls) {
      if (impl.getFunctionType().getNumParams() < 6 ||
          !isa<LLVM::LLVMVoidType>(impl.getFunctionType().getReturnType())) {
        impl.emitError("spmd-gpu-emulator-entries: ")
            << impl.getName()
            << " is not a kernel made by spmd-gpu-kernels-to-host";
        return signalPassFailure();
      }
      addLaunchEntry(top, impl, layout);
    }
  }
};

} // namespace

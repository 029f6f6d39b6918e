//===- GpuMemory.cpp - put a bufferized local program's buffers on the GPU ===//
//
// After bufferization, on host functions: allocations become `gpu.alloc`
// (device memory) and deallocations `gpu.dealloc`; copies between
// contiguous buffers of one shape become `gpu.memcpy`, other copies a
// `linalg.copy` (a kernel later); a constant global is copied to the device
// where it is used. Function arguments are device buffers (the caller's
// contract). Mutable globals (spmd.state) are not supported on the GPU yet:
// they are diagnosed.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUMEMORYPASS
#include "Spmd/Conversion/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

bool isIdentityContiguous(MemRefType type) {
  return type.getLayout().isIdentity() && type.hasStaticShape();
}

struct SpmdGpuMemoryPass
    : public spmd::impl::SpmdGpuMemoryPassBase<SpmdGpuMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool failed = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (mlir::failed(convert(func, module)))
        failed = true;
    }
    if (failed)
      signalPassFailure();
  }

  LogicalResult convert(func::FuncOp func, ModuleOp module) {
    SmallVector<Operation *> work;
    func.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
              memref::CopyOp, memref::GetGlobalOp>(op))
        work.push_back(op);
    });
    SmallVector<Value> constantCopies;
    OpBuilder b(func.getContext());
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
        auto type = cast<MemRefType>(op->getResult(0).getType());
        auto alloc =
            gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                 ValueRange{}, op->getOperands(), ValueRange{});
        op->getResult(0).replaceAllUsesWith(alloc.getMemref());
        op->erase();
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                               dealloc.getMemref());
        op->erase();
        continue;
      }
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto from = cast<MemRefType>(copy.getSource().getType());
        auto to = cast<MemRefType>(copy.getTarget().getType());
        if (from == to && isIdentityContiguous(from))
          gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                                copy.getTarget(), copy.getSource());
        else
          linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
        op->erase();
        continue;
      }
      auto get = cast<memref::GetGlobalOp>(op);
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (!global || !global.getConstant())
        return get.emitError("spmd-gpu-memory: mutable global @")
               << get.getName()
               << " (spmd.state) is not supported on the GPU yet; keep "
                  "state on the host (spmd-lower-to-cpu)";
      auto type = get.getType();
      if (!isIdentityContiguous(type))
        return get.emitError("spmd-gpu-memory: constant global with a "
                             "non-identity layout");
      // Copied once, at function entry (uses in loops share it).
      b.setInsertionPointToStart(&func.getBody().front());
      auto host = memref::GetGlobalOp::create(b, loc, type, get.getNameAttr());
      auto device = gpu::AllocOp::create(b, loc, type, Type(), ValueRange{},
                                         ValueRange{}, ValueRange{});
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, device.getMemref(),
                            host.getResult());
      get.getResult().replaceAllUsesWith(device.getMemref());
      get.erase();
      constantCopies.push_back(device.getMemref());
    }
    // The constants' device copies live until the function returns.
    func.walk([&](func::ReturnOp ret) {
      OpBuilder rb(ret);
      for (Value copy : constantCopies)
        gpu::DeallocOp::create(rb, ret.getLoc(), Type(), ValueRange{}, copy);
    });
    return success();
  }
};

} // namespace
